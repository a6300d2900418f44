//! The apps section's cases: a folder collected, embedded and read back; each rule broken once
//! (its message naming the app, the file or the field). The origins and the policy built from
//! them are `origin_tests`'.

use super::*;
use std::path::Path;

const PAGE: &str =
    "<!doctype html>\n<html><body><div id=\"chart\"></div><script>draw()</script></body></html>\n";

const CHART_TOML: &str = r#"title = "Chart"
description = "Shows chart."
tools = ["table"]
app_only = ["sort_rows"]
prefers_border = true

[csp]
connect_domains = ["https://api.example.com/"]
resource_domains = ["https://*.cdn.example.com", "http://localhost:5173"]
"#;

const MAP_TOML: &str = "description = \"Shows map.\"\ntools = [\"places\", \"route.plan\"]\n";

fn app(name: &str, tools: &[&str]) -> AppSpec {
    AppSpec {
        name: name.into(),
        title: None,
        description: format!("Shows {name}."),
        html: PAGE.into(),
        tools: tools.iter().map(|t| t.to_string()).collect(),
        app_only: Vec::new(),
        csp: AppCsp::default(),
        prefers_border: None,
    }
}

/// What `CHART_TOML` and `MAP_TOML` collect to.
fn valid() -> AppsSection {
    let mut chart = app("chart", &["table"]);
    chart.title = Some("Chart".into());
    chart.app_only = vec!["sort_rows".into()];
    chart.csp.connect_domains = vec!["https://api.example.com".into()];
    chart.csp.resource_domains = vec!["https://*.cdn.example.com".into(), "http://localhost:5173".into()];
    chart.prefers_border = Some(true);
    AppsSection { apps: vec![chart, app("map", &["places", "route.plan"])] }
}

fn refused(section: AppsSection) -> String {
    decode(&encode(&section)).unwrap_err().to_string()
}

/// A component with a core module nested in it, the module holding `custom` sections (as the
/// Rust SDK's macro places its sections).
fn component_with_nested(custom: &[(&str, &[u8])]) -> Vec<u8> {
    let mut module = b"\0asm\x01\0\0\0".to_vec();
    for (name, data) in custom {
        wasm_encoder::Section::append_to(
            &wasm_encoder::CustomSection { name: (*name).into(), data: (*data).into() },
            &mut module,
        );
    }
    let mut out = b"\0asm\x0d\0\x01\0".to_vec();
    // Section id 1 of a component: a core module.
    wasm_encoder::Section::append_to(&wasm_encoder::RawSection { id: 1, data: &module }, &mut out);
    out
}

fn write_app(root: &Path, name: &str, toml: &str) {
    std::fs::create_dir_all(root.join(name)).unwrap();
    std::fs::write(root.join(name).join(INDEX_HTML), PAGE).unwrap();
    std::fs::write(root.join(name).join(APP_TOML), toml).unwrap();
}

/// A project's `apps/` folder holding the valid section's two apps.
fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write_app(dir.path(), "chart", CHART_TOML);
    write_app(dir.path(), "map", MAP_TOML);
    dir
}

#[test]
fn a_section_round_trips_camel_case_with_empty_fields_left_out() {
    let s = valid();
    let json: Value = serde_json::from_slice(&encode(&s)).unwrap();
    assert_eq!(json["format"], 1);
    let chart = &json["apps"][0];
    assert_eq!(chart["appOnly"], serde_json::json!(["sort_rows"]));
    assert_eq!(chart["csp"]["connectDomains"], serde_json::json!(["https://api.example.com"]));
    assert!(chart["csp"].get("frameDomains").is_none());
    assert_eq!(chart["prefersBorder"], true);
    let mut keys: Vec<&str> = json["apps"][1].as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort();
    assert_eq!(keys, ["description", "html", "name", "tools"], "only what the map app has");
    assert_eq!(decode(&encode(&s)).unwrap(), s);
    let empty = AppsSection::default();
    assert_eq!(decode(&encode(&empty)).unwrap(), empty);
}

