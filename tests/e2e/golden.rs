//! Golden files pin the public contract: every bundled verb's schema, result
//! schema and fingerprint, the advertised MCP tool, and the error-code and
//! load-code vocabularies. A change to any of them fails here until it is
//! regenerated on purpose (`UPDATE_GOLDEN=1 just test`) and the diff reviewed.

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
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|_| {
        panic!("{} is missing: run `UPDATE_GOLDEN=1 just test`", path.display())
    });
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
        assert_eq!(
            help["plugin"]["source"], "bundled",
            "only bundled verbs without --plugins: {name}"
        );
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

/// The load-time codes (`verbgate verbs`' and the catalog's `unavailable`,
/// `verbgate check` findings) are public too.
#[test]
fn the_load_codes_are_pinned() {
    let codes: Vec<&str> = verbgate::LoadCode::ALL.iter().map(|c| c.as_str()).collect();
    check_golden("load-codes.json", &json!(codes));
}

/// The codes a plugin may report are one list on both sides: the guest
/// SDK's `ErrorCode` (plugins/sdk/src/errors.rs) and the host's
/// `PLUGIN_CODES` (the codes it passes through from a plugin; any other
/// becomes `plugin_error`). Read from both sources, so that a code added,
/// removed or respelt on one side fails here until the other follows.
#[test]
fn the_sdk_error_codes_are_the_hosts_plugin_codes() {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    // The SDK: `ErrorCode::Variant => "wire_name",` arms of `as_str`.
    let sdk = std::fs::read_to_string(repo.join("plugins/sdk/src/errors.rs")).unwrap();
    let mut sdk_codes: Vec<(String, String)> = sdk
        .lines()
        .filter_map(|l| {
            let (variant, wire) = l.trim().strip_prefix("ErrorCode::")?.split_once(" => \"")?;
            Some((variant.to_string(), wire.strip_suffix("\",")?.to_string()))
        })
        .collect();
    assert!(!sdk_codes.is_empty(), "no `ErrorCode::X => \"x\",` arms in plugins/sdk/src/errors.rs");
    // The host: the `PLUGIN_CODES` list, wherever in host/src it lives.
    let mut files = vec![repo.join("host/src")];
    let mut host_list = None;
    while let Some(path) = files.pop() {
        if path.is_dir() {
            files.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).unwrap();
            if let Some(at) = text.find("PLUGIN_CODES: &[ErrorCode] = &[") {
                let list = &text[at..];
                host_list = Some(list[..list.find("];").unwrap()].to_string());
            }
        }
    }
    let host_list = host_list.expect("no `PLUGIN_CODES: &[ErrorCode] = &[…];` in host/src");
    let mut host_codes: Vec<(String, String)> = host_list
        .split("ErrorCode::")
        .skip(1)
        .map(|rest| rest.split(|c: char| !c.is_alphanumeric()).next().unwrap().to_string())
        .map(|variant| {
            let code = verbgate::ErrorCode::ALL
                .iter()
                .find(|c| format!("{c:?}") == variant)
                .unwrap_or_else(|| {
                    panic!("PLUGIN_CODES names ErrorCode::{variant}, which ErrorCode::ALL lacks")
                });
            (variant, code.as_str().to_string())
        })
        .collect();
    sdk_codes.sort();
    host_codes.sort();
    assert_eq!(sdk_codes, host_codes, "the guest SDK's ErrorCode (left) and the host's PLUGIN_CODES (right) must list the same codes, spelt alike");
}

#[test]
fn the_audit_export_schema_is_pinned() {
    // A SIEM parses these lines: a field renamed, dropped or given another
    // meaning must change the schema id, and shows here first.
    let env = Env::new();
    let out = env.cmd(&["audit", "export", "--schema"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let schema: Value = serde_json::from_slice(&out.stdout).unwrap();
    check_golden("audit-export.schema.json", &schema);
}
