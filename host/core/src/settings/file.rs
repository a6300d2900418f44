//! The config file as read: one TOML table whose top-level sections each owner claims — core's
//! here, the front ends' and the CLI's in their crates — and a key tracker that refuses, naming
//! the key and the file, what nobody claimed (Spin's runtime-config loader does the same).

use super::invalid::{Invalid, Problem};
use serde::de::DeserializeOwned;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// File name looked up in the current directory when `--config` is not given.
pub const DEFAULT_FILE: &str = "toolhost.toml";

/// A config problem, naming the file and the key.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("config {path}: {message}")]
    Invalid { path: PathBuf, message: String },
    /// A key its owner refused, naming the key ([`Invalid::key`]) and what is wrong.
    #[error("config {path}: {error}")]
    Key { path: PathBuf, error: Invalid },
    #[error("{0}")]
    Flag(String),
}

/// A parsed config file whose sections are taken by their owners.
#[derive(Debug)]
pub struct ConfigFile {
    /// Where it came from, if a file.
    pub source: Option<PathBuf>,
    /// The directory relative paths in it resolve against.
    pub base: PathBuf,
    table: toml::Table,
    claimed: Mutex<BTreeSet<String>>,
}

impl ConfigFile {
    /// `path`, or `./toolhost.toml` if it exists, or an empty config (which grants nothing).
    pub fn load(path: Option<&Path>) -> Result<ConfigFile, ConfigError> {
        match path {
            Some(p) => Self::read(p),
            None => {
                let default = Path::new(DEFAULT_FILE);
                if default.is_file() {
                    Self::read(default)
                } else {
                    let base = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
                    Self::parse("", &base, None)
                }
            }
        }
    }

    /// Read a config file; relative paths in it are relative to the file's directory.
    pub fn read(path: &Path) -> Result<ConfigFile, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| ConfigError::Read { path: path.to_path_buf(), source })?;
        let abs = absolute(path);
        let base = abs.parent().map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("/"));
        Self::parse(&text, &base, Some(abs))
    }

    /// Parse config text; relative paths resolve against `base`.
    pub fn parse(text: &str, base: &Path, source: Option<PathBuf>) -> Result<ConfigFile, ConfigError> {
        let file = ConfigFile {
            source,
            base: base.to_path_buf(),
            table: toml::Table::new(),
            claimed: Mutex::default(),
        };
        let table: toml::Table =
            toml::from_str(text).map_err(|e| file.invalid(e.to_string().trim_end().to_string()))?;
        Ok(ConfigFile { table, ..file })
    }

    /// The top-level key `key` (a section such as `limits`, or a value such as `plugins`),
    /// deserialized strictly into `T` (its own unknown keys are errors); `T::default()` when
    /// absent. Claims the key.
    pub fn section<T: DeserializeOwned + Default>(&self, key: &str) -> Result<T, ConfigError> {
        self.claimed.lock().unwrap_or_else(|p| p.into_inner()).insert(key.to_string());
        let Some(value) = self.table.get(key) else { return Ok(T::default()) };
        let de = value.clone();
        serde_path_to_error::deserialize(de).map_err(|e| {
            let at = e.path().to_string();
            let at = if at == "." { key.to_string() } else { format!("{key}.{at}") };
            self.invalid_key(Invalid::new(at, Problem::Says(e.inner().to_string().trim_end().to_string())))
        })
    }

    /// An error about this file.
    pub fn invalid(&self, message: impl Into<String>) -> ConfigError {
        ConfigError::Invalid { path: self.path(), message: message.into() }
    }

    /// A key of this file its owner refused.
    pub fn invalid_key(&self, error: Invalid) -> ConfigError {
        ConfigError::Key { path: self.path(), error }
    }

    fn path(&self) -> PathBuf {
        self.source.clone().unwrap_or_else(|| PathBuf::from("<config>"))
    }

    /// Refuse the top-level keys no owner claimed, naming the first and the keys there are.
    pub fn finish(&self) -> Result<(), ConfigError> {
        let claimed = self.claimed.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(key) = self.table.keys().find(|k| !claimed.contains(*k)) {
            let known: Vec<String> = claimed.iter().map(|k| format!("`{k}`")).collect();
            return Err(self.invalid(format!("unknown field `{key}`, expected one of {}", known.join(", "))));
        }
        Ok(())
    }
}

pub(crate) fn absolute(p: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir().map(|c| c.join(p)).unwrap_or_else(|_| p.to_path_buf())
    }
}

/// Canonical path if it exists, else the lexically absolute one.
pub(crate) fn normalize(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Default, serde::Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Demo {
        size: Option<u32>,
    }

    #[test]
    fn sections_are_claimed_and_the_rest_refused() {
        let f = ConfigFile::parse(
            "[demo]\nsize = 3\n[other]\nx = 1\n",
            Path::new("/b"),
            Some("/b/t.toml".into()),
        )
        .unwrap();
        assert_eq!(f.section::<Demo>("demo").unwrap(), Demo { size: Some(3) });
        assert_eq!(f.section::<Demo>("absent").unwrap(), Demo::default());
        let e = f.finish().unwrap_err().to_string();
        assert!(
            e.contains("/b/t.toml") && e.contains("unknown field `other`") && e.contains("`demo`"),
            "{e}"
        );
        let _ = f.section::<toml::Table>("other").unwrap();
        assert!(f.finish().is_ok());
    }

    #[test]
    fn errors_name_the_key_path_and_the_file() {
        let f =
            ConfigFile::parse("[demo]\nsize = \"big\"\n", Path::new("/b"), Some("/b/t.toml".into())).unwrap();
        let e = f.section::<Demo>("demo").unwrap_err();
        assert!(matches!(&e, ConfigError::Key { error, .. } if error.key == "demo.size"), "{e:?}");
        let e = e.to_string();
        assert!(e.starts_with("config /b/t.toml: demo.size: invalid type"), "{e}");
        let f = ConfigFile::parse("[demo]\nsise = 1\n", Path::new("/b"), None).unwrap();
        let e = f.section::<Demo>("demo").unwrap_err().to_string();
        assert!(e.contains("<config>") && e.contains("unknown field `sise`"), "{e}");
        assert!(ConfigFile::parse("[demo", Path::new("/b"), None).is_err());
    }
}
