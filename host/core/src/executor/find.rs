//! `find_tools` in search mode: the catalog's best matches for a query.

use super::*;

impl Executor {
    /// `find_tools` in search mode: the best matches for the query, each with its name,
    /// description and the JSON Schema of its arguments, as a JSON object for the model — whole
    /// entries only, as many as fit the output limit (at least one).
    /// (`call`'s arguments were checked when it was prepared.)
    pub(super) fn find_tools(&self, registry: &Registry, call: &ToolCall) -> Outcome {
        let Some(search) = registry.search() else {
            return Outcome::err(ErrorKind::UnknownTool, "the catalog is not searched here".to_string());
        };
        let query = call.args.first().map(String::as_str).unwrap_or_default();
        let mut found = Vec::new();
        for name in search.index.search(query, self.config.catalog.results) {
            let Some(entry) = registry.get(name) else { continue };
            let view = crate::view::ToolView::new(entry, &self.config);
            let mut tool = serde_json::json!({
                "name": entry.name(),
                "title": view.title(),
                "description": view.description_with_danger_note(),
                "usage": entry.spec().signature(),
                "parameters": toolhost_spec::schema::parameters(entry.spec()),
            });
            let openai = crate::catalog::openai_name(entry.name());
            if openai != entry.name() {
                tool["openaiName"] = openai.into_owned().into();
            }
            found.push(tool);
        }
        let note = if found.is_empty() {
            "no tool matches; try other words"
        } else {
            "call a tool by its name with the arguments its parameters describe"
        };
        let mut shown = found.len();
        loop {
            let data = serde_json::json!({
                "query": query,
                "tools": &found[..shown],
                "note": note,
            })
            .to_string();
            if data.chars().count() <= self.config.limits.output_limit || shown <= 1 {
                return Outcome::ok(data, shown < found.len());
            }
            shown -= 1;
        }
    }
}
