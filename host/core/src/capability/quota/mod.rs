//! Disk quotas for writable grants, enforced inside the host's implementation of
//! `wasi:filesystem/types` (never by checking afterwards).
//!
//! wasmtime-wasi has no hook for this, so [`add_to_linker`] shadows the few functions of the
//! interface that can add bytes or entries to a granted directory and forwards each to
//! wasmtime-wasi's own implementation after charging the call's [`CallMeter`]:
//!
//! - `descriptor.write` (`pwrite`): short write up to what is left, then `quota`;
//! - `descriptor.write-via-stream` / `append-via-stream`: the returned stream is wrapped in a
//!   [`QuotaStream`] that charges every `write` (and `blocking-write-and-flush`, `splice`,
//!   `write-zeroes`, which all go through it), and lowers `check-write` to what is left;
//! - `descriptor.set-size`: growth past the current size is charged;
//! - a write at an offset past the end of the file is charged the hole it creates as well
//!   (the file's extent, not only the bytes written: a 1-byte write at 1 TiB costs 1 TiB);
//! - `open-at` with `create` (when the file does not exist yet), `create-directory-at`,
//!   `symlink-at` and `link-at` count against the per-call creation limit;
//! - `filesystem-error-code` maps a quota stream error to `error-code.quota` (for guests that
//!   ask; wasi-libc reports every stream error as EIO without asking).
//!
//! Hitting a limit is an ordinary I/O error for the guest, which decides whether the call goes
//! on or fails; the meter remembers the event so the outcome can name the limit.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU32, AtomicU64, Ordering};
use wasmtime::component::Linker;
use wasmtime_wasi::p2::{DynOutputStream, OutputStream, Pollable, StreamError, StreamResult};

/// The `wasi:filesystem/types` instance wasmtime-wasi 48 defines (guests importing any 0.2.x
/// version are linked to it).
const FS_TYPES: &str = "wasi:filesystem/types@0.2.12";

const MIB: u64 = 1024 * 1024;

/// Which quota a call ran into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuotaHit {
    Write,
    Create,
}

/// What one call wrote and created, against its limits. Shared (by `Arc`) between the store
/// and the file streams it hands out; plain atomics, so the write path takes no lock and
/// allocates nothing.
#[derive(Debug)]
pub struct CallMeter {
    written: AtomicU64,
    created: AtomicU32,
    write_limit: u64,
    create_limit: u32,
    /// 0: no limit hit; 1: write; 2: create.
    hit: AtomicU8,
}

impl CallMeter {
    pub fn new(write_mb: u64, create_limit: u32) -> Self {
        CallMeter {
            written: AtomicU64::new(0),
            created: AtomicU32::new(0),
            write_limit: write_mb.saturating_mul(MIB),
            create_limit,
            hit: AtomicU8::new(0),
        }
    }

    /// Bytes written so far.
    pub fn written(&self) -> u64 {
        self.written.load(Ordering::Relaxed)
    }

    /// Files, directories and links created so far.
    pub fn created(&self) -> u32 {
        self.created.load(Ordering::Relaxed)
    }

    /// The first limit this call ran into, if any.
    pub fn hit(&self) -> Option<QuotaHit> {
        match self.hit.load(Ordering::Relaxed) {
            1 => Some(QuotaHit::Write),
            2 => Some(QuotaHit::Create),
            _ => None,
        }
    }

    fn mark(&self, what: QuotaHit) {
        let v = if what == QuotaHit::Write { 1 } else { 2 };
        let _ = self.hit.compare_exchange(0, v, Ordering::Relaxed, Ordering::Relaxed);
    }

    /// Bytes this call may still write.
    fn room(&self) -> u64 {
        self.write_limit.saturating_sub(self.written())
    }

