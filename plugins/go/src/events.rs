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

use verbgate_plugin_sdk::{json, serde_json, Value};

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

/// The compiler errors of build events, and the packages that failed to build.
#[derive(Debug, Default)]
pub struct Build {
    /// `{package, file, line, column, message}` (file as the go command printed it).
    pub errors: Vec<Value>,
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
                        Some((file, l, c, message)) => json!({ "package": pkg, "file": file, "line": l, "column": c, "message": message }),
                        None => json!({ "package": pkg, "file": null, "line": null, "column": null, "message": line.trim() }),
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
    outcome: Option<&'static str>,
    elapsed: Option<f64>,
    output: String,
    failure: Option<Value>,
}

/// A package's ending: its outcome, seconds, and the build that failed.
#[derive(Debug, Default)]
struct Package {
    outcome: Option<&'static str>,
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
            "pass" => Some("passed"),
            "fail" => Some("failed"),
            "skip" => Some("skipped"),
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
                            Some((file, line, _, message)) => json!({ "file": file, "line": line, "message": message }),
                            None => json!({ "file": null, "line": null, "message": out.trim() }),
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
                if outcome.is_some() {
                    (t.outcome, t.elapsed) = (outcome, e["Elapsed"].as_f64());
                }
            }
            None => {
                if !r.packages.contains_key(pkg) {
                    r.package_order.push(pkg.to_string());
                }
                let p = r.packages.entry(pkg.to_string()).or_default();
                if outcome.is_some() {
                    let build_failed = e["FailedBuild"].as_str().map(str::to_string);
                    // A package whose test binary did not build is an
                    // error, not a failed test.
                    *p = Package {
                        outcome: if build_failed.is_some() { Some("error") } else { outcome },
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
    /// `{counts, packages, tests, tests_truncated, build_errors}`.
    pub fn to_json(&self) -> Value {
        let mut counts: BTreeMap<&str, u64> = [("passed", 0), ("failed", 0), ("skipped", 0), ("running", 0)].into_iter().collect();
        let mut tests = Vec::new();
        let mut detailed = 0;
        for key in &self.order {
            let t = &self.tests[key];
            // A test that started but never ended: its binary died (a
            // panic in another goroutine, a timeout) or was killed.
            let outcome = t.outcome.unwrap_or("running");
            *counts.entry(outcome).or_default() += 1;
            if tests.len() >= LISTED {
                continue;
            }
            let mut entry = json!({ "package": key.0, "test": key.1, "outcome": outcome, "duration": t.elapsed });
            if outcome != "passed" && outcome != "skipped" {
                entry["failure"] = t.failure.clone().unwrap_or(Value::Null);
                if detailed < DETAILED {
                    detailed += 1;
                    entry["output"] = json!(tail(&t.output, OUTPUT_BYTES));
                }
            } else if outcome == "skipped" {
                // The skip reason is the test's own output (`t.Skip("…")`).
                entry["output"] = json!(tail(t.output.trim(), 512));
            }
            tests.push(entry);
        }
        let total: u64 = counts.values().sum();
        let mut package_counts: BTreeMap<&str, u64> = [("passed", 0), ("failed", 0), ("skipped", 0), ("error", 0)].into_iter().collect();
        let packages: Vec<Value> = self
            .package_order
            .iter()
            .map(|p| {
                let pkg = &self.packages[p];
                let outcome = pkg.outcome.unwrap_or("failed");
                *package_counts.entry(outcome).or_default() += 1;
                json!({ "package": p, "outcome": outcome, "duration": pkg.elapsed, "failed_build": pkg.failed_build })
            })
            .collect();
        json!({
            "counts": { "passed": counts["passed"], "failed": counts["failed"], "skipped": counts["skipped"], "running": counts["running"], "total": total },
            "package_counts": package_counts,
            "packages": packages,
            "tests": tests,
            "tests_truncated": total as usize > tests.len(),
            "build_errors": self.build.errors,
        })
    }
}

/// `go vet -json` output (pretty-printed objects, one per package):
/// `{pkg: {analyzer: [{posn, end?, message}] | {error}}}` → diagnostics
/// `{package, analyzer, file, line, column, message}` and analyzer errors.
pub fn vet(stdout: &[u8]) -> Result<(Vec<Value>, Vec<Value>, usize), String> {
    let mut diagnostics = Vec::new();
    let mut failures = Vec::new();
    let mut total = 0;
    for object in serde_json::Deserializer::from_slice(stdout).into_iter::<Value>() {
        let object = object.map_err(|e| format!("go vet's JSON output does not parse: {e}"))?;
        for (pkg, analyzers) in object.as_object().into_iter().flatten() {
            for (analyzer, found) in analyzers.as_object().into_iter().flatten() {
                if let Some(err) = found.get("error") {
                    failures.push(json!({ "package": pkg, "analyzer": analyzer, "message": err }));
                    continue;
                }
                for d in found.as_array().into_iter().flatten() {
                    total += 1;
                    if diagnostics.len() >= LISTED_DIAGNOSTICS {
                        continue;
                    }
                    let at = position(d["posn"].as_str().unwrap_or_default());
                    diagnostics.push(json!({
                        "package": pkg,
                        "analyzer": analyzer,
                        "file": at.as_ref().map(|a| a.0),
                        "line": at.as_ref().map(|a| a.1),
                        "column": at.as_ref().map(|a| a.2),
                        "message": d["message"],
                    }));
                }
            }
        }
    }
    Ok((diagnostics, failures, total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_in_compiler_and_test_messages() {
        assert_eq!(place("pkg/b.go:3:23: cannot use \"x\""), Some(("pkg/b.go".into(), 3, Some(23), "cannot use \"x\"".into())));
        assert_eq!(place("    calc_test.go:17: Add(1, 2) = 3, want 4\n"), Some(("calc_test.go".into(), 17, None, "Add(1, 2) = 3, want 4".into())));
        assert_eq!(place("/abs/c d.go:8:28: fmt.Sprintf format"), Some(("/abs/c d.go".into(), 8, Some(28), "fmt.Sprintf format".into())));
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
        let r = test_run(out.as_bytes()).to_json();
        assert_eq!(r["counts"], json!({ "passed": 1, "failed": 1, "skipped": 1, "running": 0, "total": 3 }));
        assert_eq!(r["package_counts"], json!({ "passed": 0, "failed": 1, "skipped": 0, "error": 1 }));
        assert_eq!(r["tests"][1]["failure"], json!({ "file": "calc_test.go", "line": 17, "message": "Add(1, 2) = 3, want 4" }));
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
            d[0],
            json!({ "package": "m/calc", "analyzer": "printf", "file": "/r/calc/calc.go", "line": 8, "column": 28, "message": "fmt.Sprintf format %s reads arg #2, but call has 1 arg" })
        );
        assert_eq!(failures[0]["analyzer"], "copylocks");
        assert_eq!(position("/r/asm/asm1.s:9:1"), Some(("/r/asm/asm1.s", 9, 1)), "vet checks assembly files too");
        assert_eq!(position("nowhere"), None);
    }
}
