//! Approved capability requests, so a new version of a plugin cannot quietly ask for more.
//!
//! The first version of a plugin seen in a plugins folder has its request recorded as
//! approved (trust on first use: the operator put it there). A later version whose request
//! goes beyond the approved one — a new host, env var, secret, directory, or `rw` where `ro`
//! was approved — is *held*: it is not activated, the version already loaded keeps serving,
//! and `list` shows the pending request until the operator runs `toolhost approve PLUGIN`.
//! Approval never grants anything by itself: the effective capability is still request ∩ grant.
//!
//! The approved version's *presentation* is recorded too ([`Presentation`]): which tools say
//! `danger` and which claim `readOnly` (MCP clients may run a read-only tool without asking).
//! A later version that presents a tool as less dangerous — drops `danger`, newly claims
//! `readOnly`, or replaces a dangerous tool by a new one without `danger` — is held exactly like
//! one that requests more ([`weakened`]).
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

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use toolhost_spec::manifest::{Capabilities, FsMode, Manifest};

pub mod settings;

pub use settings::{ApprovalLock, Pinned, Presentation, RawApprovals};

/// How `now` presents its tools as less dangerous than the approved `was`, one line each:
/// a tool that dropped `danger`, a tool that newly claims `readOnly` (new tools included), and
/// — when a dangerous tool disappeared — every new tool without `danger` (a dangerous `delete`
/// renamed to a harmless-looking `remove` is the same tool).
pub fn weakened(now: &Presentation, was: &Presentation) -> Vec<String> {
    let mut out = Vec::new();
    for t in &now.tools {
        if was.danger.contains(t) && !now.danger.contains(t) {
            out.push(format!("tool {t} is no longer marked dangerous"));
        }
        if now.read_only.contains(t) && !was.read_only.contains(t) {
            out.push(if was.tools.contains(t) {
                format!("tool {t} newly claims to be read-only")
            } else {
                format!("new tool {t} claims to be read-only")
            });
        }
    }
    let gone: Vec<&String> = was.danger.iter().filter(|t| !now.tools.contains(*t)).collect();
    if !gone.is_empty() {
        let gone: Vec<&str> = gone.iter().map(|t| t.as_str()).collect();
        for t in now.tools.iter().filter(|t| !was.tools.contains(*t) && !now.danger.contains(*t)) {
            out.push(format!(
                "new tool {t} is not marked dangerous while dangerous {} disappeared",
                gone.join(", ")
            ));
        }
    }
    out
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
        out.push_str(&format!("sha256 = \"{}\"\n", hex::encode(hash)));
    }
    let kv = if c.kv.is_empty() { String::new() } else { format!(", kv = {}", strings(&c.kv)) };
    out.push_str(&format!(
        "request = {{ fs = [{}], env = {}, net = {}, secrets = {}, exec = {}{kv} }}\n",
        fs.join(", "),
        strings(&c.env),
        strings(&c.net),
        strings(&c.secrets),
        strings(&c.exec)
    ));
    let p = Presentation::of(m);
    let set = |v: &std::collections::BTreeSet<String>| strings(&v.iter().cloned().collect::<Vec<_>>());
    out.push_str(&format!(
        "presentation = {{ tools = {}, danger = {}, read_only = {} }}\n",
        set(&p.tools),
        set(&p.danger),
        set(&p.read_only)
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
    /// Plugin name → how the approved version presented its tools (format 2; a plugin approved
    /// before it has its presentation recorded the next time it is checked).
    #[serde(default)]
    presentation: BTreeMap<String, Presentation>,
    /// Plugin name → who approved its recorded request with `toolhost approve` or the console
    /// (absent: recorded on first sight, or before approvals said by whom).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    approved_by: BTreeMap<String, ApprovedBy>,
}

/// Who approved a plugin's request, and when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovedBy {
    /// The approver's principal (`identity::Principal::key`: `local:USER`, `token:NAME`,
    /// `oauth:ISSUER#SUBJECT`).
    pub who: String,
    /// When (RFC 3339, UTC).
    pub at: String,
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
    /// The plugins whose entries this value changed (and [`Approvals::save`] writes).
    changed: BTreeSet<String>,
    /// Approvals pinned in the config, which take precedence over the file.
    lock: Arc<ApprovalLock>,
}

impl Approvals {
    /// Read the approvals of `plugins_dir`. A missing file is empty; an unreadable or corrupt
    /// one is reported and treated as empty (nothing in it is trusted): approvals are recorded
    /// afresh, and the next save replaces it.
    pub fn load(plugins_dir: &Path) -> Approvals {
        let path = plugins_dir.join(FILE);
        let stored = read_stored(&path);
        Approvals { path, stored, changed: BTreeSet::new(), lock: Arc::default() }
    }

