//! A second, independent MCP client: the official Python SDK (which also
//! validates our results against its own models).

use serde_json::Value;
use std::process::Command;
use verbgate_tests::{git, target_dir, verbgate_bin, Env};

#[test]
fn the_python_mcp_sdk_sees_one_tool_and_structured_results() {
    let python = target_dir().join("py/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run `just python-env` (part of `just test`)",
        python.display()
    );
    let env = Env::new();
    git(&env.root, &["init", "-q", "-b", "main"]);
    std::fs::write(env.root.join("f"), "x").unwrap();
    git(&env.root, &["add", "f"]);
    git(&env.root, &["commit", "-q", "-m", "only commit"]);
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("python/mcp_session.py");
    let out = Command::new(&python)
        .arg(&script)
        .arg(verbgate_bin())
        .arg(&env.home)
        .arg(&env.root)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "python client failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert!(["2025-06-18", "2025-11-25"].contains(&v["protocol"].as_str().unwrap()), "{v}");
    assert_eq!(v["tools"].as_array().unwrap().len(), 1);
    assert_eq!(v["tools"][0]["name"], "request");
    assert!(v["catalog_verbs"]
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s.as_str().unwrap().starts_with("git.status(")));
    assert_eq!(v["ops_is_error"], false);
    assert_eq!(v["ops"]["status"], "partial");
    assert_eq!(v["ops"]["results"][0]["result"]["commits"][0]["subject"], "only commit");
    assert_eq!(v["ops"]["results"][1]["error"]["param"], "limt");
    assert_eq!(v["bad_is_error"], true);
    assert_eq!(v["bad"]["error"]["code"], "invalid_request");
}