#[test]
fn identifiers_are_the_extensions() {
    assert_eq!(uri("charts", "chart"), "ui://charts/chart");
    assert_eq!(MIME_TYPE, "text/html;profile=mcp-app");
    assert_eq!(EXTENSION, "io.modelcontextprotocol/ui");
    assert_eq!(SECTION, "toolhost-apps");
}

#[test]
fn a_folder_is_collected_embedded_and_read_back() {
    let dir = project();
    // Hidden files and editors' backups are left out, at both levels.
    std::fs::write(dir.path().join(".DS_Store"), "x").unwrap();
    std::fs::write(dir.path().join("chart/index.html~"), "old").unwrap();
    let s = collect_dir(dir.path()).unwrap();
    assert_eq!(s, valid(), "by name, the trailing `/` of an origin removed");
    let plain = component_with_nested(&[("toolhost-manifest", b"{}")]);
    assert!(read(&plain).unwrap().is_none(), "no section: no apps");
    let with = embed(&plain, &s).unwrap();
    assert_eq!(read(&with).unwrap(), Some(s.clone()));
    assert!(matches!(embed(&with, &s), Err(AppsError::AlreadyEmbedded)));
}

#[test]
fn a_section_is_read_once_from_anywhere_in_a_component() {
    let s = valid();
    let nested = component_with_nested(&[(SECTION, &encode(&s))]);
    assert_eq!(read(&nested).unwrap(), Some(s.clone()), "inside a nested module");
    let mut twice = nested.clone();
    wasm_encoder::Section::append_to(
        &wasm_encoder::CustomSection { name: SECTION.into(), data: encode(&s).as_slice().into() },
        &mut twice,
    );
    assert!(matches!(read(&twice), Err(AppsError::Duplicate(2))));
    let mut bad = valid();
    bad.apps[0].csp.connect_domains.push("*".into());
    let plain = component_with_nested(&[]);
    assert!(matches!(embed(&plain, &bad), Err(AppsError::Domain { .. })));
    let broken = component_with_nested(&[(SECTION, &encode(&bad))]);
    assert!(read(&broken).unwrap_err().to_string().contains("`csp.connect_domains` entry \"*\""));
    let big = AppsSection {
        apps: (0..9)
            .map(|i| AppSpec { html: "<html>".repeat(80_000), ..app(&format!("a{i}"), &[]) })
            .collect(),
    };
    assert!(matches!(embed(&plain, &big), Err(AppsError::SectionTooLarge(_))));
    assert!(matches!(decode(&vec![b' '; MAX_SECTION_BYTES + 1]), Err(AppsError::SectionTooLarge(_))));
    assert!(matches!(read(b"\0asm\x01\0\0\0"), Err(AppsError::NotComponent(_))));
}

#[test]
fn an_apps_folder_holds_a_page_and_a_declaration_only() {
    let dir = project();
    let root = dir.path();
    let error = || collect_dir(root).unwrap_err().to_string();
    std::fs::write(root.join("chart/main.js"), "draw()").unwrap();
    let e = error();
    assert!(e.contains("chart/main.js") && e.contains("inline or bundle your scripts and styles"), "{e}");
    std::fs::remove_file(root.join("chart/main.js")).unwrap();
    std::fs::create_dir(root.join("chart/assets")).unwrap();
    assert!(error().contains("chart/assets: an app's folder holds only"));
    std::fs::remove_dir(root.join("chart/assets")).unwrap();
    std::fs::write(root.join("README.md"), "x").unwrap();
    assert!(error().contains("README.md: not inside an app's folder"));
    std::fs::remove_file(root.join("README.md")).unwrap();
    std::fs::remove_file(root.join("map/index.html")).unwrap();
    assert_eq!(error(), "app `map` has no `index.html` in its folder");
    std::fs::write(root.join("map/index.html"), PAGE).unwrap();
    std::fs::remove_file(root.join("map/app.toml")).unwrap();
    assert_eq!(error(), "app `map` has no `app.toml` in its folder");
    std::fs::write(root.join("map/app.toml"), MAP_TOML).unwrap();
    write_app(root, "Bad_Name", MAP_TOML);
    assert!(error().starts_with("app `Bad_Name`: an app's name"));
    std::fs::remove_dir_all(root.join("Bad_Name")).unwrap();
    std::fs::write(root.join("map/index.html"), vec![b'a'; MAX_PAGE_BYTES + 1]).unwrap();
    assert_eq!(error(), "app `map`: its page is 524289 bytes; at most 524288 are allowed");
    std::fs::write(root.join("map/index.html"), b"<html>\xff</html>").unwrap();
    assert_eq!(error(), "app `map`: its page is not UTF-8");
    std::fs::write(root.join("map/index.html"), "<div>a fragment</div>").unwrap();
    assert!(error().contains("app `map`: its page is not an HTML document"));
    std::fs::write(root.join("map/index.html"), PAGE).unwrap();
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink("/etc/passwd", root.join("map/index.html~x")).unwrap();
        assert!(matches!(collect_dir(root), Err(AppsError::Symlink(p)) if p.ends_with("map/index.html~x")));
        std::fs::remove_file(root.join("map/index.html~x")).unwrap();
    }
    assert_eq!(collect_dir(root).unwrap(), valid());
    assert!(matches!(collect_dir(&root.join("missing")), Err(AppsError::Io { .. })));
}

