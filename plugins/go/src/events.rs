//! Reading the go command's JSON: `go test -json` (test2json events, one
//! object a line), the build events `-json` adds to `go test` and `go
//! build` (Go 1.24+: `{"ImportPath", "Action": "build-output"|"build-fail",
//! "Output"}`), and `go vet -json` (one object per package, keyed by
//! package then analyzer). Nothing else the go command prints is read.
//!
//! The one piece of text looked into is a compiler or test message the
//! JSON carries as `Output`: the Go toolchain's fixed `file:line:col:
//! message` (compiler, in a `build-output` event) and `file:line: message`
//! (a `t.Error`, in an output event the JSON marks `"OutputType":
//! "error"`) shapes, to give a place with the message. A line in neither
//! shape is kept as text, with no place.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Serialize;
use verbgate_plugin_sdk::{serde_json, Value};

/// Output kept per failed test (its tail), for the first [`DETAILED`] failures.
pub const OUTPUT_BYTES: usize = 4 << 10;
/// Failed tests that keep their output.
pub const DETAILED: usize = 100;
/// Tests listed; the counts cover all of them.
pub const LISTED: usize = 5000;
/// Build errors and vet diagnostics listed.
pub const LISTED_DIAGNOSTICS: usize = 2000;

/// `file:line[:col]: message` → its parts; `None` for any other text.
pub fn place(text: &str) -> Option<(String, u64, Option<u64>, String)> {
    let text = text.trim();
    let (loc, message) = text.split_once(": ")?;
    let mut parts = loc.rsplitn(3, ':');
    let last: u64 = parts.next()?.parse().ok()?;
    let (file, line, column) = match parts.next()?.parse::<u64>() {
        Ok(line) => (parts.next()?.to_string(), line, Some(last)),
        Err(_) => (loc.rsplit_once(':')?.0.to_string(), last, None),
    };
    if file.is_empty() || !file.ends_with(".go") {
        return None;
    }
    Some((file, line, column, message.to_string()))
}

/// A vet position, `file:line:col` (any file: vet checks assembly too).
pub fn position(posn: &str) -> Option<(&str, u64, u64)> {
    let (rest, col) = posn.rsplit_once(':')?;
    let (file, line) = rest.rsplit_once(':')?;
    Some((file, line.parse().ok()?, col.parse().ok()?)).filter(|(f, _, _)| !f.is_empty())
}

// A compiler error or vet diagnostic, with its place when it has one (a
// plain comment, as on every result type: a type's doc comment would
// become its schema's description).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Place {
    pub package: String,
    /// as the go command prints it (relative to dir, or absolute)
    pub file: Option<String>,
    pub line: Option<u64>,
    pub column: Option<u64>,
    pub message: String,
}

// A vet diagnostic: its place and the analyzer that found it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct VetDiagnostic {
    #[serde(flatten)]
    pub place: Place,
    pub analyzer: String,
}

// An analyzer that could not check a package.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct AnalyzerError {
    pub package: String,
    pub analyzer: String,
    pub message: String,
}

// Where a test failed: its first `t.Error`/`t.Fatal` message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Failure {
    pub file: Option<String>,
    pub line: Option<u64>,
    pub message: String,
}

// How a test ended (`running`: it started and never ended: its binary
// died, or was killed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TestOutcome {
    Passed,
    Failed,
    Skipped,
    Running,
}

// How a package ended (`error`: its test binary did not build).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PackageOutcome {
    Passed,
    Failed,
    Skipped,
    Error,
}

/// The compiler errors of build events, and the packages that failed to build.
#[derive(Debug, Default)]
pub struct Build {
    /// Compiler errors (file as the go command printed it).
    pub errors: Vec<Place>,
    /// Import paths (as the events name them) whose build failed.
    pub failed: Vec<String>,
    /// How many errors there were.
    pub total: usize,
}

