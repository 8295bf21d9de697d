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
//! them (absolute). The result's types are here: serde writes them,
//! schemars derives the verbs' result schema from them.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

/// Failure text kept per test (the tail: the assertion comes first, the
/// stack after it, so the head is what is kept).
pub const DETAILS_BYTES: usize = 4 << 10;
/// Tests that get their failure text; later ones keep message and location.
pub const DETAILED_TESTS: usize = 100;
/// Tests listed; the counts cover every test.
pub const LISTED_TESTS: usize = 5000;

// What happened to one test (plain comments, as on every result type:
// documented variants would become a `oneOf`, and a type's doc comment
// its schema's description).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    // It passed.
    Passed,
    // An assertion failed or the test threw.
    Failed,
    // Skipped (`.skip`, a filter, a failed `beforeAll` in vitest).
    Skipped,
    // Declared with `.todo`.
    Todo,
    // The file failed outside its tests.
    Error,
}

impl Outcome {
    /// Every outcome, in the order counts are listed.
    pub const ALL: [Outcome; 5] =
        [Outcome::Passed, Outcome::Failed, Outcome::Skipped, Outcome::Todo, Outcome::Error];

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
    if file.is_empty()
        || file.starts_with("node:")
        || file.contains("/node_modules/")
        || file.starts_with('<')
    {
        return None;
    }
    Some((file.to_string(), line, column))
}

/// Where a failure happened: the first stack frame in the project's own
/// code.
pub fn failure_location(text: &str) -> Option<Location> {
    text.lines().find_map(frame).map(|(file, line, column)| Location { file, line, column })
}

// A place in a file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Location {
    pub file: String,
    pub line: u64,
    pub column: u64,
}

// The result `vitest.run` and `jest.run` share.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RunResult {
    pub success: bool,
    pub exit_code: Option<i32>,
    pub status: Status,
    pub counts: Counts,
    pub tests: Vec<TestEntry>,
    /// more than 5000 tests: the counts cover all of them
    pub tests_truncated: bool,
}

// What a run came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Passed,
    Failed,
    Error,
    NoTests,
    Killed,
}

// How many tests had each outcome.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Counts {
    pub passed: u64,
    pub failed: u64,
    pub skipped: u64,
    pub todo: u64,
    pub error: u64,
    pub total: u64,
}

// One test (or a file that failed outside its tests).
#[derive(Debug, Serialize, JsonSchema)]
pub struct TestEntry {
    /// the test file, as the runner reports it (absolute)
    pub file: String,
    /// describe blocks, then the test's title; empty for a file that failed outside its tests
    pub name: Vec<String>,
    pub outcome: Outcome,
    pub duration_ms: Option<f64>,
    pub line: Option<u64>,
    pub column: Option<u64>,
    /// the failure's first line
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub message: Option<String>,
    // Absent for a test that did not fail; null when no frame was found.
    /// the first stack frame outside node_modules
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_location: Option<Option<Location>>,
    // Absent past the first failures; null when the runner gave no text.
    /// the failure text (its head; the first 100 failures only)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Option<String>>,
}

