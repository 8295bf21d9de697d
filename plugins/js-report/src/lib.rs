//! The test report vitest's `json` reporter and jest's `--json` both write
//! (jest's `AggregatedResult` shape, which vitest copies) → per-test
//! outcomes.
//!
//! Only that JSON is read, never the runners' terminal output. One
//! `testResults` entry per test file, one `assertionResults` entry per
//! test. Outcomes:
//!
//! | runner status                        | outcome   |
//! |--------------------------------------|-----------|
//! | `passed`                             | `passed`  |
//! | `failed`                             | `failed`  |
//! | `pending`, `skipped`, `disabled`     | `skipped` |
//! | `todo`                               | `todo`    |
//!
//! A file that failed although none of its tests did (it could not be
//! imported, did not parse, a suite hook threw) is one more entry with the
//! outcome `error`, named by the file alone — as pytest reports a module
//! that fails to collect. Failure locations are read from the failure
//! text's stack (`at fn (/abs/file.js:12:5)`): the first frame outside
//! `node_modules` and node's own modules. Paths are as the runner reports
//! them (absolute).

use serde_json::{json, Value};

/// Failure text kept per test (the tail: the assertion comes first, the
/// stack after it, so the head is what is kept).
pub const DETAILS_BYTES: usize = 4 << 10;
/// Tests that get their failure text; later ones keep message and location.
pub const DETAILED_TESTS: usize = 100;
/// Tests listed; the counts cover every test.
pub const LISTED_TESTS: usize = 5000;

/// What happened to one test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// It passed.
    Passed,
    /// An assertion failed or the test threw.
    Failed,
    /// Skipped (`.skip`, a filter, a failed `beforeAll` in vitest).
    Skipped,
    /// Declared with `.todo`.
    Todo,
    /// The file failed outside its tests.
    Error,
}

impl Outcome {
    /// Every outcome, in the order counts are listed.
    pub const ALL: [Outcome; 5] = [Outcome::Passed, Outcome::Failed, Outcome::Skipped, Outcome::Todo, Outcome::Error];

    /// The name in results.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Passed => "passed",
            Outcome::Failed => "failed",
            Outcome::Skipped => "skipped",
            Outcome::Todo => "todo",
            Outcome::Error => "error",
        }
    }

    /// The outcome of a runner's status word; `None` for one this module
    /// does not know (reported as an error of the report, not guessed).
    pub fn of(status: &str) -> Option<Outcome> {
        Some(match status {
            "passed" => Outcome::Passed,
            "failed" => Outcome::Failed,
            "pending" | "skipped" | "disabled" => Outcome::Skipped,
            "todo" => Outcome::Todo,
            _ => return None,
        })
    }
}

