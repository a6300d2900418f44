//! A plugin's prompts, as its manifest declares them: parameterised message templates a person
//! picks (MCP `prompts/list`, a client's slash commands), their arguments, and the rules both
//! are held to. The messages are the plugin's business (its `prompts.get` runs in the sandbox);
//! which prompts exist, and what they take, is here, read without running anything.

use super::{MAX_PARAM_DESCRIPTION, MAX_TITLE, Text, TextProblem, is_tool_name, text_problem};
use serde::{Deserialize, Serialize};

/// Prompts one plugin may declare.
pub const MAX_PROMPTS: usize = 32;
/// Arguments one prompt may take.
pub const MAX_ARGUMENTS: usize = 16;
/// A prompt's name, in characters: `[A-Za-z0-9_-]`, what a client can offer as `/NAME`.
pub const MAX_PROMPT_NAME: usize = 64;

/// One prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PromptSpec {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub arguments: Vec<PromptArgument>,
}

/// One argument of a prompt: text a person fills in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PromptArgument {
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub required: bool,
    /// The plugin completes it (its `completion` export) as a person types.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub complete: bool,
}

/// Whether `name` is a prompt name: `[A-Za-z0-9_-]`, 1 to 64 characters, not starting with `-`.
pub fn is_prompt_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_PROMPT_NAME
        && !name.starts_with('-')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'))
}

fn text(at: &str, s: &str, max: usize, kind: Text) -> Result<(), (String, String)> {
    match text_problem(s, max, kind) {
        None => Ok(()),
        Some(TextProblem::TooLong { chars, max }) => {
            Err((at.to_string(), format!("is {chars} characters; at most {max} are allowed")))
        }
        Some(p @ TextProblem::Control { c, .. }) => {
            Err((at.to_string(), format!("holds {c:?}: {}", p.rule())))
        }
    }
}

/// Hold a manifest's prompts to the rules: the cap, names (prompts' and arguments', each
/// once), texts. The error is the field and what is wrong.
pub fn check(prompts: &[PromptSpec]) -> Result<(), (String, String)> {
    if prompts.len() > MAX_PROMPTS {
        return Err((
            "prompts".into(),
            format!("declares {}; at most {MAX_PROMPTS} are allowed", prompts.len()),
        ));
    }
    let mut names = std::collections::BTreeSet::new();
    for (i, p) in prompts.iter().enumerate() {
        let at = format!("prompts[{i}]");
        if !is_prompt_name(&p.name) {
            let why = format!(
                "{:?} must be 1 to {MAX_PROMPT_NAME} of [A-Za-z0-9_-], not starting with `-`",
                p.name
            );
            return Err((format!("{at}.name"), why));
        }
        if !names.insert(p.name.as_str()) {
            return Err((format!("{at}.name"), format!("{:?} names two prompts", p.name)));
        }
        if let Some(t) = &p.title {
            if t.trim().is_empty() {
                return Err((format!("{at}.title"), "must not be blank when given".into()));
            }
            text(&format!("{at}.title"), t, MAX_TITLE, Text::Line)?;
        }
        text(&format!("{at}.description"), &p.description, MAX_PARAM_DESCRIPTION, Text::Description)?;
        if p.arguments.len() > MAX_ARGUMENTS {
            let n = p.arguments.len();
            return Err((format!("{at}.arguments"), format!("has {n}; at most {MAX_ARGUMENTS} are allowed")));
        }
        let mut args = std::collections::BTreeSet::new();
        for (j, a) in p.arguments.iter().enumerate() {
            let at = format!("{at}.arguments[{j}]");
            if !is_tool_name(&a.name) {
                return Err((
                    format!("{at}.name"),
                    format!("{:?} must match [A-Za-z_][A-Za-z0-9_]*", a.name),
                ));
            }
            if !args.insert(a.name.as_str()) {
                return Err((format!("{at}.name"), format!("{:?} names two arguments", a.name)));
            }
            text(&format!("{at}.description"), &a.description, MAX_PARAM_DESCRIPTION, Text::Description)?;
        }
    }
    Ok(())
}

/// Why `given` (argument name → value) does not fit `prompt`, if it does not: an argument it
/// does not take, or a required one missing. Checked by the host before the plugin runs.
pub fn arguments_problem<'a>(
    prompt: &PromptSpec,
    mut given: impl Iterator<Item = &'a str>,
    has: impl Fn(&str) -> bool,
) -> Option<String> {
    if let Some(unknown) = given.find(|g| !prompt.arguments.iter().any(|a| a.name == *g)) {
        let takes: Vec<&str> = prompt.arguments.iter().map(|a| a.name.as_str()).collect();
        let takes = if takes.is_empty() { "none".to_string() } else { takes.join(", ") };
        return Some(format!("prompt `{}` takes no argument `{unknown}` (it takes: {takes})", prompt.name));
    }
    let missing: Vec<&str> =
        prompt.arguments.iter().filter(|a| a.required && !has(&a.name)).map(|a| a.name.as_str()).collect();
    (!missing.is_empty()).then(|| {
        format!(
            "prompt `{}` needs its argument{} `{}`",
            prompt.name,
            if missing.len() == 1 { "" } else { "s" },
            missing.join("`, `")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prompt(name: &str) -> PromptSpec {
        PromptSpec {
            name: name.into(),
            title: None,
            description: "d".into(),
            arguments: vec![PromptArgument {
                name: "path".into(),
                description: String::new(),
                required: true,
                complete: false,
            }],
        }
    }

    #[test]
    fn prompts_are_checked_field_by_field() {
        assert!(check(&[prompt("summarise-file"), prompt("b_2")]).is_ok());
        assert_eq!(check(&[prompt("-x")]).unwrap_err().0, "prompts[0].name");
        assert_eq!(check(&[prompt("a b")]).unwrap_err().0, "prompts[0].name");
        assert!(check(&[prompt("a"), prompt("a")]).unwrap_err().1.contains("names two prompts"));
        let mut p = prompt("a");
        p.arguments.push(p.arguments[0].clone());
        assert_eq!(check(&[p]).unwrap_err().0, "prompts[0].arguments[1].name");
        let p = PromptSpec { title: Some("two\nlines".into()), ..prompt("a") };
        assert_eq!(check(&[p]).unwrap_err().0, "prompts[0].title");
    }

    #[test]
    fn arguments_are_checked_against_the_declaration() {
        let p = prompt("summarise-file");
        assert_eq!(arguments_problem(&p, ["path"].into_iter(), |n| n == "path"), None);
        let e = arguments_problem(&p, ["colour"].into_iter(), |_| false).unwrap();
        assert!(e.contains("takes no argument `colour` (it takes: path)"), "{e}");
        let e = arguments_problem(&p, std::iter::empty(), |_| false).unwrap();
        assert!(e.contains("needs its argument `path`"), "{e}");
    }
}