impl Build {
    /// Take one event; whether it was a build event.
    pub fn take(&mut self, e: &Value) -> bool {
        let Some(pkg) = e["ImportPath"].as_str() else { return false };
        match e["Action"].as_str() {
            Some("build-output") => {
                for line in e["Output"].as_str().unwrap_or_default().lines() {
                    // `# pkg` headers name the package the lines below are for.
                    if line.starts_with('#') || line.trim().is_empty() {
                        continue;
                    }
                    self.total += 1;
                    if self.errors.len() >= LISTED_DIAGNOSTICS {
                        continue;
                    }
                    self.errors.push(match place(line) {
                        Some((file, l, c, message)) => Place {
                            package: pkg.to_string(),
                            file: Some(file),
                            line: Some(l),
                            column: c,
                            message,
                        },
                        None => Place {
                            package: pkg.to_string(),
                            file: None,
                            line: None,
                            column: None,
                            message: line.trim().to_string(),
                        },
                    });
                }
            }
            Some("build-fail") => self.failed.push(pkg.to_string()),
            _ => {}
        }
        true
    }
}

/// A test's running state.
#[derive(Debug, Default)]
struct Test {
    outcome: Option<TestOutcome>,
    elapsed: Option<f64>,
    output: String,
    failure: Option<Failure>,
}

/// A package's ending: its outcome, seconds, and the build that failed.
#[derive(Debug, Default)]
struct Package {
    outcome: Option<PackageOutcome>,
    elapsed: Option<f64>,
    failed_build: Option<String>,
}

/// Everything a `go test -json` run said.
#[derive(Debug, Default)]
pub struct TestRun {
    tests: BTreeMap<(String, String), Test>,
    order: Vec<(String, String)>,
    packages: BTreeMap<String, Package>,
    package_order: Vec<String>,
    /// Build errors (of the test binaries).
    pub build: Build,
    /// Lines of stdout that were not JSON.
    pub other_lines: usize,
}

/// Parse `go test -json` output.
pub fn test_run(stdout: &[u8]) -> TestRun {
    let mut r = TestRun::default();
    for line in String::from_utf8_lossy(stdout).lines() {
        let Ok(e) = serde_json::from_str::<Value>(line) else {
            r.other_lines += usize::from(!line.trim().is_empty());
            continue;
        };
        if r.build.take(&e) {
            continue;
        }
        let Some(pkg) = e["Package"].as_str() else { continue };
        let action = e["Action"].as_str().unwrap_or_default();
        let outcome = match action {
            "pass" => Some((TestOutcome::Passed, PackageOutcome::Passed)),
            "fail" => Some((TestOutcome::Failed, PackageOutcome::Failed)),
            "skip" => Some((TestOutcome::Skipped, PackageOutcome::Skipped)),
            _ => None,
        };
        match e["Test"].as_str() {
            Some(test) => {
                let key = (pkg.to_string(), test.to_string());
                if !r.tests.contains_key(&key) {
                    r.order.push(key.clone());
                }
                let t = r.tests.entry(key).or_default();
                if action == "output" {
                    let out = e["Output"].as_str().unwrap_or_default();
                    if e["OutputType"] == "error" && t.failure.is_none() {
                        t.failure = Some(match place(out) {
                            Some((file, line, _, message)) => {
                                Failure { file: Some(file), line: Some(line), message }
                            }
                            None => {
                                Failure { file: None, line: None, message: out.trim().to_string() }
                            }
                        });
                    }
                    // Frames (`=== RUN`, `--- FAIL`) are the runner's own.
                    if e["OutputType"] != "frame" {
                        t.output.push_str(out);
                        if t.output.len() > 2 * OUTPUT_BYTES {
                            t.output.drain(..t.output.len() - OUTPUT_BYTES);
                        }
                    }
                }
                if let Some((o, _)) = outcome {
                    (t.outcome, t.elapsed) = (Some(o), e["Elapsed"].as_f64());
                }
            }
            None => {
                if !r.packages.contains_key(pkg) {
                    r.package_order.push(pkg.to_string());
                }
                let p = r.packages.entry(pkg.to_string()).or_default();
                if let Some((_, o)) = outcome {
                    let build_failed = e["FailedBuild"].as_str().map(str::to_string);
                    // A package whose test binary did not build is an
                    // error, not a failed test.
                    *p = Package {
                        outcome: Some(if build_failed.is_some() {
                            PackageOutcome::Error
                        } else {
                            o
                        }),
                        elapsed: e["Elapsed"].as_f64(),
                        failed_build: build_failed,
                    };
                }
            }
        }
    }
    r
}

