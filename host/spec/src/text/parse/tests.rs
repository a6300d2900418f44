//! The parser's cases: every marker form, full-width punctuation, Markdown examples, quotes that
//! never close (issue #32), and properties over generated replies.

use super::marker::{Marker, marker_at};
use super::*;

fn one_call(input: &str) -> ToolCall {
    match parse(input).as_slice() {
        [Segment::Call { call, .. }] => call.clone(),
        other => panic!("expected one call for {input:?}, got {other:?}"),
    }
}

fn error_message(input: &str) -> String {
    match parse(input).as_slice() {
        [Segment::Error { error, .. }] => error.message.clone(),
        other => panic!("expected one error for {input:?}, got {other:?}"),
    }
}

#[test]
fn the_issue_example_is_one_call_with_one_argument() {
    assert_eq!(one_call("[TOOL] echo（“苹果，香蕉”）[/TOOL]"), ToolCall::new("echo", ["苹果，香蕉"]));
}

#[test]
fn every_marker_form_delimits_a_call() {
    for open in OPEN_BRACKETS {
        for close in CLOSE_BRACKETS {
            for slash in SLASHES {
                let input = format!("a {open}TOOL{close} ls(\".\") {open}{slash}TOOL{close} b");
                let segs = parse(&input);
                assert_eq!(calls(&segs).count(), 1, "{input}: {segs:?}");
                assert_eq!(segs.len(), 3, "{input}: {segs:?}");
            }
        }
    }
    // Anything else around TOOL is prose.
    for input in [
        "「TOOL」 ls() 「/TOOL」",
        "［ＴＯＯＬ］ ls() ［／ＴＯＯＬ］",
        "(TOOL) ls() (/TOOL)",
        "[TOOL ls() [/TOOL]",
    ] {
        assert_eq!(calls(&parse(input)).count(), 0, "{input}");
    }
}

#[test]
fn full_width_parentheses_delimit_only_the_argument_list() {
    assert_eq!(one_call("[TOOL] f（a, b）[/TOOL]").args, ["a", "b"]);
    assert_eq!(one_call("[TOOL] f（\"a）\"）[/TOOL]").args, ["a）"]);
    assert_eq!(one_call("[TOOL] f（[\"（\", \"）\"]）[/TOOL]").args, ["[\"（\", \"）\"]"]);
    assert_eq!(one_call("[TOOL] f(x（y）z) [/TOOL]").args, ["x（y）z"]);
    assert_eq!(one_call("[TOOL] f（）[/TOOL]").args, Vec::<String>::new());
    assert_eq!(one_call("[TOOL] f(\"a\",）[/TOOL]").args, ["a"]);
}

#[test]
fn a_full_width_comma_is_never_a_separator() {
    assert_eq!(one_call("[TOOL] search(苹果，香蕉) [/TOOL]").args, ["苹果，香蕉"]);
    assert_eq!(one_call("[TOOL] search(“苹果，香蕉”) [/TOOL]").args, ["苹果，香蕉"]);
    let message = error_message("[TOOL] copy(\"a\"，\"b\") [/TOOL]");
    assert!(message.contains("full-width comma") && message.contains("write `,`"), "{message}");
}

#[test]
fn full_width_quotes_quote_without_escapes() {
    assert_eq!(one_call("[TOOL] f(＂a, \"b\" \\n＂) [/TOOL]").args, ["a, \"b\" \\n"]);
    assert_eq!(one_call("[TOOL] f(＇x＇, ＂y＂) [/TOOL]").args, ["x", "y"]);
    // Corner brackets are text: in Chinese prose they mark quotations and titles.
    assert_eq!(one_call("[TOOL] f(「x」) [/TOOL]").args, ["「x」"]);
}

