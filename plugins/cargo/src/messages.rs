//! Mapping a cargo job's output. Compiler diagnostics come from cargo's
//! `--message-format=json` (one JSON object per stdout line). Test outcomes
//! come from libtest's line format, `test <name> ... ok|FAILED|ignored`,
//! and its `test result:` summaries: libtest's JSON output needs a nightly
//! compiler (`-Z unstable-options`), while this line format has been stable
//! since Rust 1.0 and is what cargo's own tooling reads. Lines that are
//! neither are ignored — nothing is inferred from other human text.

use schemars::JsonSchema;
use serde::Serialize;
use verbgate_plugin_sdk::Value;

/// Everything learned from a cargo run's stdout.
#[derive(Debug, Default)]
pub struct Report {
    /// Compiler diagnostics, in order.
    pub diagnostics: Vec<Diagnostic>,
    /// Per-test outcomes (`cargo test`).
    pub tests: Vec<TestResult>,
    /// Whether cargo said the build finished successfully.
    pub build_success: Option<bool>,
}

// One rustc diagnostic, reduced to what a caller acts on (a plain
// comment, as on every result type: a type's doc comment would become its
// schema's description).
#[derive(Debug, Serialize, JsonSchema)]
pub struct Diagnostic {
    pub level: String,
    pub code: Option<String>,
    pub message: String,
    pub file: Option<String>,
    pub line: Option<u64>,
    pub column: Option<u64>,
    pub rendered: Option<String>,
}

// One test libtest reported.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TestResult {
    pub name: String,
    pub outcome: TestOutcome,
    /// what a failed test printed (its head)
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub output: Option<String>,
}

// What happened to a test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TestOutcome {
    Passed,
    Failed,
    Ignored,
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
        if let Some(name) = line.strip_prefix("---- ").and_then(|l| l.strip_suffix(" stdout ----"))
        {
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
                    "ok" => TestOutcome::Passed,
                    "FAILED" => TestOutcome::Failed,
                    o if o.starts_with("ignored") => TestOutcome::Ignored,
                    _ => continue,
                };
                r.tests.push(TestResult { name: name.to_string(), outcome, output: None });
            }
        }
    }
    if let Some(done) = current_failure.take() {
        failure_output.push(done);
    }
    for (name, out) in failure_output {
        if let Some(t) =
            r.tests.iter_mut().find(|t| t.name == name && t.outcome == TestOutcome::Failed)
        {
            t.output = Some(out.trim_end().to_string());
        }
    }
    r
}

/// One rustc diagnostic, reduced to what a caller acts on.
fn diagnostic(m: &Value) -> Diagnostic {
    let primary =
        m["spans"].as_array().and_then(|spans| spans.iter().find(|s| s["is_primary"] == true));
    let text = |v: &Value| v.as_str().map(str::to_string);
    Diagnostic {
        level: text(&m["level"]).unwrap_or_default(),
        code: text(&m["code"]["code"]),
        message: text(&m["message"]).unwrap_or_default(),
        file: primary.and_then(|s| text(&s["file_name"])),
        line: primary.and_then(|s| s["line_start"].as_u64()),
        column: primary.and_then(|s| s["column_start"].as_u64()),
        rendered: text(&m["rendered"]),
    }
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
        assert_eq!(r.diagnostics[0].line, Some(3));
        assert_eq!(r.diagnostics[0].code.as_deref(), Some("unused_variables"));
        assert_eq!(r.build_success, Some(true));
        let outcomes: Vec<(&str, TestOutcome)> =
            r.tests.iter().map(|t| (t.name.as_str(), t.outcome)).collect();
        assert_eq!(
            outcomes,
            [
                ("tests::good", TestOutcome::Passed),
                ("tests::bad", TestOutcome::Failed),
                ("tests::later", TestOutcome::Ignored)
            ]
        );
        assert!(r.tests[1].output.as_deref().unwrap().contains("boom"));
    }
}
