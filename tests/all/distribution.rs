//! Plugins from a registry, trusted by key (#20): publish/install against a real OCI registry
//! (Debian's `docker-registry`, the reference distribution implementation, started here on
//! 127.0.0.1), the lock file, and the signature policy at load and on reload.

use crate::support::server::Killed;
use crate::support::{self, Env, call, free_port, ok};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use toolhost::oci::{self, LockFile};
use toolhost_core::registry::reload::Reloader;
use toolhost_core::registry::signing::{self, SecretKey, Trust};

/// Where `cargo xtask test` installs the registry (`apt-get install docker-registry`).
const REGISTRY_BIN: &str = "/usr/bin/docker-registry";

/// A registry serving from a temporary folder, stopped when dropped.
struct TestRegistry {
    _process: Killed,
    addr: String,
    storage: tempfile::TempDir,
}

fn registry() -> TestRegistry {
    let bin = std::env::var("TOOLHOST_TEST_REGISTRY").unwrap_or_else(|_| REGISTRY_BIN.to_string());
    assert!(
        Path::new(&bin).is_file(),
        "the OCI registry for the distribution tests is missing: {bin} does not exist. \
         Install it with `apt-get install -y docker-registry` (`cargo xtask test` does this), \
         or point TOOLHOST_TEST_REGISTRY at a distribution `registry` binary"
    );
    let storage = tempfile::tempdir().unwrap();
    for _attempt in 0..5 {
        let port = free_port();
        let addr = format!("127.0.0.1:{port}");
        let config = storage.path().join("config.yml");
        std::fs::write(
            &config,
            format!(
                "version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: {addr}\n",
                storage.path().join("data").display()
            ),
        )
        .unwrap();
        let mut child = Command::new(&bin)
            .arg("serve")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {bin}: {e}"));
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
        while std::time::Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                break; // port taken in the meantime: try another
            }
            if v2_ok(&addr) {
                return TestRegistry { _process: Killed(child), addr, storage };
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
    panic!("{bin} did not start serving on 127.0.0.1 within 15 s (5 attempts)");
}

/// `GET /v2/` answers 200.
fn v2_ok(addr: &str) -> bool {
    support::http::try_request(addr, "GET", "/v2/", "", "").is_ok_and(|a| a.status == 200)
}

/// A temporary key pair (private key file + trust entry).
struct Key {
    _dir: tempfile::TempDir,
    path: PathBuf,
    secret: SecretKey,
}

fn key(comment: &str) -> Key {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("team.key");
    signing::keygen(&path, comment).unwrap();
    let secret = SecretKey::read(&path).unwrap();
    Key { _dir: dir, path, secret }
}

fn trust(keys: &[&Key], required: bool) -> Trust {
    Trust {
        keys: keys.iter().map(|k| k.secret.public("team")).collect(),
        require_signature: required,
        ..Trust::default()
    }
}

fn signed(file: &str, k: &Key) -> Vec<u8> {
    signing::sign(&std::fs::read(file).unwrap(), &k.secret).unwrap()
}

/// The byte offset of the middle of the largest function body of the first nested core module.
fn a_code_byte(bytes: &[u8]) -> usize {
    let mut best = 0..0;
    for p in wasmparser::Parser::new(0).parse_all(bytes) {
        if let Ok(wasmparser::Payload::CodeSectionEntry(body)) = p {
            let r = body.range();
            if r.len() > best.len() {
                best = r;
            }
        }
    }
    assert!(best.len() > 4, "no function body found");
    best.start + best.len() / 2
}

/// Change the plugin version inside the embedded manifest JSON, keeping its length.
fn tamper_manifest(bytes: &mut [u8]) {
    let json = toolhost_spec::manifest::find_section(bytes).unwrap();
    let v = json.windows(5).position(|w| w == b"0.1.0").expect("version in the manifest");
    // The JSON can occur more than once in a component (the section, and its bytes elsewhere
    // in the module): edit every copy, so the manifest the host reads is the edited one.
    let mut from = 0;
    while let Some(at) = bytes[from..].windows(json.len()).position(|w| w == json.as_slice()) {
        bytes[from + at + v + 4] = b'9';
        from += at + json.len();
    }
    assert_ne!(toolhost_spec::manifest::find_section(bytes).unwrap(), json, "the manifest was edited");
}

/// The files of a plugins folder, temporary files included, but not the approvals record
/// that loading the folder writes.
fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| rd.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    names.retain(|n| n != toolhost_core::registry::approvals::FILE);
    names.sort();
    names
}