    /// How many of `want` bytes may be written now (at least 1), or the quota error, for a
    /// write that first extends the file by a hole of `gap` bytes: the hole and at least one
    /// byte must fit, or nothing is written.
    fn allow_after(&self, gap: u64, want: usize) -> Result<usize, QuotaExceeded> {
        let room = self.room();
        if want > 0 && room <= gap {
            self.mark(QuotaHit::Write);
            return Err(self.exceeded(QuotaHit::Write));
        }
        Ok(usize::try_from(room - gap.min(room)).unwrap_or(usize::MAX).min(want))
    }

    fn charge(&self, n: u64) {
        self.written.fetch_add(n, Ordering::Relaxed);
    }

    /// Count one new file, directory or link, or refuse it.
    fn create(&self) -> Result<(), QuotaExceeded> {
        if self.created() >= self.create_limit {
            self.mark(QuotaHit::Create);
            return Err(self.exceeded(QuotaHit::Create));
        }
        self.created.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn uncreate(&self) {
        self.created.fetch_sub(1, Ordering::Relaxed);
    }

    fn exceeded(&self, what: QuotaHit) -> QuotaExceeded {
        QuotaExceeded { what, written: self.written(), created: self.created(), meter_limits: self.limits() }
    }

    fn limits(&self) -> (u64, u32) {
        (self.write_limit / MIB, self.create_limit)
    }

    /// The message for the outcome: `quota exceeded: wrote 64 MiB, limit write_mb = 64`.
    pub fn message(&self, what: QuotaHit) -> String {
        self.exceeded(what).to_string()
    }
}

/// The error a guest's stream operation fails with when the call's quota is used up (the
/// guest sees `error-code.quota`).
#[derive(Debug, Clone, thiserror::Error)]
#[error("{}", describe(self))]
pub struct QuotaExceeded {
    what: QuotaHit,
    written: u64,
    created: u32,
    meter_limits: (u64, u32),
}

fn describe(q: &QuotaExceeded) -> String {
    match q.what {
        QuotaHit::Write => {
            format!("quota exceeded: wrote {}, limit write_mb = {}", mib(q.written), q.meter_limits.0)
        }
        QuotaHit::Create => format!(
            "quota exceeded: created {} files or directories, limit create_limit = {}",
            q.created, q.meter_limits.1
        ),
    }
}

/// `64 MiB`, `1.5 MiB`, `12 KiB`.
fn mib(bytes: u64) -> String {
    if bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else if bytes >= MIB {
        format!("{:.1} MiB", bytes as f64 / MIB as f64)
    } else {
        format!("{} KiB", bytes.div_ceil(1024))
    }
}

/// A file output stream whose writes are charged to the call's meter.
pub struct QuotaStream {
    inner: DynOutputStream,
    meter: Arc<CallMeter>,
    /// The hole between the end of the file and where this stream starts, charged with its
    /// first write.
    gap: u64,
}

impl QuotaStream {
    fn fail(&self) -> StreamError {
        self.meter.mark(QuotaHit::Write);
        StreamError::LastOperationFailed(wasmtime::Error::new(self.meter.exceeded(QuotaHit::Write)))
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for QuotaStream {
    async fn ready(&mut self) {
        self.inner.ready().await
    }
}

#[wasmtime_wasi::async_trait]
impl OutputStream for QuotaStream {
    fn write(&mut self, bytes: bytes::Bytes) -> StreamResult<()> {
        let n = bytes.len() as u64;
        let gap = if n > 0 { std::mem::take(&mut self.gap) } else { 0 };
        if gap + n > self.meter.room() {
            self.gap = gap;
            return Err(self.fail());
        }
        self.meter.charge(gap + n);
        self.inner.write(bytes)
    }

    async fn blocking_write_and_flush(&mut self, mut bytes: bytes::Bytes) -> StreamResult<()> {
        let gap = if bytes.is_empty() { 0 } else { self.gap };
        let allowed = self.meter.allow_after(gap, bytes.len()).map_err(|_| self.fail())?;
        self.gap = 0;
        if allowed < bytes.len() {
            // Write what fits, so the call has written exactly its quota, then fail.
            let head = bytes.split_to(allowed);
            self.meter.charge(gap + allowed as u64);
            self.inner.blocking_write_and_flush(head).await?;
            return Err(self.fail());
        }
        self.meter.charge(gap + allowed as u64);
        self.inner.blocking_write_and_flush(bytes).await
    }

    fn flush(&mut self) -> StreamResult<()> {
        self.inner.flush()
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        let n = self.inner.check_write()?;
        let room = self.meter.room().saturating_sub(self.gap);
        if room == 0 {
            return Err(self.fail());
        }
        Ok(n.min(usize::try_from(room).unwrap_or(usize::MAX)))
    }

    async fn cancel(&mut self) {
        self.inner.cancel().await
    }
}

/// What the shadowed functions need of a call's store state: WASI's view of it, and the call's
/// meter (its part of the call's capabilities).
pub trait QuotaView: crate::capability::fs::FsView {
    fn meter(&self) -> &Arc<CallMeter>;
}

impl<S: crate::capability::CallState> QuotaView for S {
    fn meter(&self) -> &Arc<CallMeter> {
        &self.calls_ref().quota
    }
}

/// The disk quota (see the module docs): per call, a meter of what it wrote and created.
pub struct Quota;

impl crate::capability::Capability for Quota {
    /// Nothing per plugin: the limits are the call's.
    type Grant = ();
    type Call = Arc<CallMeter>;

    fn effective(_: &crate::capability::GrantContext<'_>) -> ((), Vec<crate::capability::Missing>) {
        ((), Vec::new())
    }

    fn prepare(_: &(), setup: &crate::capability::CallSetup<'_>) -> Arc<CallMeter> {
        Arc::new(CallMeter::new(setup.limits.write_mb, setup.limits.create_limit))
    }

    /// Only with the engine's disk quota: the shadows charge writes to the meter.
    fn add_to_linker<S: crate::capability::CallState>(
        linker: &mut Linker<S>,
        options: crate::capability::LinkOptions,
    ) -> wasmtime::Result<()> {
        if options.disk_quota { add_to_linker(linker) } else { Ok(()) }
    }
}

mod link;
pub use link::add_to_linker;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meter_allows_up_to_the_limit_then_refuses() {
        let m = CallMeter::new(1, 2);
        assert_eq!(m.allow_after(0, 4096).unwrap(), 4096);
        m.charge(MIB - 100);
        assert_eq!(m.allow_after(0, 4096).unwrap(), 100, "a short write up to the limit");
        m.charge(100);
        let e = m.allow_after(0, 1).unwrap_err();
        assert_eq!(e.to_string(), "quota exceeded: wrote 1 MiB, limit write_mb = 1");
        assert_eq!(m.hit(), Some(QuotaHit::Write));
        assert!(m.allow_after(0, 0).is_ok(), "an empty write is not a quota error");
    }

    #[test]
    fn a_hole_before_a_write_is_part_of_what_it_costs() {
        let m = CallMeter::new(1, 2);
        assert_eq!(m.allow_after(MIB - 10, 4096).unwrap(), 10, "the hole leaves 10 bytes");
        assert!(m.allow_after(MIB, 1).is_err(), "a hole as large as the quota leaves no byte");
        assert!(m.allow_after(u64::MAX, 1).is_err(), "1 TiB and more: refused, no overflow");
        assert_eq!(m.hit(), Some(QuotaHit::Write));
    }

    #[test]
    fn creations_are_counted() {
        let m = CallMeter::new(1, 2);
        m.create().unwrap();
        m.create().unwrap();
        let e = m.create().unwrap_err().to_string();
        assert_eq!(e, "quota exceeded: created 2 files or directories, limit create_limit = 2");
        m.uncreate();
        assert_eq!(m.created(), 1);
    }

    #[test]
    fn sizes_read_well() {
        assert_eq!(mib(64 * MIB), "64 MiB");
        assert_eq!(mib(3 * MIB / 2), "1.5 MiB");
        assert_eq!(mib(1000), "1 KiB");
    }
}
