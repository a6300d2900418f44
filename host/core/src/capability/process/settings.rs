//! The process capability's settings: the operator's `exec` grants (`[plugin.X] exec`,
//! `--allow-run`) and how programs are confined (`[process]`). A leaf: it imports nothing of
//! the crate but the config's error ([`Invalid`]).

use crate::settings::invalid::Invalid;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use toolhost_spec::manifest::FsMode;

/// What every granted program may read and execute, unless `[process] system_paths` says
/// otherwise. Paths that do not exist on this machine are skipped.
pub const DEFAULT_SYSTEM_PATHS: &[&str] =
    &["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc"];

/// One entry of `[plugin.NAME] exec = [...]`, as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawExec {
    /// The executable's absolute path.
    program: String,
    /// Allowed argument lists (patterns); absent: any arguments.
    args: Option<Vec<String>>,
    /// Host environment variables the program gets (by name; everything else is cleared).
    #[serde(default)]
    env: Vec<String>,
    /// Variables set to fixed values (e.g. git's `GIT_CONFIG_*` hardening).
    #[serde(default)]
    set_env: BTreeMap<String, String>,
    /// Working directory (default: the workspace).
    cwd: Option<PathBuf>,
    /// The program may write its working directory (default: read only).
    #[serde(default)]
    write: bool,
    /// Further files and directories the program may use.
    #[serde(default)]
    fs: Vec<RawExecPath>,
    /// The program may use the network (default: none).
    #[serde(default)]
    network: bool,
    /// Processes the program leaves behind keep running after the call; output not captured.
    #[serde(default)]
    detach: bool,
}

/// One entry of an exec grant's `fs`, as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawExecPath {
    path: PathBuf,
    /// Default: read-only.
    mode: Option<FsMode>,
}

impl RawExec {
    /// Check and resolve (a relative `cwd` is relative to `base`, the config file's directory).
    pub fn resolve(self, key: &str, base: &Path) -> Result<ExecGrant, Invalid> {
        let program = PathBuf::from(&self.program);
        if !program.is_absolute() {
            let hint = resolve_in_path(&self.program)
                .map(|p| format!("program = \"{}\"", p.display()))
                .unwrap_or_else(|| format!("program = \"/usr/bin/{}\"", self.program));
            return Err(Invalid::says(
                format!("{key}.program"),
                format!(
                    "{:?} is not an absolute path; grant the exact executable, e.g. {hint}",
                    self.program
                ),
            ));
        }
        let args = match self.args {
            None => None,
            Some(list) if list.is_empty() => {
                return Err(Invalid::is(
                    format!("{key}.args"),
                    "is empty, which allows no call; remove `args` to allow any arguments, or write [\"\"] for none",
                ));
            }
            Some(list) => Some(list.iter().map(|p| ArgPattern::new(p)).collect()),
        };
        for (i, var) in self.env.iter().enumerate() {
            Invalid::check_variable_name(|| format!("{key}.env[{i}]"), var)?;
        }
        for (var, value) in &self.set_env {
            Invalid::check_variable_name(|| format!("{key}.set_env"), var)?;
            if value.contains('\0') {
                return Err(Invalid::says(
                    format!("{key}.set_env.{var}"),
                    "the value contains a NUL character",
                ));
            }
            if self.env.contains(var) {
                return Err(Invalid::says(
                    key,
                    format!(
                        "{var} is in both `env` (the host's value) and `set_env` (a fixed value); keep one"
                    ),
                ));
            }
        }
        Ok(ExecGrant {
            name: program_name(&program),
            program,
            args,
            env: self.env,
            set_env: self.set_env.into_iter().collect(),
            cwd: self.cwd.map(|c| base.join(c)),
            write: self.write,
            fs: self
                .fs
                .into_iter()
                .map(|p| ExecPath { path: base.join(p.path), mode: p.mode.unwrap_or(FsMode::ReadOnly) })
                .collect(),
            network: self.network,
            detach: self.detach,
        })
    }
}

