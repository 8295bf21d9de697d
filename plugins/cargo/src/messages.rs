//! Mapping a cargo job's output. Compiler diagnostics come from cargo's
//! `--message-format=json` (one JSON object per stdout line). Test outcomes
//! come from libtest's line format, `test <name> ... ok|FAILED|ignored`,
//! and its `test result:` summaries: libtest's JSON output needs a nightly
//! compiler (`-Z unstable-options`), while this line format has been stable
//! since Rust 1.0 and is what cargo's own tooling reads. Lines that are
//! neither are ignored — nothing is inferred from other human text.

use verbgate_plugin_sdk::{json, Value};

/// Everything learned from a cargo run's stdout.
#[derive(Debug, Default)]
pub struct Report {
    /// Compiler diagnostics, in order.
    pub diagnostics: Vec<Value>,
    /// Per-test outcomes (`cargo test`).
    pub tests: Vec<Value>,
    /// Whether cargo said the build finished successfully.
    pub build_success: Option<bool>,
}

/// Parse a cargo run's stdout.
pub fn parse(stdout: &[u8]) -> Report {
    let text = String::from_utf8_lossy(stdout);
    let mut r = Report::default();
    let mut failure_output: Vec<(String, String)> = Vec::new();
    let mut current_failure: Option<(String, String)> = None;
    for line in text.lines() {
        if line.starts_with('{') {
            if let Ok(v) = verbgate_plugin_sdk::serde_json::from_str::<Value>(line) {
                match v["reason"].as_str() {
                    Some("compiler-message") => r.diagnostics.push(diagnostic(&v["message"])),
                    Some("build-finished") => r.build_success = v["success"].as_bool(),
                    _ => {}
                }
                continue;
            }
        }
        // `---- name stdout ----` opens a failed test's captured output.
        if let Some(name) = line.strip_prefix("---- ").and_then(|l| l.strip_suffix(" stdout ----")) {
            if let Some(done) = current_failure.take() {
                failure_output.push(done);
            }
            current_failure = Some((name.to_string(), String::new()));
            continue;
        }
        if line == "failures:" || line.starts_with("test result:") {
            if let Some(done) = current_failure.take() {
                failure_output.push(done);
            }
        }
        if let Some((_, out)) = current_failure.as_mut() {
            if out.len() < 4096 {
                out.push_str(line);
                out.push('\n');
            }
            continue;
        }
        if let Some(rest) = line.strip_prefix("test ") {
            if let Some((name, outcome)) = rest.rsplit_once(" ... ") {
                let outcome = match outcome {
                    "ok" => "passed",
                    "FAILED" => "failed",
                    o if o.starts_with("ignored") => "ignored",
                    _ => continue,
                };
                r.tests.push(json!({ "name": name, "outcome": outcome }));
            }
        }
    }
    if let Some(done) = current_failure.take() {
        failure_output.push(done);
    }
    for (name, out) in failure_output {
        if let Some(t) = r.tests.iter_mut().find(|t| t["name"] == name.as_str() && t["outcome"] == "failed") {
            t["output"] = json!(out.trim_end());
        }
    }
    r
}

/// One rustc diagnostic, reduced to what a caller acts on.
fn diagnostic(m: &Value) -> Value {
    let primary = m["spans"].as_array().and_then(|spans| spans.iter().find(|s| s["is_primary"] == true));
    json!({
        "level": m["level"],
        "code": m["code"]["code"],
        "message": m["message"],
        "file": primary.map(|s| s["file_name"].clone()),
        "line": primary.map(|s| s["line_start"].clone()),
        "column": primary.map(|s| s["column_start"].clone()),
        "rendered": m["rendered"],
    })
}

/// The result schema of the cargo job verbs.
pub fn result_schema() -> Value {
    json!({
        "type": "object",
        "required": ["success", "exit_code", "diagnostics", "counts"],
        "properties": {
            "success": { "type": "boolean" },
            "exit_code": { "type": ["integer", "null"] },
            "diagnostics": { "type": "array", "items": {
                "type": "object",
                "required": ["level", "code", "message", "file", "line", "column", "rendered"],
                "properties": {
                    "level": { "type": "string" }, "code": { "type": ["string", "null"] }, "message": { "type": "string" },
                    "file": { "type": ["string", "null"] }, "line": { "type": ["integer", "null"] },
                    "column": { "type": ["integer", "null"] }, "rendered": { "type": ["string", "null"] }
                }
            } },
            "counts": { "type": "object", "required": ["errors", "warnings"] },
            "tests": { "type": "object", "required": ["passed", "failed", "ignored", "results"] }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_diagnostics_and_test_lines_and_failure_output() {
        let out = r#"{"reason":"compiler-message","message":{"level":"warning","code":{"code":"unused_variables"},"message":"unused variable: `x`","spans":[{"is_primary":true,"file_name":"src/lib.rs","line_start":3,"column_start":9}],"rendered":"warning: unused"}}
{"reason":"build-finished","success":true}

running 3 tests
test tests::good ... ok
test tests::bad ... FAILED
test tests::later ... ignored, not today

failures:

---- tests::bad stdout ----
thread 'tests::bad' panicked at src/lib.rs:9:5:
boom

failures:
    tests::bad

test result: FAILED. 1 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.00s
"#;
        let r = parse(out.as_bytes());
        assert_eq!(r.diagnostics.len(), 1);
        assert_eq!(r.diagnostics[0]["line"], 3);
        assert_eq!(r.diagnostics[0]["code"], "unused_variables");
        assert_eq!(r.build_success, Some(true));
        let outcomes: Vec<(&str, &str)> = r.tests.iter().map(|t| (t["name"].as_str().unwrap(), t["outcome"].as_str().unwrap())).collect();
        assert_eq!(outcomes, [("tests::good", "passed"), ("tests::bad", "failed"), ("tests::later", "ignored")]);
        assert!(r.tests[1]["output"].as_str().unwrap().contains("boom"));
    }
}
