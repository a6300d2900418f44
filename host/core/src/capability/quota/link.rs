//! The shadowing functions of `wasi:filesystem/types` (see the module docs of
//! `capability::quota`): writes charged, creations counted, a quota error reported as one.

use super::{FS_TYPES, QuotaExceeded, QuotaHit, QuotaStream, QuotaView};
use wasmtime::StoreContextMut;
use wasmtime::component::{Linker, LinkerInstance, Resource};
use wasmtime_wasi::filesystem::WasiFilesystemView;
use wasmtime_wasi::p2::DynOutputStream;
use wasmtime_wasi::p2::bindings::filesystem::types::{
    self as fs, Descriptor, ErrorCode, Host as _, HostDescriptor as _,
};

type Ctx<'a, S> = StoreContextMut<'a, S>;

/// Shadow the quota-relevant functions of `wasi:filesystem/types` (added by
/// `wasmtime_wasi::p2::add_to_linker_async` before this) with charging versions.
pub fn add_to_linker<S: QuotaView>(linker: &mut Linker<S>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let mut inst = linker.instance(FS_TYPES)?;
    writes(&mut inst)?;
    growth(&mut inst)?;
    opens(&mut inst)?;
    entries(&mut inst)?;
    error_code(&mut inst)?;

    linker.allow_shadowing(false);
    Ok(())
}

/// The functions that write bytes: each charges the call's meter before wasmtime-wasi writes.
fn writes<S: QuotaView>(inst: &mut LinkerInstance<'_, S>) -> wasmtime::Result<()> {
    inst.func_wrap_async(
        "[method]descriptor.write",
        |mut store: Ctx<'_, S>, (fd, mut buf, offset): (Resource<Descriptor>, Vec<u8>, u64)| {
            Box::new(async move {
                let state = store.data_mut();
                // Writing past the end extends the file to `offset` first: the hole counts.
                let gap = match gap(state, &fd, offset).await {
                    Ok(g) => g,
                    Err(e) => return Ok((Err(e),)),
                };
                let allowed = match state.meter().allow_after(gap, buf.len()) {
                    Ok(n) => n,
                    Err(_) => return Ok((Err(ErrorCode::Quota),)),
                };
                // A short write, as POSIX allows: the guest learns how much went through.
                buf.truncate(allowed);
                let r = state.filesystem().write(fd, buf, offset).await;
                if let Ok(n) = &r {
                    state.meter().charge(gap + *n);
                }
                Ok((fs_result(state, r)?,))
            })
        },
    )?;

    inst.func_wrap_async(
        "[method]descriptor.write-via-stream",
        |mut store: Ctx<'_, S>, (fd, offset): (Resource<Descriptor>, u64)| {
            Box::new(async move {
                let state = store.data_mut();
                // The stream's first write extends the file to `offset`: that hole is charged
                // with it (and a hole larger than what is left refuses the stream at once).
                let gap = match gap(state, &fd, offset).await {
                    Ok(g) => g,
                    Err(e) => return Ok((Err(e),)),
                };
                if gap > 0 && gap >= state.meter().room() {
                    state.meter().mark(QuotaHit::Write);
                    return Ok((Err(ErrorCode::Quota),));
                }
                let r = state.filesystem().write_via_stream(fd, offset);
                if let Ok(s) = &r {
                    wrap_stream(state, s, gap)?;
                }
                Ok((fs_result(state, r)?,))
            })
        },
    )?;
    Ok(())
}