/// A program the operator grants to a plugin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecGrant {
    /// The name a plugin requests and runs it by: the path's file name.
    pub name: String,
    /// Absolute path of the executable.
    pub program: PathBuf,
    /// Allowed argument lists; `None`: any.
    pub args: Option<Vec<ArgPattern>>,
    /// Host environment variables passed to it (by name).
    pub env: Vec<String>,
    /// Variables set to fixed values (these win over `env`).
    pub set_env: Vec<(String, String)>,
    /// Working directory; `None`: the workspace.
    pub cwd: Option<PathBuf>,
    /// It may write its working directory (otherwise read-only).
    pub write: bool,
    /// Further files and directories it may use.
    pub fs: Vec<ExecPath>,
    /// It may use the network (and local sockets).
    pub network: bool,
    pub detach: bool,
}

/// A file or directory a granted program may use besides its working directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecPath {
    pub path: PathBuf,
    pub mode: FsMode,
}

impl ExecGrant {
    /// `program` with any arguments, no environment, in the workspace read-only, no network.
    pub fn new(program: PathBuf) -> ExecGrant {
        ExecGrant {
            name: program_name(&program),
            program,
            args: None,
            env: Vec::new(),
            set_env: Vec::new(),
            cwd: None,
            write: false,
            fs: Vec::new(),
            network: false,
            detach: false,
        }
    }

    /// `/usr/bin/git (args: status | log *)`, as `list` shows it.
    pub fn describe(&self) -> String {
        let mut s = self.program.display().to_string();
        if let Some(p) = &self.args {
            let shown: Vec<&str> = p.iter().map(|p| p.text.as_str()).collect();
            s.push_str(&format!(" (args: {})", shown.join(" | ")));
        }
        if self.write {
            s.push_str(" (writes its directory)");
        }
        for p in &self.fs {
            s.push_str(&format!(" (fs {}:{})", p.path.display(), p.mode));
        }
        if self.network {
            s.push_str(" (network)");
        }
        if self.detach {
            s.push_str(" (detached)");
        }
        s
    }

    /// The directories it works over: its working directory and its `fs` paths.
    pub fn dirs<'a>(&'a self, workspace: &'a Path) -> impl Iterator<Item = &'a Path> {
        std::iter::once(self.cwd.as_deref().unwrap_or(workspace))
            .chain(self.fs.iter().map(|p| p.path.as_path()))
    }
}

/// An allowed argument list, written as words separated by spaces: each word matches one
/// argument exactly, `*` inside a word matches any characters within that argument, and a
/// final word `*` matches any number of further arguments (none included). `""` allows no
/// arguments. `log *` allows `log` and `log --oneline -5`; `diff --stat` only that.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgPattern {
    pub text: String,
    words: Vec<String>,
}

impl ArgPattern {
    pub fn new(text: &str) -> ArgPattern {
        ArgPattern { text: text.to_string(), words: text.split_whitespace().map(str::to_string).collect() }
    }

    /// Whether `args` is allowed by this pattern.
    pub fn matches(&self, args: &[String]) -> bool {
        let (fixed, rest_any) = match self.words.split_last() {
            Some((last, init)) if last == "*" => (init, true),
            _ => (self.words.as_slice(), false),
        };
        if args.len() < fixed.len() || (!rest_any && args.len() != fixed.len()) {
            return false;
        }
        fixed.iter().zip(args).all(|(w, a)| glob(w, a))
    }
}

/// `*` matches any run of characters (within one argument); everything else literally.
fn glob(pattern: &str, s: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == s;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !s.starts_with(first) || s.len() < first.len() + last.len() || !s.ends_with(last) {
        return false;
    }
    let mut rest = &s[first.len()..s.len() - last.len()];
    for mid in &parts[1..parts.len() - 1] {
        match rest.find(mid) {
            Some(i) => rest = &rest[i + mid.len()..],
            None => return false,
        }
    }
    true
}

fn program_name(p: &Path) -> String {
    p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// Find `name` in the operator's `PATH` (absolute directories only), as a shell would.
pub fn resolve_in_path(name: &str) -> Option<PathBuf> {
    if name.is_empty() || name.contains('/') {
        return None;
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).filter(|d| d.is_absolute()).map(|d| d.join(name)).find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    match std::fs::metadata(p) {
        #[cfg(unix)]
        Ok(m) => {
            use std::os::unix::fs::PermissionsExt;
            m.is_file() && m.permissions().mode() & 0o111 != 0
        }
        #[cfg(not(unix))]
        Ok(m) => m.is_file(),
        Err(_) => false,
    }
}

/// `[process]`, as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawProcess {
    /// Read (and execute) for every granted program; replaces the default list.
    system_paths: Option<Vec<PathBuf>>,
    /// Run granted programs even where the kernel cannot confine them.
    #[serde(default)]
    allow_unconfined: bool,
}

