//! A call's arguments against its tool's manifest, in one place and in the words every front
//! end shows: positional ones (the `[TOOL]` text, the command line) checked — argCount, `rest`
//! joined with `,`, JSON parameters parsed and typed — and named ones (MCP, the console, OpenAI)
//! mapped onto the parameters in order, each value typed.

use serde_json::{Map, Value};
use std::borrow::Cow;
use toolhost_spec::manifest::{self, ToolSpec};

/// Total bytes of arguments accepted for one call.
pub const MAX_ARGS_BYTES: usize = 1024 * 1024;
/// Deepest JSON nesting accepted in an argument (a guest decoding deeper JSON recursively
/// could exhaust its stack).
pub const MAX_JSON_DEPTH: usize = 128;

/// Check `args` against the manifest, join `rest` args with `,`, validate JSON args.
pub fn check_args<'a>(spec: &ToolSpec, args: &'a [String]) -> Result<Cow<'a, [String]>, String> {
    let total: usize = args.iter().map(String::len).sum();
    if total > MAX_ARGS_BYTES {
        return Err(too_large(spec, total));
    }
    let n = spec.params.len();
    // Borrowed unless a rest param's values are joined: a call's arguments are not copied.
    let args: Cow<'a, [String]> = if spec.rest && args.len() > n {
        let mut joined = args[..n - 1].to_vec();
        joined.push(args[n - 1..].join(","));
        Cow::Owned(joined)
    } else {
        Cow::Borrowed(args)
    };
    let required = spec.required_count();
    if args.len() < required || args.len() > n {
        let expected = if required == n {
            format!("{n} argument{}", if n == 1 { "" } else { "s" })
        } else {
            format!("{required} to {n} arguments")
        };
        return Err(format!(
            "`{}` takes {expected} but got {}; usage: {}",
            spec.name,
            args.len(),
            spec.signature()
        ));
    }
    for (i, arg) in args.iter().enumerate() {
        if spec.is_json(i) {
            let depth = json_depth(arg);
            if depth > MAX_JSON_DEPTH {
                return Err(format!(
                    "argument {} (`{}`) of `{}` is JSON nested {depth} levels deep; at most {MAX_JSON_DEPTH} are accepted",
                    i + 1,
                    spec.params[i].name,
                    spec.name
                ));
            }
            if let Some(problem) = json_arg_problem(&spec.params[i], arg) {
                let param = &spec.params[i].name;
                return Err(format!(
                    "argument {} (`{param}`) of `{}` {problem}; usage: {}",
                    i + 1,
                    spec.name,
                    spec.signature()
                ));
            }
        }
    }
    Ok(args)
}

/// Why the text of a JSON argument does not fit its param's type, in the words every front end
/// uses (`must be a number, got `ten``): not JSON at all, or JSON of another type.
/// An optional param also takes `null` (left off).
pub(super) fn json_arg_problem(param: &toolhost_spec::manifest::ParamSpec, arg: &str) -> Option<String> {
    use toolhost_spec::manifest::{type_name, type_phrase, value_has_type};
    let shown = || {
        let t = arg.trim();
        let short: String = t.chars().take(40).collect();
        if short.len() < t.len() { format!("`{short}…`") } else { format!("`{short}`") }
    };
    let t = type_name(&param.ty).filter(|t| toolhost_spec::manifest::JSON_TYPES.contains(t));
    let scalar = matches!(t, Some("number" | "integer" | "boolean" | "null" | "string"));
    // Structured JSON is only checked for syntax here (and its outer type by its first
    // character): the plugin checks the rest, and the parser's depth limit stays the one of
    // `IgnoredAny`.
    if let Err(e) = serde_json::from_str::<serde::de::IgnoredAny>(arg) {
        return Some(match t {
            Some(t) if scalar => format!("must be {}, got {}", type_phrase(t), shown()),
            Some(t) => format!("must be {} in JSON, got {} ({e})", type_phrase(t), shown()),
            None => format!("must be valid JSON, got {} ({e})", shown()),
        });
    }
    let t = t?;
    let null = arg.trim() == "null";
    if param.optional && null {
        return None;
    }
    let fits = match t {
        "array" => arg.trim_start().starts_with('['),
        "object" => arg.trim_start().starts_with('{'),
        _ if scalar => serde_json::from_str::<serde_json::Value>(arg).is_ok_and(|v| value_has_type(t, &v)),
        _ => true,
    };
    (!fits).then(|| format!("must be {}, got {}", type_phrase(t), shown()))
}

