//! Plugins from OCI registries: `publish` pushes a plugin as an OCI artifact, `install` pulls one
//! into the plugins folder (digest-checked, signature policy applied, write-then-rename) and
//! records it in `toolhost.lock`, from which `install --locked` reproduces the same folder.
//!
//! The artifact: one layer, the component itself (`application/vnd.wasm.content.layer.v1+wasm`),
//! and a config blob holding the embedded manifest JSON
//! (`application/vnd.toolhost.plugin.manifest.v1+json`), with the plugin's name, version, tool
//! names and signers as manifest annotations, so a registry can show what a plugin offers
//! without anyone downloading its code.
//!
//! Credentials never come from the command line: `[registry."HOST"]` in `toolhost.toml`
//! (a username and a `[secrets]` entry holding the password or token), else the operator's
//! Docker config (`$DOCKER_CONFIG/config.json` or `~/.docker/config.json`, including
//! `credHelpers`/`credsStore`), else anonymous. Loopback registries (`localhost`, `127.0.0.1`,
//! `::1`) are spoken to over plain HTTP, as Docker does; others over HTTPS unless the operator
//! sets `insecure = true` for that registry.

use crate::settings::Settings;
use anyhow::{Context, Result, anyhow, bail};
use oci_client::client::{ClientConfig, ClientProtocol, Config as OciConfig, ImageLayer};
use oci_client::manifest::{OciImageManifest, WASM_LAYER_MEDIA_TYPE};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use toolhost_core::registry::signing;

/// Media type of the config blob: the plugin's manifest JSON, as embedded in the component.
pub const CONFIG_MEDIA_TYPE: &str = "application/vnd.toolhost.plugin.manifest.v1+json";
/// Layer media types `install` accepts (the first is what `publish` writes).
pub const LAYER_MEDIA_TYPES: &[&str] = &[WASM_LAYER_MEDIA_TYPE, "application/wasm"];
/// Default lock file name (beside the config file, or in the current directory).
pub const LOCK_FILE: &str = "toolhost.lock";

pub mod settings;

pub use settings::{RawRegistry, RegistryConfig};

/// One installed plugin, as recorded in `toolhost.lock`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockEntry {
    /// Plugin name (from its manifest).
    pub name: String,
    pub version: String,
    /// File name in the plugins folder.
    pub file: String,
    /// The reference as given to `install` (tag or digest).
    pub reference: String,
    /// The OCI manifest digest it resolved to; `--locked` pulls by this digest.
    pub digest: String,
    /// SHA-256 of the installed file, hex.
    pub sha256: String,
    /// The public key that signed it (`toolhost-ed25519:…`), if signed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signer: Option<String>,
}

/// `toolhost.lock`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockFile {
    pub version: u32,
    #[serde(default, rename = "plugin")]
    pub plugins: Vec<LockEntry>,
}

impl LockFile {
    pub fn read(path: &Path) -> Result<LockFile> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(LockFile { version: 1, plugins: vec![] });
            }
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
        };
        let lock: LockFile =
            toml::from_str(&text).map_err(|e| anyhow!("{}: {}", path.display(), e.to_string().trim_end()))?;
        if lock.version != 1 {
            bail!(
                "{}: lock file version {} is not known to this toolhost (it reads 1)",
                path.display(),
                lock.version
            );
        }
        Ok(lock)
    }

    pub fn write(&self, path: &Path) -> Result<()> {
        let mut text = String::from(
            "# toolhost.lock: written by `toolhost install`; `toolhost install --locked` reproduces the plugins folder from it.\n",
        );
        text.push_str(&toml::to_string(self).context("cannot encode the lock file")?);
        write_atomic(path, text.as_bytes()).with_context(|| format!("cannot write {}", path.display()))
    }

    /// Add or replace the entry for the same file.
    pub fn record(&mut self, entry: LockEntry) {
        self.plugins.retain(|e| e.file != entry.file && e.name != entry.name);
        self.plugins.push(entry);
        self.plugins.sort_by(|a, b| a.file.cmp(&b.file));
    }
}