/// The tail of `text`, at most `max` bytes, on a character boundary.
fn tail(text: &str, max: usize) -> &str {
    let mut start = text.len().saturating_sub(max);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

impl TestRun {
    /// The verb's result, for a run that exited with `exit_code`.
    pub fn to_result(&self, exit_code: Option<i32>) -> TestResult {
        let mut counts = TestCounts::default();
        let mut tests = Vec::new();
        let mut detailed = 0;
        for key in &self.order {
            let t = &self.tests[key];
            // A test that started but never ended: its binary died (a
            // panic in another goroutine, a timeout) or was killed.
            let outcome = t.outcome.unwrap_or(TestOutcome::Running);
            *match outcome {
                TestOutcome::Passed => &mut counts.passed,
                TestOutcome::Failed => &mut counts.failed,
                TestOutcome::Skipped => &mut counts.skipped,
                TestOutcome::Running => &mut counts.running,
            } += 1;
            counts.total += 1;
            if tests.len() >= LISTED {
                continue;
            }
            let mut entry = TestEntry {
                package: key.0.clone(),
                test: key.1.clone(),
                outcome,
                duration: t.elapsed,
                failure: None,
                output: None,
            };
            match outcome {
                TestOutcome::Failed | TestOutcome::Running => {
                    entry.failure = Some(t.failure.clone());
                    if detailed < DETAILED {
                        detailed += 1;
                        entry.output = Some(tail(&t.output, OUTPUT_BYTES).to_string());
                    }
                }
                // The skip reason is the test's own output (`t.Skip("…")`).
                TestOutcome::Skipped => entry.output = Some(tail(t.output.trim(), 512).to_string()),
                TestOutcome::Passed => {}
            }
            tests.push(entry);
        }
        let mut package_counts = PackageCounts::default();
        let packages = self
            .package_order
            .iter()
            .map(|p| {
                let pkg = &self.packages[p];
                let outcome = pkg.outcome.unwrap_or(PackageOutcome::Failed);
                *match outcome {
                    PackageOutcome::Passed => &mut package_counts.passed,
                    PackageOutcome::Failed => &mut package_counts.failed,
                    PackageOutcome::Skipped => &mut package_counts.skipped,
                    PackageOutcome::Error => &mut package_counts.error,
                } += 1;
                PackageEntry {
                    package: p.clone(),
                    outcome,
                    duration: pkg.elapsed,
                    failed_build: pkg.failed_build.clone(),
                }
            })
            .collect();
        TestResult {
            success: exit_code == Some(0),
            exit_code,
            tests_truncated: counts.total as usize > tests.len(),
            counts,
            package_counts,
            packages,
            tests,
            build_errors: self.build.errors.clone(),
        }
    }
}

// `go.test`'s result.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TestResult {
    pub success: bool,
    pub exit_code: Option<i32>,
    pub counts: TestCounts,
    pub package_counts: PackageCounts,
    pub packages: Vec<PackageEntry>,
    pub tests: Vec<TestEntry>,
    pub tests_truncated: bool,
    pub build_errors: Vec<Place>,
}

// Tests by outcome.
#[derive(Debug, Default, PartialEq, Eq, Serialize, JsonSchema)]
pub struct TestCounts {
    pub passed: u64,
    pub failed: u64,
    pub skipped: u64,
    pub running: u64,
    pub total: u64,
}

