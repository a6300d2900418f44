//! Tests of the expansion: the manifest and dispatch a module derives, and every misuse
//! reported as an error at its span.

use super::*;
use toolhost_spec::manifest::{MAX_PARAM_DESCRIPTION, MAX_SCHEMA_BYTES, MAX_TOOL_DESCRIPTION};

fn expand_str(attr: &str, item: &str) -> Result<String, String> {
    let attr: TokenStream2 = attr.parse().unwrap();
    let item: TokenStream2 = item.parse().unwrap();
    expand(attr, item).map(|t| t.to_string()).map_err(|e| e.to_string())
}

fn manifest_of(item: &str) -> Value {
    derive("name = \"demo\"".parse().unwrap(), item.parse().unwrap()).expect("derives").manifest
}

#[test]
fn doc_comment_and_signature_become_manifest() {
    let m = manifest_of(
        r#"mod t {
            /// Split a task into subtasks.
            ///
            /// - `title`: the task title
            /// - `subtasks`: JSON array of subtasks
            #[tool(category = "task", output_limit = 500)]
            pub fn split_task(title: String, subtasks: Vec<Sub>, days: Option<u32>) -> Result<String, String> { todo!() }
        }"#,
    );
    let t = &m["tools"][0];
    assert_eq!(m["name"], "demo");
    assert_eq!(m["format"], 1);
    assert_eq!(t["name"], "split_task");
    assert_eq!(t["description"], "Split a task into subtasks.");
    assert_eq!(t["argCount"], 3);
    assert_eq!(t["parseJson"], json!([false, true, true]));
    assert_eq!(t["params"][0]["description"], "the task title");
    assert_eq!(t["params"][1]["type"], "array");
    assert_eq!(t["params"][2]["optional"], true);
    assert_eq!(t["params"][2]["type"], "integer");
    assert_eq!(t["outputLimit"], 500);
    assert_eq!(t["category"], "task");
    assert_eq!(t["danger"], false);
}