/// Where the lock file lives: beside the config file if there is one, else the current directory.
pub fn default_lock_path(cfg: &Settings) -> PathBuf {
    match cfg.core.source.as_ref().and_then(|s| s.parent()) {
        Some(dir) => dir.join(LOCK_FILE),
        None => PathBuf::from(LOCK_FILE),
    }
}

pub use toolhost_core::files::write_atomic;

fn parse_ref(s: &str) -> Result<Reference> {
    s.parse::<Reference>().map_err(|e| {
        anyhow!("{s:?} is not an OCI reference ({e}); write HOST[:PORT]/REPOSITORY:TAG or HOST[:PORT]/REPOSITORY@sha256:DIGEST")
    })
}

fn is_loopback(registry: &str) -> bool {
    let host =
        registry.rsplit_once(':').filter(|(h, p)| !h.is_empty() && p.chars().all(|c| c.is_ascii_digit()));
    let host = host.map(|(h, _)| h).unwrap_or(registry).trim_start_matches('[').trim_end_matches(']');
    host == "localhost" || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

fn client_for(cfg: &Settings, reference: &Reference) -> Client {
    let registry = reference.registry().to_string();
    let insecure = is_loopback(&registry) || cfg.registries.get(&registry).is_some_and(|r| r.insecure);
    let protocol = if insecure {
        ClientProtocol::HttpsExcept(vec![registry.clone(), reference.resolve_registry().to_string()])
    } else {
        ClientProtocol::Https
    };
    Client::new(ClientConfig {
        protocol,
        connect_timeout: Some(std::time::Duration::from_secs(10)),
        read_timeout: Some(std::time::Duration::from_secs(60)),
        platform_resolver: None,
        ..ClientConfig::default()
    })
}

/// Credentials for `registry`: the config's `[registry."HOST"]`, else the Docker config, else none.
fn auth_for(cfg: &Settings, registry: &str) -> Result<RegistryAuth> {
    if let Some(r) = cfg.registries.get(registry)
        && let (Some(user), Some(secret)) = (&r.username, &r.secret)
    {
        let password = secret.read().map_err(|e| anyhow!("registry \"{registry}\": {e}"))?;
        return Ok(RegistryAuth::Basic(user.clone(), password));
    }
    Ok(docker_auth(registry).unwrap_or(RegistryAuth::Anonymous))
}

/// Credentials from a Docker-style `config.json` (`auths`, `credHelpers`, `credsStore`).
fn docker_auth(registry: &str) -> Option<RegistryAuth> {
    let path = match std::env::var_os("DOCKER_CONFIG") {
        Some(dir) => PathBuf::from(dir).join("config.json"),
        None => PathBuf::from(std::env::var_os("HOME")?).join(".docker/config.json"),
    };
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).ok()?).ok()?;
    let keys = [registry.to_string(), format!("https://{registry}"), format!("http://{registry}")];
    let helper =
        keys.iter().find_map(|k| doc["credHelpers"][k].as_str()).or_else(|| doc["credsStore"].as_str());
    if let Some(helper) = helper
        && let Some(auth) = credential_helper(helper, registry)
    {
        return Some(auth);
    }
    let entry = keys.iter().find_map(|k| doc["auths"].get(k))?;
    if let (Some(u), Some(p)) = (entry["username"].as_str(), entry["password"].as_str()) {
        return Some(RegistryAuth::Basic(u.into(), p.into()));
    }
    let decoded =
        base64::Engine::decode(&base64::engine::general_purpose::STANDARD, entry["auth"].as_str()?).ok()?;
    let (u, p) = std::str::from_utf8(&decoded).ok()?.split_once(':')?;
    Some(RegistryAuth::Basic(u.into(), p.into()))
}