/// The functions that grow a file without a write of their own bytes: appending (a stream
/// charged as it goes) and a larger size.
fn growth<S: QuotaView>(inst: &mut LinkerInstance<'_, S>) -> wasmtime::Result<()> {
    inst.func_wrap(
        "[method]descriptor.append-via-stream",
        |mut store: Ctx<'_, S>, (fd,): (Resource<Descriptor>,)| {
            let state = store.data_mut();
            let r = state.filesystem().append_via_stream(fd);
            if let Ok(s) = &r {
                wrap_stream(state, s, 0)?;
            }
            Ok((fs_result(state, r)?,))
        },
    )?;

    inst.func_wrap_async(
        "[method]descriptor.set-size",
        |mut store: Ctx<'_, S>, (fd, size): (Resource<Descriptor>, u64)| {
            Box::new(async move {
                let state = store.data_mut();
                let current = match state.filesystem().stat(again(&fd)).await {
                    Ok(s) => s.size,
                    Err(e) => return Ok((Err(state.filesystem().convert_error_code(e)?),)),
                };
                let growth = size.saturating_sub(current);
                if growth > state.meter().room() {
                    state.meter().mark(QuotaHit::Write);
                    return Ok((Err(ErrorCode::Quota),));
                }
                let r = state.filesystem().set_size(fd, size).await;
                if r.is_ok() {
                    state.meter().charge(growth);
                }
                Ok((fs_result(state, r)?,))
            })
        },
    )?;
    Ok(())
}

/// `open-at`: a path outside every grant refused (and remembered), and anything but a file or
/// a directory (a FIFO, a socket, a device) refused; a file it creates counts against the
/// per-call creation limit, given back when the open fails.
fn opens<S: QuotaView>(inst: &mut LinkerInstance<'_, S>) -> wasmtime::Result<()> {
    inst.func_wrap_async(
        "[method]descriptor.open-at",
        |mut store: Ctx<'_, S>,
         (fd, path_flags, path, open_flags, flags): (
            Resource<Descriptor>,
            fs::PathFlags,
            String,
            fs::OpenFlags,
            fs::DescriptorFlags,
        )| {
            Box::new(async move {
                let state = store.data_mut();
                // A path outside every grant (see `capability::fs`): refused, and remembered.
                if state.outside().refuses(fd.rep(), &path) {
                    return Ok((Err(ErrorCode::Access),));
                }
                let found = state.filesystem().stat_at(again(&fd), path_flags, path.clone()).await;
                // Only files and directories are opened. Opening a FIFO waits for its other end,
                // and file operations run on the async worker (`sandbox::wasi_ctx`): a FIFO in a
                // granted folder (a granted program may make one) would hold the worker for
                // good, past the call's time limit. Sockets and devices have no use here either.
                if let Ok(stat) = &found
                    && !matches!(
                        stat.type_,
                        fs::DescriptorType::RegularFile
                            | fs::DescriptorType::Directory
                            | fs::DescriptorType::SymbolicLink
                    )
                {
                    return Ok((Err(ErrorCode::Unsupported),));
                }
                // Only a file that does not exist yet counts as created.
                let creates = open_flags.contains(fs::OpenFlags::CREATE) && found.is_err();
                if creates && state.meter().create().is_err() {
                    return Ok((Err(ErrorCode::Quota),));
                }
                let r = state.filesystem().open_at(fd, path_flags, path, open_flags, flags).await;
                if creates && r.is_err() {
                    state.meter().uncreate();
                }
                Ok((fs_result(state, r)?,))
            })
        },
    )?;
    Ok(())
}

