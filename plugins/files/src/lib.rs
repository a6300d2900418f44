//! `files`: list, read and change files inside the workspace the operator granted.
//!
//! Paths are relative to the workspace (the directory preopened as `.`). The plugin never sees
//! anything else: `..` and absolute paths outside the grant fail inside the WASI sandbox, and
//! this code also refuses them up front so the model gets a clear message.

use std::path::{Component, Path};

/// Refuse paths that leave the workspace before touching the filesystem.
fn checked(path: &str) -> Result<&Path, String> {
    let p = Path::new(path.trim());
    if p.as_os_str().is_empty() {
        return Err("path is empty".into());
    }
    for c in p.components() {
        match c {
            Component::ParentDir => {
                return Err(format!("`{path}`: `..` is not allowed; paths are relative to the workspace"));
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(format!(
                    "`{path}`: absolute paths are not allowed; paths are relative to the workspace"
                ));
            }
            Component::CurDir | Component::Normal(_) => {}
        }
    }
    Ok(p)
}

fn io_err(action: &str, path: &str, e: std::io::Error) -> String {
    format!("cannot {action} `{path}`: {e}")
}

#[toolhost_sdk::plugin(fs = "workspace:rw")]
mod tools {
    use super::{checked, io_err};
    use std::fs;

    /// List a directory of the workspace: one entry per line, directories end with `/`.
    ///
    /// - `path`: directory relative to the workspace (`.` for the workspace itself)
    #[tool(category = "file", read_only)]
    pub fn ls(path: String) -> Result<String, String> {
        let dir = checked(&path)?;
        let mut entries: Vec<String> = fs::read_dir(dir)
            .map_err(|e| io_err("list", &path, e))?
            .map(|entry| {
                let entry = entry.map_err(|e| io_err("list", &path, e))?;
                let name = entry.file_name().to_string_lossy().into_owned();
                let is_dir = entry.file_type().map(|t| t.is_dir()).unwrap_or(false);
                Ok(if is_dir { format!("{name}/") } else { name })
            })
            .collect::<Result<_, String>>()?;
        entries.sort();
        if entries.is_empty() {
            return Ok(format!("`{path}` is empty"));
        }
        Ok(entries.join("\n"))
    }

    /// Read a text file of the workspace.
    ///
    /// - `path`: file relative to the workspace
    #[tool(category = "file", read_only, output_limit = 20000)]
    pub fn read(path: String) -> Result<String, String> {
        let bytes = fs::read(checked(&path)?).map_err(|e| io_err("read", &path, e))?;
        match String::from_utf8(bytes) {
            Ok(s) => Ok(s),
            Err(e) => Err(format!(
                "`{path}` is not UTF-8 text (invalid byte at offset {}); it looks like a binary file",
                e.utf8_error().valid_up_to()
            )),
        }
    }

    /// A file of the workspace, by its path relative to the workspace: text when it is UTF-8,
    /// bytes otherwise. Read under the plugin's workspace grant, as the `read` tool reads.
    #[resource_template(uri = "file:///{+path}", name = "workspace-file", title = "Workspace file")]
    pub fn workspace_file(path: String) -> Result<toolhost_sdk::Contents, String> {
        let bytes = fs::read(checked(&path)?).map_err(|e| io_err("read", &path, e))?;
        Ok(match String::from_utf8(bytes) {
            Ok(text) => toolhost_sdk::Contents::Text(text),
            Err(e) => toolhost_sdk::Contents::Blob(e.into_bytes()),
        })
    }

    /// The entries of the directory typed so far whose names start with the rest (a directory
    /// ends with `/`), for the template's `path`.
    #[complete(template = "file:///{+path}", argument = "path")]
    pub fn complete_file(value: String) -> Result<Vec<String>, String> {
        let (dir, prefix) = value.rsplit_once('/').unwrap_or((".", &value));
        let base = if dir == "." { String::new() } else { format!("{dir}/") };
        let mut found: Vec<String> = fs::read_dir(checked(dir)?)
            .map_err(|e| io_err("list", dir, e))?
            .filter_map(Result::ok)
            .filter_map(|entry| {
                let name = entry.file_name().to_string_lossy().into_owned();
                let slash = if entry.file_type().is_ok_and(|t| t.is_dir()) { "/" } else { "" };
                name.starts_with(prefix).then(|| format!("{base}{name}{slash}"))
            })
            .collect();
        found.sort();
        found.truncate(100);
        Ok(found)
    }

