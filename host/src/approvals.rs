//! Approved capability requests, so a new version of a plugin cannot quietly ask for more.
//!
//! The first version of a plugin seen in a plugins folder has its request recorded as
//! approved (trust on first use: the operator put it there). A later version whose request
//! goes beyond the approved one — a new host, env var, secret, directory, or `rw` where `ro`
//! was approved — is *held*: it is not activated, the version already loaded keeps serving,
//! and `list` shows the pending request until the operator runs `toolhost approve PLUGIN`.
//! Approval never grants anything by itself: the effective capability is still request ∩ grant.
//!
//! The record is `.toolhost-approvals.json` in the plugins folder (a dotfile, so discovery
//! skips it, and written atomically; a running host's watcher notices `approve` writing it).
//!
//! A deployment whose plugins folder is read-only (a shared volume, an image layer) pins the
//! approvals in `toolhost.toml` instead ([`ApprovalLock`], `[approvals.plugin.NAME]`, printed by
//! `toolhost approve NAME --print`): an entry there is the only word on that plugin, by its
//! approved request, its file's SHA-256, or both. With `[approvals] locked = true`, a plugin
//! without an entry is held (no trust on first use) and the approvals file is neither read nor
//! written, so every replica started from the same folder and config serves the same registry.

use crate::manifest::{Capabilities, FsMode, Manifest};
use crate::net::host_matches;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// `[approvals]` as written in `toolhost.toml`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawApprovals {
    /// Only the plugins listed here are approved (no trust on first use, no approvals file).
    locked: Option<bool>,
    #[serde(default)]
    plugin: BTreeMap<String, RawPinned>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPinned {
    /// The approved request (what `list` shows as requested).
    request: Option<Capabilities>,
    /// The SHA-256 of the one approved file, as hex (`sha256:` prefix optional).
    sha256: Option<String>,
}

/// One plugin's approval pinned in the config: its request must be within `request` and its
/// file must hash to `sha256`, for whichever of the two is given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pinned {
    pub request: Option<Capabilities>,
    pub sha256: Option<[u8; 32]>,
}

/// `[approvals]`, resolved.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApprovalLock {
    /// Plugins without an entry are held, and `.toolhost-approvals.json` is not used.
    pub locked: bool,
    pub plugins: BTreeMap<String, Pinned>,
}

impl ApprovalLock {
    pub fn resolve(raw: RawApprovals) -> Result<ApprovalLock, String> {
        let mut out = ApprovalLock { locked: raw.locked.unwrap_or(false), plugins: BTreeMap::new() };
        for (name, p) in raw.plugin {
            let key = format!("approvals.plugin.{name}");
            let sha256 = match p.sha256 {
                None => None,
                Some(text) => Some(parse_sha256(&text).ok_or_else(|| {
                    format!("{key}.sha256: {text:?} is not 64 hex digits (as `toolhost approve {name} --print --sha256` prints it)")
                })?),
            };
            if p.request.is_none() && sha256.is_none() {
                return Err(format!(
                    "{key}: give `request = {{ … }}`, `sha256 = \"…\"` or both (`toolhost approve {name} --print` prints the entry)"
                ));
            }
            out.plugins.insert(name, Pinned { request: p.request, sha256 });
        }
        Ok(out)
    }

    /// Whether the config says anything about approvals (then the file is not the only source).
    pub fn is_empty(&self) -> bool {
        !self.locked && self.plugins.is_empty()
    }
}

