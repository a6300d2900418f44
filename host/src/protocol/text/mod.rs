//! The `[TOOL] name(args) [/TOOL]` text protocol: a state-machine parser that splits a model's
//! reply into ordered prose, calls and per-call parse errors; the renderer for calls; the
//! prompt section that teaches the protocol; and the feedback block that goes back into the
//! conversation.
//!
//! The parser runs in time linear in the input, never panics, and never yields a half-parsed
//! call: a malformed call becomes a [`ParseError`] for that call only, and parsing resumes
//! after it.

mod parse;

pub use parse::{
    CLOSE, CLOSE_BRACKETS, CodeKind, InCode, MAX_ARG_BYTES, MAX_CALLS, MAX_EXAMPLES, OPEN, OPEN_BRACKETS,
    ParseError, SLASHES, Segment, calls, parse,
};

use crate::executor::{Outcome, ToolCall};
use crate::registry::Registry;

/// Parse `reply` and run its calls in order through the executor. Parse errors and prose get
/// no outcome; nothing half-parsed is ever run.
pub async fn execute(executor: &crate::Executor, reply: &str) -> Vec<(Segment, Option<Outcome>)> {
    let mut out = Vec::new();
    for seg in parse(reply) {
        let outcome = match &seg {
            Segment::Call { call, .. } => Some(executor.call(call).await),
            _ => None,
        };
        out.push((seg, outcome));
    }
    out
}

/// The structured form of an executed reply (`toolhost run --json`).
pub fn results_json(results: &[(Segment, Option<Outcome>)]) -> serde_json::Value {
    let items: Vec<serde_json::Value> = results
        .iter()
        .map(|(seg, outcome)| {
            let mut v = serde_json::to_value(seg).unwrap_or_default();
            if let (Some(o), Some(obj)) = (outcome, v.as_object_mut()) {
                obj.insert("outcome".into(), serde_json::to_value(o).unwrap_or_default());
            }
            v
        })
        .collect();
    serde_json::json!({ "segments": items })
}

/// Render a call in the protocol, every argument as a JSON string (so `parse(render(c)) == c`).
pub fn render_call(call: &ToolCall) -> String {
    let args: Vec<String> =
        call.args.iter().map(|a| serde_json::to_string(a).unwrap_or_else(|_| "\"\"".into())).collect();
    format!("{OPEN} {}({}) {CLOSE}", call.name, args.join(", "))
}

/// The prompt section that teaches a model the protocol and lists every registered tool.
pub fn prompt(registry: &Registry, config: &crate::Config) -> String {
    let mut out = String::from(
        "## Tools\n\n\
         You can call tools. To call one, write the call between markers, anywhere in your reply:\n\n\
         [TOOL] tool_name(\"first argument\", \"second argument\") [/TOOL]\n\n\
         Rules:\n\
         - Quote text arguments with double quotes; inside them write \\\" for a quote and \\n for a newline.\n\
         - Arguments marked `json` take a JSON value written directly, without quotes: [TOOL] split_task(\"Launch\", [{\"title\": \"design\"}]) [/TOOL]\n\
         - Arguments marked `…` take the rest of the line: commas in them are kept.\n\
         - You may make several calls in one reply; they run in order, and you get one result per call.\n\
         - Write calls as plain text, never inside a code block (```) or `backticks`: a call inside code is an example and is not run.\n\
         - Tools marked DANGEROUS need a human's confirmation and may be refused.\n\n\
         Available tools:\n",
    );
    let mut tools: Vec<_> = registry.tools().collect();
    tools.sort_by(|a, b| {
        (a.spec().category.as_deref().unwrap_or("~"), &a.spec().name)
            .cmp(&(b.spec().category.as_deref().unwrap_or("~"), &b.spec().name))
    });
    for t in tools {
        let view = crate::view::ToolView::new(t, config);
        let s = view.spec;
        let danger = if view.dangerous { " DANGEROUS." } else { "" };
        out.push_str(&format!("\n- {} — {}{danger}\n", s.signature(), s.description));
        for (i, p) in s.params.iter().enumerate() {
            if p.description.is_empty() && !s.is_json(i) {
                continue;
            }
            let ty = match &p.ty {
                serde_json::Value::String(t) if t == "string" => String::new(),
                serde_json::Value::String(t) => format!(" ({t})"),
                serde_json::Value::Object(o) => match o.get("type").and_then(|t| t.as_str()) {
                    Some(t) => format!(" (JSON {t})"),
                    None => " (JSON)".to_string(),
                },
                _ => " (JSON)".to_string(),
            };
            let opt = if p.optional { " Optional." } else { "" };
            out.push_str(&format!("    {}{ty}: {}{opt}\n", p.name, p.description));
        }
    }
    out
}