/// [`summarize`]: the counts and the listed tests.
#[derive(Debug, Serialize)]
pub struct Summary {
    /// How many tests had each outcome.
    pub counts: Counts,
    /// The listed tests.
    pub tests: Vec<TestEntry>,
    /// More were run than listed.
    pub tests_truncated: bool,
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
fn test_entry(file: &str, t: &Value, detailed: bool) -> Result<TestEntry, String> {
    let status = t["status"].as_str().unwrap_or_default();
    let outcome = Outcome::of(status).ok_or_else(|| {
        format!(
            "the report gives test {:?} the status {status:?}, which verbgate does not know",
            t["fullName"]
        )
    })?;
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    let name = t["ancestorTitles"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .chain([&t["title"]])
        .map(text)
        .collect();
    let mut e = TestEntry {
        file: file.to_string(),
        name,
        outcome,
        duration_ms: t["duration"].as_f64(),
        line: t["location"]["line"].as_u64(),
        column: t["location"]["column"].as_u64(),
        message: None,
        failure_location: None,
        details: None,
    };
    let failures: Vec<&str> = t["failureMessages"]
        .as_array()
        .map(|m| m.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if let Some(first) = failures.first() {
        e.message = Some(first.lines().next().unwrap_or_default().to_string());
        e.failure_location = Some(failure_location(first));
        if detailed {
            e.details = Some(Some(head(&failures.join("\n\n"), DETAILS_BYTES)));
        }
    }
    Ok(e)
}

/// The report → its counts and tests.
pub fn summarize(report: &Value) -> Result<Summary, String> {
    let mut counts = [0u64; 5];
    let mut tests = Vec::new();
    let mut detailed = 0;
    let files = report["testResults"].as_array().ok_or("the report has no testResults list")?;
    for f in files {
        let file = f["name"].as_str().unwrap_or_default();
        let mut any_failed = false;
        for t in f["assertionResults"].as_array().map(Vec::as_slice).unwrap_or_default() {
            let wants_details = t["failureMessages"].as_array().is_some_and(|m| !m.is_empty())
                && detailed < DETAILED_TESTS;
            let entry = test_entry(file, t, wants_details)?;
            detailed += usize::from(wants_details);
            any_failed |= entry.outcome == Outcome::Failed;
            counts[entry.outcome as usize] += 1;
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
                tests.push(TestEntry {
                    file: file.to_string(),
                    name: Vec::new(),
                    outcome: Outcome::Error,
                    duration_ms: None,
                    line: None,
                    column: None,
                    message: Some(message.map_or("the file failed outside its tests (the runner's report gives no reason)".to_string(), |m| {
                        m.trim().lines().find(|l| !l.trim().is_empty() && !l.trim_start().starts_with('●')).unwrap_or(m).trim().to_string()
                    })),
                    failure_location: Some(message.and_then(failure_location)),
                    details: Some(message.map(|m| head(m, DETAILS_BYTES))),
                });
            }
        }
    }
    let [passed, failed, skipped, todo, error] = counts;
    let total: u64 = counts.iter().sum();
    let tests_truncated = total as usize > tests.len();
    Ok(Summary {
        counts: Counts { passed, failed, skipped, todo, error, total },
        tests,
        tests_truncated,
    })
}

/// What a run came to, from the exit status and the counts.
pub fn status(exit_code: Option<i32>, counts: &Counts) -> Status {
    match exit_code {
        None => Status::Killed,
        _ if counts.error > 0 => Status::Error,
        _ if counts.failed > 0 => Status::Failed,
        Some(0) if counts.total == 0 => Status::NoTests,
        Some(0) => Status::Passed,
        // A run that failed with every test passing: an unhandled error,
        // a coverage threshold, a leaked handle.
        Some(_) => Status::Failed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
        let s = serde_json::to_value(summarize(&vitest_report()).unwrap()).unwrap();
        assert_eq!(
            s["counts"],
            json!({ "passed": 1, "failed": 1, "skipped": 1, "todo": 1, "error": 2, "total": 6 })
        );
        let tests = s["tests"].as_array().unwrap();
        assert_eq!(tests[0]["outcome"], "error");
        assert_eq!(tests[0]["message"], "Cannot find module './x.js'");
        assert_eq!(tests[1]["outcome"], "skipped");
        assert_eq!(
            tests[2]["outcome"], "error",
            "a suite hook failed in hook.test.js: {}",
            tests[2]
        );
        let fails = &tests[4];
        assert_eq!(fails["name"], json!(["math", "fails"]));
        assert_eq!(fails["message"], "AssertionError: expected 3 to be 2");
        assert_eq!(
            fails["failure_location"],
            json!({ "file": "/r/test/math.test.js", "line": 2, "column": 13 })
        );
        assert_eq!((fails["line"].as_u64(), fails["duration_ms"].as_f64()), (Some(8), Some(2.0)));
        assert_eq!(status(Some(1), &summarize(&vitest_report()).unwrap().counts), Status::Error);
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
        let counts = |passed: u64, failed: u64| Counts {
            passed,
            failed,
            total: passed + failed,
            ..Counts::default()
        };
        assert_eq!(status(Some(0), &counts(2, 0)), Status::Passed);
        assert_eq!(status(Some(0), &counts(0, 0)), Status::NoTests);
        assert_eq!(status(Some(1), &counts(1, 1)), Status::Failed);
        assert_eq!(status(None, &counts(1, 0)), Status::Killed);
    }

    #[test]
    fn frames_skip_node_modules_and_node_internals() {
        assert_eq!(
            frame("    at Object.<anonymous> (/r/a.test.js:15:11)"),
            Some(("/r/a.test.js".into(), 15, 11))
        );
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
///
/// (Neither runner has a run id of its own: a running job names no entity,
/// and job.kill stops the group.)
pub fn map_outcome(
    runner: &str,
    outcome: &verbgate_plugin_sdk::Outcome,
) -> Result<RunResult, verbgate_plugin_sdk::OpError> {
    use verbgate_plugin_sdk::errors;
    let report = report(&outcome.stdout).map_err(|why| {
        let mut e = errors::exit_nonzero(outcome);
        e.message = format!("{runner} wrote no JSON report ({why}); {}", e.message);
        e
    })?;
    let s = summarize(&report)
        .map_err(|e| errors::invalid_output(&format!("{runner}'s JSON report: {e}")))?;
    Ok(RunResult {
        success: outcome.exit_code == Some(0),
        exit_code: outcome.exit_code,
        status: status(outcome.exit_code, &s.counts),
        counts: s.counts,
        tests: s.tests,
        tests_truncated: s.tests_truncated,
    })
}