#[test]
fn calls_in_markdown_code_are_examples_and_never_calls() {
    let reply = "Use it like this:\n\n```text\n[TOOL] delete(\"all\") [/TOOL]\n```\n\nor inline: \
                 `[TOOL] delete(\"x\") [/TOOL]`; now: [TOOL] ls(\".\") [/TOOL]";
    let segs = parse(reply);
    assert_eq!(calls(&segs).map(|c| c.name.as_str()).collect::<Vec<_>>(), ["ls"]);
    let examples: Vec<_> = segs
        .iter()
        .filter_map(|s| match s {
            Segment::Example { call, code, .. } => Some((call.args[0].as_str(), *code)),
            _ => None,
        })
        .collect();
    assert_eq!(
        examples,
        [
            ("all", InCode { kind: CodeKind::FencedBlock, line: 3, column: 1 }),
            ("x", InCode { kind: CodeKind::Span, line: 7, column: 12 }),
        ]
    );
    assert_eq!(segs.iter().map(Segment::source).collect::<String>(), reply);
    assert_eq!(examples[0].1.to_string(), "inside a Markdown code block (the fence at line 3, column 1)");
}

#[test]
fn markdown_inside_a_call_that_ran_is_argument_text() {
    // The argument opens a fence and a code span that never close; the next call still runs.
    let segs = parse("[TOOL] write(\"a.md\", \"`x\n```\n\") [/TOOL]\nthen ` [TOOL] ls(\".\") [/TOOL]");
    assert_eq!(calls(&segs).count(), 2, "{segs:?}");
}

#[test]
fn a_failed_call_does_not_hide_the_fence_it_runs_into() {
    let segs = parse("[TOOL] read(\"a\")\n```\n[TOOL] delete(\"x\") [/TOOL]\n```\n");
    assert!(matches!(&segs[0], Segment::Error { .. }), "{segs:?}");
    assert!(matches!(&segs[1], Segment::Example { call, .. } if call.name == "delete"), "{segs:?}");
    assert_eq!(calls(&segs).count(), 0);
}

#[test]
fn the_example_cap_holds() {
    let reply = format!("```\n{}```\n[TOOL] ls() [/TOOL]", "[TOOL] f() [/TOOL]\n".repeat(MAX_EXAMPLES + 5));
    let segs = parse(&reply);
    let examples = segs.iter().filter(|s| matches!(s, Segment::Example { .. })).count();
    assert_eq!(examples, MAX_EXAMPLES);
    assert_eq!(calls(&segs).count(), 1, "the call after the block still runs");
    assert_eq!(segs.iter().map(Segment::source).collect::<String>(), reply);
}

/// Issue #32: a quote that is never closed must not swallow the next call.
#[test]
fn an_unterminated_typographic_quote_does_not_swallow_the_next_call() {
    let reply = "[TOOL] echo（“没有结束）[/TOOL] 然后 [TOOL] echo（“好”）[/TOOL]";
    let segs = parse(reply);
    assert!(
        matches!(&segs[0], Segment::Error { error, raw }
            if error.message.contains("unterminated string") && raw.ends_with("[/TOOL]")),
        "{segs:?}"
    );
    assert_eq!(calls(&segs).cloned().collect::<Vec<_>>(), [ToolCall::new("echo", ["好"])]);
    assert_eq!(segs.iter().map(Segment::source).collect::<String>(), reply);
    // Every kind of quote, and a JSON argument, the same way.
    for (open, close) in
        [("“", "”"), ("‘", "’"), ("„", "“"), ("＂", "＂"), ("＇", "＇"), ("\"", "\""), ("'", "'")]
    {
        let reply = format!("[TOOL] a({open}x) [/TOOL] b [TOOL] a({open}y{close}) [/TOOL]");
        let segs = parse(&reply);
        assert!(matches!(&segs[0], Segment::Error { .. }), "{reply}: {segs:?}");
        assert_eq!(calls(&segs).cloned().collect::<Vec<_>>(), [ToolCall::new("a", ["y"])], "{reply}");
    }
    let segs = parse("[TOOL] a({\"k\": \"x) [/TOOL] b [TOOL] a({\"k\": \"y\"}) [/TOOL]");
    assert_eq!(calls(&segs).cloned().collect::<Vec<_>>(), [ToolCall::new("a", ["{\"k\": \"y\"}"])]);
    // A quote that runs into the next call before any `[/TOOL]`: also unterminated.
    let segs = parse("[TOOL] a(“x [TOOL] a(“y”) [/TOOL]");
    assert!(matches!(&segs[0], Segment::Error { error, .. } if error.message.contains("unterminated")));
    assert_eq!(calls(&segs).cloned().collect::<Vec<_>>(), [ToolCall::new("a", ["y"])], "{segs:?}");
}