/// The block that goes back into the conversation: the reply, then one result per call or
/// parse error, in order.
///
/// ```text
/// <the reply, verbatim>
///
/// [RESULT 1] read("notes.txt") success
/// …the tool's output…
/// [/RESULT]
/// [RESULT 2] copy("a") error bad_arguments
/// `copy` takes 2 arguments but got 1; usage: copy(from, to)
/// [/RESULT]
/// ```
///
/// A truncated output says `success truncated`. A malformed call gets `error parse_error`
/// with what was wrong and where. A call inside Markdown code gets `skipped`, with where the
/// code starts.
pub fn feedback(reply: &str, results: &[(Segment, Option<Outcome>)]) -> String {
    let mut out = reply.trim_end().to_string();
    out.push_str("\n\n");
    let mut n = 0;
    for (seg, outcome) in results {
        match (seg, outcome) {
            (Segment::Call { call, .. }, Some(o)) => {
                n += 1;
                let args: Vec<String> = call.args.iter().map(|a| short_arg(a)).collect();
                let status = match (o.success, o.truncated, o.kind) {
                    (true, true, _) => "success truncated".to_string(),
                    (true, false, _) => "success".to_string(),
                    (false, _, Some(k)) => format!("error {k}"),
                    (false, _, None) => "error".to_string(),
                };
                out.push_str(&format!(
                    "[RESULT {n}] {}({}) {status}\n{}\n[/RESULT]\n",
                    call.name,
                    args.join(", "),
                    o.text().trim_end()
                ));
            }
            (Segment::Error { error, raw }, _) => {
                n += 1;
                out.push_str(&format!(
                    "[RESULT {n}] {} error parse_error\nthis call was not run: {error}\n[/RESULT]\n",
                    short_arg(raw.trim())
                ));
            }
            (Segment::Example { call, code, .. }, _) => {
                n += 1;
                let args: Vec<String> = call.args.iter().map(|a| short_arg(a)).collect();
                out.push_str(&format!(
                    "[RESULT {n}] {}({}) skipped\nthis call was not run: it is {code}, so it is an example; \
                     to run it, write it as plain text outside code\n[/RESULT]\n",
                    call.name,
                    args.join(", ")
                ));
            }
            _ => {}
        }
    }
    if n == 0 {
        out.push_str("(no tool calls)\n");
    }
    out
}