impl RawProcess {
    pub fn resolve(self) -> Result<ProcessSettings, Invalid> {
        let mut out =
            ProcessSettings { allow_unconfined: self.allow_unconfined, ..ProcessSettings::default() };
        if let Some(paths) = self.system_paths {
            for (i, p) in paths.iter().enumerate() {
                if !p.is_absolute() {
                    return Err(Invalid::says(
                        format!("process.system_paths[{i}]"),
                        format!("{} is not an absolute path", p.display()),
                    ));
                }
            }
            out.system_paths = paths;
        }
        Ok(out)
    }
}

/// `[process]`, resolved: how programs run for plugins are confined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessSettings {
    /// Read and execute for every granted program (besides what its grant names).
    pub system_paths: Vec<PathBuf>,
    /// Run programs even where the kernel cannot confine them (no Landlock, no namespaces).
    pub allow_unconfined: bool,
}

impl Default for ProcessSettings {
    fn default() -> Self {
        ProcessSettings {
            system_paths: DEFAULT_SYSTEM_PATHS.iter().map(PathBuf::from).collect(),
            allow_unconfined: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &[&str]) -> Vec<String> {
        s.iter().map(|a| a.to_string()).collect()
    }

    #[test]
    fn argument_patterns() {
        let p = ArgPattern::new("log *");
        assert!(p.matches(&args(&["log"])));
        assert!(p.matches(&args(&["log", "--oneline", "-5"])));
        assert!(!p.matches(&args(&["push"])));
        assert!(!p.matches(&args(&[])));
        let p = ArgPattern::new("status");
        assert!(p.matches(&args(&["status"])));
        assert!(!p.matches(&args(&["status", "--porcelain"])));
        let p = ArgPattern::new("");
        assert!(p.matches(&args(&[])));
        assert!(!p.matches(&args(&["x"])));
        let p = ArgPattern::new("show --format=* *");
        assert!(p.matches(&args(&["show", "--format=%H", "HEAD"])));
        assert!(!p.matches(&args(&["show", "--stat"])));
        let p = ArgPattern::new("* b");
        assert!(p.matches(&args(&["anything", "b"])));
        assert!(!p.matches(&args(&["anything", "c"])));
        assert!(glob("a*b*c", "aXbYc") && !glob("a*b*c", "ac") && glob("*", "") && !glob("ab*ba", "aba"));
    }

    #[test]
    fn grants_resolve_and_are_checked() {
        let raw = |program: &str, a: Option<Vec<&str>>| RawExec {
            program: program.into(),
            args: a.map(|v| v.into_iter().map(String::from).collect()),
            env: vec![],
            set_env: BTreeMap::new(),
            cwd: None,
            write: false,
            fs: vec![],
            network: false,
            detach: false,
        };
        let e = raw("git", None).resolve("plugin.sys.exec[0]", Path::new("/")).unwrap_err();
        assert_eq!(e.key, "plugin.sys.exec[0].program");
        let e = e.to_string();
        assert!(e.contains("not an absolute path") && e.contains("program = \""), "{e}");
        let e = raw("/usr/bin/git", Some(vec![])).resolve("k", Path::new("/")).unwrap_err();
        assert_eq!(e.key, "k.args");
        assert!(e.to_string().contains("allows no call"), "{e}");
        let mut both = raw("/usr/bin/git", None);
        both.env = vec!["HOME".into()];
        both.set_env.insert("HOME".into(), "/tmp".into());
        let e = both.resolve("k", Path::new("/")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "k: HOME is in both `env` (the host's value) and `set_env` (a fixed value); keep one"
        );
        let g = raw("/usr/bin/git", Some(vec!["status"])).resolve("k", Path::new("/")).unwrap();
        assert_eq!(g.name, "git");
        assert_eq!(g.describe(), "/usr/bin/git (args: status)");
    }
}