#[test]
fn markers_inside_a_quote_are_content_when_they_pair_up() {
    assert_eq!(one_call("[TOOL] echo(\"[/TOOL] inside string\") [/TOOL]").args, ["[/TOOL] inside string"]);
    assert_eq!(one_call("[TOOL] echo(“a 【/TOOL】 b”) [/TOOL]").args, ["a 【/TOOL】 b"]);
    assert_eq!(
        one_call("[TOOL] write(\"p.md\", \"call it as [TOOL] ls() [/TOOL] here\") [/TOOL]").args,
        ["p.md", "call it as [TOOL] ls() [/TOOL] here"]
    );
    // An escaped bracket is no marker: the way to write a lone `[TOOL]` in an argument.
    assert_eq!(
        one_call("[TOOL] echo(\"\\u005bTOOL] starts a call\") [/TOOL]").args,
        ["[TOOL] starts a call"]
    );
    let segs = parse("[TOOL] echo(\"a lone [TOOL] here\") [/TOOL]");
    assert!(
        matches!(&segs[0], Segment::Error { error, .. } if error.message.contains("runs into the `[TOOL]`")),
        "{segs:?}"
    );
    assert_eq!(calls(&segs).count(), 0);
}

/// Decided for issue #32: `「…」` and `『…』` are text, never quotes. In Chinese and Japanese
/// prose they mark quotations and titles that are part of the value (`search(「三体」)`), and
/// being text they cannot run into the next call; a model that needs a comma inside an
/// argument writes the `"…"` the prompt teaches.
#[test]
fn corner_brackets_are_text_and_never_quote() {
    assert_eq!(one_call("[TOOL] search(「三体」) [/TOOL]").args, ["「三体」"]);
    assert_eq!(one_call("[TOOL] search(『題名』) [/TOOL]").args, ["『題名』"]);
    assert_eq!(one_call("[TOOL] f(「a, b」) [/TOOL]").args, ["「a", "b」"]);
    assert_eq!(one_call("[TOOL] f(“「a, b」”) [/TOOL]").args, ["「a, b」"]);
    let segs = parse("[TOOL] f(「没有结束) [/TOOL] [TOOL] f(『好』) [/TOOL]");
    let ran: Vec<_> = calls(&segs).cloned().collect();
    assert_eq!(ran, [ToolCall::new("f", ["「没有结束"]), ToolCall::new("f", ["『好』"])]);
    let segs = parse("[TOOL] f(「没有结束）[/TOOL] 然后 [TOOL] f（「好」）[/TOOL]");
    assert_eq!(calls(&segs).count(), 2, "{segs:?}");
}

use proptest::prelude::*;

/// Whether the markers in `arg` pair up (written apart from the parser).
fn paired(arg: &str) -> bool {
    let mut depth = 0i32;
    let mut stray = false;
    let mut i = 0;
    while i < arg.len() {
        match marker_at(&arg[i..]) {
            Some((Marker::Open, len)) => {
                if stray {
                    return false;
                }
                depth = 1;
                i += len;
            }
            Some((Marker::Close, len)) => {
                if depth == 0 {
                    stray = true;
                }
                depth = 0;
                i += len;
            }
            None => i += arg[i..].chars().next().map_or(1, char::len_utf8),
        }
    }
    depth == 0
}