fn toolhost(args: &[&str], cwd: &Path) -> Output {
    support::toolhost()
        .env("DOCKER_CONFIG", cwd.join("no-docker-config"))
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .output()
        .expect("run toolhost")
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// An operator's project folder: toolhost.toml trusting `team.key.pub`, a plugins folder.
fn project(k: &Key, required: bool) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(signing::public_path(&k.path), dir.path().join("team.key.pub")).unwrap();
    std::fs::write(
        dir.path().join("toolhost.toml"),
        format!(
            "plugins = \"plugins\"\n[trust]\nkeys = [\"team.key.pub\"]\nrequire_signature = {required}\n"
        ),
    )
    .unwrap();
    dir
}

#[test]
fn publish_then_install_by_tag_and_by_digest() {
    let reg = registry();
    let k = key("alice@team");
    let dir = project(&k, true);
    let plugin = dir.path().join("files.wasm");
    std::fs::copy(plugin_artifacts::FILES, &plugin).unwrap();

    // Sign and publish with the CLI, as an author would.
    let out = toolhost(&["sign", "files.wasm", "--key", k.path.to_str().unwrap()], dir.path());
    assert!(out.status.success(), "{}", text(&out));
    let reference = format!("{}/tools/files:0.1.0", reg.addr);
    let out = toolhost(&["publish", "files.wasm", &reference], dir.path());
    assert!(out.status.success(), "{}", text(&out));
    let published = text(&out);
    let digest = published.lines().find_map(|l| l.strip_prefix("digest: ")).expect("digest line").to_string();
    assert!(digest.starts_with("sha256:") && published.contains("signed by"), "{published}");

    // The registry shows the tools without the code: annotations and the config blob.
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let client = oci_client::Client::new(oci_client::client::ClientConfig {
        protocol: oci_client::client::ClientProtocol::Http,
        ..Default::default()
    });
    let r: oci_client::Reference = reference.parse().unwrap();
    let (m, _, config) = rt
        .block_on(client.pull_manifest_and_config(&r, &oci_client::secrets::RegistryAuth::Anonymous))
        .unwrap();
    let ann = m.annotations.clone().unwrap();
    assert_eq!(ann["dev.toolhost.plugin.name"], "files");
    assert!(ann["dev.toolhost.plugin.tools"].split(',').any(|t| t == "read"), "{ann:?}");
    let manifest: serde_json::Value = serde_json::from_str(&config).unwrap();
    assert_eq!(manifest["name"], "files");
    assert_eq!(m.layers.len(), 1);
    assert_eq!(m.layers[0].media_type, oci::LAYER_MEDIA_TYPES[0]);

    // Install by tag: the file lands in the plugins folder, byte for byte, and in the lock.
    let signed_bytes = std::fs::read(&plugin).unwrap();
    let out = toolhost(&["install", &reference], dir.path());
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("signed by alice@team"), "{}", text(&out));
    let installed = dir.path().join("plugins/files.wasm");
    assert_eq!(std::fs::read(&installed).unwrap(), signed_bytes);
    assert_eq!(files_in(&dir.path().join("plugins")), vec!["files.wasm"], "no temporary files left");
    let lock = LockFile::read(&dir.path().join("toolhost.lock")).unwrap();
    assert_eq!(lock.plugins.len(), 1);
    let e = &lock.plugins[0];
    assert_eq!(
        (e.name.as_str(), e.file.as_str(), e.reference.as_str()),
        ("files", "files.wasm", reference.as_str())
    );
    assert_eq!(e.digest, digest);
    assert_eq!(e.signer.as_deref(), Some(k.secret.public("").encoded().as_str()));
    use sha2::Digest as _;
    let sha: String = sha2::Sha256::digest(&signed_bytes).iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(e.sha256, sha);

    // The host loads it and names the signer.
    let out = toolhost(&["list"], dir.path());
    assert!(text(&out).contains("signed by: alice@team (ed25519:"), "{}", text(&out));
    let out = toolhost(&["inspect", "plugins/files.wasm"], dir.path());
    assert!(
        text(&out).contains("signed by alice@team (ed25519:") && text(&out).contains("(trusted)"),
        "{}",
        text(&out)
    );

    // Install by digest into another project: the same bytes.
    let other = project(&k, true);
    let by_digest = format!("{}/tools/files@{digest}", reg.addr);
    let out = toolhost(&["install", &by_digest], other.path());
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(std::fs::read(other.path().join("plugins/files.wasm")).unwrap(), signed_bytes);
    assert_eq!(LockFile::read(&other.path().join("toolhost.lock")).unwrap().plugins[0].digest, digest);

    // An unsigned plugin is refused by a project that requires signatures, before it is written.
    std::fs::copy(plugin_artifacts::TEXT, dir.path().join("text.wasm")).unwrap();
    let unsigned_ref = format!("{}/tools/text:0.1.0", reg.addr);
    let out = toolhost(&["publish", "text.wasm", &unsigned_ref], dir.path());
    assert!(out.status.success() && text(&out).contains("unsigned"), "{}", text(&out));
    let out = toolhost(&["install", &unsigned_ref], dir.path());
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("refused: unsigned: require_signature is set"), "{}", text(&out));
    assert_eq!(files_in(&dir.path().join("plugins")), vec!["files.wasm"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_digest_mismatch_is_refused_and_nothing_is_written() {
    let reg = registry();
    let env = Env::with(&[]);
    let reference = format!("{}/tools/text:1", reg.addr);
    let p = oci::publish(&env.settings(), Path::new(plugin_artifacts::TEXT), &reference).await.unwrap();
    assert_eq!(p.name, "text");

    // Corrupt the stored layer behind the registry's back (same length, one byte flipped).
    use sha2::Digest as _;
    let bytes = std::fs::read(plugin_artifacts::TEXT).unwrap();
    let hex: String = sha2::Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect();
    let blob =
        reg.storage.path().join(format!("data/docker/registry/v2/blobs/sha256/{}/{hex}/data", &hex[..2]));
    let mut stored = std::fs::read(&blob).expect("the layer blob in the registry's storage");
    let n = stored.len() / 2;
    stored[n] ^= 0x01;
    std::fs::write(&blob, &stored).unwrap();

    let work = tempfile::tempdir().unwrap();
    let lock = work.path().join("toolhost.lock");
    let e = oci::install(&env.settings(), &reference, &lock).await.unwrap_err();
    let msg = format!("{e:#}");
    assert!(msg.contains("digest mismatch"), "{msg}");
    assert!(
        files_in(env.plugins.path()).is_empty(),
        "nothing may be written: {:?}",
        files_in(env.plugins.path())
    );
    assert!(!lock.exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn locked_install_reproduces_the_folder_even_after_the_tag_moves() {
    let reg = registry();
    let k = key("ci");
    let a = Env::with(&[]);
    let mut config = a.settings();
    config.core.trust = trust(&[&k], true);
    let work = tempfile::tempdir().unwrap();
    for (file, name) in [(plugin_artifacts::FILES, "files"), (plugin_artifacts::VERSIONED, "versioned")] {
        let f = work.path().join(format!("{name}.wasm"));
        std::fs::write(&f, signed(file, &k)).unwrap();
        oci::publish(&config, &f, &format!("{}/tools/{name}:stable", reg.addr)).await.unwrap();
    }
    let lock = work.path().join("toolhost.lock");
    for name in ["files", "versioned"] {
        oci::install(&config, &format!("{}/tools/{name}:stable", reg.addr), &lock).await.unwrap();
    }
    assert_eq!(files_in(a.plugins.path()), vec!["files.wasm", "versioned.wasm"]);

    // The tag moves to a new version; the lock still names the old digest.
    let v2 = work.path().join("v2.wasm");
    std::fs::write(&v2, signed(plugin_artifacts::VERSIONED_V2, &k)).unwrap();
    oci::publish(&config, &v2, &format!("{}/tools/versioned:stable", reg.addr)).await.unwrap();

    // Another machine: a folder with a plugin the lock does not record (and files that are not
    // plugins), and the lock file.
    let b = Env::with(&[plugin_artifacts::TEXT]);
    std::fs::write(b.plugins.path().join(".toolhost-approvals.json"), "{}").unwrap();
    std::fs::write(b.plugins.path().join("README.txt"), "not a plugin").unwrap();
    let mut config_b = b.settings();
    config_b.core.trust = trust(&[&k], true);
    let installed = oci::install_locked(&config_b, &lock).await.unwrap();
    assert_eq!(installed.len(), 2);
    // Issue #32: what the lock does not record is reported, and removed only with --prune.
    assert_eq!(oci::unlocked_plugins(&config_b, &lock, false).unwrap(), ["text.wasm"]);
    assert!(b.plugins.path().join("text.wasm").exists());
    assert_eq!(oci::unlocked_plugins(&config_b, &lock, true).unwrap(), ["text.wasm"]);
    assert!(oci::unlocked_plugins(&config_b, &lock, false).unwrap().is_empty());
    assert!(
        b.plugins.path().join(".toolhost-approvals.json").exists()
            && b.plugins.path().join("README.txt").exists()
    );
    std::fs::remove_file(b.plugins.path().join("README.txt")).unwrap();
    assert_eq!(files_in(b.plugins.path()), files_in(a.plugins.path()));
    for f in files_in(a.plugins.path()) {
        assert_eq!(
            std::fs::read(a.plugins.path().join(&f)).unwrap(),
            std::fs::read(b.plugins.path().join(&f)).unwrap(),
            "{f} differs"
        );
    }
    let host = Env { config: config_b.core.clone(), ..b };
    assert_eq!(ok(&call(&host.host(), "which", &[]).await), "v1", "the locked version, not the moved tag");

    // A lock whose file hash does not match what the registry serves installs nothing.
    let mut bad = LockFile::read(&lock).unwrap();
    bad.plugins[1].sha256 = "00".repeat(32);
    let bad_lock = work.path().join("bad.lock");
    bad.write(&bad_lock).unwrap();
    let c = Env::with(&[]);
    let e = oci::install_locked(&c.settings(), &bad_lock).await.unwrap_err();
    assert!(format!("{e:#}").contains("the lock says"), "{e:#}");
    assert!(files_in(c.plugins.path()).is_empty(), "{:?}", files_in(c.plugins.path()));
}

#[test]
fn a_registry_that_is_down_is_a_clear_error_and_nothing_is_written() {
    let k = key("ops");
    let dir = project(&k, false);
    let port = free_port(); // nothing listens there
    let out = toolhost(&["install", &format!("127.0.0.1:{port}/tools/files:0.1.0")], dir.path());
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let msg = text(&out);
    assert!(msg.contains(&format!("is the registry at 127.0.0.1:{port} up and reachable?")), "{msg}");
    assert!(files_in(&dir.path().join("plugins")).is_empty(), "{:?}", files_in(&dir.path().join("plugins")));
    assert!(!dir.path().join("toolhost.lock").exists());

    std::fs::copy(plugin_artifacts::TEXT, dir.path().join("text.wasm")).unwrap();
    let out = toolhost(&["publish", "text.wasm", &format!("127.0.0.1:{port}/tools/text:1")], dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("up and reachable?"), "{}", text(&out));
}

/// The load-time policy, case by case.
#[test]
fn signatures_are_checked_at_load() {
    let team = key("team");
    let stranger = key("stranger");
    let good = signed(plugin_artifacts::VERSIONED, &team);
    let mut code = good.clone();
    code[a_code_byte(&good)] ^= 0x01;
    let mut manifest = good.clone();
    tamper_manifest(&mut manifest);
    let unknown = signed(plugin_artifacts::VERSIONED, &stranger);
    let stripped = good[..std::fs::read(plugin_artifacts::VERSIONED).unwrap().len()].to_vec();
    assert_eq!(signing::verify(&stripped).unwrap(), vec![], "the signature section is gone");

    let cases: [(&str, &[u8], Option<&str>); 5] = [
        ("valid", &good, None),
        ("tampered code byte", &code, Some("does not match the file (tampered?)")),
        ("tampered manifest", &manifest, Some("embedded manifest was changed after it was signed")),
        ("unknown key", &unknown, Some("signature by unknown key ed25519:")),
        ("stripped signature", &stripped, Some("unsigned: require_signature is set")),
    ];
    for (what, bytes, refusal) in cases {
        let mut env = Env::with(&[]);
        env.config.trust = trust(&[&team], true);
        std::fs::write(env.plugins.path().join("versioned.wasm"), bytes).unwrap();
        let reg = env.registry();
        match refusal {
            None => {
                assert_eq!(reg.plugins().len(), 1, "{what}: {:?}", reg.failures());
                let s = reg.plugins()[0].signer.clone().expect("signer");
                assert!(s.trusted && s.signer.starts_with("team (ed25519:"), "{what}: {s:?}");
            }
            Some(reason) => {
                assert!(reg.plugins().is_empty(), "{what} was loaded");
                let f = &reg.failures()[0];
                assert!(f.reason.contains(reason), "{what}: {}", f.reason);
                let listed = toolhost::commands::list::render_list(&reg, &env.config);
                assert!(listed.contains("! versioned.wasm: ") && listed.contains(reason), "{what}: {listed}");
            }
        }
    }

    // Without require_signature: unsigned and stranger-signed load (marked), tampered never does.
    let mut env = Env::with(&[]);
    env.config.trust = trust(&[&team], false);
    std::fs::write(env.plugins.path().join("versioned.wasm"), &unknown).unwrap();
    std::fs::write(env.plugins.path().join("text.wasm"), std::fs::read(plugin_artifacts::TEXT).unwrap())
        .unwrap();
    let reg = env.registry();
    assert_eq!(reg.plugins().len(), 2, "{:?}", reg.failures());
    assert!(toolhost::commands::list::render_list(&reg, &env.config).contains("(key not trusted)"));
    std::fs::write(env.plugins.path().join("versioned.wasm"), &code).unwrap();
    assert!(env.registry().failures()[0].reason.contains("tampered"));

    // An exception to a global requirement is keyed by the exact file (#26: never by the name
    // a file gives itself).
    let mut env = Env::with(&[plugin_artifacts::TEXT]);
    env.config.trust = trust(&[&team], true);
    assert_eq!(env.registry().plugins().len(), 0, "unsigned: refused");
    let text = std::fs::read(plugin_artifacts::TEXT).unwrap();
    env.config.trust.allow_unsigned.push(toolhost_core::registry::content_hash(&text));
    assert_eq!(env.registry().plugins().len(), 1, "the exempted file loads");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reload_of_a_tampered_file_keeps_the_last_good_version() {
    let team = key("team");
    let mut env = Env::with(&[]);
    env.config.trust = trust(&[&team], true);
    let host = env.host();
    let reloader = Reloader::new(host.runtime.clone(), host.config.clone(), host.registry.clone());
    let path = env.plugins.path().join("versioned.wasm");
    let rescan = |r: &Arc<Reloader>| {
        let r = r.clone();
        async move { tokio::task::spawn_blocking(move || r.rescan()).await.unwrap().unwrap() }
    };

    std::fs::write(&path, signed(plugin_artifacts::VERSIONED, &team)).unwrap();
    let c = rescan(&reloader).await;
    assert_eq!(c.lines()[0], "+ nap (versioned v0.1.0)");
    assert_eq!(ok(&call(&host, "which", &[]).await), "v1");

    // v2, signed, then one code byte changed: refused, v1 keeps serving, the reason is shown.
    let mut v2 = signed(plugin_artifacts::VERSIONED_V2, &team);
    let at = a_code_byte(&v2);
    v2[at] ^= 0x01;
    std::fs::write(&path, &v2).unwrap();
    let c = rescan(&reloader).await;
    let line = c.lines().join("\n");
    assert!(line.contains("! versioned.wasm: signature by ed25519:"), "{line}");
    assert!(line.contains("does not match the file (tampered?) (still serving v0.1.0)"), "{line}");
    assert_eq!(ok(&call(&host, "which", &[]).await), "v1");

    // An unsigned v2 is refused too; the properly signed v2 goes live.
    std::fs::write(&path, std::fs::read(plugin_artifacts::VERSIONED_V2).unwrap()).unwrap();
    let c = rescan(&reloader).await;
    assert!(c.lines().join("\n").contains("unsigned: require_signature is set"), "{:?}", c.lines());
    assert_eq!(ok(&call(&host, "which", &[]).await), "v1");
    std::fs::write(&path, signed(plugin_artifacts::VERSIONED_V2, &team)).unwrap();
    rescan(&reloader).await;
    assert_eq!(ok(&call(&host, "which", &[]).await), "v2");

    // Signatures compose with approvals: a validly signed version asking for more is still held.
    std::fs::write(&path, signed(plugin_artifacts::VERSIONED_V3, &team)).unwrap();
    let c = rescan(&reloader).await;
    assert_eq!(c.pending.len(), 1, "{c:?}");
    assert_eq!(ok(&call(&host, "which", &[]).await), "v2");
}
