//! The manifest's cases: a valid manifest, each rule broken, the fields read back as written.

use super::*;

fn base() -> Value {
    serde_json::json!({
        "format": 1, "name": "demo", "version": "0.1.0", "description": "d",
        "tools": [{
            "name": "copy", "description": "Copy a file.",
            "params": [
                {"name": "from", "type": "string", "description": "", "optional": false},
                {"name": "to", "type": "string"}
            ],
            "argCount": 2, "parseJson": [false, false]
        }]
    })
}

fn check(mutate: impl FnOnce(&mut Value)) -> Result<Manifest, ManifestError> {
    let mut v = base();
    mutate(&mut v);
    parse(v.to_string().as_bytes())
}

#[test]
fn valid_manifest_parses() {
    let m = check(|_| {}).unwrap();
    assert_eq!(m.tools[0].signature(), "copy(from, to)");
    assert_eq!(m.tools[0].required_count(), 2);
}

#[test]
fn an_output_schema_must_be_a_valid_object_schema() {
    let with = |schema: Value| check(|v| v["tools"][0]["outputSchema"] = schema);
    let m = with(serde_json::json!({"type": "object", "properties": {"n": {"type": "integer"}}})).unwrap();
    assert!(m.tools[0].output_schema.is_some());
    assert!(check(|_| {}).unwrap().tools[0].output_schema.is_none());
    for (schema, says) in [
        (serde_json::json!({"type": "array"}), "must describe an object"),
        (serde_json::json!("object"), "must be a JSON Schema object"),
        (serde_json::json!({"type": "object", "minProperties": "two"}), "is not a valid JSON Schema"),
    ] {
        let e = with(schema).unwrap_err().to_string();
        assert!(e.contains("tools[0].outputSchema") && e.contains(says), "{e}");
    }
}

#[test]
fn a_manifest_checked_before_reads_the_same_and_still_keeps_the_rules() {
    let mut v = base();
    v["tools"][0]["outputSchema"] =
        serde_json::json!({"type": "object", "properties": {"n": {"type": "integer"}}});
    let text = v.to_string();
    assert_eq!(parse_checked_before(text.as_bytes()).unwrap(), parse(text.as_bytes()).unwrap());
    // The rules still hold; only the schema's compilation is left to its first use.
    for (mutate, says) in [
        (
            Box::new(|v: &mut Value| v["tools"][0]["name"] = "no spaces".into()) as Box<dyn Fn(&mut Value)>,
            "tools[0].name",
        ),
        (
            Box::new(|v: &mut Value| v["tools"][0]["outputSchema"] = serde_json::json!({"type": "array"})),
            "must describe an object",
        ),
        (Box::new(|v: &mut Value| v["format"] = 99.into()), "unknown format version"),
        (Box::new(|v: &mut Value| v["surprise"] = 1.into()), "surprise"),
    ] {
        let mut v = base();
        mutate(&mut v);
        let e = parse_checked_before(v.to_string().as_bytes()).unwrap_err().to_string();
        assert!(e.contains(says), "{e}");
    }
    let mut v = base();
    v["tools"][0]["outputSchema"] = serde_json::json!({"type": "object", "minProperties": "two"});
    assert!(parse(v.to_string().as_bytes()).is_err());
    assert!(parse_checked_before(v.to_string().as_bytes()).is_ok(), "not compiled again");
}

#[test]
fn caps_count_characters_not_bytes() {
    // 4096 two-byte characters: 8192 bytes, within the cap of 4096 characters.
    let m = check(|v| v["tools"][0]["description"] = "é".repeat(MAX_TOOL_DESCRIPTION).into()).unwrap();
    assert_eq!(m.tools[0].description.chars().count(), MAX_TOOL_DESCRIPTION);
    let e = check(|v| v["tools"][0]["description"] = "é".repeat(MAX_TOOL_DESCRIPTION + 1).into());
    assert!(e.unwrap_err().to_string().contains("is 4097 characters long"));
    // Line breaks and tabs in a description, none in a label.
    assert!(check(|v| v["tools"][0]["params"][0]["description"] = "a\n\tb\r\n".into()).is_ok());
    let e = check(|v| v["version"] = "1.0\t".into()).unwrap_err().to_string();
    assert!(e.contains("`version`") && e.contains("U+0009"), "{e}");
    let e = check(|v| v["tools"][0]["description"] = "a\u{7f}b".into()).unwrap_err().to_string();
    assert!(e.contains("U+007F"), "{e}");
}

