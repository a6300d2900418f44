//! Finding plugin files: `*.wasm` in the plugins folder, dotfiles and editor/temp files ignored,
//! oversized files refused, results in file-name order so every later rule is deterministic.

use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A plugin file read whole from the folder.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub path: PathBuf,
    pub bytes: Arc<Vec<u8>>,
    /// SHA-256 of `bytes`, computed once: it keys the approvals and the reload's
    /// unchanged-file check.
    pub hash: [u8; 32],
    /// SHA-256 of the code alone (toolhost's own custom sections left out,
    /// [`toolhost_spec::sections::code_sha256`]): it keys the compile cache, so a new manifest
    /// or signature on the same code is not compiled again.
    pub code: [u8; 32],
}

impl Candidate {
    /// The file name, for messages.
    pub fn file_name(&self) -> String {
        file_name(&self.path)
    }
}

/// A plugin file that could not be loaded, and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct LoadFailure {
    pub file: PathBuf,
    pub reason: String,
}

impl std::fmt::Display for LoadFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.file.display(), self.reason)
    }
}

/// SHA-256 of a plugin file's bytes.
pub use toolhost_spec::digest::sha256 as content_hash;

pub fn file_name(p: &Path) -> String {
    p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| p.display().to_string())
}

/// Whether a directory entry name is a plugin candidate.
pub fn is_candidate_name(name: &str) -> bool {
    name.ends_with(".wasm")
        && name.len() > ".wasm".len()
        && !name.starts_with('.')
        && !name.starts_with('#')
        && !name.starts_with('~')
        && !name.contains(".tmp")
        && !name.contains(".part")
}

/// Read every candidate in `dir`, in file-name order. Files over `max_bytes` and unreadable
/// files become failures; a missing folder is an error naming it.
pub fn scan(dir: &Path, max_bytes: u64) -> std::io::Result<(Vec<Candidate>, Vec<LoadFailure>)> {
    let (found, failures) = scan_then(dir, max_bytes, |_| ())?;
    Ok((found.into_iter().map(|(c, ())| c).collect(), failures))
}

/// What [`scan_then`] found: each readable file with what `then` made of it, and the failures.
pub type Scanned<T> = (Vec<(Candidate, T)>, Vec<LoadFailure>);

/// [`scan`], with `then` applied to each candidate right after it is read, on the same core
/// (while its bytes are still in the cache: the manifest check at start-up).
pub fn scan_then<T: Send>(
    dir: &Path,
    max_bytes: u64,
    then: impl Fn(&Candidate) -> T + Sync,
) -> std::io::Result<Scanned<T>> {
    let entries = std::fs::read_dir(dir).map_err(|e| {
        std::io::Error::new(e.kind(), format!("cannot read plugins folder {}: {e}", dir.display()))
    })?;
    let mut paths: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| is_candidate_name(&e.file_name().to_string_lossy()))
        .map(|e| e.path())
        .collect();
    paths.sort();
    // Reading and hashing (two SHA-256 passes over each file) is most of a warm start's work:
    // the files are shared out over the cores, and the results kept in file-name order.
    let results = crate::parallel::map(&paths, |path| match read_capped(path, max_bytes) {
        Ok(Some(bytes)) => {
            let hash = content_hash(&bytes);
            let code = toolhost_spec::sections::code_sha256(&bytes, hash);
            let c = Candidate { hash, code, path: path.clone(), bytes: Arc::new(bytes) };
            let t = then(&c);
            Some(Ok((c, t)))
        }
        Ok(None) => None, // a directory named *.wasm, or a file that vanished
        Err(reason) => Some(Err(LoadFailure { file: path.clone(), reason })),
    });
    let mut found = Vec::new();
    let mut failures = Vec::new();
    for r in results.into_iter().flatten() {
        match r {
            Ok(c) => found.push(c),
            Err(f) => failures.push(f),
        }
    }
    Ok((found, failures))
}

/// Read a whole file if it is a regular file no larger than `max_bytes`.
pub fn read_capped(path: &Path, max_bytes: u64) -> Result<Option<Vec<u8>>, String> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read: {e}")),
    };
    if !meta.is_file() {
        return Ok(None);
    }
    if meta.len() > max_bytes {
        return Err(format!(
            "file is {} MiB, over the {} MiB limit (limits.max_plugin_mb)",
            meta.len().div_ceil(1024 * 1024),
            max_bytes / (1024 * 1024)
        ));
    }
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|e| format!("cannot read: {e}"))?;
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    // Read at most one byte past the cap, so a file growing while we read is still bounded.
    file.take(max_bytes + 1).read_to_end(&mut bytes).map_err(|e| format!("cannot read: {e}"))?;
    if bytes.len() as u64 > max_bytes {
        return Err(format!("file grew over the {} MiB limit while being read", max_bytes / (1024 * 1024)));
    }
    Ok(Some(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidate_names() {
        for ok in ["files.wasm", "a-b_c.wasm"] {
            assert!(is_candidate_name(ok), "{ok}");
        }
        for no in [
            ".files.wasm",
            ".#files.wasm",
            "files.wasm~",
            "files.wasm.tmp",
            "files.tmp.wasm",
            "x.part.wasm",
            ".wasm",
            "files.cwasm",
            "files.wat",
            "#files.wasm#",
        ] {
            assert!(!is_candidate_name(no), "{no}");
        }
    }

    #[test]
    fn scan_orders_filters_and_caps() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("b.wasm"), b"bbbb").unwrap();
        std::fs::write(dir.path().join("a.wasm"), b"aa").unwrap();
        std::fs::write(dir.path().join(".hidden.wasm"), b"x").unwrap();
        std::fs::write(dir.path().join("notes.txt"), b"x").unwrap();
        std::fs::create_dir(dir.path().join("dir.wasm")).unwrap();
        let (found, failures) = scan(dir.path(), 3).unwrap();
        assert_eq!(found.iter().map(Candidate::file_name).collect::<Vec<_>>(), ["a.wasm"]);
        assert_eq!(failures.len(), 1);
        assert!(failures[0].reason.contains("limit"), "{}", failures[0]);
        let err = scan(&dir.path().join("missing"), 3).unwrap_err();
        assert!(err.to_string().contains("missing"), "{err}");
    }
}