    /// Create or overwrite a text file in the workspace (parent directories must exist).
    ///
    /// - `path`: file relative to the workspace
    /// - `content`: the new content; commas are part of it
    #[tool(category = "file", rest)]
    pub fn write(path: String, content: String) -> Result<String, String> {
        fs::write(checked(&path)?, content.as_bytes()).map_err(|e| io_err("write", &path, e))?;
        Ok(format!("wrote {} bytes to `{path}`", content.len()))
    }

    /// Create a directory (and missing parents) in the workspace.
    ///
    /// - `path`: directory relative to the workspace
    #[tool(category = "file")]
    pub fn mkdir(path: String) -> Result<String, String> {
        fs::create_dir_all(checked(&path)?).map_err(|e| io_err("create", &path, e))?;
        Ok(format!("created `{path}`"))
    }

    /// Copy a file within the workspace.
    ///
    /// - `from`: existing file
    /// - `to`: destination file (overwritten if it exists)
    #[tool(category = "file")]
    pub fn copy(from: String, to: String) -> Result<String, String> {
        let n = fs::copy(checked(&from)?, checked(&to)?).map_err(|e| io_err("copy", &from, e))?;
        Ok(format!("copied `{from}` to `{to}` ({n} bytes)"))
    }

    /// Rename or move a file or directory within the workspace.
    ///
    /// - `from`: existing path
    /// - `to`: new path
    #[tool(category = "file")]
    pub fn rename(from: String, to: String) -> Result<String, String> {
        fs::rename(checked(&from)?, checked(&to)?).map_err(|e| io_err("rename", &from, e))?;
        Ok(format!("renamed `{from}` to `{to}`"))
    }

    /// The SHA-256 of a file of the workspace, however large: read a MiB at a time, with
    /// progress after each.
    ///
    /// - `path`: file relative to the workspace
    #[tool(category = "file", read_only, timeout_ms = 300000, task_support = "optional")]
    pub fn checksum(path: String) -> Result<String, String> {
        use sha2::Digest;
        use std::io::Read;
        const MIB: u64 = 1024 * 1024;
        let mut file = fs::File::open(checked(&path)?).map_err(|e| io_err("open", &path, e))?;
        let size = file.metadata().map_err(|e| io_err("read", &path, e))?.len();
        let mut hasher = sha2::Sha256::new();
        let mut buf = vec![0u8; MIB as usize];
        let mut done = 0u64;
        loop {
            // A whole MiB per step (a read may return less).
            let mut n = 0;
            while n < buf.len() {
                match file.read(&mut buf[n..]).map_err(|e| io_err("read", &path, e))? {
                    0 => break,
                    k => n += k,
                }
            }
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
            done += n as u64;
            let message = format!("{} of {} MiB", done.div_ceil(MIB), size.div_ceil(MIB));
            toolhost_sdk::progress(done, Some(size.max(done)), &message);
        }
        let hex: String = hasher.finalize().iter().map(|b| format!("{b:02x}")).collect();
        Ok(format!("sha256:{hex}  {path} ({done} bytes)"))
    }

    /// Delete a file, or a directory with everything in it.
    ///
    /// - `path`: file or directory relative to the workspace
    #[tool(category = "file", danger)]
    pub fn delete(path: String) -> Result<String, String> {
        let p = checked(&path)?;
        if p.components().all(|c| matches!(c, std::path::Component::CurDir)) {
            return Err("refusing to delete the workspace itself".into());
        }
        let meta = fs::symlink_metadata(p).map_err(|e| io_err("delete", &path, e))?;
        if meta.is_dir() {
            fs::remove_dir_all(p).map_err(|e| io_err("delete", &path, e))?;
        } else {
            fs::remove_file(p).map_err(|e| io_err("delete", &path, e))?;
        }
        Ok(format!("deleted `{path}`"))
    }
}