/// Where the report starts in a runner's stdout: the last object opening
/// with one of the counters both runners write first (`numTotalTestSuites`
/// for vitest, `numFailedTestSuites` for jest). Anything a test printed
/// straight to stdout before it is skipped.
pub fn locate(stdout: &[u8]) -> Option<usize> {
    let text = stdout;
    let mut found = None;
    let mut i = 0;
    while let Some(at) = find(&text[i..], b"{\"num") {
        found = Some(i + at);
        i += at + 1;
    }
    found
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The report in `stdout`, parsed (trailing output after it is ignored).
pub fn report(stdout: &[u8]) -> Result<Value, String> {
    let start = locate(stdout).ok_or("the runner wrote no JSON report on stdout")?;
    let mut stream = serde_json::Deserializer::from_slice(&stdout[start..]).into_iter::<Value>();
    match stream.next() {
        Some(Ok(v)) if v.is_object() => Ok(v),
        Some(Ok(_)) => Err("the runner's JSON report is not an object".into()),
        Some(Err(e)) => Err(format!("the runner's JSON report is not valid JSON: {e}")),
        None => Err("the runner wrote no JSON report on stdout".into()),
    }
}

/// A frame of a JavaScript stack: file, line, column.
fn frame(line: &str) -> Option<(String, u64, u64)> {
    let at = line.trim_start().strip_prefix("at ")?;
    // `at fn (/file:1:2)` or `at /file:1:2`; `file://` URLs for ESM.
    let loc = match (at.rfind('('), at.ends_with(')')) {
        (Some(open), true) => &at[open + 1..at.len() - 1],
        _ => at,
    };
    let loc = loc.strip_prefix("file://").unwrap_or(loc);
    let (rest, column) = loc.rsplit_once(':')?;
    let (file, line) = rest.rsplit_once(':')?;
    let (line, column) = (line.parse().ok()?, column.parse().ok()?);
    if file.is_empty() || file.starts_with("node:") || file.contains("/node_modules/") || file.starts_with('<') {
        return None;
    }
    Some((file.to_string(), line, column))
}

/// Where a failure happened: the first stack frame in the project's own
/// code.
pub fn failure_location(text: &str) -> Option<Value> {
    text.lines().find_map(frame).map(|(file, line, column)| json!({ "file": file, "line": line, "column": column }))
}

/// The head of a failure text, cut on a character boundary.
fn head(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// One entry of the result's `tests`.
fn test_entry(file: &str, t: &Value, detailed: bool) -> Result<(Outcome, Value), String> {
    let status = t["status"].as_str().unwrap_or_default();
    let outcome =
        Outcome::of(status).ok_or_else(|| format!("the report gives test {:?} the status {status:?}, which verbgate does not know", t["fullName"]))?;
    let name: Vec<Value> = t["ancestorTitles"].as_array().cloned().unwrap_or_default().into_iter().chain([t["title"].clone()]).collect();
    let mut e = json!({
        "file": file,
        "name": name,
        "outcome": outcome.as_str(),
        "duration_ms": t["duration"].as_f64(),
        "line": t["location"]["line"],
        "column": t["location"]["column"],
    });
    let failures: Vec<&str> = t["failureMessages"].as_array().map(|m| m.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
    if let Some(first) = failures.first() {
        e["message"] = json!(first.lines().next().unwrap_or_default());
        e["failure_location"] = failure_location(first).unwrap_or(Value::Null);
        if detailed {
            e["details"] = json!(head(&failures.join("\n\n"), DETAILS_BYTES));
        }
    }
    Ok((outcome, e))
}

/// The report → `{counts, tests, tests_truncated}`.
pub fn summarize(report: &Value) -> Result<Value, String> {
    let mut counts = [0u64; 5];
    let mut tests = Vec::new();
    let mut detailed = 0;
    let files = report["testResults"].as_array().ok_or("the report has no testResults list")?;
    for f in files {
        let file = f["name"].as_str().unwrap_or_default();
        let mut any_failed = false;
        for t in f["assertionResults"].as_array().map(Vec::as_slice).unwrap_or_default() {
            let wants_details = t["failureMessages"].as_array().is_some_and(|m| !m.is_empty()) && detailed < DETAILED_TESTS;
            let (outcome, entry) = test_entry(file, t, wants_details)?;
            detailed += usize::from(wants_details);
            any_failed |= outcome == Outcome::Failed;
            counts[outcome as usize] += 1;
            if tests.len() < LISTED_TESTS {
                tests.push(entry);
            }
        }
        if f["status"] == "failed" && !any_failed {
            // The file itself failed: jest says why in `message`; vitest
            // too, except for a failing suite hook, which it leaves empty.
            let message = f["message"].as_str().filter(|m| !m.trim().is_empty());
            counts[Outcome::Error as usize] += 1;
            if tests.len() < LISTED_TESTS {
                tests.push(json!({
                    "file": file,
                    "name": [],
                    "outcome": "error",
                    "duration_ms": null,
                    "line": null,
                    "column": null,
                    "message": message.map_or("the file failed outside its tests (the runner's report gives no reason)".to_string(), |m| {
                        m.trim().lines().find(|l| !l.trim().is_empty() && !l.trim_start().starts_with('●')).unwrap_or(m).trim().to_string()
                    }),
                    "failure_location": message.and_then(failure_location),
                    "details": message.map(|m| head(m, DETAILS_BYTES)),
                }));
            }
        }
    }
    let total: u64 = counts.iter().sum();
    let mut c = serde_json::Map::new();
    for o in Outcome::ALL {
        c.insert(o.as_str().into(), json!(counts[o as usize]));
    }
    c.insert("total".into(), json!(total));
    Ok(json!({ "counts": c, "tests": tests, "tests_truncated": total as usize > tests.len() }))
}

/// What a run came to, from the exit status and the counts.
pub fn status(exit_code: Option<i32>, counts: &Value) -> &'static str {
    let n = |k: &str| counts[k].as_u64().unwrap_or(0);
    match exit_code {
        None => "killed",
        _ if n("error") > 0 => "error",
        _ if n("failed") > 0 => "failed",
        Some(0) if n("total") == 0 => "no_tests",
        Some(0) => "passed",
        // A run that failed with every test passing: an unhandled error,
        // a coverage threshold, a leaked handle.
        Some(_) => "failed",
    }
}

/// The result schema both runners' verbs share.
pub fn result_schema() -> Value {
    let count = json!({ "type": "integer" });
    let loc = json!({ "type": ["integer", "null"] });
    json!({
        "type": "object",
        "required": ["success", "exit_code", "status", "counts", "tests", "tests_truncated"],
        "properties": {
            "success": { "type": "boolean" },
            "exit_code": { "type": ["integer", "null"] },
            "status": { "enum": ["passed", "failed", "error", "no_tests", "killed"] },
            "counts": {
                "type": "object",
                "required": ["passed", "failed", "skipped", "todo", "error", "total"],
                "properties": { "passed": count, "failed": count, "skipped": count, "todo": count, "error": count, "total": count }
            },
            "tests": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["file", "name", "outcome", "duration_ms", "line", "column"],
                    "properties": {
                        "file": { "type": "string", "description": "the test file, as the runner reports it (absolute)" },
                        "name": { "type": "array", "items": { "type": "string" }, "description": "describe blocks, then the test's title; empty for a file that failed outside its tests" },
                        "outcome": { "enum": ["passed", "failed", "skipped", "todo", "error"] },
                        "duration_ms": { "type": ["number", "null"] },
                        "line": loc,
                        "column": loc,
                        "message": { "type": "string", "description": "the failure's first line" },
                        "failure_location": {
                            "type": ["object", "null"],
                            "description": "the first stack frame outside node_modules",
                            "properties": { "file": { "type": "string" }, "line": { "type": "integer" }, "column": { "type": "integer" } }
                        },
                        "details": { "type": ["string", "null"], "description": "the failure text (its head; the first 100 failures only)" }
                    }
                }
            },
            "tests_truncated": { "type": "boolean", "description": "more than 5000 tests: the counts cover all of them" }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vitest_report() -> Value {
        json!({
            "numTotalTestSuites": 2, "numTotalTests": 3, "success": false,
            "testResults": [
                { "name": "/r/test/broken.test.js", "status": "failed", "message": "Cannot find module './x.js'", "assertionResults": [] },
                { "name": "/r/test/hook.test.js", "status": "failed", "message": "", "assertionResults": [
                    { "ancestorTitles": ["setup"], "title": "needs setup", "status": "skipped", "failureMessages": [], "location": { "line": 3, "column": 3 } }
                ]},
                { "name": "/r/test/math.test.js", "status": "failed", "message": "", "assertionResults": [
                    { "ancestorTitles": ["math"], "title": "adds", "status": "passed", "duration": 1.5, "failureMessages": [], "location": { "line": 5, "column": 3 } },
                    { "ancestorTitles": ["math"], "title": "fails", "status": "failed", "duration": 2.0, "location": { "line": 8, "column": 3 },
                      "failureMessages": ["AssertionError: expected 3 to be 2\n    at helper (/r/test/math.test.js:2:13)\n    at file:///r/node_modules/@vitest/runner/dist/x.js:1:1"] },
                    { "ancestorTitles": ["math"], "title": "later", "status": "todo", "failureMessages": [] }
                ]}
            ]
        })
    }

    #[test]
    fn every_outcome_and_a_file_that_failed_outside_its_tests() {
        let s = summarize(&vitest_report()).unwrap();
        assert_eq!(s["counts"], json!({ "passed": 1, "failed": 1, "skipped": 1, "todo": 1, "error": 2, "total": 6 }));
        let tests = s["tests"].as_array().unwrap();
        assert_eq!(tests[0]["outcome"], "error");
        assert_eq!(tests[0]["message"], "Cannot find module './x.js'");
        assert_eq!(tests[1]["outcome"], "skipped");
        assert_eq!(tests[2]["outcome"], "error", "a suite hook failed in hook.test.js: {}", tests[2]);
        let fails = &tests[4];
        assert_eq!(fails["name"], json!(["math", "fails"]));
        assert_eq!(fails["message"], "AssertionError: expected 3 to be 2");
        assert_eq!(fails["failure_location"], json!({ "file": "/r/test/math.test.js", "line": 2, "column": 13 }));
        assert_eq!((fails["line"].as_u64(), fails["duration_ms"].as_f64()), (Some(8), Some(2.0)));
        assert_eq!(status(Some(1), &s["counts"]), "error");
    }

    #[test]
    fn the_report_is_found_after_stray_output_and_unknown_statuses_are_refused() {
        let text = format!("some stray text {{\"x\":1}}\n{}\ntrailing", vitest_report());
        assert_eq!(report(text.as_bytes()).unwrap()["numTotalTests"], 3);
        assert!(report(b"no json here").is_err());
        let bad = json!({ "testResults": [{ "name": "f", "status": "passed", "assertionResults": [{ "title": "t", "status": "flaky" }] }] });
        assert!(summarize(&bad).unwrap_err().contains("flaky"));
    }

    #[test]
    fn statuses_follow_the_exit_and_the_counts() {
        let counts = |p: u64, f: u64| json!({ "passed": p, "failed": f, "error": 0, "total": p + f });
        assert_eq!(status(Some(0), &counts(2, 0)), "passed");
        assert_eq!(status(Some(0), &counts(0, 0)), "no_tests");
        assert_eq!(status(Some(1), &counts(1, 1)), "failed");
        assert_eq!(status(None, &counts(1, 0)), "killed");
    }

    #[test]
    fn frames_skip_node_modules_and_node_internals() {
        assert_eq!(frame("    at Object.<anonymous> (/r/a.test.js:15:11)"), Some(("/r/a.test.js".into(), 15, 11)));
        assert_eq!(frame("    at file:///r/b.test.mjs:3:9"), Some(("/r/b.test.mjs".into(), 3, 9)));
        assert_eq!(frame("    at run (/r/node_modules/jest-circus/x.js:1:2)"), None);
        assert_eq!(frame("    at node:internal/process:1:2"), None);
        assert_eq!(frame("    at new Promise (<anonymous>)"), None);
    }
}

/// A finished (or running) job of `runner` (`vitest`, `jest`) → the verb's
/// result: the summary of its JSON report with the run's status, success
/// and exit code. Without a report the runner stopped before running
/// anything (a config it cannot load, a filter it refuses), and its reason
/// is on stderr: `exit_nonzero` saying so.
pub fn map_outcome(runner: &str, outcome: &verbgate_plugin_sdk::Outcome) -> Result<Value, verbgate_plugin_sdk::OpError> {
    use verbgate_plugin_sdk::{errors, OutcomeExt};
    if outcome.is_running() {
        // Neither runner has a run id of its own: job.kill stops the group.
        return Ok(json!({}));
    }
    let report = report(&outcome.stdout).map_err(|why| {
        let mut e = errors::exit_nonzero(outcome);
        e.message = format!("{runner} wrote no JSON report ({why}); {}", e.message);
        e
    })?;
    let mut out = summarize(&report).map_err(|e| errors::invalid_output(&format!("{runner}'s JSON report: {e}")))?;
    out["status"] = json!(status(outcome.exit_code, &out["counts"]));
    out["success"] = json!(outcome.exit_code == Some(0));
    out["exit_code"] = json!(outcome.exit_code);
    Ok(out)
}
