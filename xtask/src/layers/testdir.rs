//! Fixture crates for the tests: a folder of files under the system's temp dir, removed on drop.

use std::path::{Path, PathBuf};

#[derive(Debug)]
pub struct TempTree(PathBuf);

impl TempTree {
    /// Writes `files` (path relative to the folder, contents) into a fresh folder named after
    /// the test and this process.
    pub fn new(test: &str, files: &[(&str, &str)]) -> TempTree {
        let dir = std::env::temp_dir().join(format!("xtask-layers-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for (path, text) in files {
            let path = dir.join(path);
            std::fs::create_dir_all(path.parent().expect("a file has a folder"))
                .expect("create fixture folder");
            std::fs::write(&path, text).expect("write fixture file");
        }
        TempTree(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempTree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