/// One call of a generated reply: well formed, or with its quote never closed.
fn arb_reply_call() -> impl Strategy<Value = (bool, String, String)> {
    let quotes = prop_oneof![
        Just(("\"", "\"")),
        Just(("'", "'")),
        Just(("“", "”")),
        Just(("‘", "’")),
        Just(("„", "“")),
        Just(("＂", "＂")),
        Just(("＇", "＇")),
    ];
    (any::<bool>(), "[a-z]{1,6}", "[a-z 苹果好，。）)]{0,8}", quotes, 0usize..3, 0usize..2).prop_map(
        |(good, name, text, (open, close), bracket, paren)| {
            let (o, c) = (["[", "【", "［"][bracket], ["]", "】", "］"][bracket]);
            let (lp, rp) = (["(", "（"][paren], [")", "）"][paren]);
            let arg = text.trim().to_string();
            let close = if good { close } else { "" };
            let raw = format!("{o}TOOL{c} {name}{lp}{open}{arg}{close}{rp} {o}/TOOL{c}");
            (good, raw, format!("{name}\u{0}{arg}"))
        },
    )
}

/// A call written with any mix of the accepted forms; arguments are JSON strings.
fn render_with(call: &ToolCall, forms: &[usize; 6]) -> String {
    let open = format!("{}TOOL{}", OPEN_BRACKETS[forms[0] % 3], CLOSE_BRACKETS[forms[1] % 3]);
    let close = format!(
        "{}{}TOOL{}",
        OPEN_BRACKETS[forms[2] % 3],
        SLASHES[forms[3] % 2],
        CLOSE_BRACKETS[forms[1] % 3]
    );
    let (lp, rp) = (["(", "（"][forms[4] % 2], [")", "）"][forms[5] % 2]);
    let args: Vec<String> = call.args.iter().map(|a| serde_json::to_string(a).unwrap()).collect();
    format!("{open} {}{lp}{}{rp} {close}", call.name, args.join(", "))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn every_form_round_trips_and_is_an_example_in_code(
        name in "[A-Za-z_][A-Za-z0-9_]{0,12}",
        args in proptest::collection::vec(any::<String>(), 0..5),
        forms in proptest::array::uniform6(0usize..6),
        fence in 0usize..3,
    ) {
        let call = ToolCall { name, args };
        let rendered = render_with(&call, &forms);
        prop_assert_eq!(parse(&rendered), vec![Segment::Call { call: call.clone(), raw: rendered.clone() }]);
        let in_code = match fence {
            0 => format!("```\n{rendered}\n```\n"),
            1 => format!("~~~~ text\n{rendered}\n~~~~"),
            _ => {
                // As a Markdown author does: more backticks than any run inside.
                let longest = rendered.split(|c| c != '`').map(str::len).max().unwrap_or(0);
                let ticks = "`".repeat(longest + 1);
                format!("see {ticks} {rendered} {ticks} here")
            }
        };
        let segs = parse(&in_code);
        prop_assert!(calls(&segs).next().is_none());
        let examples: Vec<&ToolCall> = segs.iter().filter_map(|s| match s {
            Segment::Example { call, .. } => Some(call),
            _ => None,
        }).collect();
        prop_assert_eq!(examples, vec![&call]);
    }

    /// Issue #32: a reply of calls, some with a quote never closed, separated by prose. Every
    /// well-formed call runs, once, exactly as written and in order; no malformed one runs,
    /// and no argument that ran holds a marker.
    #[test]
    fn a_broken_quote_never_swallows_the_calls_after_it(
        parts in proptest::collection::vec((arb_reply_call(), "[a-z 然后，。]{0,6}"), 1..8),
    ) {
        let reply: String = parts.iter().map(|((_, raw, _), prose)| format!("{raw}{prose}")).collect();
        let want: Vec<String> = parts.iter().filter(|((good, ..), _)| *good).map(|((_, _, w), _)| w.clone()).collect();
        let segs = parse(&reply);
        let ran: Vec<String> = calls(&segs).map(|c| format!("{}\u{0}{}", c.name, c.args.join("\u{0}"))).collect();
        prop_assert_eq!(ran, want, "{}", reply);
        prop_assert_eq!(segs.iter().map(Segment::source).collect::<String>(), reply);
    }

    /// Issue #32's property, over token soup: no call that runs holds in its arguments a
    /// `[TOOL]` that is not closed inside them, or that follows a `[/TOOL]` closing nothing —
    /// the shape of a call swallowed by a quote that never ended.
    #[test]
    fn no_argument_that_runs_holds_the_start_of_another_call(
        parts in proptest::collection::vec(
            prop_oneof![
                Just("[TOOL] "), Just("【TOOL】"), Just("[/TOOL]"), Just("【／TOOL】"), Just("echo"), Just("（"),
                Just("）"), Just("("), Just(")"), Just(","), Just("“"), Just("”"), Just("‘"), Just("’"),
                Just("＂"), Just("\""), Just("'"), Just("{\"k\": "), Just("}"), Just("「"), Just("」"),
                Just(" 然后 "), Just("好"),
            ].prop_map(str::to_string),
            0..40,
        )
    ) {
        let input: String = parts.concat();
        let segs = parse(&input);
        for s in &segs {
            if let Segment::Call { raw, .. } = s {
                // The call's text after its `[TOOL]`: arguments, then its own `[/TOOL]`.
                let (_, open) = marker_at(raw).unwrap();
                prop_assert!(paired(&raw[open..]), "{:?} ran {:?}", input, raw);
            }
        }
    }

    #[test]
    fn replies_with_full_width_forms_and_markdown_are_covered(
        parts in proptest::collection::vec(
            prop_oneof![
                Just("[TOOL]"), Just("【TOOL】"), Just("［TOOL］"), Just("[/TOOL]"), Just("【／TOOL】"),
                Just("［/TOOL］"), Just("（"), Just("）"), Just("("), Just(")"), Just("，"), Just(","),
                Just("“"), Just("”"), Just("＂"), Just("\""), Just("`"), Just("``"), Just("\n```\n"),
                Just("\n~~~\n"), Just("\n\n"), Just(" "), Just("f"), Just("[{"), Just("}]"),
            ].prop_map(str::to_string),
            0..60,
        )
    ) {
        let input: String = parts.concat();
        let segs = parse(&input);
        prop_assert_eq!(segs.iter().map(Segment::source).collect::<String>(), input.clone());
        for s in &segs {
            if let Segment::Example { call, raw, .. } = s {
                // An example is a whole call: alone, it parses as exactly that call.
                prop_assert_eq!(parse(raw), vec![Segment::Call { call: call.clone(), raw: raw.clone() }]);
            }
        }
    }
}

