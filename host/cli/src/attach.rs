//! What `toolhost chat` brings into a conversation besides the person's words: a resource
//! (`/read URI`) and a plugin's prompt (`/NAME ARG=VALUE…`), each got as every front end gets
//! it (`Executor::read`, `Executor::get_prompt`), a prompt's resource links read and attached.

use crate::term;
use anyhow::{Result, bail};
use toolhost_core::executor::{Body, CallContext, Executor, PromptContent, Role};
use toolhost_core::registry::Registry;
use toolhost_core::registry::prompts;
use toolhost_frontends::agent::Message;

fn chat() -> CallContext {
    CallContext::local(Some("chat"))
}

/// `/read URI`: the resource as a user message for the conversation (sent with the next
/// question), and a note saying what was attached.
pub async fn resource(uri: &str, executor: &Executor) -> Result<(Message, String)> {
    if uri.is_empty() {
        bail!(
            "/read needs a URI: /read skill://PLUGIN/SKILL/SKILL.md (/skills lists the skills, `toolhost list` every resource)"
        );
    }
    let read = executor
        .read(uri, "chat", &chat())
        .await
        .map_err(|e| anyhow::anyhow!("{} (/skills lists the skills)", term::line(&e.to_string())))?;
    let mime = read.mime_type.as_deref().unwrap_or("text");
    let Body::Text(text) = &read.body else {
        bail!(
            "{} is binary ({}, {} bytes): only text can be attached",
            term::line(uri),
            term::line(mime),
            read.body.len()
        );
    };
    let message = Message::user(format!("(Attached: {uri}, {mime})\n\n{text}"));
    let cut = if read.truncated { ", cut at the plugin's resource_kb limit" } else { "" };
    Ok((
        message,
        format!("(attached {}, {} bytes{cut}: sent with your next message)", term::line(uri), text.len()),
    ))
}

/// Whether `/NAME …` names one of the loaded plugins' prompts.
pub fn is_prompt(input: &str, reg: &Registry) -> bool {
    let name = input.trim_start_matches('/').split_whitespace().next().unwrap_or("");
    prompts::all(reg.plugins()).any(|p| p.name == name)
}

/// The plugins' prompts, one line each, as `/NAME ARG=VALUE…` is typed.
pub fn prompts_list(reg: &Registry) -> String {
    let mut out = String::new();
    for prompts::Served { plugin, name, spec: p } in prompts::all(reg.plugins()) {
        let args: Vec<String> = p
            .arguments
            .iter()
            .map(|a| format!("{}=…{}", a.name, if a.required { "" } else { "?" }))
            .collect();
        let about = p.title.as_deref().unwrap_or(&p.description);
        out.push_str(&format!(
            "  /{} {} — {} ({})\n",
            term::line(name),
            term::line(&args.join(" ")),
            term::line(about),
            term::line(plugin)
        ));
    }
    if out.is_empty() {
        out.push_str("  (no prompts)\n");
    }
    out
}

/// `/NAME ARG=VALUE…`: the prompt's messages for the conversation (a resource link read and
/// attached as text; one that cannot be read said so), and its last user message, asked now.
pub async fn prompt(input: &str, executor: &Executor) -> Result<(Vec<Message>, String)> {
    let mut words = input.trim_start_matches('/').split_whitespace();
    let name = words.next().unwrap_or_default();
    let given: Vec<String> = words.map(str::to_string).collect();
    let arguments = crate::args::name_values(&given)?;
    let got = executor
        .get_prompt(name, &arguments, "chat", &chat())
        .await
        .map_err(|e| anyhow::anyhow!("{} (/prompts lists the prompts)", term::line(&e.to_string())))?;
    let (mut messages, mut question_at) = (Vec::new(), None);
    for m in got.messages {
        let text = match m.content {
            PromptContent::Text(text) => text,
            PromptContent::Link { uri, .. } => match resource(&uri, executor).await {
                Ok((message, note)) => {
                    println!("{note}");
                    messages.push(message);
                    continue;
                }
                Err(e) => format!("(a resource that could not be attached: {uri}: {e})"),
            },
        };
        messages.push(match m.role {
            Role::User => {
                question_at = Some(messages.len());
                Message::user(text)
            }
            Role::Assistant => Message::assistant(text, Vec::new()),
        });
    }
    let Some(i) = question_at else { bail!("prompt `{name}` has no message from the user to ask") };
    let question = messages.remove(i).content;
    let n = messages.len() + 1;
    println!("(prompt {}: {n} message{} added)", term::line(name), if n == 1 { "" } else { "s" });
    Ok((messages, question))
}
