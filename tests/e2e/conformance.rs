//! The official MCP conformance suite (`@modelcontextprotocol/conformance`,
//! pinned in scripts/conformance, installed by `just conformance-tools`)
//! against `verbgate serve --http` with real signed components, once per
//! protocol era: the stateful 2025-11-25 wire (initialize, sessions) and the
//! stateless 2026-07-28 one. Each run is held to its baseline in
//! tests/conformance/: a failing check not listed there fails the test, and
//! so does a listed check that now passes (the suite's own rule), so the
//! baseline can only shrink.

use std::path::PathBuf;
use std::process::Command;
use verbgate_tests::{target_dir, Env};

fn suite() -> (PathBuf, PathBuf) {
    let dir = target_dir().join("conformance");
    let node = dir.join("bin/node");
    let cli = dir.join("node_modules/@modelcontextprotocol/conformance/dist/index.js");
    assert!(
        node.exists() && cli.exists(),
        "the conformance suite is missing from {}: run `just conformance-tools` (part of `just test`)",
        dir.display()
    );
    (node, cli)
}

/// Run the suite's server scenarios that `revision` requires; the checks
/// it wrote, as (scenario, check id, status).
fn run(revision: &str) -> Vec<(String, String, String)> {
    let (node, cli) = suite();
    let env = Env::with_plugin("core");
    env.install("git");
    // The suite's scenarios call its fixture tools, which only this
    // hidden flag serves.
    let server = env.serve_http(&["--no-auth", "--conformance-fixtures"]);
    let out_dir = env.tmp.path().join(format!("conformance-{revision}"));
    let baseline =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("conformance/{revision}.yml"));
    let out = Command::new(node)
        .arg(cli)
        .args(["server", "--url", &server.url, "--requirements", revision])
        .arg("--expected-failures")
        .arg(&baseline)
        .arg("-o")
        .arg(&out_dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let summary = stdout.split("=== SUMMARY ===").nth(1).unwrap_or(&stdout);
    println!("conformance {revision}:{summary}");
    assert!(
        out.status.success(),
        "the conformance suite at {revision} failed against its baseline ({}):\n{summary}\n{}",
        baseline.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let mut checks = Vec::new();
    for entry in std::fs::read_dir(&out_dir).unwrap() {
        let dir = entry.unwrap().path();
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        // server-<scenario>-<timestamp>, the timestamp 2026-12-06T19-45-27-161Z.
        let scenario = name
            .strip_prefix("server-")
            .and_then(|n| n.get(..n.len().saturating_sub("-2026-12-06T19-45-27-161Z".len())))
            .unwrap_or_else(|| panic!("an unexpected result directory: {name}"))
            .to_string();
        let text = std::fs::read_to_string(dir.join("checks.json")).unwrap();
        let list: Vec<serde_json::Value> = serde_json::from_str(&text).unwrap();
        for c in list {
            checks.push((
                scenario.clone(),
                c["id"].as_str().unwrap().to_string(),
                c["status"].as_str().unwrap().to_string(),
            ));
        }
    }
    checks
}

/// The checks of `scenario` that passed.
fn passed<'a>(checks: &'a [(String, String, String)], scenario: &str) -> Vec<&'a str> {
    checks.iter().filter(|c| c.0 == scenario && c.2 == "SUCCESS").map(|c| c.1.as_str()).collect()
}

#[test]
fn the_official_suite_passes_at_2025_11_25_but_for_its_baseline() {
    let checks = run("2025-11-25");
    // The run is real: the scenarios verbgate serves passed, check by check.
    for scenario in [
        "server-initialize",
        "ping",
        "tools-list",
        "server-sse-multiple-streams",
        "dns-rebinding-protection",
    ] {
        assert!(!passed(&checks, scenario).is_empty(), "{scenario} passed no check: {checks:?}");
    }
    assert!(checks.iter().filter(|c| c.2 == "SUCCESS").count() >= 40, "{checks:?}");
}

#[test]
fn the_official_suite_passes_at_2026_07_28_but_for_its_baseline() {
    let checks = run("2026-07-28");
    for scenario in [
        "server-stateless",
        "tools-list",
        "http-header-validation",
        "input-required-result-validate-input",
        "dns-rebinding-protection",
    ] {
        assert!(!passed(&checks, scenario).is_empty(), "{scenario} passed no check: {checks:?}");
    }
    assert!(checks.iter().filter(|c| c.2 == "SUCCESS").count() >= 90, "{checks:?}");
}

/// `tools/list` over one stateless 2026-07-28 POST: the tool names.
fn listed(addr: &str) -> Vec<String> {
    let body =
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"}
        }}})
        .to_string();
    let head = format!(
        "POST /mcp HTTP/1.0\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/list\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    let (status, _, answer) = verbgate_tests::oauth::exchange(addr, &head, body.as_bytes());
    let text = String::from_utf8_lossy(&answer).to_string();
    assert_eq!(status, 200, "{text}");
    let json = text.lines().find_map(|l| l.strip_prefix("data: ")).unwrap_or(&text).to_string();
    let v: serde_json::Value =
        serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {text}"));
    v["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{v}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_fixture_tools_exist_only_behind_the_hidden_flag() {
    let env = Env::with_plugin("fixture-echo");
    let real = env.serve_http(&["--no-auth"]);
    assert_eq!(listed(&real.addr), ["request"], "a real server lists one tool");
    let fixtures = env.serve_http(&["--no-auth", "--conformance-fixtures"]);
    let names = listed(&fixtures.addr);
    assert_eq!(names[0], "request");
    assert!(names.iter().any(|n| n == "test_simple_text"), "{names:?}");
    // The flag is not in `serve --help`.
    let help = env.cmd(&["serve", "--help"]).output().unwrap();
    assert!(!String::from_utf8_lossy(&help.stdout).contains("conformance-fixtures"));
}