#[test]
fn app_toml_is_read_strictly() {
    let dir = project();
    let error = || collect_dir(dir.path()).unwrap_err().to_string();
    for (toml, says) in [
        ("description = \"d\"\ntools = [\"t\"]\ncolour = \"red\"\n", "line 3: unknown field `colour`"),
        ("description = \"d\"\ntools = [\"t\"]\nappOnly = [\"x\"]\n", "unknown field `appOnly`"),
        (
            "description = \"d\"\ntools = [\"t\"]\n[csp]\nconnect_domain = []\n",
            "line 4: unknown field `connect_domain`",
        ),
        ("description = \"d\"\ntools = \"t\"\n", "line 2: invalid type"),
        ("description = \"d\"\ntools = [\"t\"]\nprefers_border = \"yes\"\n", "invalid type"),
        ("description = ", "line 1"),
    ] {
        std::fs::write(dir.path().join("map/app.toml"), toml).unwrap();
        let e = error();
        assert!(e.contains("map/app.toml: ") && e.contains(says), "{toml}: {e}");
    }
    std::fs::write(dir.path().join("map/app.toml"), "tools = [\"t\"]\n").unwrap();
    assert_eq!(error(), "app `map`: `description` must not be empty");
    std::fs::write(dir.path().join("map/app.toml"), "description = \"d\"\n").unwrap();
    assert!(error().starts_with("app `map`: `tools` must name at least one tool"));
    std::fs::write(dir.path().join("map/app.toml"), "#".repeat(MAX_APP_TOML_BYTES + 1)).unwrap();
    assert!(error().contains("map/app.toml: is 65537 bytes"));
}

