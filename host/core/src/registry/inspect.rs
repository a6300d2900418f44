//! The half of loading a file that needs no engine: its manifest (skills, apps) read and checked,
//! its signature judged, its grants resolved; and reading one file's manifest for `inspect`.

use super::dev::dev_sources;
use super::index;
use super::plugin::ToolSchemas;
use crate::capability::Missing;
use crate::capability::{GrantContext, Grants};
use crate::discovery::{self, Candidate, LoadFailure};
use crate::settings::Config;
use std::path::Path;
use toolhost_spec::manifest::{self, Manifest};

/// What loading a file finds out before its code is touched: the manifest read and checked, the
/// signature judged, the grants resolved. Needs no engine, so a start does it while the engine is
/// being built ([`ReadAhead`](super::ReadAhead)).
pub struct Inspected {
    pub(super) manifest: Manifest,
    pub(super) schemas: Vec<ToolSchemas>,
    pub(super) signer: Option<crate::registry::signing::SignerInfo>,
    pub(super) grants: Grants,
    pub(super) missing: Vec<Missing>,
    pub(super) skills: super::skills::Skills,
    /// Its apps as its `toolhost-apps` section declares them (checked against its tools when
    /// it loads).
    pub(super) apps: Vec<toolhost_spec::apps::AppSpec>,
}

/// The half of loading a file (`c`, whose bytes are `bytes`) that needs no engine
/// ([`link`](super::load) is the other).
pub fn inspect(config: &Config, c: &Candidate, bytes: &[u8]) -> Result<Inspected, LoadFailure> {
    inspect_indexing(config, c, bytes).map(|(inspected, _)| inspected)
}

/// [`inspect`], and how the folder index may know the file from now on: an unsigned file that
/// passed is an entry.
pub(super) fn inspect_indexing(
    config: &Config,
    c: &Candidate,
    bytes: &[u8],
) -> Result<(Inspected, index::Indexed), LoadFailure> {
    let fail = |reason: String| LoadFailure { file: c.path.clone(), reason };
    let section = manifest::find_section(bytes).map_err(|e| fail(e.to_string()))?;
    let manifest = manifest::parse(&section).map_err(|e| fail(e.to_string()))?;
    // Signature policy ([trust]): checked before anything is compiled; a refusal is a load
    // failure like any other, so the last good version keeps serving.
    let signer = crate::registry::signing::check(&config.trust, &manifest.name, bytes)
        .map_err(|e| fail(e.to_string()))?;
    // A bad skills section refuses the plugin, as a bad manifest does: what it would serve is
    // not what its author wrote.
    let (skills, skills_text) = super::skills::from_file(bytes).map_err(|e| fail(e.to_string()))?;
    let (apps, apps_text) = super::apps::from_file(bytes).map_err(|e| fail(e.to_string()))?;
    let marker = toolhost_spec::sections::dev_marker(bytes).map_err(fail)?;
    let entry = match signer {
        None => index::Entry::new(c, section, (skills_text, apps_text), marker.clone())
            .map_or(index::Indexed::Not, index::Indexed::New),
        Some(_) => index::Indexed::Not,
    };
    let mut inspected = checked(config, c, manifest, signer, marker)?;
    (inspected.skills, inspected.apps) = (skills, apps);
    Ok((inspected, entry))
}

/// [`inspect`] of a file the folder index knows (`entry`), unread: its manifest read and
/// checked by the manifest rules again (its `outputSchema`s, compiled when the file was
/// indexed, are compiled on first use: [`manifest::parse_checked_before`]), and the policy for
/// an unsigned file applied (the index holds no signed file).
pub(super) fn inspect_indexed(
    config: &Config,
    c: &Candidate,
    entry: &index::Entry,
) -> Result<Inspected, LoadFailure> {
    let fail = |reason: String| LoadFailure { file: c.path.clone(), reason };
    let manifest =
        manifest::parse_checked_before(entry.manifest.as_bytes()).map_err(|e| fail(e.to_string()))?;
    crate::registry::signing::check_unsigned(&config.trust, &manifest.name, &c.hash)
        .map_err(|e| fail(e.to_string()))?;
    let skills = match &entry.skills {
        Some(text) => super::skills::from_section(text.as_bytes()).map_err(|e| fail(e.to_string()))?,
        None => Default::default(),
    };
    let apps = match &entry.apps {
        Some(text) => super::apps::from_section(text.as_bytes()).map_err(|e| fail(e.to_string()))?,
        None => Vec::new(),
    };
    let mut inspected = checked(config, c, manifest, None, entry.dev.clone())?;
    (inspected.skills, inspected.apps) = (skills, apps);
    Ok(inspected)
}

/// What [`inspect`] makes of a file's checked manifest, signer and dev marker: its grants,
/// and its dev build's sources (which must still be there).
fn checked(
    config: &Config,
    c: &Candidate,
    manifest: Manifest,
    signer: Option<crate::registry::signing::SignerInfo>,
    marker: Option<toolhost_spec::sections::DevMarker>,
) -> Result<Inspected, LoadFailure> {
    let dev_sources = dev_sources(config, &manifest.name, marker)
        .map_err(|reason| LoadFailure { file: c.path.clone(), reason })?;
    let grant = config.plugin_file(&manifest.name, &c.hash);
    let cx = GrantContext {
        plugin: &manifest.name,
        request: &manifest.capabilities,
        grant: &grant,
        secrets: &config.secrets,
    };
    let (mut grants, missing) = Grants::effective(&cx);
    grants.fs.extend(dev_sources);
    let schemas = manifest.tools.iter().map(ToolSchemas::of).collect();
    Ok(Inspected { manifest, schemas, signer, grants, missing, skills: Default::default(), apps: Vec::new() })
}

/// Why [`inspect_file`] read no manifest (the file is named by the caller).
#[derive(Debug, thiserror::Error)]
pub enum InspectError {
    #[error(transparent)]
    Read(#[from] discovery::ReadError),
    #[error("not a file")]
    NotAFile,
    #[error(transparent)]
    Manifest(#[from] manifest::ManifestError),
}

/// Read one file's manifest for `inspect`: no compilation, no execution.
pub fn inspect_file(path: &Path, max_bytes: u64) -> Result<Manifest, InspectError> {
    let bytes = discovery::read_capped(path, max_bytes)?.ok_or(InspectError::NotAFile)?;
    Ok(manifest::read(&bytes)?)
}