/// Inputs that take quadratic time in a naive parser: full-width markers that never close,
/// examples that never end, and backtick runs that have no partner (a naive code-span
/// matcher searches the rest of the reply for each).
#[test]
fn adversarial_full_width_and_markdown_inputs_stay_linear() {
    let n = 40_000;
    let mut inputs: Vec<String> = [
        "【TOOL】 a（",
        "［TOOL］ a（“",
        "[TOOL] a(\"x\"，",
        "【/TOOL】［",
        "`[TOOL] a(`",
        "```\n[TOOL] a(\n",
        "~~~\n",
        "` `` ",
        "[TOOL] a(\"`\") [/TOOL]`",
    ]
    .iter()
    .map(|unit| unit.repeat(n))
    .collect();
    inputs.push(format!("```\n{}", "[TOOL] a(“".repeat(n)));
    let mut ladder: String = (1..2_000).map(|k| "`".repeat(k) + " x ").collect();
    ladder.push_str("[TOOL] ls() [/TOOL]");
    inputs.push(ladder);
    for input in inputs {
        let start = std::time::Instant::now();
        let segs = parse(&input);
        assert_eq!(segs.iter().map(Segment::source).collect::<String>(), input);
        // Generous for a loaded debug build; a quadratic parser needs minutes here.
        let head: String = input.chars().take(12).collect();
        assert!(start.elapsed().as_secs() < 20, "{head:?}… took {:?}", start.elapsed());
    }
}
