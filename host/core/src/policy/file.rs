//! The policy file: TOML, one `[[rule]]` table per rule, each with an `id`, an `effect`
//! (`allow` or `deny`), the `actions` it is about and a CEL condition `when` (true when left
//! out). Every error names the file, the line and the column: a TOML error where TOML puts it,
//! a CEL error at its place inside the condition.

use cel::{Env, Program};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{Action, Effect, Rule};

/// The most rules one file may hold: each one is evaluated for every call it is about.
pub const MAX_RULES: usize = 1000;

/// A policy file that could not be used.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error("cannot read the policy file {}: {why}", file.display())]
    Read { file: PathBuf, why: String },
    #[error("{}:{line}:{column}: {why}", file.display())]
    At { file: PathBuf, line: usize, column: usize, why: String },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    rule: Vec<toml::Spanned<RawRule>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    id: String,
    effect: Effect,
    actions: Vec<Action>,
    when: Option<toml::Spanned<String>>,
}

/// The rules of `text`, read from `file`, their conditions compiled in `env`.
pub(super) fn parse(text: &str, file: &Path, env: &Arc<Env>) -> Result<Vec<Rule>, PolicyError> {
    let at = |offset: usize, why: String| {
        let (line, column) = line_column(text, offset);
        PolicyError::At { file: file.to_path_buf(), line, column, why }
    };
    let raw: RawFile =
        toml::from_str(text).map_err(|e| at(e.span().map_or(0, |s| s.start), e.message().to_string()))?;
    if raw.rule.len() > MAX_RULES {
        return Err(at(0, format!("{} rules; at most {MAX_RULES}", raw.rule.len())));
    }
    let mut rules: Vec<Rule> = Vec::with_capacity(raw.rule.len());
    for spanned in raw.rule {
        let start = spanned.span().start;
        let r = spanned.into_inner();
        if r.id.is_empty() || rules.iter().any(|o| *o.id == r.id) {
            return Err(at(
                start,
                format!("rule id {:?} is empty or used twice; give each rule its own", r.id),
            ));
        }
        if r.actions.is_empty() {
            return Err(at(
                start,
                format!(
                    "rule `{}` has no actions; list what it is about (list, call, read, answer, approve)",
                    r.id
                ),
            ));
        }
        let when = match r.when {
            None => None,
            Some(w) => Some(compile(env, w.get_ref()).map_err(|(offset, why)| {
                // The condition's text starts one past its opening quote.
                at(w.span().start + 1 + offset, format!("rule `{}`: {why}", r.id))
            })?),
        };
        rules.push(Rule { id: r.id.into(), effect: r.effect, actions: r.actions, when });
    }
    Ok(rules)
}

/// `source` compiled, or the offset in it of the first error and what it says.
fn compile(env: &Env, source: &str) -> Result<Program, (usize, String)> {
    env.compile(source).map_err(|errors| {
        let Some(e) = errors.errors.first() else { return (0, "not a CEL expression".to_string()) };
        // CEL counts lines and columns from 1 within the condition.
        let (line, column) = (e.pos.0.max(1) as usize, e.pos.1.max(0) as usize);
        let line_start: usize = source.split_inclusive('\n').take(line - 1).map(str::len).sum();
        ((line_start + column).min(source.len()), e.msg.clone())
    })
}

/// The 1-based line and column of byte `offset` in `text`.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
    (line, column)
}
