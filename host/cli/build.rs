//! Bundles the Python and JavaScript SDKs (the files each SDK lists in its `FILES`) and their
//! `toolhost new` templates into the binary, as `include_str!` tables in `sdk_files.rs`, so the
//! list can never drift from the SDKs themselves.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap()).join("../..");
    let root = root.canonicalize().expect("workspace root");
    let mut out = String::new();
    for (sdk, name) in [("plugin-sdk/python", "PYTHON"), ("plugin-sdk/js", "JS")] {
        let dir = root.join(sdk);
        let list = dir.join("FILES");
        println!("cargo:rerun-if-changed={}", list.display());
        let text = std::fs::read_to_string(&list).unwrap_or_else(|e| {
            panic!("cannot read {}: {e} (the SDK's list of files to bundle)", list.display())
        });
        let files: Vec<String> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with("template/"))
            .map(str::to_string)
            .collect();
        table(&mut out, name, &dir, &files);
        let template = dir.join("template");
        println!("cargo:rerun-if-changed={}", template.display());
        let mut files = Vec::new();
        walk(&template, &template, &mut files);
        files.sort();
        table(&mut out, &format!("{name}_TEMPLATE"), &template, &files);
    }
    let dest = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("sdk_files.rs");
    std::fs::write(dest, out).expect("write sdk_files.rs");
}

fn table(out: &mut String, name: &str, dir: &Path, files: &[String]) {
    writeln!(out, "pub const {name}: &[(&str, &str)] = &[").unwrap();
    for f in files {
        let path = dir.join(f);
        assert!(path.is_file(), "{} is listed but missing", path.display());
        println!("cargo:rerun-if-changed={}", path.display());
        writeln!(out, "    ({f:?}, include_str!({:?})),", path.display().to_string()).unwrap();
    }
    writeln!(out, "];").unwrap();
}

fn walk(base: &Path, dir: &Path, out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        if name == "__pycache__" || name == "node_modules" || name.starts_with('.') {
            continue;
        }
        if p.is_dir() {
            walk(base, &p, out);
        } else {
            out.push(p.strip_prefix(base).unwrap().to_string_lossy().into_owned());
        }
    }
}