    /// The approvals of `plugins_dir` under the config's `[approvals]` (`lock`): those pinned
    /// there first, then (unless `locked`) the folder's file.
    pub fn for_folder(plugins_dir: &Path, lock: &ApprovalLock) -> Approvals {
        let mut a = if lock.locked {
            Approvals {
                path: plugins_dir.join(FILE),
                stored: Stored::default(),
                changed: BTreeSet::new(),
                lock: Arc::default(),
            }
        } else {
            Approvals::load(plugins_dir)
        };
        a.lock = Arc::new(lock.clone());
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
                hex::encode(hash),
                hex::encode(want),
                m.name,
                m.name
            ));
        }
        if let Some(request) = &pin.request {
            out.extend(extra(&m.capabilities, request));
        }
        if let Some(p) = &pin.presentation {
            out.extend(weakened(&Presentation::of(m), p));
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
        let Some(approved) = self.stored.plugins.get(&m.name) else {
            self.approve(m);
            return Ok(());
        };
        let mut out = extra(&m.capabilities, approved);
        let now = Presentation::of(m);
        match self.stored.presentation.get(&m.name) {
            Some(was) => out.extend(weakened(&now, was)),
            // Approved by a version of toolhost that did not record presentations: this one
            // is recorded as the approved presentation from now on.
            None if out.is_empty() => {
                self.stored.presentation.insert(m.name.clone(), now);
                self.changed.insert(m.name.clone());
            }
            None => {}
        }
        if out.is_empty() { Ok(()) } else { Err(out) }
    }

    /// Record `m`'s request and presentation as approved for its plugin (replacing what was
    /// approved, and forgetting who approved that).
    pub fn approve(&mut self, m: &Manifest) {
        let presentation = Presentation::of(m);
        if self.stored.plugins.get(&m.name) != Some(&m.capabilities)
            || self.stored.presentation.get(&m.name) != Some(&presentation)
        {
            self.stored.plugins.insert(m.name.clone(), m.capabilities.clone());
            self.stored.presentation.insert(m.name.clone(), presentation);
            self.stored.approved_by.remove(&m.name);
            self.changed.insert(m.name.clone());
        }
    }

    /// [`Approvals::approve`] by a person (`toolhost approve`, the console): the record says
    /// who and when.
    pub fn approve_by(&mut self, m: &Manifest, who: &crate::identity::Principal) {
        self.approve(m);
        let at = crate::settings::grants::rfc3339(std::time::SystemTime::now());
        self.stored.approved_by.insert(m.name.clone(), ApprovedBy { who: who.key(), at });
        self.changed.insert(m.name.clone());
    }

    /// Who approved `plugin`'s recorded request, if a person did.
    pub fn approved_by(&self, plugin: &str) -> Option<&ApprovedBy> {
        self.stored.approved_by.get(plugin)
    }

    /// What `m` would newly have approved beyond what is recorded for its plugin: extra
    /// requests and weakened presentation, one line each (empty for a plugin never approved).
    pub fn pending(&self, m: &Manifest) -> Vec<String> {
        let Some(approved) = self.stored.plugins.get(&m.name) else { return Vec::new() };
        let mut out = extra(&m.capabilities, approved);
        if let Some(was) = self.stored.presentation.get(&m.name) {
            out.extend(weakened(&Presentation::of(m), was));
        }
        out
    }

    /// Write what this value changed, if anything, into the file as it is now (atomically:
    /// temp file, then rename): a change made meanwhile by another — the console's approve
    /// during a folder reload, `toolhost approve` beside a server — is kept, one at a time
    /// ([`crate::files::changing`]). The value then holds the file as written.
    pub fn save(&mut self) -> std::io::Result<()> {
        // Under a locked config nothing is recorded: the folder may be read-only.
        if self.changed.is_empty() || self.lock.locked {
            return Ok(());
        }
        let _one_at_a_time = crate::files::changing(&self.path);
        let mut now = read_stored(&self.path);
        for name in &self.changed {
            copy_entry(&mut now.plugins, &self.stored.plugins, name);
            copy_entry(&mut now.presentation, &self.stored.presentation, name);
            copy_entry(&mut now.approved_by, &self.stored.approved_by, name);
        }
        now.format = 2;
        let text = serde_json::to_string_pretty(&now).map_err(std::io::Error::other)?;
        crate::files::write_atomic(&self.path, (text + "\n").as_bytes())?;
        self.stored = now;
        self.changed.clear();
        Ok(())
    }

    /// [`Approvals::save`], logging a failure (a read-only plugins folder still works; the
    /// approvals then last for this process only).
    pub fn save_or_warn(&mut self) {
        if let Err(e) = self.save() {
            tracing::warn!("cannot record plugin approvals in {}: {e}", self.path.display());
            self.changed.clear();
        }
    }
}

