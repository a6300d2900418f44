//! Prompts and completion over MCP: `prompts/list` (each plugin's prompts as its manifest
//! declares them, named as the catalog serves them), `prompts/get` (the executor's: looked up once, its arguments checked, run
//! in the plugin's sandbox, audited and counted) and `completion/complete` (of a prompt's
//! argument or a template's variable; what nothing completes is answered with no values, as
//! the specification asks). This file only shapes them.

use super::McpServer;
use super::skills::plugin_meta;
use rmcp::ErrorData;
use rmcp::model::{
    CompleteRequestParams, CompleteResult, CompletionInfo, GetPromptResult, ListPromptsResult, Prompt,
    PromptArgument, PromptMessage, Reference, Resource, Role as McpRole,
};
use toolhost_core::executor::{CallContext, CompleteError, PromptContent, PromptError, Role};
use toolhost_core::registry::prompts::{self, Target};

impl McpServer {
    /// `prompts/list` from `cursor`, a page at a time.
    pub(crate) fn prompts_result(&self, cursor: Option<&str>) -> Result<ListPromptsResult, ErrorData> {
        let registry = self.executor.registry();
        let listed = prompts::all(registry.plugins())
            .map(|prompts::Served { plugin, name, spec: p }| {
                let arguments = p
                    .arguments
                    .iter()
                    .map(|a| {
                        let mut arg = PromptArgument::new(&a.name).with_required(a.required);
                        arg.description = (!a.description.is_empty()).then(|| a.description.clone());
                        arg
                    })
                    .collect::<Vec<_>>();
                let description = (!p.description.is_empty()).then_some(p.description.as_str());
                let mut out = Prompt::new(name, description, (!arguments.is_empty()).then_some(arguments))
                    .with_meta(plugin_meta(plugin));
                out.title = p.title.clone();
                out
            })
            .collect();
        let (listed, next) = super::pages::page(listed, |p: &Prompt| &p.name, cursor, self.page_size)?;
        let mut out = ListPromptsResult::with_all_items(listed);
        out.next_cursor = next;
        Ok(out)
    }

    /// `prompts/get` for `who`: an unknown prompt or bad arguments are invalid params
    /// (-32602), as is the plugin's own refusal; a failed run is an internal error naming what
    /// failed.
    pub(crate) async fn prompt_result(
        &self,
        name: &str,
        arguments: Option<&serde_json::Map<String, serde_json::Value>>,
        who: &CallContext,
    ) -> Result<GetPromptResult, ErrorData> {
        let mut given = Vec::new();
        for (k, v) in arguments.into_iter().flatten() {
            let Some(v) = v.as_str() else {
                let why = format!("argument `{k}` of prompt `{name}` must be a string, not {v}");
                return Err(ErrorData::invalid_params(why, None));
            };
            given.push((k.clone(), v.to_string()));
        }
        let got = self.executor.get_prompt(name, &given, "prompts/get", who).await.map_err(|e| match e {
            PromptError::Failed { .. } => ErrorData::internal_error(e.to_string(), None),
            _ => ErrorData::invalid_params(e.to_string(), None),
        })?;
        let messages = got
            .messages
            .into_iter()
            .map(|m| {
                let role = match m.role {
                    Role::User => McpRole::User,
                    Role::Assistant => McpRole::Assistant,
                };
                match m.content {
                    PromptContent::Text(text) => PromptMessage::new_text(role, text),
                    PromptContent::Link { uri, name, description, mime_type } => {
                        let mut link = Resource::new(uri, name);
                        (link.description, link.mime_type) = (description, mime_type);
                        PromptMessage::new_resource_link(role, link)
                    }
                }
            })
            .collect();
        let mut result = GetPromptResult::new(messages);
        result.description = got.description;
        let mut meta = plugin_meta(&got.plugin);
        if got.truncated {
            meta.0.insert("toolhost/truncated".into(), true.into());
        }
        result.meta = Some(meta);
        Ok(result)
    }

    /// `completion/complete`: the values the plugin completes, at most 100 (`total` and
    /// `hasMore` say how many it had); nothing to complete is no values; a plugin's refusal or
    /// failed run an error naming it.
    pub(crate) async fn complete_result(
        &self,
        request: &CompleteRequestParams,
    ) -> Result<CompleteResult, ErrorData> {
        let target = match &request.r#ref {
            Reference::Prompt(p) => Target::Prompt(&p.name),
            Reference::Resource(r) => Target::Template(&r.uri),
            // A kind of reference a later revision adds: nothing of ours completes it.
            _ => return Ok(CompleteResult::default()),
        };
        let context: Vec<(String, String)> = request
            .context
            .as_ref()
            .and_then(|c| c.arguments.as_ref())
            .map(|a| a.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default();
        let argument = &request.argument;
        match self.executor.complete(target, &argument.name, &argument.value, &context).await {
            Ok(done) => {
                let has_more = done.has_more();
                let total = u32::try_from(done.total).ok();
                let info = CompletionInfo::with_pagination(done.values, total, has_more)
                    .map_err(|e| ErrorData::internal_error(e, None))?;
                Ok(CompleteResult::new(info))
            }
            Err(CompleteError::Nothing(_)) => Ok(CompleteResult::default()),
            Err(e @ CompleteError::Refused { .. }) => Err(ErrorData::invalid_params(e.to_string(), None)),
            Err(e @ CompleteError::Failed { .. }) => Err(ErrorData::internal_error(e.to_string(), None)),
        }
    }
}