// Packages by outcome.
#[derive(Debug, Default, PartialEq, Eq, Serialize, JsonSchema)]
pub struct PackageCounts {
    pub passed: u64,
    pub failed: u64,
    pub skipped: u64,
    pub error: u64,
}

// One package's ending.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PackageEntry {
    pub package: String,
    pub outcome: PackageOutcome,
    /// seconds
    pub duration: Option<f64>,
    /// the package whose build failed (outcome error)
    pub failed_build: Option<String>,
}

// One test.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TestEntry {
    pub package: String,
    /// TestName, or TestName/subtest
    pub test: String,
    pub outcome: TestOutcome,
    /// seconds
    pub duration: Option<f64>,
    // Failed and running tests only (null when nothing was reported).
    /// the first t.Error/t.Fatal message and its place
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<Option<Failure>>,
    /// the test's own output (its tail): failures, and a skip's reason
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub output: Option<String>,
}

/// `go vet -json` output (pretty-printed objects, one per package):
/// `{pkg: {analyzer: [{posn, end?, message}] | {error}}}` → diagnostics
/// `{package, analyzer, file, line, column, message}` and analyzer errors.
pub fn vet(stdout: &[u8]) -> Result<(Vec<VetDiagnostic>, Vec<AnalyzerError>, usize), String> {
    let mut diagnostics = Vec::new();
    let mut failures = Vec::new();
    let mut total = 0;
    for object in serde_json::Deserializer::from_slice(stdout).into_iter::<Value>() {
        let object = object.map_err(|e| format!("go vet's JSON output does not parse: {e}"))?;
        for (pkg, analyzers) in object.as_object().into_iter().flatten() {
            for (analyzer, found) in analyzers.as_object().into_iter().flatten() {
                if let Some(err) = found.get("error") {
                    let message = err.as_str().map_or_else(|| err.to_string(), str::to_string);
                    failures.push(AnalyzerError {
                        package: pkg.clone(),
                        analyzer: analyzer.clone(),
                        message,
                    });
                    continue;
                }
                for d in found.as_array().into_iter().flatten() {
                    total += 1;
                    if diagnostics.len() >= LISTED_DIAGNOSTICS {
                        continue;
                    }
                    let at = position(d["posn"].as_str().unwrap_or_default());
                    diagnostics.push(VetDiagnostic {
                        place: Place {
                            package: pkg.clone(),
                            file: at.map(|a| a.0.to_string()),
                            line: at.map(|a| a.1),
                            column: at.map(|a| a.2),
                            message: d["message"].as_str().unwrap_or_default().to_string(),
                        },
                        analyzer: analyzer.clone(),
                    });
                }
            }
        }
    }
    Ok((diagnostics, failures, total))
}

#[cfg(test)]
mod tests {
    use super::*;
    use verbgate_plugin_sdk::json;

    #[test]
    fn places_in_compiler_and_test_messages() {
        assert_eq!(
            place("pkg/b.go:3:23: cannot use \"x\""),
            Some(("pkg/b.go".into(), 3, Some(23), "cannot use \"x\"".into()))
        );
        assert_eq!(
            place("    calc_test.go:17: Add(1, 2) = 3, want 4\n"),
            Some(("calc_test.go".into(), 17, None, "Add(1, 2) = 3, want 4".into()))
        );
        assert_eq!(
            place("/abs/c d.go:8:28: fmt.Sprintf format"),
            Some(("/abs/c d.go".into(), 8, Some(28), "fmt.Sprintf format".into()))
        );
        assert_eq!(place("panic: runtime error: x"), None);
        assert_eq!(place("note: module requires Go 1.30"), None);
    }

