//! Resources over MCP: `resources/list` (each skill's `SKILL.md`, each app's page (`ui://`,
//! MCP Apps, with its `_meta.ui`), then the plugins' static resources), `resources/templates/list` (the plugins' templates) and `resources/read` of
//! any of them — the read is the executor's (`Executor::read`: looked up once, run in the
//! plugin's sandbox when it is a plugin's, audited and counted); this file only shapes it.

use super::McpServer;
use super::skills::plugin_meta;
use base64::Engine as _;
use rmcp::ErrorData;
use rmcp::model::{
    ListResourceTemplatesResult, ListResourcesResult, ReadResourceResult, Resource, ResourceContents,
    ResourceTemplate,
};
use toolhost_core::executor::{Body, CallContext, ReadError};
use toolhost_core::registry::resources;
use toolhost_core::registry::skills::{SkillFile, all, uri};
use toolhost_spec::skills::SKILL_MD;

impl McpServer {
    /// `resources/list` from `cursor`: each skill's `SKILL.md`, named and described by its front
    /// matter, then each plugin's static resources as its manifest declares them, a page at a
    /// time.
    pub fn resources_result(&self, cursor: Option<&str>) -> Result<ListResourcesResult, ErrorData> {
        let registry = self.executor.registry();
        let plugins = registry.plugins();
        let skills = all(plugins).into_iter().map(|(p, s)| {
            let size = s.file(SKILL_MD).map_or(0, SkillFile::size);
            Resource::new(uri(p, &s.name, SKILL_MD), &s.name)
                .with_description(&s.description)
                .with_mime_type("text/markdown")
                .with_size(size)
                .with_meta(plugin_meta(p))
        });
        let declared = resources::all(plugins).map(|(p, r)| {
            let mut out = Resource::new(&r.uri, &r.name).with_meta(plugin_meta(p));
            (out.title, out.mime_type, out.size) = (r.title.clone(), r.mime_type.clone(), r.size);
            out.description = (!r.description.is_empty()).then(|| r.description.clone());
            out
        });
        let apps = plugins.iter().flat_map(|p| p.apps.iter().map(move |a| (&*p.name, a))).map(|(p, a)| {
            let mut meta = plugin_meta(p);
            meta.0.insert("ui".into(), a.ui_meta());
            let mut out = Resource::new(&a.uri, &a.spec.name)
                .with_description(&a.spec.description)
                .with_mime_type(toolhost_spec::apps::MIME_TYPE)
                .with_size(a.spec.html.len() as u64)
                .with_meta(meta);
            out.title = a.spec.title.clone();
            out
        });
        let all = skills.chain(apps).chain(declared).collect();
        let (listed, next) = super::pages::page(all, |r: &Resource| &r.uri, cursor, self.page_size)?;
        let mut out = ListResourcesResult::with_all_items(listed);
        out.next_cursor = next;
        Ok(out.with_ttl_ms(self.list_ttl()).with_cache_scope(self.cache_scope))
    }

    /// `resources/templates/list` from `cursor`: each plugin's resource templates, a page at a
    /// time.
    pub(crate) fn templates_result(
        &self,
        cursor: Option<&str>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let registry = self.executor.registry();
        let templates = resources::templates(registry.plugins())
            .map(|(p, t)| {
                let mut out = ResourceTemplate::new(&t.uri_template, &t.name).with_meta(plugin_meta(p));
                (out.title, out.mime_type) = (t.title.clone(), t.mime_type.clone());
                out.description = (!t.description.is_empty()).then(|| t.description.clone());
                out
            })
            .collect();
        let (templates, next) =
            super::pages::page(templates, |t: &ResourceTemplate| &t.uri_template, cursor, self.page_size)?;
        let mut out = ListResourceTemplatesResult::with_all_items(templates);
        out.next_cursor = next;
        Ok(out)
    }

    /// `resources/read` for `who`: text as text, bytes base64; a cut body says so in its
    /// `_meta` (`toolhost/truncated`). An unknown URI is resource-not-found (-32002, which rmcp
    /// turns into -32602 for 2026-07-28 clients); a plugin's refusal invalid params; a failed
    /// run an internal error naming what failed.
    pub async fn read_result(&self, uri: &str, who: &CallContext) -> Result<ReadResourceResult, ErrorData> {
        let read = self.executor.read(uri, "resources/read", who).await.map_err(|e| match e {
            ReadError::NotFound(_) => ErrorData::resource_not_found(e.to_string(), None),
            ReadError::Refused { .. } | ReadError::NotText { .. } => {
                ErrorData::invalid_params(e.to_string(), None)
            }
            ReadError::Failed { .. } => ErrorData::internal_error(e.to_string(), None),
        })?;
        let mut contents = match read.body {
            Body::Text(text) => ResourceContents::text(text, uri),
            Body::Blob(bytes) => {
                ResourceContents::blob(base64::engine::general_purpose::STANDARD.encode(&bytes), uri)
            }
        };
        if let Some(mime) = read.mime_type {
            contents = contents.with_mime_type(mime);
        }
        let mut meta = plugin_meta(&read.plugin);
        if let Some(ui) = read.ui {
            meta.0.insert("ui".into(), ui);
        }
        if read.truncated {
            meta.0.insert("toolhost/truncated".into(), true.into());
        }
        Ok(ReadResourceResult::new(vec![contents.with_meta(meta)])
            .with_ttl_ms(self.list_ttl())
            .with_cache_scope(self.cache_scope))
    }
}