#[test]
fn each_rule_is_kept_and_named() {
    type Change = fn(&mut AppsSection);
    let cases: &[(Change, &str)] = &[
        (|s| s.apps[0].name = "Chart".into(), "app `Chart`: an app's name (its folder's) is 1 to 64"),
        (|s| s.apps[0].name = "a".repeat(65), "an app's name"),
        (|s| s.apps[1].name = "chart".into(), "app `chart` appears twice"),
        (|s| s.apps = (0..17).map(|i| app(&format!("a{i}"), &[])).collect(), "17 apps; at most 16"),
        (|s| s.apps[0].title = Some(" ".into()), "app `chart`: `title` must not be empty"),
        (|s| s.apps[0].title = Some("a\nb".into()), "`title` contains the control character U+000A"),
        (|s| s.apps[0].title = Some("é".repeat(129)), "`title` is 129 characters long"),
        (|s| s.apps[0].description = String::new(), "app `chart`: `description` must not be empty"),
        (|s| s.apps[0].description = "d".repeat(1025), "`description` is 1025 characters long"),
        (|s| s.apps[0].html = "<html>\0".into(), "app `chart`: its page holds NUL"),
        (|s| s.apps[0].html = "<svg></svg>".into(), "its page is not an HTML document"),
        (|s| s.apps[0].html = "<html>".repeat(90_000), "its page is 540000 bytes; at most 524288"),
        (|s| s.apps[0].tools.clear(), "app `chart`: `tools` must name at least one tool"),
        (|s| s.apps[0].tools = vec!["a b".into()], "`tools` entry \"a b\" is not a tool name"),
        (|s| s.apps[0].tools = vec!["t".repeat(65)], "is not a tool name"),
        (|s| s.apps[0].app_only = vec!["".into()], "`app_only` entry \"\" is not a tool name"),
        (|s| s.apps[1].tools.push("places".into()), "app `map`: `tools` names \"places\" twice"),
        (|s| s.apps[0].app_only.push("sort_rows".into()), "`app_only` names \"sort_rows\" twice"),
        (|s| s.apps[0].app_only.push("table".into()), "app `chart`: tool `table` is in both"),
        (
            |s| s.apps[0].tools = (0..65).map(|i| format!("t{i}")).collect(),
            "`tools` has 65 entries; at most 64",
        ),
        (|s| s.apps[1].tools.push("table".into()), "tool `table` is linked by apps `chart` and `map`"),
        (|s| s.apps[1].app_only.push("table".into()), "in app `map`'s `app_only`"),
        (
            |s| s.apps[0].csp.connect_domains.push("https://a.com; script-src *".into()),
            "app `chart`: `csp.connect_domains` entry \"https://a.com; script-src *\" holds whitespace",
        ),
        (
            |s| s.apps[0].csp.frame_domains.push("https://a.com/".into()),
            "`csp.frame_domains` entry \"https://a.com/\" is not written in its normal form; write \"https://a.com\"",
        ),
        (
            |s| s.apps[0].csp.base_uri_domains = vec!["https://a.com".into(), "https://a.com".into()],
            "`csp.base_uri_domains` names \"https://a.com\" twice",
        ),
        (
            |s| s.apps[0].csp.resource_domains = (0..33).map(|i| format!("https://h{i}.com")).collect(),
            "`csp.resource_domains` has 33 entries; at most 32",
        ),
    ];
    for (change, says) in cases {
        let mut s = valid();
        change(&mut s);
        let e = refused(s);
        assert!(e.contains(says), "{says}\n  got: {e}");
    }
    // Several apps may call one app-only tool; a page's markers are found in any case.
    let mut s = valid();
    s.apps[1].app_only.push("sort_rows".into());
    s.apps[1].html = "<HTML><BODY>map</BODY></HTML>".into();
    s.apps[0].html = "<!DOCTYPE HTML><p>chart".into();
    assert!(decode(&encode(&s)).is_ok());
}

#[test]
fn the_json_is_read_strictly() {
    let app = r#"{"name": "a", "description": "d", "html": "<html>", "tools": ["t"]"#;
    for (json, says) in [
        ("[]".to_string(), "must be a JSON object"),
        (r#"{"apps": []}"#.into(), "`format`: missing"),
        (r#"{"format": 2, "apps": []}"#.into(), "unknown format version 2"),
        (r#"{"format": 1, "apps": [], "more": 1}"#.into(), "unknown field `more`"),
        (
            format!(r#"{{"format": 1, "apps": [{app}, "prefers_border": true}}]}}"#),
            "unknown field `prefers_border`",
        ),
        (format!(r#"{{"format": 1, "apps": [{app}, "csp": {{"connect": []}}}}]}}"#), "apps[0].csp"),
        (
            r#"{"format": 1, "apps": [{"name": "a", "html": "<html>", "tools": ["t"]}]}"#.into(),
            "`description`",
        ),
        ("nope".into(), "not valid JSON"),
    ] {
        let e = decode(json.as_bytes()).unwrap_err().to_string();
        assert!(e.contains(says), "{json}: {e}");
    }
    assert!(decode(format!(r#"{{"format": 1, "apps": [{app}, "appOnly": []}}]}}"#).as_bytes()).is_ok());
}