/// A 1×1 PNG.
const PNG: &str = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

#[test]
fn title_idempotent_and_icons_are_read_and_checked() {
    let m = check(|v| {
        v["tools"][0]["title"] = "Copy a file".into();
        v["tools"][0]["idempotent"] = true.into();
        v["tools"][0]["icons"] = serde_json::json!([{"src": PNG, "sizes": ["1x1", "any"], "theme": "dark"}]);
    })
    .unwrap();
    let t = &m.tools[0];
    assert_eq!((t.title.as_deref(), t.idempotent), (Some("Copy a file"), true));
    assert_eq!(t.icons[0].mime_type(), Some("image/png"));
    assert!(icon_problem(PNG).is_none());
    for (icon, says) in [
        ("https://example.com/i.png", "must be a `data:` URI"),
        ("data:image/svg+xml;base64,PHN2Zz48L3N2Zz4=", "\"image/svg+xml\""),
        ("data:image/png,rawbytes", "base64 `data:` URI"),
        ("data:image/png;base64,iVBORw0KGgo*", "not valid base64"),
        ("data:image/png;base64,PGh0bWw+PC9odG1sPg==", "does not hold image/png data"),
        ("data:image/gif;base64,R0lGODlhAQABAAAAACw=", ""),
    ] {
        let e = check(|v| v["tools"][0]["icons"] = serde_json::json!([{"src": icon}]));
        if says.is_empty() {
            assert!(e.is_ok(), "{icon}: {e:?}");
            continue;
        }
        let e = e.unwrap_err().to_string();
        assert!(e.contains("tools[0].icons[0].src") && e.contains(says), "{icon}: {e}");
    }
    let long = format!("{PNG}{}", "A".repeat(MAX_ICON_BYTES));
    let e = check(|v| v["tools"][0]["icons"] = serde_json::json!([{"src": long}])).unwrap_err();
    assert!(e.to_string().contains("at most 8192"), "{e}");
    let e = check(|v| v["tools"][0]["icons"] = vec![serde_json::json!({"src": PNG}); 5].into()).unwrap_err();
    assert!(e.to_string().contains("has 5 icons"), "{e}");
    let e = check(|v| v["tools"][0]["icons"] = serde_json::json!([{"src": PNG, "sizes": ["big"]}]));
    assert!(e.unwrap_err().to_string().contains("sizes[0]"));
    let e = check(|v| v["tools"][0]["icons"] = serde_json::json!([{"src": PNG, "theme": "blue"}]));
    assert!(e.unwrap_err().to_string().contains("theme"));
    let e = check(|v| v["tools"][0]["title"] = "two\nlines".into()).unwrap_err().to_string();
    assert!(e.contains("tools[0].title") && e.contains("U+000A"), "{e}");
    let e = check(|v| v["tools"][0]["title"] = " ".into()).unwrap_err().to_string();
    assert!(e.contains("tools[0].title") && e.contains("must not be empty"), "{e}");
    // Written back only when set: older manifests read back identically.
    let plain = serde_json::to_value(&check(|_| {}).unwrap().tools[0]).unwrap();
    assert!(
        plain.get("title").is_none() && plain.get("idempotent").is_none() && plain.get("icons").is_none()
    );
}