/// Directories and links: each counts against the creation limit, given back when it fails.
fn entries<S: QuotaView>(inst: &mut LinkerInstance<'_, S>) -> wasmtime::Result<()> {
    inst.func_wrap_async(
        "[method]descriptor.create-directory-at",
        |mut store: Ctx<'_, S>, (fd, path): (Resource<Descriptor>, String)| {
            Box::new(async move {
                let state = store.data_mut();
                if state.meter().create().is_err() {
                    return Ok((Err(ErrorCode::Quota),));
                }
                let r = state.filesystem().create_directory_at(fd, path).await;
                if r.is_err() {
                    state.meter().uncreate();
                }
                Ok((fs_result(state, r)?,))
            })
        },
    )?;

    inst.func_wrap_async(
        "[method]descriptor.symlink-at",
        |mut store: Ctx<'_, S>, (fd, old, new): (Resource<Descriptor>, String, String)| {
            Box::new(async move {
                let state = store.data_mut();
                if state.meter().create().is_err() {
                    return Ok((Err(ErrorCode::Quota),));
                }
                let r = state.filesystem().symlink_at(fd, old, new).await;
                if r.is_err() {
                    state.meter().uncreate();
                }
                Ok((fs_result(state, r)?,))
            })
        },
    )?;

    inst.func_wrap_async(
        "[method]descriptor.link-at",
        |mut store: Ctx<'_, S>,
         (fd, old_flags, old, new_fd, new): (
            Resource<Descriptor>,
            fs::PathFlags,
            String,
            Resource<Descriptor>,
            String,
        )| {
            Box::new(async move {
                let state = store.data_mut();
                if state.meter().create().is_err() {
                    return Ok((Err(ErrorCode::Quota),));
                }
                let r = state.filesystem().link_at(fd, old_flags, old, new_fd, new).await;
                if r.is_err() {
                    state.meter().uncreate();
                }
                Ok((fs_result(state, r)?,))
            })
        },
    )?;
    Ok(())
}

/// `filesystem-error-code`: a quota stream error is `error-code.quota`.
fn error_code<S: QuotaView>(inst: &mut LinkerInstance<'_, S>) -> wasmtime::Result<()> {
    inst.func_wrap(
        "filesystem-error-code",
        |mut store: Ctx<'_, S>, (err,): (Resource<wasmtime::Error>,)| {
            let state = store.data_mut();
            let quota =
                state.ctx().table.get(&err).is_ok_and(|e| e.downcast_ref::<QuotaExceeded>().is_some());
            if quota {
                return Ok((Some(ErrorCode::Quota),));
            }
            Ok((state.filesystem().filesystem_error_code(err)?,))
        },
    )?;
    Ok(())
}

/// `Ok(value)` for the guest, or the error code (a trap if the error is not an error code).
fn fs_result<S: QuotaView, T>(
    state: &mut S,
    r: wasmtime_wasi::p2::FsResult<T>,
) -> wasmtime::Result<Result<T, ErrorCode>> {
    match r {
        Ok(v) => Ok(Ok(v)),
        Err(e) => Ok(Err(state.filesystem().convert_error_code(e)?)),
    }
}

/// A second handle to the same borrowed descriptor (for a look-up before the real call).
fn again(fd: &Resource<Descriptor>) -> Resource<Descriptor> {
    Resource::new_borrow(fd.rep())
}

/// Replace the stream just created at `stream` with a [`QuotaStream`] around it; `gap` is the
/// hole its first write makes (see [`gap`]).
fn wrap_stream<S: QuotaView>(
    state: &mut S,
    stream: &Resource<DynOutputStream>,
    gap: u64,
) -> wasmtime::Result<()> {
    let meter = state.meter().clone();
    let view = state.ctx();
    let slot: &mut DynOutputStream = view.table.get_mut(stream)?;
    let inner = std::mem::replace(slot, Box::new(wasmtime_wasi::p2::pipe::ClosedOutputStream));
    *slot = Box::new(QuotaStream { inner, meter, gap });
    Ok(())
}

/// How far a write at `offset` lies past the end of the file: the hole it would create (a
/// sparse file costs no disk until written, but its size is what a later reader, copier or
/// backup sees, so the quota counts the extent, not only the bytes).
async fn gap<S: QuotaView>(state: &mut S, fd: &Resource<Descriptor>, offset: u64) -> Result<u64, ErrorCode> {
    if offset == 0 {
        return Ok(0);
    }
    match state.filesystem().stat(again(fd)).await {
        Ok(s) => Ok(offset.saturating_sub(s.size)),
        Err(e) => Err(state.filesystem().convert_error_code(e).unwrap_or(ErrorCode::Io)),
    }
}
