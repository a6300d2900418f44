//! The plugins' skills over MCP (the `io.modelcontextprotocol/skills` extension, SEP-2640):
//! `skills/list` and `skills/get`; the skills' files are resources (see `resources.rs`).
//!
//! A skill's URI is `skill://PLUGIN/NAME/SKILL.md` and each of its files
//! `skill://PLUGIN/NAME/PATH`: the plugin's name is the "server-chosen prefix" the extension
//! allows, so two plugins never claim one URI. Everything served — front matter, digests,
//! sizes, mime types — was worked out once when the plugin loaded (`registry::skills`); nothing
//! here runs a plugin.

use super::McpServer;
use rmcp::ErrorData;
use rmcp::model::{
    GetSkillResult, ListSkillsResult, MetaObject, Skill, SkillFrontmatter, SkillResource, SkillResources,
};
use toolhost_core::registry::skills::{LoadedSkill, all, find, uri};
use toolhost_spec::skills::SKILL_MD;

/// A skill as `skills/list` and `skills/get` show it: its front matter as written, and every
/// file with its digest and size.
pub(crate) fn skill(plugin: &str, s: &LoadedSkill) -> Skill {
    let mut frontmatter = SkillFrontmatter::new(&s.name, &s.description);
    frontmatter.extra = s
        .frontmatter
        .iter()
        .filter(|(k, _)| *k != "name" && *k != "description")
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let files = s
        .files
        .iter()
        .map(|f| SkillResource::new(uri(plugin, &s.name, &f.path), &f.digest, f.size()))
        .collect();
    Skill::new(uri(plugin, &s.name, SKILL_MD), frontmatter, SkillResources::Files(files))
}

/// The `_meta` naming the plugin something served comes from.
pub(crate) fn plugin_meta(plugin: &str) -> MetaObject {
    let mut m = serde_json::Map::new();
    m.insert("toolhost/plugin".into(), plugin.into());
    MetaObject(m)
}

impl McpServer {
    /// `skills/list` from `cursor`: every skill of every loaded plugin, a page at a time,
    /// cached like `tools/list`.
    pub(crate) fn skills_result(&self, cursor: Option<&str>) -> Result<ListSkillsResult, ErrorData> {
        let registry = self.executor.registry();
        let skills = all(registry.plugins()).into_iter().map(|(p, s)| skill(p, s)).collect();
        let (skills, next) = super::pages::page(skills, |s: &Skill| &s.uri, cursor, self.page_size)?;
        let mut out = ListSkillsResult::with_all_items(skills);
        out.next_cursor = next;
        Ok(out.with_ttl_ms(self.list_ttl()).with_cache_scope(self.cache_scope))
    }

    /// `skills/get` of a skill's `SKILL.md` URI; an unknown skill is invalid params (-32602).
    pub(crate) fn skill_result(&self, uri: &str) -> Result<GetSkillResult, ErrorData> {
        let registry = self.executor.registry();
        match find(registry.plugins(), uri) {
            Some((p, s, f)) if f.path == SKILL_MD => Ok(GetSkillResult::new(skill(&p.name, s))
                .with_ttl_ms(self.list_ttl())
                .with_cache_scope(self.cache_scope)),
            _ => Err(ErrorData::invalid_params(format!("no skill is served at {uri}"), None)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use toolhost_spec::skills::{SkillFile as File, SkillsSection, encode};

    fn loaded(files: &[(&str, &str)]) -> Vec<LoadedSkill> {
        let section = SkillsSection {
            files: files
                .iter()
                .map(|(p, t)| File { path: (*p).into(), bytes: t.as_bytes().to_vec() })
                .collect(),
        };
        let skills = toolhost_core::registry::skills::from_section(&encode(&section)).unwrap();
        Arc::into_inner(skills).unwrap()
    }

    fn md(name: &str, extra: &str) -> String {
        format!("---\nname: \"{name}\"\ndescription: Does {name}.\n{extra}---\nbody\n")
    }

    /// Every skill the host's rules accept is one rmcp (and so a client) accepts: the host's
    /// name rule is the stricter.
    #[test]
    fn every_skill_the_host_accepts_passes_rmcp_validation() {
        let long = "a".repeat(64);
        let names = ["a", "0", "git-flow", "a1-b2-c3", "x-0-y", long.as_str()];
        let mut listing = Vec::new();
        for name in names {
            let (skill_md, other) = (md(name, "metadata:\n  v: 1\n"), format!("{name}/img/a-b_c.d.png"));
            for plugin in ["text", "My_Plugin-2"] {
                let files = [(format!("{name}/SKILL.md"), skill_md.clone()), (other.clone(), "x".into())];
                let files: Vec<(&str, &str)> = files.iter().map(|(p, t)| (p.as_str(), t.as_str())).collect();
                for s in loaded(&files) {
                    let entry = skill(plugin, &s);
                    entry.validate().unwrap_or_else(|e| panic!("{plugin}/{name}: {e}"));
                    listing.push(entry.clone());
                    assert_eq!(entry.frontmatter.extra["metadata"], serde_json::json!({"v": 1}));
                    assert!(!entry.frontmatter.extra.contains_key("name"));
                }
            }
        }
        // The same skill name in two plugins: two URIs, one valid listing.
        rmcp::model::validate_skills(&listing).unwrap();
    }

    #[test]
    fn an_entry_names_every_file_with_its_digest() {
        let skills = loaded(&[("alpha/SKILL.md", &md("alpha", "")), ("alpha/ref/a.md", "a")]);
        let s = &skills[0];
        let e = skill("p", s);
        assert_eq!(e.uri, "skill://p/alpha/SKILL.md");
        let SkillResources::Files(files) = &e.resources else { panic!("a file list") };
        assert_eq!(
            files.iter().map(|f| f.uri.as_str()).collect::<Vec<_>>(),
            ["skill://p/alpha/SKILL.md", "skill://p/alpha/ref/a.md"]
        );
        assert!(files[1].verify(b"a").is_ok());
    }
}