fn parse_sha256(text: &str) -> Option<[u8; 32]> {
    let hex = text.strip_prefix("sha256:").unwrap_or(text);
    if hex.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// Lower-case hex of a SHA-256.
pub fn hex(hash: &[u8; 32]) -> String {
    crate::discovery::hex(hash)
}

/// The `[approvals.plugin.NAME]` entry that pins `m` (its request, and with `sha256` also this
/// exact file), as `toolhost approve NAME --print` prints it for pasting into `toolhost.toml`.
pub fn lock_entry(m: &Manifest, file: &Path, hash: &[u8; 32], sha256: bool) -> String {
    let strings = |v: &[String]| {
        let quoted: Vec<String> = v.iter().map(|s| toml_string(s)).collect();
        format!("[{}]", quoted.join(", "))
    };
    let c = &m.capabilities;
    let fs: Vec<String> =
        c.fs.iter()
            .map(|f| format!("{{ path = {}, mode = \"{}\" }}", toml_string(&f.path), f.mode))
            .collect();
    let mut out = format!(
        "[approvals.plugin.{}]   # {} v{} ({})\n",
        m.name,
        m.name,
        m.version,
        crate::discovery::file_name(file)
    );
    if sha256 {
        out.push_str(&format!("sha256 = \"{}\"\n", hex(hash)));
    }
    out.push_str(&format!(
        "request = {{ fs = [{}], env = {}, net = {}, secrets = {}, exec = {} }}\n",
        fs.join(", "),
        strings(&c.env),
        strings(&c.net),
        strings(&c.secrets),
        strings(&c.exec)
    ));
    out
}

/// A TOML basic string (JSON's escapes are a subset TOML reads the same way).
fn toml_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

/// The approvals file name inside the plugins folder.
pub const FILE: &str = ".toolhost-approvals.json";

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Stored {
    format: u32,
    /// Plugin name → the approved request.
    plugins: BTreeMap<String, Capabilities>,
}

/// A plugin version held back until its request is approved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Pending {
    pub plugin: String,
    pub version: String,
    pub file: PathBuf,
    /// What it requests beyond the approved request, e.g. `net *.example.org`.
    pub extra: Vec<String>,
}

impl std::fmt::Display for Pending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "plugin `{}` v{} ({}) requests more than was approved: {}; run `toolhost approve {}` to activate it",
            self.plugin,
            self.version,
            crate::discovery::file_name(&self.file),
            self.extra.join(", "),
            self.plugin
        )
    }
}

/// The approvals of one plugins folder.
#[derive(Debug)]
pub struct Approvals {
    path: PathBuf,
    stored: Stored,
    dirty: bool,
    /// Approvals pinned in the config, which take precedence over the file.
    lock: Arc<ApprovalLock>,
}

impl Approvals {
    /// Read the approvals of `plugins_dir`. A missing file is empty; an unreadable or corrupt
    /// one is reported and treated as empty only for plugins it does not name (nothing in it is
    /// trusted, and nothing is written over it).
    pub fn load(plugins_dir: &Path) -> Approvals {
        let path = plugins_dir.join(FILE);
        let stored = match std::fs::read(&path) {
            Ok(bytes) => match serde_json::from_slice::<Stored>(&bytes) {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!(
                        "{}: {e}; ignoring it (approvals will be recorded afresh)",
                        path.display()
                    );
                    Stored::default()
                }
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Stored::default(),
            Err(e) => {
                tracing::warn!("cannot read {}: {e}", path.display());
                Stored::default()
            }
        };
        Approvals { path, stored, dirty: false, lock: Arc::default() }
    }

    /// The approvals a host with `config` uses: those pinned in `[approvals]` first, then (unless
    /// `locked`) the folder's file.
    pub fn for_config(config: &crate::config::Config) -> Approvals {
        let mut a = if config.approvals.locked {
            Approvals {
                path: config.plugins_dir.join(FILE),
                stored: Stored::default(),
                dirty: false,
                lock: Arc::default(),
            }
        } else {
            Approvals::load(&config.plugins_dir)
        };
        a.lock = Arc::new(config.approvals.clone());
        a
    }

    /// [`Approvals::check`] for a loaded file: a plugin pinned in the config is judged by its
    /// entry there alone (request and/or the file's SHA-256); under `locked`, an unlisted one is held.
    pub fn check_file(&mut self, m: &Manifest, hash: &[u8; 32]) -> Result<(), Vec<String>> {
        let Some(pin) = self.lock.plugins.get(&m.name) else {
            if self.lock.locked {
                return Err(vec![format!(
                    "approval: plugin `{}` is not in [approvals] of the config, which is locked (add the entry `toolhost approve {} --print` prints)",
                    m.name, m.name
                )]);
            }
            return self.check(m);
        };
        let mut out = Vec::new();
        if let Some(want) = &pin.sha256
            && want != hash
        {
            out.push(format!(
                "file sha256:{} (approved: sha256:{}; update [approvals.plugin.{}] with `toolhost approve {} --print --sha256`)",
                hex(hash),
                hex(want),
                m.name,
                m.name
            ));
        }
        if let Some(request) = &pin.request {
            out.extend(extra(&m.capabilities, request));
        }
        if out.is_empty() { Ok(()) } else { Err(out) }
    }