/// Maximum bracket nesting of a JSON text, strings skipped (linear, no recursion).
pub(super) fn json_depth(s: &str) -> usize {
    let (mut depth, mut max, mut in_str, mut escaped) = (0usize, 0usize, false, false);
    for b in s.bytes() {
        if in_str {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_str = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_str = true,
            b'[' | b'{' => {
                depth += 1;
                max = max.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

/// Map a JSON-object `arguments` string onto the tool's params, in order. Missing required
/// params, unknown keys and wrong types are errors for the model.
pub fn map_named_json(spec: &ToolSpec, arguments: &str) -> Result<Vec<String>, String> {
    let trimmed = arguments.trim();
    let obj: Map<String, Value> = if trimmed.is_empty() {
        Map::new()
    } else {
        match serde_json::from_str::<Value>(trimmed) {
            Ok(Value::Object(o)) => o,
            Ok(other) => {
                return Err(format!(
                    "the arguments of `{}` must be a JSON object, got {}",
                    spec.name,
                    manifest::value_kind(&other)
                ));
            }
            Err(e) => return Err(format!("the arguments of `{}` are not valid JSON: {e}", spec.name)),
        }
    };
    map_named(spec, &obj)
}

/// [`map_named_json`] for arguments already parsed into a JSON object (MCP's `tools/call`, the
/// console): each value checked against its parameter's type here, so the text it becomes is
/// not parsed again; the whole no larger than [`MAX_ARGS_BYTES`].
pub fn map_named(spec: &ToolSpec, obj: &Map<String, Value>) -> Result<Vec<String>, String> {
    let usage = || {
        let names: Vec<&str> = spec.params.iter().map(|p| p.name.as_str()).collect();
        if names.is_empty() {
            "it takes no arguments".to_string()
        } else {
            format!("its arguments are: {}", names.join(", "))
        }
    };
    for key in obj.keys() {
        if !spec.params.iter().any(|p| &p.name == key) {
            return Err(format!("`{}` has no argument `{key}`; {}", spec.name, usage()));
        }
    }
    let mut args = Vec::new();
    let mut skipped: Option<&str> = None;
    for (i, p) in spec.params.iter().enumerate() {
        let Some(v) = obj.get(&p.name).filter(|v| !(p.optional && v.is_null())) else {
            if !p.optional {
                return Err(format!("`{}` needs the argument `{}`; {}", spec.name, p.name, usage()));
            }
            skipped.get_or_insert(&p.name);
            continue;
        };
        if let Some(gap) = skipped {
            // Arguments are positional for the plugin: a later optional one needs the earlier.
            return Err(format!(
                "`{}`: argument `{}` is given but the earlier optional `{gap}` is not",
                spec.name, p.name
            ));
        }
        if spec.is_json(i) {
            if let Some(t) = manifest::type_name(&p.ty)
                && !manifest::value_has_type(t, v)
            {
                return Err(format!(
                    "argument `{}` of `{}` must be {}, got {}",
                    p.name,
                    spec.name,
                    manifest::type_phrase(t),
                    manifest::value_kind(v)
                ));
            }
            args.push(v.to_string());
        } else {
            match v {
                Value::String(s) => args.push(s.clone()),
                other => {
                    return Err(format!(
                        "argument `{}` of `{}` must be a string, got {}",
                        p.name,
                        spec.name,
                        manifest::value_kind(other)
                    ));
                }
            }
        }
    }
    let total: usize = args.iter().map(String::len).sum();
    if total > MAX_ARGS_BYTES {
        return Err(too_large(spec, total));
    }
    Ok(args)
}

fn too_large(spec: &ToolSpec, total: usize) -> String {
    format!(
        "the arguments to `{}` are {} KiB, over the {} KiB limit per call",
        spec.name,
        total / 1024,
        MAX_ARGS_BYTES / 1024
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use toolhost_spec::manifest::ParamSpec;

    fn spec(params: &[(&str, bool, bool)], rest: bool) -> ToolSpec {
        ToolSpec {
            name: "t".into(),
            description: "d".into(),
            params: params
                .iter()
                .map(|(n, json, optional)| ParamSpec {
                    name: n.to_string(),
                    ty: if *json { json!("array") } else { json!("string") },
                    description: String::new(),
                    optional: *optional,
                    default: None,
                })
                .collect(),
            arg_count: params.len(),
            parse_json: params.iter().map(|p| p.1).collect(),
            rest,
            output_limit: None,
            danger: false,
            read_only: false,
            category: None,
            output_schema: None,
            timeout_ms: None,
            task_support: None,
            title: None,
            idempotent: false,
            icons: Vec::new(),
        }
    }

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn arity_is_checked_with_the_signature() {
        let t = spec(&[("from", false, false), ("to", false, false)], false);
        assert_eq!(check_args(&t, &s(&["a", "b"])).unwrap(), s(&["a", "b"]));
        let e = check_args(&t, &s(&["a"])).unwrap_err();
        assert!(e.contains("takes 2 arguments but got 1") && e.contains("t(from, to)"), "{e}");
        assert!(check_args(&t, &s(&["a", "b", "c"])).is_err());
    }

    #[test]
    fn rest_joins_extra_args_with_commas() {
        let t = spec(&[("path", false, false), ("content", false, false)], true);
        assert_eq!(check_args(&t, &s(&["p", "a", " b", "c"])).unwrap(), s(&["p", "a, b,c"]));
        assert_eq!(check_args(&t, &s(&["p", "a"])).unwrap(), s(&["p", "a"]));
    }

    #[test]
    fn optional_params_may_be_left_off() {
        let t = spec(&[("a", false, false), ("b", true, true)], false);
        assert!(check_args(&t, &s(&["x"])).is_ok());
        assert!(check_args(&t, &s(&["x", "[1]"])).is_ok());
        assert!(check_args(&t, &s(&[])).unwrap_err().contains("1 to 2 arguments"));
    }

    #[test]
    fn invalid_json_names_the_position() {
        let t = spec(&[("title", false, false), ("subtasks", true, false)], false);
        let e = check_args(&t, &s(&["x", "[{\"a\": 1,}]"])).unwrap_err();
        assert!(e.contains("argument 2 (`subtasks`)") && e.contains("column"), "{e}");
        assert!(e.contains("must be an array in JSON, got `[{\"a\": 1,}]`"), "{e}");
        // Deep nesting is refused by the JSON parser's depth limit, not by a stack overflow.
        let deep = "[".repeat(100_000) + &"]".repeat(100_000);
        assert!(check_args(&t, &["x".to_string(), deep]).unwrap_err().contains("nested 100000 levels"));
        let ok = "[".repeat(128) + &"]".repeat(128);
        assert!(check_args(&t, &["x".to_string(), ok]).is_ok());
        assert_eq!(json_depth(r#"["[[[", {"a": "\"]"}]"#), 2);
    }

    #[test]
    fn typed_arguments_are_refused_in_the_words_of_every_front_end() {
        let mut t = spec(&[("distance", true, false), ("exact", true, true)], false);
        t.name = "convert".into();
        t.params[0].ty = json!("number");
        t.params[1].ty = json!("boolean");
        let e = check_args(&t, &s(&["ten"])).unwrap_err();
        assert_eq!(
            e,
            "argument 1 (`distance`) of `convert` must be a number, got `ten`; usage: convert(distance: number, exact: boolean?)"
        );
        let e = check_args(&t, &s(&["\"5\""])).unwrap_err();
        assert!(e.contains("must be a number, got `\"5\"`"), "{e}");
        let e = check_args(&t, &s(&["5", "yes"])).unwrap_err();
        assert!(e.contains("argument 2 (`exact`) of `convert` must be true or false, got `yes`"), "{e}");
        assert!(check_args(&t, &s(&["-5", "true"])).is_ok());
        assert!(check_args(&t, &s(&["2.5", "null"])).is_ok(), "an optional param may be null");
        let long = "x".repeat(100);
        assert!(check_args(&t, &[long]).unwrap_err().contains(&format!("got `{}…`", "x".repeat(40))));
    }

    #[test]
    fn oversized_arguments_are_refused() {
        let t = spec(&[("a", false, false)], false);
        assert!(check_args(&t, &["x".repeat(MAX_ARGS_BYTES + 1)]).unwrap_err().contains("limit"));
    }
}
