//! Manifest validation, case by case: each `tests/manifests/NAME.json` sits beside the
//! expected `NAME.err` (the exact message) or `NAME.ok` (a summary of the parsed manifest).
//! Run with `TOOLHOST_BLESS=1` to rewrite the expected files after an intended change.

#[test]
fn golden_manifest_cases() {
    let dir = crate::support::root().join("tests/manifests");
    let bless = std::env::var_os("TOOLHOST_BLESS").is_some();
    let mut cases: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    cases.sort();
    assert!(cases.len() >= 30, "expected the full case table, found {}", cases.len());
    let mut failures = Vec::new();
    for case in &cases {
        let input = std::fs::read(case).unwrap();
        let (ext, actual) = match toolhost_spec::manifest::parse(&input) {
            Ok(m) => ("ok", m.tools.iter().map(|t| t.signature()).collect::<Vec<_>>().join("\n") + "\n"),
            Err(e) => ("err", format!("{e}\n")),
        };
        let expected_path = case.with_extension(ext);
        let other = case.with_extension(if ext == "ok" { "err" } else { "ok" });
        if bless {
            let _ = std::fs::remove_file(&other);
            std::fs::write(&expected_path, &actual).unwrap();
            continue;
        }
        match std::fs::read_to_string(&expected_path) {
            Ok(expected) if expected == actual => {}
            Ok(expected) => {
                failures.push(format!("{}: expected {expected:?}, got {actual:?}", case.display()))
            }
            Err(_) => failures.push(format!(
                "{}: got {ext} {actual:?} but {} does not exist{}",
                case.display(),
                expected_path.display(),
                if other.exists() { " (the other outcome was expected)" } else { "" }
            )),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
