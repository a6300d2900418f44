//! `toolhost new NAME --lang rust|python|js`: a plugin project that builds with
//! `toolhost build` and loads unchanged, with one example tool and a test.
//!
//! The Python and JS templates are the SDKs' own (`plugin-sdk/{python,js}/template/`, carried
//! in the binary); the Rust one is here because it must point at the Rust SDK's path. Where
//! the SDK comes from: Rust — `--sdk`, the checkout's `plugin-sdk/`, else the published crate;
//! JavaScript — an installed `toolhost-sdk` of the same version that Node resolves from the
//! project folder, else a copy in the project's `node_modules/`; Python — nothing is copied
//! (`toolhost test` and the build put the bundled SDK on the path).

use super::Lang;
use super::sdk_files;
use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};

/// A plugin name as manifests accept it: lower-case letters, digits, `_` and `-`, starting
/// with a letter.
pub fn check_name(name: &str) -> Result<()> {
    let ok = name.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
        && name.len() <= 64;
    if !ok {
        bail!(
            "`{name}` is not a plugin name: use lower-case letters, digits, `_` and `-`, starting with a letter (at most 64)"
        );
    }
    Ok(())
}

/// How a new Rust project depends on the SDK.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RustSdk {
    /// A folder holding `toolhost-sdk` (a checkout's `plugin-sdk/`, or `--sdk PATH`).
    Path(PathBuf),
    /// The published `toolhost-sdk` at this version (crates.io).
    Version(&'static str),
}

impl RustSdk {
    /// The `[dependencies]` line of the project's Cargo.toml.
    pub fn dependency(&self) -> String {
        match self {
            RustSdk::Path(p) => format!("toolhost-sdk = {{ path = {:?} }}", p.display().to_string()),
            RustSdk::Version(v) => format!("toolhost-sdk = \"{v}\""),
        }
    }
}

