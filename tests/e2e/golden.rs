//! Golden files pin the public contract: every bundled verb's schema, result
//! schema and fingerprint, the advertised MCP tool, and the error-code
//! vocabulary. A change to any of them fails here until it is regenerated on
//! purpose (`UPDATE_GOLDEN=1 just test`) and the diff reviewed.

use serde_json::{json, Value};
use std::path::PathBuf;
use verbgate_tests::Env;

fn golden_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("golden").join(name)
}

fn check_golden(name: &str, actual: &Value) {
    let path = golden_path(name);
    let text = serde_json::to_string_pretty(actual).unwrap() + "\n";
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, &text).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|_| panic!("{} is missing: run `UPDATE_GOLDEN=1 just test`", path.display()));
    assert!(
        expected == text,
        "{name} changed. If this is deliberate, regenerate with `UPDATE_GOLDEN=1 just test` and review the diff.\n--- expected\n{expected}\n--- actual\n{text}"
    );
}

#[test]
fn bundled_verb_contracts_are_pinned() {
    // Without their programs the rg and pytest verbs are unavailable, and
    // the golden file would seem to lose them.
    for tool in verbgate_tests::TEST_TOOLS {
        verbgate_tests::require_test_tool(tool);
    }
    let env = Env::new();
    let verbs = env.verbs();
    let mut contracts = Vec::new();
    for v in verbs["verbs"].as_array().unwrap() {
        let name = v["verb"].as_str().unwrap();
        let help = env.request(&json!({ "help": name }))["help"].clone();
        assert_eq!(help["plugin"]["source"], "bundled", "only bundled verbs without --plugins: {name}");
        contracts.push(json!({
            "verb": name,
            "kind": help["kind"],
            "effects": help["effects"],
            "signature": help["signature"],
            "schema_fingerprint": help["schema_fingerprint"],
            "params_schema": help["params_schema"],
            "result_schema": help["result_schema"],
        }));
    }
    check_golden("bundled-verbs.json", &Value::Array(contracts));
}

#[test]
fn the_advertised_tool_and_error_codes_are_pinned() {
    let tool = verbgate::mcp::tool::tool(8);
    check_golden("tool.json", &serde_json::to_value(&tool).unwrap());
    let codes: Vec<&str> = verbgate::ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
    check_golden("error-codes.json", &json!(codes));
}
