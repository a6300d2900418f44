//! The filesystem capability: the directories the operator grants a plugin
//! ([`settings::FsGrant`]), intersected with what its manifest requests, and opened once for
//! every call to share ([`Preopens`]). The disk quota on writes is [`super::quota`].
//!
//! **Paths outside every grant.** A guest's libc (wasi-libc) resolves a path against the
//! directories it was given and, when none matches, fails with "no such file" without asking
//! the host — so the host could not tell the user that the file exists but is not granted.
//! A plugin without the workspace therefore also gets an empty directory as `/`, preopened
//! before its granted ones (a granted directory always wins: a longer prefix, or the later
//! preopen on a tie). A path outside every grant lands there; the host refuses every open in it
//! (`error-code.access`: "permission denied") and every look-up (`no-entry`, as before), and
//! remembers the path ([`OutsideGrants`]), so the outcome can say first that the plugin has no
//! access to it.

pub mod settings;

pub use settings::FsGrant;

use super::{Missing, MissingKind};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use toolhost_spec::manifest::{FsMode, FsRequest};
use wasmtime::StoreContextMut;
use wasmtime::component::{Linker, Resource};
use wasmtime_wasi::filesystem::WasiFilesystemView;
use wasmtime_wasi::p2::bindings::filesystem::types::{self as fs_types, Descriptor, ErrorCode};
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiView};

/// The `wasi:filesystem` instances wasmtime-wasi 48 defines.
const FS_PREOPENS: &str = "wasi:filesystem/preopens@0.2.12";
const FS_TYPES: &str = "wasi:filesystem/types@0.2.12";

/// Paths a call tried outside its grants, remembered at most.
const OUTSIDE_PATHS: usize = 4;

/// The empty directory preopened as `/` for plugins without the workspace (see the module
/// docs): `$XDG_CACHE_HOME/toolhost/no-access`, created once, used only while it is empty.
fn no_access_dir() -> Option<&'static Path> {
    static DIR: OnceLock<Option<PathBuf>> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = crate::files::cache_dir()?.join("no-access");
        std::fs::create_dir_all(&dir).ok()?;
        let empty = std::fs::read_dir(&dir).ok()?.next().is_none();
        if !empty {
            tracing::warn!(
                "{} is not empty: paths outside a plugin's grants are not reported",
                dir.display()
            );
        }
        empty.then_some(dir)
    })
    .as_deref()
}

/// Whether a plugin with these granted directories gets the no-access directory as `/`.
pub fn guards_outside(fs: &[FsGrant]) -> bool {
    !fs.iter().any(|g| g.guest_path() == ".") && no_access_dir().is_some()
}

/// What one call tried outside its grants: the per-call state of the no-access directory.
#[derive(Debug, Default)]
pub struct OutsideGrants {
    /// The call's first preopen is the no-access directory.
    pub armed: bool,
    /// The guest's handles to it.
    reps: Vec<u32>,
    /// The paths the guest tried there, in order (the first few).
    pub paths: Vec<String>,
}

impl OutsideGrants {
    /// Whether `path` under the guest's handle `fd` is outside every grant: if so, it is
    /// remembered and the operation must be refused.
    pub fn refuses(&mut self, fd: u32, path: &str) -> bool {
        if !self.reps.contains(&fd) {
            return false;
        }
        if self.paths.len() < OUTSIDE_PATHS && !self.paths.iter().any(|p| p == path) {
            self.paths.push(path.to_string());
        }
        true
    }
}

/// What the filesystem shadows need of a call's store state.
pub trait FsView: WasiView + Send + 'static {
    fn outside(&mut self) -> &mut OutsideGrants;
}

impl<S: super::CallState> FsView for S {
    fn outside(&mut self) -> &mut OutsideGrants {
        &mut self.calls().fs
    }
}

/// The filesystem capability (see the module docs).
pub struct Files;

/// The directories a plugin is granted (request ∩ grant), and their handles opened once for
/// every call (see [`Preopens`]). Read as the list of directories.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FsGrants {
    pub dirs: Vec<FsGrant>,
    pub preopens: Preopens,
}

impl std::ops::Deref for FsGrants {
    type Target = Vec<FsGrant>;
    fn deref(&self) -> &Vec<FsGrant> {
        &self.dirs
    }
}

impl std::ops::DerefMut for FsGrants {
    fn deref_mut(&mut self) -> &mut Vec<FsGrant> {
        &mut self.dirs
    }
}

impl super::Capability for Files {
    type Grant = FsGrants;
    /// What the call tried outside its grants.
    type Call = OutsideGrants;