/// Where a new Rust project gets the SDK: `--sdk PATH`; else the `plugin-sdk/` of the checkout
/// this binary was built from, when it is still there (working on toolhost itself); else the
/// published `toolhost-sdk` of this toolhost's version.
pub fn rust_sdk(explicit: Option<&Path>) -> Result<RustSdk> {
    match explicit {
        Some(p) if !p.join("Cargo.toml").is_file() => bail!(
            "cannot find the Rust SDK at {}: pass --sdk PATH to a folder holding toolhost-sdk (a toolhost checkout's plugin-sdk/)",
            p.display()
        ),
        Some(p) => Ok(RustSdk::Path(std::fs::canonicalize(p)?)),
        None => Ok(default_rust_sdk(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../plugin-sdk"))),
    }
}

/// The checkout's SDK folder `checkout` if it holds the SDK, else the published package.
fn default_rust_sdk(checkout: &Path) -> RustSdk {
    match std::fs::canonicalize(checkout) {
        Ok(p) if p.join("Cargo.toml").is_file() => RustSdk::Path(p),
        _ => RustSdk::Version(env!("CARGO_PKG_VERSION")),
    }
}

/// Create the project `parent/name`; returns its folder. Refuses to write into an existing
/// folder that is not empty.
pub fn create(parent: &Path, name: &str, lang: Lang, sdk: Option<&Path>) -> Result<PathBuf> {
    check_name(name)?;
    let dir = parent.join(name);
    if dir.exists() && std::fs::read_dir(&dir).map(|mut d| d.next().is_some()).unwrap_or(true) {
        bail!("{} already exists and is not empty; choose another name or folder", dir.display());
    }
    let files: Vec<(String, String)> = match lang {
        Lang::Rust => rust_template(name, &rust_sdk(sdk)?),
        Lang::Python => template(sdk_files::PYTHON_TEMPLATE, name),
        Lang::Js => {
            let mut files = template(sdk_files::JS_TEMPLATE, name);
            // Plain `node --test` and editors must resolve `toolhost-sdk` (the build always uses
            // the SDK bundled in toolhost): an installed package of this version that Node finds
            // from the project folder is used as it is; otherwise the SDK is copied in.
            if installed_js_sdk(&dir).is_none() {
                files.extend(
                    sdk_files::JS
                        .iter()
                        .map(|(rel, text)| (format!("node_modules/toolhost-sdk/{rel}"), text.to_string())),
                );
            }
            files
        }
    };
    let mut files = files;
    files.push((".gitignore".into(), gitignore(lang)));
    files.push(("README.md".into(), readme(name, lang)));
    for (rel, text) in files {
        let p = dir.join(&rel);
        std::fs::create_dir_all(p.parent().unwrap())?;
        std::fs::write(&p, text).with_context(|| format!("cannot write {}", p.display()))?;
    }
    Ok(dir)
}

/// The version of the JavaScript SDK bundled in this binary.
fn bundled_js_sdk_version() -> Option<String> {
    let (_, text) = sdk_files::JS.iter().find(|(rel, _)| *rel == "package.json")?;
    package_version(text)
}

fn package_version(package_json: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(package_json).ok()?;
    (v["name"] == "toolhost-sdk").then(|| v["version"].as_str().map(str::to_string))?
}

/// The installed `toolhost-sdk` Node resolves from the (future) project folder `dir`: a
/// `node_modules/toolhost-sdk` in `dir`'s parent or any folder above it, at the version of the
/// SDK bundled in this binary (another version would make `node --test` and the build disagree).
pub fn installed_js_sdk(dir: &Path) -> Option<PathBuf> {
    let want = bundled_js_sdk_version()?;
    let start = std::path::absolute(dir).ok()?;
    start.ancestors().skip(1).map(|a| a.join("node_modules/toolhost-sdk")).find(|pkg| {
        std::fs::read_to_string(pkg.join("package.json"))
            .ok()
            .and_then(|t| package_version(&t))
            .is_some_and(|v| v == want)
    })
}

/// What a project's repository leaves out: build outputs (the `.wasm`, and each language's
/// own), and what `toolhost` writes when the project folder doubles as a plugins folder
/// (approvals, `dev`'s sources).
pub fn gitignore(lang: Lang) -> String {
    let own = match lang {
        Lang::Rust => "/target\n",
        Lang::Python => "__pycache__/\n*.pyc\n",
        Lang::Js => "node_modules/\n",
    };
    format!("# build outputs\n*.wasm\n{own}# written by toolhost\n.toolhost-approvals.json\n.toolhost-dev/\n")
}

/// How to test, build and develop the project.
pub fn readme(name: &str, lang: Lang) -> String {
    let (language, tests) = match lang {
        Lang::Rust => ("Rust", "`cargo test`"),
        Lang::Python => ("Python", "`test_*.py` with pytest if it is installed, else `python3 -m unittest`"),
        Lang::Js => ("JavaScript", "`*.test.js` with `node --test`"),
    };
    format!(
        "# {name}\n\nA toolhost plugin in {language}.\n\n\
         - `toolhost test {name}` runs its tests ({tests}, with the SDK on the path), then builds it and\n  \
         calls each tool once through the host, in a sandbox granted nothing but an empty workspace.\n\
         - `toolhost build {name} --install ./plugins` runs the tests, builds `{name}.wasm` and puts it in a\n  \
         plugins folder (`toolhost build {name}` writes it here; `--no-test` skips the tests).\n\
         - `toolhost --plugins ./plugins dev {name}` keeps it live while you edit: each save is loaded in\n  \
         about a second.\n\
         - `toolhost --plugins ./plugins call TOOL ARGS…` calls a tool; `toolhost --plugins ./plugins list`\n  \
         shows the tools, what the plugin requests and what is granted.\n"
    )
}

/// Fill `{{name}}` (and `{{name_snake}}`) in every file of a template.
fn template(files: &[(&str, &str)], name: &str) -> Vec<(String, String)> {
    let snake = name.replace('-', "_");
    files
        .iter()
        .map(|(rel, text)| {
            (rel.replace("{{name}}", name), text.replace("{{name_snake}}", &snake).replace("{{name}}", name))
        })
        .collect()
}

fn rust_template(name: &str, sdk: &RustSdk) -> Vec<(String, String)> {
    let cargo = format!(
        r#"[package]
name = "{name}"
version = "0.1.0"
edition = "2024"
description = "A toolhost plugin"
publish = false

[lib]
crate-type = ["cdylib"]

[dependencies]
{sdk}

# A workspace of its own, so the project builds wherever it is created.
[workspace]

[profile.release]
opt-level = "s"
strip = "debuginfo"
"#,
        sdk = sdk.dependency()
    );
    let lib = r#"//! A toolhost plugin. Build it with `toolhost build`, try it with
//! `toolhost --plugins . call greet World`, or keep `toolhost dev .` running while you edit.

#[toolhost_sdk::plugin]
mod tools {
    /// Greet someone by name.
    ///
    /// - `name`: who to greet
    #[tool(read_only)]
    pub fn greet(name: String) -> Result<String, String> {
        let name = name.trim();
        if name.is_empty() {
            return Err("the name is empty".into());
        }
        Ok(format!("Hello, {name}!"))
    }
}

#[cfg(test)]
mod test {
    #[test]
    fn greets_and_refuses_an_empty_name() {
        assert_eq!(super::tools::greet("World".into()).unwrap(), "Hello, World!");
        assert!(super::tools::greet("  ".into()).is_err());
    }
}
"#;
    vec![("Cargo.toml".into(), cargo), ("src/lib.rs".into(), lib.into())]
}

#[cfg(test)]
mod tests {
    use super::{RustSdk, bundled_js_sdk_version, create, default_rust_sdk, installed_js_sdk, rust_template};
    use crate::project::Lang;

    /// A new JavaScript project gets a copy of the SDK, unless Node already resolves the
    /// installed package of the same version from the project's folder.
    #[test]
    fn a_new_js_project_uses_an_installed_sdk_of_its_version_or_else_a_copy() {
        let root = tempfile::tempdir().unwrap();
        let copied = create(root.path(), "alone", Lang::Js, None).unwrap();
        assert!(copied.join("node_modules/toolhost-sdk/index.mjs").is_file());

        let version = bundled_js_sdk_version().expect("the bundled SDK has a version");
        let installed = root.path().join("work/node_modules/toolhost-sdk");
        std::fs::create_dir_all(&installed).unwrap();
        let package = |v: &str| format!(r#"{{"name": "toolhost-sdk", "version": "{v}"}}"#);
        std::fs::write(installed.join("package.json"), package("0.0.0-other")).unwrap();
        let other = create(&root.path().join("work"), "other", Lang::Js, None).unwrap();
        assert!(other.join("node_modules/toolhost-sdk/index.mjs").is_file(), "another version is not used");

        std::fs::write(installed.join("package.json"), package(&version)).unwrap();
        let nested = root.path().join("work/plugins");
        assert_eq!(installed_js_sdk(&nested.join("uses")), Some(installed.clone()));
        let uses = create(&nested, "uses", Lang::Js, None).unwrap();
        assert!(uses.join("plugin.js").is_file());
        assert!(!uses.join("node_modules").exists(), "the installed SDK is used, not copied");
    }

    /// From a checkout, a new Rust project uses its `plugin-sdk/`; anywhere else (an installed
    /// toolhost whose checkout is gone) the published package of the same version.
    #[test]
    fn a_new_rust_project_uses_the_checkout_sdk_or_else_the_published_package() {
        let checkout = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../plugin-sdk");
        assert!(matches!(default_rust_sdk(&checkout), RustSdk::Path(p) if p.join("Cargo.toml").is_file()));
        let gone = tempfile::tempdir().unwrap();
        let sdk = default_rust_sdk(&gone.path().join("plugin-sdk"));
        assert_eq!(sdk, RustSdk::Version(env!("CARGO_PKG_VERSION")));
        let files = rust_template("greeter", &sdk);
        let cargo: toml::Table = files.iter().find(|(n, _)| n == "Cargo.toml").unwrap().1.parse().unwrap();
        assert_eq!(
            cargo["dependencies"]["toolhost-sdk"].as_str(),
            Some(env!("CARGO_PKG_VERSION")),
            "{cargo:?}"
        );
    }
}
