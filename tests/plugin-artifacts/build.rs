//! Builds the example and test plugins from source for `wasm32-wasip2` (a nested cargo build
//! with its own target dir, as wasmtime's test-programs do) and writes their paths as
//! constants, so tests never depend on checked-in `.wasm` files.

use std::path::{Path, PathBuf};
use std::process::Command;

const PLUGINS: &[&str] = &[
    "files",
    "text",
    "web",
    "hostile",
    "versioned",
    "liar",
    "system",
    "spy",
    "painter",
    "ticker",
    "counter",
    "kvplain",
];

fn main() {
    let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let root = manifest_dir.join("../..").canonicalize().expect("workspace root");
    for watched in [
        "plugins/Cargo.toml",
        "plugins/files",
        "plugins/text",
        "plugins/web",
        "plugins/liar",
        "plugins/hostile",
        "plugins/versioned",
        "plugins/system",
        "plugins/spy",
        "plugins/painter",
        "plugins/ticker",
        "plugins/counter",
        "plugins/kvplain",
        "plugin-sdk/src",
        "plugin-sdk/macros/src",
        "plugin-sdk/Cargo.toml",
        "plugin-sdk/macros/Cargo.toml",
        "wit",
    ] {
        println!("cargo:rerun-if-changed={}", root.join(watched).display());
    }
    let target_dir = root.join("target/plugins-build");
    let dir = target_dir.join("wasm32-wasip2/release");
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));

    // `versioned` twice: first as v2 (kept aside), then everything at v1.
    build(&root, &target_dir, &["-p", "versioned", "--features", "v2"]);
    let v2 = out_dir.join("versioned_v2.wasm");
    std::fs::copy(dir.join("versioned.wasm"), &v2).expect("keep the v2 build");
    build(&root, &target_dir, &["-p", "versioned", "--features", "v3"]);
    let v3 = out_dir.join("versioned_v3.wasm");
    std::fs::copy(dir.join("versioned.wasm"), &v3).expect("keep the v3 build");
    build(&root, &target_dir, &[]);

    let mut consts = format!(
        "/// Folder holding the built plugins.\npub const DIR: &str = {:?};\n",
        dir.display().to_string()
    );
    for p in PLUGINS {
        let path = dir.join(format!("{p}.wasm"));
        assert!(Path::new(&path).is_file(), "expected {}", path.display());
        consts.push_str(&format!(
            "/// `{p}.wasm`.\npub const {}: &str = {:?};\n",
            p.to_uppercase(),
            path.display().to_string()
        ));
    }
    consts.push_str(&format!(
        "/// `versioned.wasm` built with `--features v2`.\npub const VERSIONED_V2: &str = {:?};\n",
        v2.display().to_string()
    ));
    consts.push_str(&format!(
        "/// `versioned.wasm` built with `--features v3` (requests network access).\npub const VERSIONED_V3: &str = {:?};\n",
        v3.display().to_string()
    ));
    std::fs::write(out_dir.join("artifacts.rs"), consts).expect("write artifacts.rs");
}

fn build(root: &Path, target_dir: &Path, extra: &[&str]) {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(root.join("plugins"))
        .args(["build", "--release", "--target", "wasm32-wasip2", "--target-dir"])
        .arg(target_dir)
        .args(extra);
    // The outer build's flags are for the host, not for wasm guests.
    for var in [
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTFLAGS",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET",
        "RUSTC_WORKSPACE_WRAPPER",
        "CARGO_PRIMARY_PACKAGE",
    ] {
        cmd.env_remove(var);
    }
    let out = cmd.output().expect("run cargo for the plugins");
    if !out.status.success() {
        panic!(
            "building the plugins for wasm32-wasip2 failed (is the target installed? `rustup target add wasm32-wasip2`):\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