/// The approvals record at `path`. A missing file is empty; an unreadable or corrupt one is
/// reported and treated as empty.
fn read_stored(path: &Path) -> Stored {
    match std::fs::read(path) {
        Ok(bytes) => match serde_json::from_slice::<Stored>(&bytes) {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!("{}: {e}; ignoring it (approvals will be recorded afresh)", path.display());
                Stored::default()
            }
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Stored::default(),
        Err(e) => {
            tracing::warn!("cannot read {}: {e}", path.display());
            Stored::default()
        }
    }
}

/// `name`'s entry of `from` into `to`: set as it is there, or removed as it is absent there.
fn copy_entry<V: Clone>(to: &mut BTreeMap<String, V>, from: &BTreeMap<String, V>, name: &str) {
    match from.get(name) {
        Some(v) => to.insert(name.to_string(), v.clone()),
        None => to.remove(name),
    };
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
        let covered = approved.net.iter().any(|a| toolhost_spec::host_pattern::covers(a, n));
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
    for b in &requested.kv {
        if !approved.kv.contains(b) {
            out.push(format!("kv {b}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_spec::manifest::FsRequest;

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
            resources: vec![],
            resource_templates: vec![],
            prompts: vec![],
        }
    }

    /// `[approvals]` as the config reader takes it: TOML's refusals, then the section's own.
    fn lock(toml_text: &str) -> anyhow::Result<ApprovalLock> {
        #[derive(Deserialize)]
        struct Doc {
            approvals: RawApprovals,
        }
        let doc: Doc = toml::from_str(toml_text)?;
        ApprovalLock::resolve(doc.approvals).map_err(anyhow::Error::msg)
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
        let config = crate::settings::Config {
            plugins_dir: dir.path().to_path_buf(),
            approvals: pinned,
            ..crate::settings::Config::default()
        };
        let mut a = Approvals::for_folder(&config.plugins_dir, &config.approvals);
        assert_eq!(a.check_file(&m, &hash), Ok(()));
        let other = crate::registry::content_hash(b"web v2");
        let e = a.check_file(&m, &other).unwrap_err().join("; ");
        assert!(
            e.contains(&format!("file sha256:{}", hex::encode(other))) && e.contains("--print --sha256"),
            "{e}"
        );
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
        let e = lock("[approvals.plugin.web]\n").unwrap_err().to_string();
        assert!(e.contains("approvals.plugin.web") && e.contains("--print"), "{e}");
        let e = lock("[approvals.plugin.web]\nsha256 = \"abc\"\n").unwrap_err().to_string();
        assert!(e.contains("approvals.plugin.web.sha256") && e.contains("64 hex digits"), "{e}");
        let e = lock("[approvals.plugin.web]\nrequest = { nett = [] }\n").unwrap_err().to_string();
        assert!(e.contains("nett"), "{e}");
        let e = lock("[approvals]\nlock = true\n").unwrap_err().to_string();
        assert!(e.contains("lock"), "{e}");
        let full = format!("[approvals.plugin.web]\nsha256 = \"sha256:{}\"\n", "ab".repeat(32));
        assert_eq!(lock(&full).unwrap().plugins["web"].sha256, Some([0xab; 32]));
    }

    #[test]
    fn changes_made_at_once_are_all_kept() {
        // A folder reload (first sight of `web`) and an approve of `mail` loaded the file
        // before either saved: each save keeps the other's change.
        let dir = tempfile::tempdir().unwrap();
        let (mut reload, mut approve) = (Approvals::load(dir.path()), Approvals::load(dir.path()));
        assert!(reload.check(&manifest("web", &["example.com"])).is_ok());
        approve.approve(&manifest("mail", &["smtp.example.com"]));
        approve.save().unwrap();
        reload.save().unwrap();
        let now = Approvals::load(dir.path());
        assert!(now.get("web").is_some() && now.get("mail").is_some(), "{now:?}");
        assert!(reload.get("mail").is_some(), "a save leaves the value holding the file as written");
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
            resources: vec![],
            resource_templates: vec![],
            prompts: vec![],
        };
        let mut a = Approvals::load(dir.path());
        assert!(a.check(&m(&["example.com"])).is_ok());
        a.save().unwrap();
        let mut a = Approvals::load(dir.path());
        assert_eq!(a.check(&m(&["example.com", "evil.com"])), Err(vec!["net evil.com".to_string()]));
        assert_eq!(a.approved_by("web"), None, "first sight is nobody's approval");
        let alice = crate::identity::Principal {
            issuer: Some("https://as.example".into()),
            via: crate::identity::Via::Oauth,
            ..crate::identity::Principal::token("alice")
        };
        a.approve_by(&m(&["example.com", "evil.com"]), &alice);
        a.save().unwrap();
        let mut a = Approvals::load(dir.path());
        assert!(a.check(&m(&["evil.com"])).is_ok());
        assert_eq!(a.approved_by("web").map(|b| b.who.as_str()), Some("oauth:https://as.example#alice"));
        // A new request approved without a person forgets who approved the old one.
        a.approve(&m(&["other.org"]));
        assert_eq!(a.approved_by("web"), None);
    }

    fn tool(name: &str, danger: bool, read_only: bool) -> toolhost_spec::manifest::ToolSpec {
        toolhost_spec::manifest::ToolSpec {
            name: name.into(),
            description: "d".into(),
            params: vec![],
            arg_count: 0,
            parse_json: vec![],
            rest: false,
            output_limit: None,
            danger,
            read_only,
            category: None,
            output_schema: None,
            timeout_ms: None,
            task_support: None,
            title: None,
            idempotent: false,
            icons: Vec::new(),
        }
    }

    fn with_tools(tools: Vec<toolhost_spec::manifest::ToolSpec>) -> Manifest {
        Manifest { tools, ..manifest("files", &[]) }
    }

    #[test]
    fn a_weaker_presentation_is_held_like_a_larger_request() {
        let dir = tempfile::tempdir().unwrap();
        let v1 = with_tools(vec![
            tool("delete", true, false),
            tool("read", false, true),
            tool("write", false, false),
        ]);
        let mut a = Approvals::load(dir.path());
        assert_eq!(a.check(&v1), Ok(()), "first sight");
        a.save().unwrap();
        let mut a = Approvals::load(dir.path());
        let held = |a: &mut Approvals, tools| a.check(&with_tools(tools)).unwrap_err().join("; ");
        let e = held(
            &mut a,
            vec![tool("delete", false, false), tool("read", false, true), tool("write", false, false)],
        );
        assert_eq!(e, "tool delete is no longer marked dangerous");
        let e = held(
            &mut a,
            vec![tool("delete", true, false), tool("read", false, true), tool("write", false, true)],
        );
        assert_eq!(e, "tool write newly claims to be read-only");
        let e = held(
            &mut a,
            vec![tool("delete", true, false), tool("read", false, true), tool("peek", false, true)],
        );
        assert_eq!(e, "new tool peek claims to be read-only");
        let e = held(&mut a, vec![tool("remove", false, false), tool("read", false, true)]);
        assert_eq!(e, "new tool remove is not marked dangerous while dangerous delete disappeared");
        // Stronger or unchanged presentations pass: more danger, fewer read-only claims, a new
        // ordinary tool while the dangerous one stays.
        for tools in [
            vec![tool("delete", true, false), tool("read", false, false), tool("write", true, false)],
            vec![tool("delete", true, false), tool("read", false, true), tool("mkdir", false, false)],
        ] {
            assert_eq!(a.check(&with_tools(tools.clone())), Ok(()), "{tools:?}");
        }
        // Approving records the new presentation.
        let v2 = with_tools(vec![tool("delete", false, false)]);
        assert_eq!(a.pending(&v2), ["tool delete is no longer marked dangerous"]);
        a.approve(&v2);
        assert_eq!(a.check(&v2), Ok(()));
    }

    #[test]
    fn an_approval_recorded_before_presentations_records_it_without_holding() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(FILE), r#"{"format": 1, "plugins": {"files": {}}}"#).unwrap();
        let mut a = Approvals::load(dir.path());
        let v1 = with_tools(vec![tool("delete", true, false)]);
        assert_eq!(a.check(&v1), Ok(()));
        a.save().unwrap();
        let mut a = Approvals::load(dir.path());
        assert!(a.check(&with_tools(vec![tool("delete", false, false)])).is_err(), "now recorded");
    }

    #[test]
    fn a_pinned_presentation_is_checked_too() {
        let v1 = with_tools(vec![tool("delete", true, false)]);
        let hash = crate::registry::content_hash(b"files v1");
        let entry = lock_entry(&v1, Path::new("/p/files.wasm"), &hash, false);
        assert!(
            entry.contains("presentation = { tools = [\"delete\"], danger = [\"delete\"], read_only = [] }"),
            "{entry}"
        );
        let pinned = lock(&format!("[approvals]\nlocked = true\n{entry}")).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let config = crate::settings::Config {
            plugins_dir: dir.path().to_path_buf(),
            approvals: pinned,
            ..crate::settings::Config::default()
        };
        let mut a = Approvals::for_folder(&config.plugins_dir, &config.approvals);
        assert_eq!(a.check_file(&v1, &hash), Ok(()));
        let e = a.check_file(&with_tools(vec![tool("delete", false, false)]), &hash).unwrap_err();
        assert_eq!(e, ["tool delete is no longer marked dangerous"]);
    }
}