#[test]
fn signature_marks_json_optional_and_rest() {
    let m = check(|v| {
        v["tools"][0]["params"][1]["optional"] = true.into();
        v["tools"][0]["params"][1]["type"] = "array".into();
        v["tools"][0]["parseJson"] = serde_json::json!([false, true]);
    })
    .unwrap();
    assert_eq!(m.tools[0].signature(), "copy(from, to: json?)");
}

#[test]
fn signature_names_scalar_types() {
    let m = check(|v| {
        v["tools"][0]["params"][1]["optional"] = true.into();
        v["tools"][0]["params"][0]["type"] = "number".into();
        v["tools"][0]["params"][1]["type"] = serde_json::json!({"type": "boolean"});
        v["tools"][0]["parseJson"] = serde_json::json!([true, true]);
    })
    .unwrap();
    assert_eq!(m.tools[0].signature(), "copy(from: number, to: boolean?)");
}

#[test]
fn a_default_is_only_for_an_optional_param_and_of_its_type() {
    let with = |default: Value, ty: &str, json: bool| {
        check(|v| {
            v["tools"][0]["params"][1]["optional"] = true.into();
            v["tools"][0]["params"][1]["type"] = ty.into();
            v["tools"][0]["params"][1]["default"] = default;
            v["tools"][0]["parseJson"] = serde_json::json!([false, json]);
        })
    };
    let m = with("mi".into(), "string", false).unwrap();
    assert_eq!(m.tools[0].params[1].default, Some(Value::from("mi")));
    assert!(with(2.5.into(), "number", true).is_ok());
    assert!(with(3.into(), "integer", true).is_ok());
    let e = with(5.into(), "string", false).unwrap_err().to_string();
    assert_eq!(
        e,
        "manifest field `tools[0].params[1].default`: must be a string like param `to`, got a number"
    );
    let e = with("x".into(), "number", true).unwrap_err().to_string();
    assert!(e.contains("must be a number like param `to`, got a string"), "{e}");
    // `null` reads as no default at all.
    assert_eq!(with(Value::Null, "string", false).unwrap().tools[0].params[1].default, None);
    let e = check(|v| v["tools"][0]["params"][0]["default"] = "a".into()).unwrap_err().to_string();
    assert!(e.contains("param `from` is required, so it cannot have a default"), "{e}");
    // Left out, it is not written: a manifest without defaults reads as before.
    let back = serde_json::to_value(check(|_| {}).unwrap()).unwrap();
    assert!(back["tools"][0]["params"][0].get("default").is_none());
}

#[test]
fn non_wasm_inputs_are_named() {
    use crate::sections::NotComponent;
    assert!(matches!(find_section(b""), Err(ManifestError::NotComponent(NotComponent::NotWasm(_)))));
    assert!(
        matches!(find_section(b"\x7fELF\x02\x01\x01\0\0\0"), Err(ManifestError::NotComponent(NotComponent::NotWasm(m))) if m.contains("precompiled"))
    );
    // A core module header (version 1, layer 0).
    assert_eq!(find_section(b"\0asm\x01\0\0\0"), Err(ManifestError::NotComponent(NotComponent::CoreModule)));
    // A component header with garbage after it.
    assert!(matches!(
        find_section(b"\0asm\x0d\0\x01\0\xff\xff"),
        Err(ManifestError::NotComponent(NotComponent::Malformed(_)))
    ));
    // A valid, empty component.
    assert_eq!(find_section(b"\0asm\x0d\0\x01\0"), Err(ManifestError::Missing));
}

#[test]
fn requests_are_described_kind_by_kind() {
    let m = check(|v| {
        v["capabilities"] = serde_json::json!({
            "kv": ["default"], "net": ["api.example.com"],
            "fs": [{"path": "workspace", "mode": "ro"}], "env": ["HOME"]
        })
    })
    .unwrap();
    assert_eq!(
        m.capabilities.described(),
        ["fs workspace:ro", "env HOME", "net api.example.com", "kv default"]
    );
    assert!(check(|_| {}).unwrap().capabilities.described().is_empty());
}
