//! The filesystem capability: the directories the operator grants a plugin
//! ([`settings::FsGrant`]), intersected with what its manifest requests, and opened once for
//! every call to share ([`Preopens`]). The disk quota on writes is [`super::quota`].

pub mod settings;

pub use settings::FsGrant;

use super::{Missing, MissingKind};
use std::io;
use std::sync::Arc;
use toolhost_spec::manifest::{FsMode, FsRequest};
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder};

/// The granted directories opened once, for every call's WASI context to share (a clone of
/// the filesystem context: the same directory handles, no `open`/`close` per call). Each call
/// checks with one `stat` per directory that its path still leads to the directory that was
/// opened, and opens them afresh when it does not (a directory replaced, or missing: that call
/// then fails as it would without the cache).
#[derive(Clone, Default)]
pub struct Preopens(Arc<arc_swap::ArcSwapOption<PreopenSet>>);

struct PreopenSet {
    fs: wasmtime_wasi::filesystem::WasiFilesystemCtx,
    /// (device, inode) of each granted directory when it was opened, in grant order.
    ids: Vec<(u64, u64)>,
}

/// A cache, not part of what is granted: grants compare equal whatever it holds.
impl PartialEq for Preopens {
    fn eq(&self, _: &Preopens) -> bool {
        true
    }
}
impl Eq for Preopens {}
impl std::fmt::Debug for Preopens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Preopens")
    }
}

/// (device, inode) of each path, or `None` if one cannot be read.
fn dir_ids(fs: &[FsGrant]) -> Option<Vec<(u64, u64)>> {
    use std::os::unix::fs::MetadataExt;
    fs.iter().map(|g| std::fs::metadata(&g.host_path).ok().map(|m| (m.dev(), m.ino()))).collect()
}

/// Request ∩ grant for directories: a requested directory the operator granted, at the lower
/// of the two modes; what is missing (or granted read-only where read-write was requested),
/// with the config line that grants it.
pub fn effective(plugin: &str, request: &[FsRequest], granted: &[FsGrant]) -> (Vec<FsGrant>, Vec<Missing>) {
    let mut out = Vec::new();
    let mut missing = Vec::new();
    for req in request {
        match granted.iter().find(|g| g.name == req.path) {
            Some(g) => {
                let mode = req.mode.min(g.mode);
                out.push(FsGrant { mode, ..g.clone() });
                if mode < req.mode {
                    missing.push(Missing {
                        kind: MissingKind::Fs(req.path.clone()),
                        what: format!("fs {}:{} (granted {})", req.path, req.mode, g.mode),
                        how: fs_hint(plugin, &req.path, req.mode),
                    });
                }
            }
            None => missing.push(Missing {
                kind: MissingKind::Fs(req.path.clone()),
                what: format!("fs {}:{}", req.path, req.mode),
                how: fs_hint(plugin, &req.path, req.mode),
            }),
        }
    }
    (out, missing)
}

fn fs_hint(plugin: &str, name: &str, mode: FsMode) -> String {
    if name == "workspace" {
        let flag = if mode == FsMode::ReadWrite { "--allow-write" } else { "--allow-read" };
        format!(
            "[plugin.{plugin}] fs = [{{ path = \"workspace\", mode = \"{mode}\" }}]  (or {flag} {plugin})"
        )
    } else {
        format!("[plugin.{plugin}] fs = [{{ path = \"/some/dir\", name = \"{name}\", mode = \"{mode}\" }}]")
    }
}

impl Preopens {
    /// Finish `b` with the granted directories `fs` preopened: the shared handles when every
    /// directory is still the one they were opened from, else opened afresh (and kept for the
    /// next calls if nothing changed meanwhile).
    pub fn build(&self, fs: &[FsGrant], mut b: WasiCtxBuilder) -> io::Result<WasiCtx> {
        if fs.is_empty() {
            return Ok(b.build());
        }
        let ids = dir_ids(fs);
        if let (Some(ids), Some(set)) = (&ids, &*self.0.load())
            && *ids == set.ids
        {
            let mut ctx = b.build();
            *ctx.filesystem() = set.fs.clone();
            return Ok(ctx);
        }
        open_dirs(fs, &mut b)?;
        let mut ctx = b.build();
        // Kept for the next calls only if no directory changed while they were opened.
        if let Some(before) = ids
            && dir_ids(fs).as_ref() == Some(&before)
        {
            let fs = ctx.filesystem().clone();
            self.0.store(Some(Arc::new(PreopenSet { fs, ids: before })));
        }
        Ok(ctx)
    }
}

fn open_dirs(fs: &[FsGrant], b: &mut WasiCtxBuilder) -> io::Result<()> {
    for fs in fs {
        let perms = match fs.mode {
            FsMode::ReadOnly => FsPerms::ReadOnly,
            FsMode::ReadWrite => FsPerms::ReadWrite,
        };
        b.preopened_dir(&fs.host_path, fs.guest_path(), perms).map_err(|e| {
            io::Error::other(format!(
                "cannot open granted directory {} ({}): {e}",
                fs.host_path.display(),
                fs.name
            ))
        })?;
    }
    Ok(())
}