fn short_arg(a: &str) -> String {
    let shown: String = a.chars().take(60).collect();
    let shown = if shown.len() < a.len() { format!("{shown}…") } else { shown };
    serde_json::to_string(&shown).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::path::Path;

    /// The case table: `tests/protocol/text_cases.json` (inputs) against
    /// `text_cases.expected.json` (segments). `TOOLHOST_BLESS=1` rewrites the expectations.
    #[test]
    fn golden_case_table() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/protocol");
        let cases: Vec<serde_json::Value> =
            serde_json::from_str(&std::fs::read_to_string(dir.join("text_cases.json")).unwrap()).unwrap();
        assert!(cases.len() >= 40, "the table must keep at least 40 cases");
        let mut actual = serde_json::Map::new();
        for case in &cases {
            let name = case["name"].as_str().unwrap().to_string();
            let segments = parse(case["input"].as_str().unwrap());
            actual.insert(name, serde_json::to_value(segments).unwrap());
        }
        let expected_path = dir.join("text_cases.expected.json");
        if std::env::var_os("TOOLHOST_BLESS").is_some() {
            let text = serde_json::to_string_pretty(&actual).unwrap() + "\n";
            std::fs::write(&expected_path, text).unwrap();
            return;
        }
        let expected: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(&std::fs::read_to_string(&expected_path).unwrap()).unwrap();
        let mut diffs = Vec::new();
        for (name, got) in &actual {
            match expected.get(name) {
                Some(want) if want == got => {}
                Some(want) => diffs.push(format!("{name}:\n  want {want}\n  got  {got}")),
                None => diffs.push(format!("{name}: no expectation (run with TOOLHOST_BLESS=1)")),
            }
        }
        assert!(diffs.is_empty(), "{}", diffs.join("\n"));
        assert_eq!(expected.len(), actual.len(), "expectations for cases that no longer exist");
    }

    fn call_args(input: &str) -> Vec<String> {
        match parse(input).as_slice() {
            [Segment::Call { call, .. }] => call.args.clone(),
            other => panic!("expected one call, got {other:?}"),
        }
    }

    #[test]
    fn spot_checks() {
        assert_eq!(call_args(r#"[TOOL] f("a, b (c)") [/TOOL]"#), ["a, b (c)"]);
        assert_eq!(call_args("[TOOL] f(apples, pears) [/TOOL]"), ["apples", "pears"]);
        assert_eq!(call_args(r#"[TOOL] f([{"t": "a, b"}]) [/TOOL]"#), [r#"[{"t": "a, b"}]"#]);
        assert_eq!(call_args(r#"[TOOL] f("\ud83d\ude00") [/TOOL]"#), ["😀"]);
        let segs = parse("a [TOOL] f(\"x) [/TOOL] b [TOOL] g() [/TOOL]");
        assert!(
            matches!(&segs[1], Segment::Error { error, .. } if error.message.contains("unterminated string"))
        );
        assert!(matches!(&segs[3], Segment::Call { call, .. } if call.name == "g"));
    }

    #[test]
    fn the_call_cap_holds() {
        let reply = "[TOOL] f() [/TOOL]".repeat(MAX_CALLS + 3);
        let segs = parse(&reply);
        assert_eq!(calls(&segs).count(), MAX_CALLS);
        assert_eq!(segs.iter().filter(|s| matches!(s, Segment::Error { .. })).count(), 3);
    }

    /// Inputs that take quadratic time in a naive parser (every call rescanning to the end).
    /// At this size a quadratic parser needs minutes; a linear one, milliseconds.
    #[test]
    fn adversarial_inputs_stay_linear() {
        let n = 40_000;
        for unit in
            ["[TOOL] a('", "[TOOL] a(\"", "[TOOL] a([", "[TOOL] a(", "[TOOL] ", "[TOOL] a(x [/", "(\"[TOOL]"]
        {
            let input = unit.repeat(n);
            let segs = parse(&input);
            let total: usize = segs.iter().map(|s| s.source().len()).sum();
            assert_eq!(total, input.len(), "segments must cover the input exactly for {unit:?}");
        }
    }

    fn arb_name() -> impl Strategy<Value = String> {
        "[A-Za-z_][A-Za-z0-9_]{0,12}"
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        #[test]
        fn render_then_parse_round_trips(name in arb_name(), args in proptest::collection::vec(any::<String>(), 0..6)) {
            let call = ToolCall { name, args };
            let rendered = render_call(&call);
            let segs = parse(&rendered);
            prop_assert_eq!(segs, vec![Segment::Call { call, raw: rendered.clone() }]);
        }

        #[test]
        fn random_replies_never_panic_and_cover_the_input(
            parts in proptest::collection::vec(
                prop_oneof![
                    Just("[TOOL]".to_string()), Just("[/TOOL]".to_string()), Just("(".to_string()),
                    Just(")".to_string()), Just(",".to_string()), Just("\"".to_string()), Just("'".to_string()),
                    Just("\\".to_string()), Just("[".to_string()), Just("]".to_string()), Just("{".to_string()),
                    Just("}".to_string()), Just("\u{201c}".to_string()), Just("\u{201d}".to_string()),
                    Just("\\u".to_string()), Just(" ".to_string()), Just("\n".to_string()), "[a-z]{1,4}",
                    any::<String>(),
                ],
                0..60,
            )
        ) {
            let input: String = parts.concat();
            let segs = parse(&input);
            let rebuilt: String = segs.iter().map(Segment::source).collect();
            prop_assert_eq!(rebuilt, input);
        }

        #[test]
        fn mutated_calls_never_panic(name in arb_name(), args in proptest::collection::vec(".{0,12}", 0..4), cut in 0usize..200, insert in ".{0,3}") {
            let rendered = render_call(&ToolCall { name, args });
            let mut cut_at = cut.min(rendered.len());
            while !rendered.is_char_boundary(cut_at) { cut_at -= 1; }
            let mutated = format!("{}{}{}", &rendered[..cut_at], insert, &rendered[cut_at..]);
            let _ = parse(&mutated);
            let truncated = &rendered[..cut_at];
            let segs = parse(truncated);
            // A call cut short is never executed half-parsed.
            if cut_at < rendered.len() && truncated.contains(OPEN) {
                prop_assert!(calls(&segs).next().is_none(), "half a call was parsed: {truncated:?}");
            }
        }
    }
}