    fn effective(cx: &super::GrantContext<'_>) -> (FsGrants, Vec<Missing>) {
        let (dirs, missing) = effective(cx.plugin, &cx.request.fs, &cx.grant.fs);
        (FsGrants { dirs, preopens: Preopens::default() }, missing)
    }

    /// The workspace, while it is still the workspace and not granted already, at the mode a
    /// human answered (opened for this call only: never in the shared handles).
    fn with_asked(grant: &FsGrants, asked: &super::Asked<'_>) -> Option<FsGrants> {
        let mut dirs = grant.dirs.clone();
        for item in asked.items {
            let crate::settings::grants::GrantItem::Fs { path, write } = item else { continue };
            if Path::new(path) != asked.workspace.host_path || dirs.iter().any(|g| g.name == "workspace") {
                continue;
            }
            let mode = if *write { FsMode::ReadWrite } else { FsMode::ReadOnly };
            dirs.push(FsGrant { mode, ..asked.workspace.clone() });
        }
        (dirs.len() != grant.dirs.len()).then(|| FsGrants { dirs, preopens: Preopens::default() })
    }

    fn prepare(grant: &FsGrants, _: &super::CallSetup<'_>) -> OutsideGrants {
        OutsideGrants { armed: guards_outside(grant), ..OutsideGrants::default() }
    }

    fn add_to_linker<S: super::CallState>(
        linker: &mut Linker<S>,
        _: super::LinkOptions,
    ) -> wasmtime::Result<()> {
        add_to_linker(linker)
    }
}

/// Shadow `get-directories` (to know the guest's handles to the no-access directory) and
/// `stat-at` (refused there). `open-at` is checked by the quota's shadow of it, which calls
/// [`OutsideGrants::refuses`] first.
pub fn add_to_linker<S: FsView>(linker: &mut Linker<S>) -> wasmtime::Result<()> {
    use wasmtime_wasi::p2::bindings::filesystem::preopens::Host as _;
    use wasmtime_wasi::p2::bindings::filesystem::types::{Host as _, HostDescriptor as _};
    linker.allow_shadowing(true);
    linker.instance(FS_PREOPENS)?.func_wrap(
        "get-directories",
        |mut store: StoreContextMut<'_, S>, (): ()| {
            let state = store.data_mut();
            let dirs = state.filesystem().get_directories()?;
            if state.outside().armed
                && let Some((first, _)) = dirs.first()
            {
                let rep = first.rep();
                state.outside().reps.push(rep);
            }
            Ok((dirs,))
        },
    )?;
    linker.instance(FS_TYPES)?.func_wrap_async(
        "[method]descriptor.stat-at",
        |mut store: StoreContextMut<'_, S>,
         (fd, flags, path): (Resource<Descriptor>, fs_types::PathFlags, String)| {
            Box::new(async move {
                let state = store.data_mut();
                // A look-up answers "no such file", as it did before the stand-in existed: a
                // runtime probing paths (Python's imports) must not see a new kind of error.
                if state.outside().refuses(fd.rep(), &path) {
                    return Ok((Err(ErrorCode::NoEntry),));
                }
                let r = state.filesystem().stat_at(fd, flags, path).await;
                Ok((match r {
                    Ok(v) => Ok(v),
                    Err(e) => Err(state.filesystem().convert_error_code(e)?),
                },))
            })
        },
    )?;
    Ok(())
}

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

/// Create the default workspace the first time a call is granted it, and say so once.
pub(crate) fn create_on_first_use(dir: &Path) -> io::Result<()> {
    std::fs::create_dir_all(dir)
        .map_err(|e| io::Error::other(format!("cannot create the workspace {}: {e}", dir.display())))?;
    tracing::warn!(
        "created the workspace {}: the folder plugins granted the workspace see, since the config names none \
         (set `workspace = \"DIR\"` in toolhost.toml or pass --workspace DIR)",
        dir.display()
    );
    Ok(())
}

fn open_dirs(fs: &[FsGrant], b: &mut WasiCtxBuilder) -> io::Result<()> {
    if guards_outside(fs)
        && let Some(dir) = no_access_dir()
    {
        // First, so that every granted directory wins over it (see the module docs).
        b.preopened_dir(dir, "/", FsPerms::ReadOnly)
            .map_err(|e| io::Error::other(format!("cannot open {}: {e}", dir.display())))?;
    }
    for fs in fs {
        if fs.create && !fs.host_path.exists() {
            create_on_first_use(&fs.host_path)?;
        }
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
