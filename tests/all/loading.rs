//! Discovery and loading: bad files are reported with their name and reason and skipped,
//! while the good plugins in the same folder load.

use crate::support::{Env, component};

const MANIFEST: &str =
    r#"{"format":1,"name":"weird","version":"0.1.0","tools":[{"name":"x","description":"d","argCount":0}]}"#;

fn reason<'a>(reg: &'a toolhost_core::Registry, file: &str) -> &'a str {
    reg.failures()
        .iter()
        .find(|f| f.file.file_name().unwrap() == file)
        .map(|f| f.reason.as_str())
        .unwrap_or_else(|| panic!("{file} not reported; failures: {:?}", reg.failures()))
}

#[test]
fn bad_files_are_reported_and_skipped() {
    let env = Env::with(&[plugin_artifacts::FILES, plugin_artifacts::TEXT]);
    let dir = env.plugins.path();
    std::fs::write(dir.join("garbage.wasm"), b"definitely not wasm").unwrap();
    std::fs::write(dir.join("empty.wasm"), b"").unwrap();
    std::fs::write(dir.join("core.wasm"), wat::parse_str("(module)").unwrap()).unwrap();
    std::fs::write(dir.join("precompiled.wasm"), b"\x7fELF\x02\x01\x01\0\0\0\0\0").unwrap();
    std::fs::write(dir.join("nomanifest.wasm"), component("(component)", None)).unwrap();
    std::fs::write(dir.join("badjson.wasm"), component("(component)", Some("{\"format\": 1,"))).unwrap();
    std::fs::write(
        dir.join("badfield.wasm"),
        component("(component)", Some(&MANIFEST.replace("\"argCount\":0", "\"argCount\":2"))),
    )
    .unwrap();
    std::fs::write(
        dir.join("imports.wasm"),
        component(r#"(component (import "acme:nope/thing" (instance (export "f" (func)))))"#, Some(MANIFEST)),
    )
    .unwrap();
    // Ignored: dotfiles and temp files never even count as failures.
    std::fs::write(dir.join(".hidden.wasm"), b"junk").unwrap();
    std::fs::write(dir.join("files.wasm.tmp"), b"junk").unwrap();

    let reg = env.registry();
    assert!(reg.get("ls").is_some() && reg.get("split_task").is_some(), "good plugins still load");
    assert!(reason(&reg, "garbage.wasm").contains("not a WebAssembly file"));
    assert!(reason(&reg, "empty.wasm").contains("empty"));
    assert!(reason(&reg, "core.wasm").contains("not a component"));
    assert!(reason(&reg, "precompiled.wasm").contains("precompiled"));
    assert!(reason(&reg, "nomanifest.wasm").contains("no `toolhost-manifest` custom section"));
    assert!(reason(&reg, "badjson.wasm").contains("not valid JSON"));
    assert_eq!(
        reason(&reg, "badfield.wasm"),
        "manifest field `tools[0].argCount`: is 2 but 0 params are declared"
    );
    let imports = reason(&reg, "imports.wasm");
    assert!(imports.contains("cannot load component") && imports.contains("acme:nope/thing"), "{imports}");
    assert_eq!(reg.failures().len(), 8, "{:?}", reg.failures());

    // Loaded again (its code now compiled once in this engine), a component that does not link
    // is still a load failure, not a tool that fails on its first call.
    let again = env.registry();
    assert!(again.get("x").is_none());
    let imports = reason(&again, "imports.wasm");
    assert!(imports.contains("cannot load component") && imports.contains("acme:nope/thing"), "{imports}");
}

#[test]
fn same_plugin_name_twice_loads_neither_file() {
    // Grants are per plugin name: which file gets them is never decided by file names.
    let env = Env::with(&[plugin_artifacts::FILES]);
    std::fs::copy(plugin_artifacts::FILES, env.plugins.path().join("zz-files-copy.wasm")).unwrap();
    let reg = env.registry();
    assert!(reg.plugins().is_empty());
    for file in ["files.wasm", "zz-files-copy.wasm"] {
        assert!(
            reason(&reg, file).contains(
                "plugin name `files` is declared by files.wasm and zz-files-copy.wasm; none of them is loaded"
            ),
            "{file}: {:?}",
            reg.failures()
        );
    }
}

#[test]
fn oversized_files_are_refused() {
    let mut env = Env::with(&[plugin_artifacts::FILES]);
    env.config.max_plugin_bytes = 1000;
    let reg = env.registry();
    assert!(reason(&reg, "files.wasm").contains("limit"));
}

#[test]
fn a_missing_folder_is_an_error_naming_it() {
    let mut env = Env::with(&[]);
    env.config.plugins_dir = env.plugins.path().join("nope");
    let e = toolhost_core::Registry::load(&crate::support::runtime(), &env.config).unwrap_err();
    assert!(e.to_string().contains("nope"), "{e}");
}

#[test]
fn compiled_code_is_cached_on_disk_and_bad_cache_files_are_ignored() {
    use toolhost_core::engine::Runtime;
    let cache = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(plugin_artifacts::TEXT).unwrap();
    let first = Runtime::with_disk_cache(512, Some(cache.path())).unwrap();
    first.prepare("text.wasm", &bytes).unwrap();
    let cached: Vec<_> =
        walk(cache.path()).into_iter().filter(|p| p.extension().is_some_and(|e| e == "cwasm")).collect();
    assert_eq!(cached.len(), 1, "{cached:?}");
    let meta = std::fs::metadata(cached[0].parent().unwrap()).unwrap();
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(meta.permissions().mode() & 0o777, 0o700, "the cache directory is private");

    // A restart loads the cached code (mapped from the file); a corrupt cache file is replaced,
    // not trusted. Entries are only ever replaced by rename, never written in place, so the
    // running host that mapped the old one is unaffected.
    let second = Runtime::with_disk_cache(512, Some(cache.path())).unwrap();
    let mapped = second.prepare("text.wasm", &bytes).unwrap();
    let corrupt = cached[0].with_extension("corrupt");
    std::fs::write(&corrupt, b"not compiled code").unwrap();
    std::fs::rename(&corrupt, &cached[0]).unwrap();
    let third = Runtime::with_disk_cache(512, Some(cache.path())).unwrap();
    third.prepare("text.wasm", &bytes).unwrap();
    assert!(std::fs::read(&cached[0]).unwrap().len() > 1000, "the corrupt entry was rewritten");
    drop(mapped);
    drop(second);
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().map(Result::unwrap) {
        if e.file_type().unwrap().is_dir() {
            out.extend(walk(&e.path()));
        } else {
            out.push(e.path());
        }
    }
    out
}

#[tokio::test]
async fn cached_code_is_linked_on_first_use_and_a_spoiled_entry_is_compiled_again() {
    use crate::support::{call, ok};
    use toolhost_core::engine::Runtime;
    let cache = tempfile::tempdir().unwrap();
    let env = Env::with(&[plugin_artifacts::TEXT]);
    // First start, empty cache: compiled (and cached) while loading.
    let first = Runtime::with_disk_cache(512, Some(cache.path())).unwrap();
    let reg = toolhost_core::Registry::load(&first, &env.config).unwrap();
    assert!(reg.plugins()[0].code.is_ready(), "a plugin not in the cache is compiled while it loads");

    // Restart: the tools are registered from the manifest; the code is linked on first use.
    let second = Runtime::with_disk_cache(512, Some(cache.path())).unwrap();
    let reg = toolhost_core::Registry::load(&second, &env.config).unwrap();
    let plugin = reg.plugins()[0].clone();
    assert!(!plugin.code.is_ready(), "a cached plugin is linked on first use");
    assert!(reg.get("count_words").is_some());

    // Should the cache entry be spoiled meanwhile, the first call compiles the plugin again.
    let cached: Vec<_> =
        walk(cache.path()).into_iter().filter(|p| p.extension().is_some_and(|e| e == "cwasm")).collect();
    let spoiled = cached[0].with_extension("spoiled");
    std::fs::write(&spoiled, b"not compiled code").unwrap();
    std::fs::rename(&spoiled, &cached[0]).unwrap();
    let host = toolhost_core::Toolhost::from_parts(
        second,
        std::sync::Arc::new(env.config.clone()),
        reg,
        std::sync::Arc::new(toolhost_core::executor::NoConfirm),
    );
    let out = ok(&call(&host, "count_words", &["a b c"]).await);
    assert!(out.contains('3'), "{out}");
    assert!(plugin.code.is_ready());
    assert!(std::fs::read(&cached[0]).unwrap().len() > 1000, "the spoiled entry was rewritten");
}

/// The lazy path's failure: a plugin whose compiled code is in the cache (so it is linked on
/// first use, not while loading) but which cannot be linked as a plugin is still listed from
/// its manifest, and each call of it answers a host error naming the file.
#[tokio::test]
async fn a_cached_plugin_that_cannot_be_linked_lists_and_its_calls_name_the_file() {
    use crate::support::{call, err};
    use toolhost_core::engine::Runtime;
    let cache = tempfile::tempdir().unwrap();
    let env = Env::with(&[]);
    // A component with a manifest but without the plugin world's export: it compiles, and
    // does not link as a plugin.
    let manifest = r#"{"format":1,"name":"hollow","version":"0.1.0","tools":[{"name":"hollow_echo","description":"Echo.","argCount":0}]}"#;
    let bytes = component("(component)", Some(manifest));
    std::fs::write(env.plugins.path().join("hollow.wasm"), &bytes).unwrap();
    let runtime = Runtime::with_disk_cache(512, Some(cache.path())).unwrap();
    // As if these bytes had loaded before: an entry under their key, spoiled since.
    let key = toolhost_spec::sections::code_sha256(&bytes, toolhost_spec::digest::sha256(&bytes));
    let engine_dir = std::fs::read_dir(cache.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("engine-"))
        .expect("the engine's cache directory");
    std::fs::write(engine_dir.join(format!("{}.cwasm", hex::encode(key))), b"spoiled").unwrap();

    let reg = toolhost_core::Registry::load(&runtime, &env.config).unwrap();
    assert!(reg.failures().is_empty(), "{:?}", reg.failures());
    let plugin = reg.get("hollow_echo").expect("listed from its manifest").plugin.clone();
    assert!(!plugin.code.is_ready(), "linked on first use");
    let host = toolhost_core::Toolhost::from_parts(
        runtime,
        std::sync::Arc::new(env.config.clone()),
        reg,
        std::sync::Arc::new(toolhost_core::executor::NoConfirm),
    );
    for _ in 0..2 {
        let e = err(&call(&host, "hollow_echo", &[]).await, toolhost_core::ErrorKind::HostError);
        assert!(e.contains("hollow.wasm") && e.contains("hollow_echo"), "{e}");
    }
    assert!(host.registry.load().get("hollow_echo").is_some(), "still listed after the failure");
}

/// A file whose stamp is unchanged since the last read is known by the folder index and not
/// read again; what the index gives is checked like a file read (the policy of the current
/// config applies), and a file changed in place is read again, never taken for its old self.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_folder_index_spares_unchanged_files_and_never_hides_a_change() {
    use std::sync::Arc;
    use toolhost_core::registry::{FolderRead, Registry, index};
    let env = Env::with(&[plugin_artifacts::VERSIONED]);
    let cache = tempfile::tempdir().unwrap();
    let mut config = env.config.clone();
    config.cache_dir = Some(cache.path().to_path_buf());
    let which = |config: &toolhost_core::Config, read: FolderRead| {
        let registry = Registry::load_read(&crate::support::runtime(), config, read).unwrap();
        let host = toolhost_core::Toolhost::from_parts(
            crate::support::runtime(),
            Arc::new(config.clone()),
            registry,
            Arc::new(toolhost_core::executor::NoConfirm),
        );
        async move { crate::support::call(&host, "which", &[]).await }
    };

    // A file written just now is not indexed: its times have not settled.
    let read = FolderRead::inspect_all(&config).unwrap();
    assert_eq!(read.from_index, 0);
    assert_eq!(FolderRead::inspect_all(&config).unwrap().from_index, 0);
    std::thread::sleep(index::SETTLED + std::time::Duration::from_millis(200));
    assert_eq!(FolderRead::inspect_all(&config).unwrap().from_index, 0, "indexed only after a read");
    let warm = FolderRead::inspect_all(&config).unwrap();
    assert_eq!(warm.from_index, 1, "the settled, unchanged file is known by its stamp");
    assert_eq!(crate::support::ok(&which(&config, warm).await), "v1");

    // Replaced in place by another version: read again (never the old one's manifest or code).
    std::fs::write(
        env.plugins.path().join("versioned.wasm"),
        std::fs::read(plugin_artifacts::VERSIONED_V2).unwrap(),
    )
    .unwrap();
    let changed = FolderRead::inspect_all(&config).unwrap();
    assert_eq!(changed.from_index, 0);
    assert_eq!(crate::support::ok(&which(&config, changed).await), "v2");

    // An index that cannot be read is rebuilt, not an error.
    let folders = cache.path().join("folders");
    let files: Vec<_> = std::fs::read_dir(&folders).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(files.len(), 1, "{files:?}");
    std::fs::write(&files[0], b"{ not json").unwrap();
    let rebuilt = FolderRead::inspect_all(&config).unwrap();
    assert_eq!(rebuilt.from_index, 0);
    assert_eq!(crate::support::ok(&which(&config, rebuilt).await), "v2");

    // The current policy applies to what the index gives: an unsigned file it knows is refused
    // where signatures are required.
    std::thread::sleep(index::SETTLED + std::time::Duration::from_millis(200));
    FolderRead::inspect_all(&config).unwrap();
    let mut strict = config.clone();
    strict.trust.require_signature = true;
    let read = FolderRead::inspect_all(&strict).unwrap();
    assert_eq!(read.from_index, 1);
    let refused = Registry::load_read(&crate::support::runtime(), &strict, read).unwrap();
    assert!(refused.get("which").is_none());
    assert!(refused.failures().iter().any(|f| f.reason.contains("unsigned")), "{:?}", refused.failures());
}
