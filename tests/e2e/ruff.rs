//! The bundled `ruff.check`, `ruff.format_check` and `ruff.format` verbs
//! against the real ruff (`just test-tools`), on
//! `tests/fixtures/ruff-project`: findings with code, place and fix
//! applicability from `--output-format json`, what `ruff format` would
//! change with its edit, and the format itself as a write.

use serde_json::json;
use std::path::Path;
use verbgate_tests::{copy_tree, require_test_tool, Env};

fn project_env() -> Env {
    require_test_tool("ruff");
    let env = Env::new().allowing(&["ruff.format"]);
    copy_tree(&Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/ruff-project"), &env.root);
    env
}

#[test]
fn check_reports_codes_places_and_fix_applicability_and_fixes_nothing() {
    let env = project_env();
    let before = std::fs::read_to_string(env.root.join("pkg/findings.py")).unwrap();
    let r = env.op("ruff.check", json!({}));
    assert_eq!(r["ok"], true, "{r}");
    let r = &r["result"];
    assert_eq!(
        (r["success"].clone(), r["exit_code"].clone(), r["counts"].clone()),
        (json!(false), json!(1), json!({"findings": 2, "fixable": 2})),
        "{r}"
    );
    let found: Vec<(&str, u64, u64, &str)> = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["code"].as_str().unwrap(),
                f["line"].as_u64().unwrap(),
                f["column"].as_u64().unwrap(),
                f["fix"]["applicability"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(found, [("F401", 1, 8, "safe"), ("E711", 5, 21, "unsafe")], "{r}");
    assert_eq!(r["findings"][0]["file"], env.root.join("pkg/findings.py").display().to_string());
    assert_eq!(
        std::fs::read_to_string(env.root.join("pkg/findings.py")).unwrap(),
        before,
        "never fixes"
    );
    let r = env.op("ruff.check", json!({"paths": ["pkg/clean.py"]}));
    assert_eq!(
        (r["result"]["success"].clone(), r["result"]["findings"].clone()),
        (json!(true), json!([])),
        "{r}"
    );
    let r = env.op("ruff.check", json!({"select": ["E711"]}));
    assert_eq!(r["result"]["counts"]["findings"], 1, "{r}");
    assert!(!env.root.join(".ruff_cache").exists(), "--no-cache");
}

#[test]
fn format_check_lists_what_format_then_changes() {
    let env = project_env();
    let r = env.request(&json!({"ops": [
        {"op": "ruff.format_check", "args": {"paths": ["pkg"]}},
        {"op": "ruff.format", "args": {"paths": ["pkg"]}},
        {"op": "ruff.format_check", "args": {"paths": ["pkg"]}}
    ]}));
    let would = &r["results"][0]["result"];
    let files: Vec<&str> = would["findings"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"))
        .iter()
        .map(|f| f["file"].as_str().unwrap())
        .collect();
    assert_eq!(files, [env.root.join("pkg/unformatted.py").display().to_string()], "{r}");
    assert_eq!(would["findings"][0]["code"], "unformatted");
    assert!(
        would["findings"][0]["fix"]["edits"][0]["content"].as_str().unwrap().starts_with("a, b):"),
        "ruff's edit: {r}"
    );
    assert_eq!(r["results"][1]["result"], json!({"changed": true}), "{r}");
    assert_eq!(
        (
            r["results"][2]["result"]["success"].clone(),
            r["results"][2]["result"]["findings"].clone()
        ),
        (json!(true), json!([])),
        "{r}"
    );
    assert!(std::fs::read_to_string(env.root.join("pkg/unformatted.py"))
        .unwrap()
        .starts_with("def f(a, b):"));
    let again = env.op("ruff.format", json!({}));
    assert_eq!(again["result"], json!({"changed": false}), "{again}");
}

#[test]
fn format_asks_by_default_and_paths_stay_in_the_root() {
    require_test_tool("ruff");
    let env = Env::new();
    copy_tree(&Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/ruff-project"), &env.root);
    let r = env.op("ruff.format", json!({}));
    assert_eq!(r["error"]["code"], "consent_required", "a write asks: {r}");
    let r = env.op("ruff.check", json!({"paths": ["../x.py"]}));
    assert_eq!(r["error"]["code"], "plan_refused", "{r}");
}
