//! The bundled `eslint.check` verb against the real ESLint (`just
//! test-tools`), on `tests/fixtures/eslint-project`: findings with rule,
//! severity, place and fix availability from `--format
//! json-with-metadata`; a parse error is a fatal finding; nothing is fixed.

use serde_json::json;
use std::path::Path;
use verbgate_tests::{copy_tree, require_test_tool, Env};

fn project_env() -> Env {
    require_test_tool("eslint");
    let env = Env::new();
    copy_tree(&Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/eslint-project"), &env.root);
    env
}

#[test]
fn findings_carry_rule_severity_place_and_whether_a_fix_exists() {
    let env = project_env();
    let before = std::fs::read_to_string(env.root.join("src/findings.js")).unwrap();
    let r = env.op("eslint.check", json!({}));
    assert_eq!(r["ok"], true, "{r}");
    let r = &r["result"];
    assert_eq!((r["success"].clone(), r["exit_code"].clone()), (json!(false), json!(1)), "{r}");
    assert_eq!(
        r["counts"],
        json!({"errors": 3, "warnings": 1, "fixable_errors": 0, "fixable_warnings": 1, "fatal": 1}),
        "{r}"
    );
    let found: Vec<(&str, Option<&str>, &str, u64, bool)> = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["file"].as_str().unwrap(),
                f["rule"].as_str(),
                f["severity"].as_str().unwrap(),
                f["line"].as_u64().unwrap(),
                f["fixable"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        found,
        [
            ("src/broken.js", None, "error", 1, false),
            ("src/findings.js", Some("prefer-const"), "warning", 1, true),
            ("src/findings.js", Some("no-unused-vars"), "error", 2, false),
            ("src/findings.js", Some("eqeqeq"), "error", 3, false),
        ],
        "{r}"
    );
    let eq = r["findings"].as_array().unwrap().iter().find(|f| f["rule"] == "eqeqeq").unwrap();
    assert_eq!((eq["column"].as_u64(), eq["suggestions"].as_u64()), (Some(11), Some(1)), "{eq}");
    assert_eq!(r["findings"][0]["fatal"], true);
    assert_eq!(
        std::fs::read_to_string(env.root.join("src/findings.js")).unwrap(),
        before,
        "never fixes"
    );
}

#[test]
fn paths_narrow_the_check_and_are_never_options() {
    let env = project_env();
    let r = env.op("eslint.check", json!({"paths": ["src/clean.js"]}));
    assert_eq!(
        (
            r["result"]["success"].clone(),
            r["result"]["findings"].clone(),
            r["result"]["files"].clone()
        ),
        (json!(true), json!([]), json!(1)),
        "{r}"
    );
    let r = env.op("eslint.check", json!({"paths": ["src/nothing.js"]}));
    assert_eq!(r["error"]["code"], "exit_nonzero", "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("nothing.js"), "{r}");
    let r = env.op("eslint.check", json!({"paths": ["--fix"]}));
    assert_eq!(r["error"]["code"], "unsafe_argv", "{r}");
}