fn credential_helper(helper: &str, registry: &str) -> Option<RegistryAuth> {
    use std::io::Write;
    let mut child = std::process::Command::new(format!("docker-credential-{helper}"))
        .arg("get")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()?;
    child.stdin.take()?.write_all(registry.as_bytes()).ok()?;
    let out = child.wait_with_output().ok()?;
    if !out.status.success() {
        return None;
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
    Some(RegistryAuth::Basic(v["Username"].as_str()?.into(), v["Secret"].as_str()?.into()))
}

/// An oci-client error with its causes, naming the registry.
fn oci_error(
    e: oci_client::errors::OciDistributionError,
    what: &str,
    reference: &Reference,
) -> anyhow::Error {
    let mut msg = e.to_string();
    let mut src = std::error::Error::source(&e);
    while let Some(s) = src {
        msg.push_str(": ");
        msg.push_str(&s.to_string());
        src = s.source();
    }
    use oci_client::errors::OciDistributionError as E;
    let unreachable = matches!(&e, E::RequestError(r) if r.is_connect() || r.is_request() || r.is_timeout());
    let refused = match &e {
        E::AuthenticationFailure(_) | E::UnauthorizedError { .. } => true,
        E::ServerError { code, .. } => *code == 401 || *code == 403,
        E::RequestError(r) => r.status().is_some_and(|s| s.as_u16() == 401 || s.as_u16() == 403),
        _ => false,
    };
    let hint = if unreachable {
        format!(" (is the registry at {} up and reachable?)", reference.registry())
    } else if refused {
        format!(
            " (add credentials with `docker login {}` or [registry.\"{}\"] in toolhost.toml)",
            reference.registry(),
            reference.registry()
        )
    } else {
        String::new()
    };
    anyhow!("{what} {}: {msg}{hint}", reference.whole())
}

/// What `publish` did.
#[derive(Debug, Clone)]
pub struct Published {
    pub name: String,
    pub version: String,
    pub digest: String,
    pub signers: Vec<String>,
}

/// Push a plugin file to `reference`.
pub async fn publish(cfg: &Settings, file: &Path, reference: &str) -> Result<Published> {
    let reference = parse_ref(reference)?;
    let bytes = std::fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
    let manifest = toolhost_spec::manifest::read(&bytes).map_err(|e| anyhow!("{}: {e}", file.display()))?;
    let json =
        toolhost_spec::manifest::find_section(&bytes).map_err(|e| anyhow!("{}: {e}", file.display()))?;
    let signers = signing::verify(&bytes).map_err(|e| anyhow!("{}: {e}", file.display()))?;
    let mut annotations = BTreeMap::new();
    annotations.insert("org.opencontainers.image.title".to_string(), format!("{}.wasm", manifest.name));
    annotations.insert("org.opencontainers.image.version".to_string(), manifest.version.clone());
    if !manifest.description.is_empty() {
        annotations.insert("org.opencontainers.image.description".to_string(), manifest.description.clone());
    }
    annotations.insert("dev.toolhost.plugin.name".to_string(), manifest.name.clone());
    annotations.insert(
        "dev.toolhost.plugin.tools".to_string(),
        manifest.tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>().join(","),
    );
    if !signers.is_empty() {
        annotations.insert(
            "dev.toolhost.plugin.signers".to_string(),
            signers.iter().map(|k| k.encoded()).collect::<Vec<_>>().join(","),
        );
    }
    let layer = ImageLayer::new(bytes, WASM_LAYER_MEDIA_TYPE.to_string(), None);
    let config = OciConfig::new(json, CONFIG_MEDIA_TYPE.to_string(), None);
    let oci_manifest = OciImageManifest::build(std::slice::from_ref(&layer), &config, Some(annotations));
    let client = client_for(cfg, &reference);
    let auth = auth_for(cfg, reference.registry())?;
    client
        .push(&reference, &[layer], config, &auth, Some(oci_manifest))
        .await
        .map_err(|e| oci_error(e, "cannot push to", &reference))?;
    let digest = client
        .fetch_manifest_digest(&reference, &auth)
        .await
        .map_err(|e| oci_error(e, "pushed, but cannot read back the digest of", &reference))?;
    Ok(Published {
        name: manifest.name,
        version: manifest.version,
        digest,
        signers: signers.iter().map(signing::PublicKey::display).collect(),
    })
}

/// A plugin pulled and checked, not yet written.
#[derive(Debug, Clone)]
pub struct Pulled {
    pub entry: LockEntry,
    pub bytes: Vec<u8>,
    pub signer: Option<signing::SignerInfo>,
}

/// Pull `reference`, check the layer digest, the manifest and the signature policy.
pub async fn pull(cfg: &Settings, reference: &str) -> Result<Pulled> {
    let parsed = parse_ref(reference)?;
    let client = client_for(cfg, &parsed);
    let auth = auth_for(cfg, parsed.registry())?;
    let (manifest, digest) = client
        .pull_image_manifest(&parsed, &auth)
        .await
        .map_err(|e| oci_error(e, "cannot fetch", &parsed))?;
    if manifest.config.media_type != CONFIG_MEDIA_TYPE {
        bail!(
            "{reference} is not a toolhost plugin: its config is {:?}, a plugin's is {CONFIG_MEDIA_TYPE:?} (pushed with `toolhost publish`)",
            manifest.config.media_type
        );
    }
    let [layer] = manifest.layers.as_slice() else {
        bail!("{reference}: a plugin artifact has exactly one layer, this one has {}", manifest.layers.len());
    };
    if !LAYER_MEDIA_TYPES.contains(&layer.media_type.as_str()) {
        bail!(
            "{reference}: layer media type {:?} is not a WebAssembly component ({LAYER_MEDIA_TYPES:?})",
            layer.media_type
        );
    }
    if u64::try_from(layer.size).unwrap_or(u64::MAX) > cfg.core.max_plugin_bytes {
        bail!(
            "{reference}: the plugin is {} bytes, over limits.max_plugin_mb ({} bytes)",
            layer.size,
            cfg.core.max_plugin_bytes
        );
    }
    let mut bytes = Vec::new();
    client.pull_blob(&parsed, layer, &mut bytes).await.map_err(|e| {
        if let oci_client::errors::OciDistributionError::DigestError(_) = &e {
            anyhow!("{reference}: digest mismatch: the layer the registry sent does not hash to {} ({e}); nothing was installed", layer.digest)
        } else {
            oci_error(e, "cannot download the plugin layer of", &parsed)
        }
    })?;
    // oci-client checks the digest as it streams; check again on the whole, exact bytes.
    let actual = format!("sha256:{}", toolhost_spec::digest::sha256_hex(&bytes));
    if actual != layer.digest {
        bail!(
            "{reference}: digest mismatch: the layer should be {} but is {actual}; nothing was installed",
            layer.digest
        );
    }
    let plugin = toolhost_spec::manifest::read(&bytes).map_err(|e| anyhow!("{reference}: the plugin {e}"))?;
    let signer = signing::check(&cfg.core.trust, &plugin.name, &bytes)
        .map_err(|e| anyhow!("{reference}: refused: {e}"))?;
    let signers = signing::verify(&bytes).unwrap_or_default();
    let signer_key = signers
        .iter()
        .find(|k| cfg.core.trust.keys.iter().any(|t| t.encoded() == k.encoded()))
        .or(signers.first())
        .map(signing::PublicKey::encoded);
    Ok(Pulled {
        entry: LockEntry {
            name: plugin.name.clone(),
            version: plugin.version,
            file: format!("{}.wasm", plugin.name),
            reference: reference.to_string(),
            digest,
            sha256: toolhost_spec::digest::sha256_hex(&bytes),
            signer: signer_key,
        },
        bytes,
        signer,
    })
}

/// Install one reference: pull, check, write into the plugins folder, record in the lock file.
pub async fn install(cfg: &Settings, reference: &str, lock_path: &Path) -> Result<Pulled> {
    let pulled = pull(cfg, reference).await?;
    std::fs::create_dir_all(&cfg.core.plugins_dir)
        .with_context(|| format!("cannot create plugins folder {}", cfg.core.plugins_dir.display()))?;
    let mut lock = LockFile::read(lock_path)?;
    let to = cfg.core.plugins_dir.join(&pulled.entry.file);
    write_atomic(&to, &pulled.bytes).with_context(|| format!("cannot write {}", to.display()))?;
    lock.record(pulled.entry.clone());
    lock.write(lock_path)?;
    Ok(pulled)
}

/// `install --locked`: pull every entry of the lock file by digest, check each against the lock
/// (digest, file hash, signer) and the trust policy, and only then write them all.
pub async fn install_locked(cfg: &Settings, lock_path: &Path) -> Result<Vec<Pulled>> {
    if !lock_path.is_file() {
        bail!("{} does not exist; run `toolhost install REF` first to create it", lock_path.display());
    }
    let lock = LockFile::read(lock_path)?;
    let mut pulled = Vec::new();
    for e in &lock.plugins {
        let base = parse_ref(&e.reference)?;
        let by_digest = format!("{}/{}@{}", base.registry(), base.repository(), e.digest);
        let mut p =
            pull(cfg, &by_digest).await.with_context(|| format!("{} (locked as {})", e.file, e.reference))?;
        if p.entry.digest != e.digest {
            bail!(
                "{}: the registry resolved {by_digest} to {}, not the locked digest",
                e.file,
                p.entry.digest
            );
        }
        if p.entry.sha256 != e.sha256 {
            bail!(
                "{}: the pulled file's SHA-256 is {}, the lock says {}; nothing was installed",
                e.file,
                p.entry.sha256,
                e.sha256
            );
        }
        if p.entry.file != e.file || p.entry.name != e.name {
            bail!("{}: the pulled plugin is `{}`, the lock says `{}`", e.file, p.entry.name, e.name);
        }
        if let Some(want) = &e.signer {
            let signers = signing::verify(&p.bytes).unwrap_or_default();
            if !signers.iter().any(|k| &k.encoded() == want) {
                bail!("{}: not signed by the locked signer {want}", e.file);
            }
        }
        p.entry.reference = e.reference.clone();
        pulled.push(p);
    }
    std::fs::create_dir_all(&cfg.core.plugins_dir)
        .with_context(|| format!("cannot create plugins folder {}", cfg.core.plugins_dir.display()))?;
    for p in &pulled {
        let to = cfg.core.plugins_dir.join(&p.entry.file);
        write_atomic(&to, &p.bytes).with_context(|| format!("cannot write {}", to.display()))?;
    }
    Ok(pulled)
}

/// After `install --locked`: the plugin files in the plugins folder that the lock file does not
/// record (what the host would load: `*.wasm`, no dotfiles or temporary files — approvals and
/// other files are not plugins and stay), in file-name order; with `prune`, removed.
pub fn unlocked_plugins(cfg: &Settings, lock_path: &Path, prune: bool) -> Result<Vec<String>> {
    let lock = LockFile::read(lock_path)?;
    let dir = &cfg.core.plugins_dir;
    let entries =
        std::fs::read_dir(dir).with_context(|| format!("cannot read plugins folder {}", dir.display()))?;
    let mut extra: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file() || t.is_symlink()))
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .filter(|name| toolhost_core::discovery::is_candidate_name(name))
        .filter(|name| !lock.plugins.iter().any(|p| &p.file == name))
        .collect();
    extra.sort();
    if prune {
        for name in &extra {
            let path = dir.join(name);
            std::fs::remove_file(&path).with_context(|| format!("cannot remove {}", path.display()))?;
        }
    }
    Ok(extra)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_registries() {
        assert!(is_loopback("127.0.0.1:5000"));
        assert!(is_loopback("localhost"));
        assert!(is_loopback("[::1]:5000"));
        assert!(!is_loopback("ghcr.io"));
        assert!(!is_loopback("10.0.0.1:5000"));
    }

    #[test]
    fn lock_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOCK_FILE);
        let mut lock = LockFile::read(&path).unwrap();
        let e = LockEntry {
            name: "files".into(),
            version: "0.1.0".into(),
            file: "files.wasm".into(),
            reference: "127.0.0.1:5000/t/files:1".into(),
            digest: "sha256:00".into(),
            sha256: "ab".into(),
            signer: None,
        };
        lock.record(e.clone());
        lock.record(LockEntry { version: "0.2.0".into(), ..e.clone() });
        lock.write(&path).unwrap();
        let back = LockFile::read(&path).unwrap();
        assert_eq!(back.plugins.len(), 1);
        assert_eq!(back.plugins[0].version, "0.2.0");
        std::fs::write(&path, "version = 1\n[[plugin]]\nname = 1\n").unwrap();
        assert!(LockFile::read(&path).unwrap_err().to_string().contains(LOCK_FILE));
    }
}