#[test]
fn resources_and_templates_become_manifest_entries_and_a_read_dispatch() {
    let item = r#"mod t {
        /// d
        #[tool] pub fn a() -> String { todo!() }
        /// The style guide.
        ///
        /// More words.
        #[resource(uri = "docs://guide", mime_type = "text/markdown", size = 12)]
        pub fn guide() -> &'static str { "x" }
        /// A file.
        #[resource_template(uri = "file:///{+path}", name = "file", title = "File")]
        pub fn file(path: String) -> Vec<u8> { todo!() }
    }"#;
    let m = manifest_of(item);
    assert_eq!(
        m["resources"],
        json!([{"uri": "docs://guide", "name": "guide", "description": "The style guide.", "mimeType": "text/markdown", "size": 12}])
    );
    assert_eq!(
        m["resourceTemplates"],
        json!([{"uriTemplate": "file:///{+path}", "name": "file", "title": "File", "description": "A file."}])
    );
    let code = expand_str("", item).unwrap();
    assert!(code.contains("ResourcesGuest"), "{code}");
    assert!(code.contains(r#"variable (& req , "path")"#), "{code}");
    // No resources: no entries, and a read dispatch that answers "none".
    let m = manifest_of("mod t { /// d\n #[tool] pub fn a() -> String { todo!() } }");
    assert!(m.get("resources").is_none() && m.get("resourceTemplates").is_none(), "{m}");
}

#[test]
fn resource_mistakes_are_reported_at_the_function() {
    let err = |f: &str| {
        expand_str("", &format!("mod t {{ /// d\n #[tool] pub fn a() -> String {{ todo!() }} {f} }}"))
            .unwrap_err()
    };
    for (f, why) in [
        (
            r#"#[resource(uri = "skill://a/b/SKILL.md")] pub fn r() -> String { todo!() }"#,
            "scheme is the host's own",
        ),
        (r#"#[resource] pub fn r() -> String { todo!() }"#, "needs its URI"),
        (r#"#[resource(uri = "docs://a")] pub fn r(x: String) -> String { todo!() }"#, "takes no parameters"),
        (
            r#"#[resource_template(uri = "file:///{+path}")] pub fn r(p: String) -> String { todo!() }"#,
            "`p` is no variable",
        ),
        (
            r#"#[resource_template(uri = "file:///{a}/{b}")] pub fn r(a: String) -> String { todo!() }"#,
            "`b` needs",
        ),
        (
            r#"#[resource_template(uri = "file:///{a}{b}")] pub fn r(a: String, b: String) -> String { todo!() }"#,
            "two expressions in a row",
        ),
        (
            r#"#[resource(uri = "docs://a", colour = "x")] pub fn r() -> String { todo!() }"#,
            "unknown resource option `colour`",
        ),
        (
            r#"#[resource(uri = "docs://a")] pub fn r() -> String { todo!() } #[resource(uri = "docs://a", name = "s")] pub fn s() -> String { todo!() }"#,
            "declared twice",
        ),
    ] {
        let e = err(f);
        assert!(e.contains(why), "{f}: {e}");
    }
}

#[test]
fn output_schema_is_written_and_must_describe_an_object() {
    let m = manifest_of(
        r##"mod t { /// d
            #[tool(output_schema = r#"{"type": "object", "properties": {"n": {"type": "integer"}}}"#)]
            pub fn a() -> String { todo!() } }"##,
    );
    assert_eq!(m["tools"][0]["outputSchema"]["properties"]["n"]["type"], "integer");
    let m = manifest_of("mod t { /// d\n #[tool] pub fn a() -> String { todo!() } }");
    assert!(m["tools"][0].get("outputSchema").is_none());
    let err = |schema: &str| {
        let item = format!(
            "mod t {{ /// d\n #[tool(output_schema = {schema:?})] pub fn a() -> String {{ todo!() }} }}"
        );
        expand_str("", &item).unwrap_err()
    };
    assert!(err(r#"{"type": "array"}"#).contains("must describe an object"));
    assert!(err("{not json").contains("not valid JSON"));
}

#[test]
fn exec_requests_are_written_only_when_made() {
    let item = "mod t { /// d\n #[tool] pub fn a() -> String { todo!() } }";
    let out = expand_str("exec = \"git\", exec = \"xdg-open\"", item).unwrap();
    assert!(out.contains(r#"\"exec\":[\"git\",\"xdg-open\"]"#), "{out}");
    let out = expand_str("", item).unwrap();
    assert!(!out.contains("exec"), "{out}");
}

#[test]
fn danger_and_rest_flags() {
    let m = manifest_of(
        r#"mod t {
            /// Search.
            #[tool(rest, danger)]
            pub fn search(query: String) -> String { query }
        }"#,
    );
    assert_eq!(m["tools"][0]["rest"], true);
    assert_eq!(m["tools"][0]["danger"], true);
}

#[test]
fn free_text_is_held_to_the_hosts_caps() {
    let tool = |doc: &str, attrs: &str| {
        format!("mod t {{ {doc}\n #[tool({attrs})] pub fn a(x: String) -> String {{ x }} }}")
    };
    let long_doc = format!("/// {}", "d".repeat(MAX_TOOL_DESCRIPTION + 1));
    let long_param = format!("/// D.\n///\n/// - `x`: {}", "p".repeat(MAX_PARAM_DESCRIPTION + 1));
    let big_schema = format!(r#"{{"type": "object", "description": "{}"}}"#, "s".repeat(MAX_SCHEMA_BYTES));
    let cases = [
        ("", tool(&long_doc, ""), "is 4097 characters long; the host allows at most 4096"),
        ("", tool(&long_param, ""), "parameter `x` is 1025 characters long"),
        ("", tool("#[doc = \"Reads. \\u{1b}[2K\"]", ""), "contains the control character U+001B"),
        (
            "",
            tool("/// D.", "category = \"files\\nDANGEROUS\""),
            "`category` contains the control character U+000A",
        ),
        (
            "",
            tool("/// D.", &format!("category = \"{}\"", "c".repeat(MAX_LABEL + 1))),
            "`category` is 65 characters",
        ),
        (
            "",
            tool("/// D.", &format!("output_schema = {big_schema:?}")),
            "bytes of JSON; the host allows at most 16384",
        ),
        (
            &*format!("description = \"{}\"", "p".repeat(MAX_PLUGIN_DESCRIPTION + 1)),
            tool("/// D.", ""),
            "plugin `description` is 1025",
        ),
        (
            "version = \"1.0\\u{0}\"",
            tool("/// D.", ""),
            "plugin `version` contains the control character U+0000",
        ),
    ];
    for (attr, item, want) in cases {
        let err = expand_str(attr, &item).expect_err(&item);
        assert!(err.contains(want), "for {item}: expected {want:?} in {err:?}");
    }
    // At the caps, and a description with a tab: accepted.
    let doc = format!("/// {}\t{}", "d".repeat(100), "e".repeat(MAX_TOOL_DESCRIPTION - 101));
    let m = manifest_of(&tool(&doc, &format!("category = \"{}\"", "c".repeat(MAX_LABEL))));
    assert_eq!(m["tools"][0]["description"].as_str().unwrap().chars().count(), MAX_TOOL_DESCRIPTION);
}

#[test]
fn the_hosts_name_caps_and_request_rules_hold_at_expansion() {
    let t = "mod t { /// d\n #[tool] pub fn a() -> String { todo!() } }";
    let long = |c: &str, n: usize| c.repeat(n);
    // Before: a 65-character plugin name expanded, then the host refused to load the file.
    let cases = [
        (format!("name = \"{}\"", long("p", 65)), t.to_string(), "(at most 64 chars)"),
        (
            String::new(),
            format!("mod t {{ /// d\n #[tool] pub fn {}() -> String {{ todo!() }} }}", long("t", 65)),
            "tool name",
        ),
        (
            String::new(),
            format!(
                "mod t {{ /// d\n #[tool(name = \"{}\")] pub fn a() -> String {{ todo!() }} }}",
                long("t", 65)
            ),
            "(at most 64 chars)",
        ),
        (
            String::new(),
            format!(
                "mod t {{ /// d\n #[tool] pub fn a({}: String) -> String {{ todo!() }} }}",
                long("a", 65)
            ),
            "parameter name",
        ),
        (
            String::new(),
            "mod t { /// d\n #[tool] pub fn a(x: String, x: String) -> String { todo!() } }".into(),
            "param `x` is declared twice",
        ),
        (format!("exec = \"{}\"", long("x", 256)), t.into(), "is not a program name"),
        ("exec = \"\"".into(), t.into(), "is not a program name"),
        ("env = \"A=B\"".into(), t.into(), "`env` entry \"A=B\" is not an environment variable name"),
        ("net = \"a b\"".into(), t.into(), "is not a host pattern"),
        ("secret = \" \"".into(), t.into(), "is not a secret name"),
        ("version = \" \"".into(), t.into(), "plugin `version` must not be empty"),
        (
            String::new(),
            "mod t { /// d\n #[tool(category = \"\")] pub fn a() -> String { todo!() } }".into(),
            "`category` must not be empty",
        ),
    ];
    for (attr, item, want) in cases {
        let err = expand_str(&attr, &item).expect_err(&attr);
        assert!(err.contains(want), "for {attr} {item}: expected {want:?} in {err:?}");
    }
    // At the caps: accepted.
    let m = derive(
        format!("name = \"{}\", exec = \"{}\"", long("p", 64), long("x", 255)).parse().unwrap(),
        format!(
            "mod t {{ /// d\n #[tool] pub fn {}({}: String) -> String {{ todo!() }} }}",
            long("t", 64),
            long("a", 64)
        )
        .parse()
        .unwrap(),
    )
    .expect("at the caps")
    .manifest;
    assert_eq!(m["name"].as_str().unwrap().len(), 64);
    assert_eq!(m["capabilities"]["exec"][0].as_str().unwrap().len(), 255);
}

#[test]
fn misuse_is_an_error_not_a_panic() {
    let cases = [
        ("", "mod t { /// d\n #[tool] pub fn a(x: &str) -> String { todo!() } }", "use `String`"),
        ("", "mod t { #[tool] pub fn a() -> String { todo!() } }", "has no description: write a doc comment"),
        ("", "mod t { /// d\n #[tool(rest)] pub fn a(x: u32) -> String { todo!() } }", "must be a `String`"),
        ("", "mod t { /// d\n #[tool(bogus)] pub fn a() -> String { todo!() } }", "unknown tool option"),
        ("", "mod t { /// d\n #[tool(output_limit = 0)] pub fn a() -> String { todo!() } }", "at least 1"),
        (
            "",
            "mod t { /// d\n #[tool] pub fn a(x: Option<String>, y: String) -> String { todo!() } }",
            "cannot follow",
        ),
        ("", "mod t { fn helper() {} }", "declares no tools"),
        ("", "mod t { /// d\n #[tool] fn a() -> String { todo!() } }", "pub fn"),
        ("", "mod t { /// d\n /// - `nope`: x\n #[tool] pub fn a() -> String { todo!() } }", "does not have"),
        ("bogus = 1", "mod t { /// d\n #[tool] pub fn a() -> String { todo!() } }", "unknown plugin option"),
        ("fs = \"workspace:rwx\"", "mod t { /// d\n #[tool] pub fn a() -> String { todo!() } }", "NAME:ro"),
        ("", "fn not_a_module() {}", "inline module"),
        (
            "exec = \"/bin/sh\"",
            "mod t { /// d\n #[tool] pub fn a() -> String { todo!() } }",
            "is not a program name such as \"git\" (no paths",
        ),
        ("", "mod t { /// d\n #[tool] #[cfg(test)] pub fn a() -> String { todo!() } }", "`#[cfg]` on a tool"),
        (
            "",
            "mod t { /// d\n #[tool(name = \"a\")] pub fn a() -> String { todo!() }\n /// d\n #[tool(name = \"a\")] pub fn b() -> String { todo!() } }",
            "defined twice",
        ),
    ];
    for (attr, item, want) in cases {
        let err = expand_str(attr, item).expect_err(item);
        assert!(err.contains(want), "for {item}: expected {want:?} in {err:?}");
    }
}

#[test]
fn a_default_makes_a_param_optional_and_reaches_the_manifest() {
    let m = manifest_of(
        "mod t { /// Convert.\n #[tool] pub fn convert(distance: f64, #[default = \"mi\"] to_unit: String, #[default = -2] digits: i64) -> String { todo!() } }",
    );
    let p = &m["tools"][0]["params"];
    assert_eq!(p[0]["type"], "number");
    assert_eq!((&p[1]["optional"], &p[1]["default"]), (&json!(true), &json!("mi")));
    assert_eq!((&p[2]["optional"], &p[2]["default"]), (&json!(true), &json!(-2)));
    // The body gets the value, not an Option: the dispatch applies the default.
    let code = expand_str(
        "name = \"demo\"",
        "mod t { /// C.\n #[tool] pub fn c(#[default = 3] n: i64) -> String { todo!() } }",
    )
    .unwrap();
    assert!(code.contains("unwrap_or_else (|| 3)"), "{code}");
    for (item, says) in [
        ("#[default = 3] n: Option<i64>", "has a default, so it is never missing"),
        ("#[default = 3] s: String", "is text (`String`), so its default is a string literal"),
        ("#[default = \"x\"] n: i64", "is a JSON parameter, so its default is a number or a bool"),
        ("#[default = [1]] n: Vec<i64>", "a default is a literal"),
    ] {
        let e = expand_str(
            "name = \"demo\"",
            &format!("mod t {{ /// C.\n #[tool] pub fn c({item}) -> String {{ todo!() }} }}"),
        )
        .unwrap_err();
        assert!(e.contains(says), "{item}: {e}");
    }
}

#[test]
fn every_mistake_of_a_module_is_reported_at_once() {
    let e = derive(
        "name = \"demo\"".parse().unwrap(),
        "mod t { /// A.\n /// - `pth`: the path\n #[tool] pub fn a(path: String) -> String { todo!() }\n pub fn helper() {}\n #[tool] pub fn b(x: &str) -> String { todo!() } }"
            .parse()
            .unwrap(),
    )
    .err()
    .expect("refused");
    let all: Vec<String> = e.into_iter().map(|e| e.to_string()).collect();
    assert_eq!(
        all,
        [
            "the doc comment describes a parameter `pth` that this function does not have",
            "`pub fn helper` in a `#[toolhost_sdk::plugin]` module is not a tool: add `#[tool]` to make it one (or `#[resource]`, `#[resource_template]`, `#[prompt]`, `#[complete]`), or make it private (`fn`, or `pub(crate) fn`) if it is a helper",
            "tool `b` has no description: write a doc comment; its first paragraph is the description the model reads",
        ]
    );
}