    #[test]
    fn test_events_give_per_test_and_per_package_outcomes() {
        let out = [
            r#"{"Action":"start","Package":"m/calc"}"#,
            r#"{"Action":"run","Package":"m/calc","Test":"TestAdd"}"#,
            r#"{"Action":"pass","Package":"m/calc","Test":"TestAdd","Elapsed":0.01}"#,
            r#"{"Action":"run","Package":"m/calc","Test":"TestFails"}"#,
            r#"{"Action":"output","Package":"m/calc","Test":"TestFails","Output":"=== RUN   TestFails\n","OutputType":"frame"}"#,
            r#"{"Action":"output","Package":"m/calc","Test":"TestFails","Output":"    calc_test.go:17: Add(1, 2) = 3, want 4\n","OutputType":"error"}"#,
            r#"{"Action":"fail","Package":"m/calc","Test":"TestFails","Elapsed":0}"#,
            r#"{"Action":"run","Package":"m/calc","Test":"TestSkipped"}"#,
            r#"{"Action":"output","Package":"m/calc","Test":"TestSkipped","Output":"    calc_test.go:22: not on this machine\n"}"#,
            r#"{"Action":"skip","Package":"m/calc","Test":"TestSkipped","Elapsed":0}"#,
            r#"{"Action":"fail","Package":"m/calc","Elapsed":0.2}"#,
            r##"{"ImportPath":"m/broken [m/broken.test]","Action":"build-output","Output":"# m/broken\nbroken/b_test.go:5:2: undefined: nope\n"}"##,
            r#"{"ImportPath":"m/broken [m/broken.test]","Action":"build-fail"}"#,
            r#"{"Action":"fail","Package":"m/broken","Elapsed":0,"FailedBuild":"m/broken [m/broken.test]"}"#,
            "FAIL",
        ]
        .join("\n");
        let r = serde_json::to_value(test_run(out.as_bytes()).to_result(Some(1))).unwrap();
        assert_eq!(
            r["counts"],
            json!({ "passed": 1, "failed": 1, "skipped": 1, "running": 0, "total": 3 })
        );
        assert_eq!(
            r["package_counts"],
            json!({ "passed": 0, "failed": 1, "skipped": 0, "error": 1 })
        );
        assert_eq!(
            r["tests"][1]["failure"],
            json!({ "file": "calc_test.go", "line": 17, "message": "Add(1, 2) = 3, want 4" })
        );
        assert!(!r["tests"][1]["output"].as_str().unwrap().contains("=== RUN"), "{r}");
        assert!(r["tests"][2]["output"].as_str().unwrap().contains("not on this machine"), "{r}");
        assert_eq!(r["packages"][1]["outcome"], "error");
        assert_eq!(
            r["build_errors"],
            json!([{ "package": "m/broken [m/broken.test]", "file": "broken/b_test.go", "line": 5, "column": 2, "message": "undefined: nope" }])
        );
    }

    #[test]
    fn vet_objects_give_diagnostics_with_places() {
        let out = br#"{
	"m/calc": {
		"printf": [
			{ "posn": "/r/calc/calc.go:8:28", "end": "/r/calc/calc.go:8:30", "message": "fmt.Sprintf format %s reads arg #2, but call has 1 arg" }
		]
	}
}
{
	"m/other": { "copylocks": { "error": "analysis failed" } }
}
"#;
        let (d, failures, total) = vet(out).unwrap();
        assert_eq!(total, 1);
        assert_eq!(
            serde_json::to_value(&d[0]).unwrap(),
            json!({ "package": "m/calc", "analyzer": "printf", "file": "/r/calc/calc.go", "line": 8, "column": 28, "message": "fmt.Sprintf format %s reads arg #2, but call has 1 arg" })
        );
        assert_eq!(
            (failures[0].analyzer.as_str(), failures[0].message.as_str()),
            ("copylocks", "analysis failed")
        );
        assert_eq!(
            position("/r/asm/asm1.s:9:1"),
            Some(("/r/asm/asm1.s", 9, 1)),
            "vet checks assembly files too"
        );
        assert_eq!(position("nowhere"), None);
    }
}