    /// What the operator approved for `plugin`, if anything was recorded.
    pub fn get(&self, plugin: &str) -> Option<&Capabilities> {
        self.stored.plugins.get(plugin)
    }

    /// Check a manifest: `Ok` if its request is within the approved one (recording it if this
    /// plugin was never seen), otherwise the extra requests.
    pub fn check(&mut self, m: &Manifest) -> Result<(), Vec<String>> {
        match self.stored.plugins.get(&m.name) {
            None => {
                self.approve(&m.name, &m.capabilities);
                Ok(())
            }
            Some(approved) => {
                let extra = extra(&m.capabilities, approved);
                if extra.is_empty() { Ok(()) } else { Err(extra) }
            }
        }
    }

    /// Record `caps` as approved for `plugin` (replacing what was approved).
    pub fn approve(&mut self, plugin: &str, caps: &Capabilities) {
        if self.stored.plugins.get(plugin) != Some(caps) {
            self.stored.plugins.insert(plugin.to_string(), caps.clone());
            self.dirty = true;
        }
    }

    /// Write the file if anything changed (atomically: temp file, then rename).
    pub fn save(&mut self) -> std::io::Result<()> {
        // Under a locked config nothing is recorded: the folder may be read-only.
        if !self.dirty || self.lock.locked {
            return Ok(());
        }
        self.stored.format = 1;
        let text = serde_json::to_string_pretty(&self.stored).map_err(std::io::Error::other)?;
        let tmp = self.path.with_file_name(format!("{FILE}.tmp"));
        std::fs::write(&tmp, text + "\n")?;
        std::fs::rename(&tmp, &self.path)?;
        self.dirty = false;
        Ok(())
    }

    /// [`Approvals::save`], logging a failure (a read-only plugins folder still works; the
    /// approvals then last for this process only).
    pub fn save_or_warn(&mut self) {
        if let Err(e) = self.save() {
            tracing::warn!("cannot record plugin approvals in {}: {e}", self.path.display());
            self.dirty = false;
        }
    }
}

/// The parts of `requested` not covered by `approved`, one line each.
pub fn extra(requested: &Capabilities, approved: &Capabilities) -> Vec<String> {
    let mut out = Vec::new();
    for f in &requested.fs {
        let ok = approved.fs.iter().any(|a| a.path == f.path && a.mode >= f.mode);
        if !ok {
            let was = approved.fs.iter().find(|a| a.path == f.path);
            out.push(match was {
                Some(a) if a.mode == FsMode::ReadOnly => format!("fs {}:{} (approved: ro)", f.path, f.mode),
                _ => format!("fs {}:{}", f.path, f.mode),
            });
        }
    }
    for e in &requested.env {
        if !approved.env.contains(e) {
            out.push(format!("env {e}"));
        }
    }
    for n in &requested.net {
        let covered = approved.net.iter().any(|a| {
            a == n
                || a == "*"
                || (a.starts_with("*.") && n != "*" && host_matches(a, n.trim_start_matches("*.")))
        });
        if !covered {
            out.push(format!("net {n}"));
        }
    }
    for s in &requested.secrets {
        if !approved.secrets.contains(s) {
            out.push(format!("secret {s}"));
        }
    }
    for e in &requested.exec {
        if !approved.exec.iter().any(|a| a == e || a == "*") {
            out.push(format!("exec {e}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::FsRequest;

    fn caps(net: &[&str], fs: Option<FsMode>) -> Capabilities {
        Capabilities {
            net: net.iter().map(|s| s.to_string()).collect(),
            fs: fs.map(|mode| FsRequest { path: "workspace".into(), mode }).into_iter().collect(),
            ..Default::default()
        }
    }

    #[test]
    fn more_is_extra_less_is_not() {
        let approved = caps(&["example.com", "*.wikipedia.org"], Some(FsMode::ReadOnly));
        assert!(extra(&caps(&["example.com"], None), &approved).is_empty());
        assert!(
            extra(&caps(&["en.wikipedia.org", "*.de.wikipedia.org"], Some(FsMode::ReadOnly)), &approved)
                .is_empty()
        );
        assert_eq!(extra(&caps(&["evil.com"], None), &approved), ["net evil.com"]);
        assert_eq!(extra(&caps(&["*"], None), &approved), ["net *"]);
        assert_eq!(extra(&caps(&[], Some(FsMode::ReadWrite)), &approved), ["fs workspace:rw (approved: ro)"]);
    }

    fn manifest(name: &str, net: &[&str]) -> Manifest {
        Manifest {
            format: 1,
            name: name.into(),
            version: "1".into(),
            description: String::new(),
            capabilities: caps(net, None),
            tools: vec![],
        }
    }

    fn lock(toml_text: &str) -> Result<ApprovalLock, String> {
        #[derive(Deserialize)]
        struct Doc {
            approvals: RawApprovals,
        }
        let doc: Doc = toml::from_str(toml_text).map_err(|e| e.to_string())?;
        ApprovalLock::resolve(doc.approvals)
    }

    #[test]
    fn a_printed_entry_parses_back_and_pins_the_request_and_the_file() {
        let m = manifest("web", &["example.com"]);
        let hash = crate::registry::content_hash(b"web v1");
        let entry = lock_entry(&m, Path::new("/p/web.wasm"), &hash, true);
        assert!(entry.starts_with("[approvals.plugin.web]   # web v1 (web.wasm)\n"), "{entry}");
        let pinned = lock(&format!("[approvals]\nlocked = true\n{entry}")).unwrap();
        assert!(pinned.locked);
        assert_eq!(pinned.plugins["web"].sha256, Some(hash));
        assert_eq!(pinned.plugins["web"].request.as_ref(), Some(&m.capabilities));

        let dir = tempfile::tempdir().unwrap();
        let config = crate::config::Config {
            plugins_dir: dir.path().to_path_buf(),
            approvals: pinned,
            ..crate::config::Config::default()
        };
        let mut a = Approvals::for_config(&config);
        assert_eq!(a.check_file(&m, &hash), Ok(()));
        let other = crate::registry::content_hash(b"web v2");
        let e = a.check_file(&m, &other).unwrap_err().join("; ");
        assert!(e.contains(&format!("file sha256:{}", hex(&other))) && e.contains("--print --sha256"), "{e}");
        let e = a.check_file(&manifest("web", &["example.com", "evil.com"]), &hash).unwrap_err();
        assert_eq!(e, ["net evil.com"]);
        // Locked: a plugin without an entry is held, not trusted on first sight, and nothing is saved.
        let e = a.check_file(&manifest("notes", &[]), &hash).unwrap_err().join("; ");
        assert!(e.contains("not in [approvals]") && e.contains("toolhost approve notes --print"), "{e}");
        a.save().unwrap();
        assert!(!dir.path().join(FILE).exists(), "a locked config writes no approvals file");
    }

    #[test]
    fn pinned_entries_are_checked_when_the_config_is_read() {
        let e = lock("[approvals.plugin.web]\n").unwrap_err();
        assert!(e.contains("approvals.plugin.web") && e.contains("--print"), "{e}");
        let e = lock("[approvals.plugin.web]\nsha256 = \"abc\"\n").unwrap_err();
        assert!(e.contains("approvals.plugin.web.sha256") && e.contains("64 hex digits"), "{e}");
        let e = lock("[approvals.plugin.web]\nrequest = { nett = [] }\n").unwrap_err();
        assert!(e.contains("nett"), "{e}");
        let e = lock("[approvals]\nlock = true\n").unwrap_err();
        assert!(e.contains("lock"), "{e}");
        let full = format!("[approvals.plugin.web]\nsha256 = \"sha256:{}\"\n", "ab".repeat(32));
        assert_eq!(lock(&full).unwrap().plugins["web"].sha256, Some([0xab; 32]));
    }

    #[test]
    fn first_sight_is_recorded_and_saved() {
        let dir = tempfile::tempdir().unwrap();
        let m = |net: &[&str]| Manifest {
            format: 1,
            name: "web".into(),
            version: "1".into(),
            description: String::new(),
            capabilities: caps(net, None),
            tools: vec![],
        };
        let mut a = Approvals::load(dir.path());
        assert!(a.check(&m(&["example.com"])).is_ok());
        a.save().unwrap();
        let mut a = Approvals::load(dir.path());
        assert_eq!(a.check(&m(&["example.com", "evil.com"])), Err(vec!["net evil.com".to_string()]));
        a.approve("web", &m(&["example.com", "evil.com"]).capabilities);
        a.save().unwrap();
        assert!(Approvals::load(dir.path()).check(&m(&["evil.com"])).is_ok());
    }
}
