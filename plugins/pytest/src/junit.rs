//! pytest's JUnit XML report (`--junitxml`, `junit_family=xunit1`) → per-test
//! outcomes.
//!
//! The report is the only thing read; pytest's terminal output never is.
//! `xunit1` is asked for because it keeps each test's `file` and `line`
//! (xunit2 drops them). One `<testcase>` per report pytest records, so a test
//! that fails and then errors in teardown appears twice — as pytest counts
//! it ("1 failed, 1 error").
//!
//! Outcomes, from the one child element pytest writes:
//!
//! | element                                   | outcome   |
//! |-------------------------------------------|-----------|
//! | none                                      | `passed`  |
//! | `<failure>`                               | `failed`  |
//! | `<failure message="[XPASS(strict)] …">`   | `xpass`   |
//! | `<error>`                                 | `error`   |
//! | `<skipped type="pytest.skip">`            | `skipped` |
//! | `<skipped type="pytest.xfail">`           | `xfail`   |
//! | `<skipped message="xfail-marked test passes unexpectedly">` | `xpass` |
//!
//! A *non-strict* xfail test that passes is written exactly like a pass, so
//! the report cannot tell it apart: it is `passed` here.
//!
//! Failure locations come from the traceback text inside `<failure>` /
//! `<error>`: pytest's location lines (`path.py:12: AssertionError`,
//! `path.py:3: in helper`) and Python's own (`File "path.py", line 12, in
//! f`), whichever `--tb` style the project chose. This module does not
//! depend on the guest SDK: the result's types are here (serde writes them,
//! schemars describes them).

use schemars::JsonSchema;
use serde::Serialize;

/// The declaration pytest writes before the report.
const DECLARATION: &str = "<?xml version=\"1.0\" encoding=\"utf-8\"?>";
const END: &str = "</testsuites>";

/// How much failure text, and captured output, is kept per test (the tail:
/// the crash is at the end), and for how many tests.
pub const DETAILS_BYTES: usize = 8 << 10;
/// Captured stdout/stderr kept per test.
pub const OUTPUT_BYTES: usize = 4 << 10;
/// Tests that get details and captured output; later ones get message and
/// location only, so a suite with thousands of failures stays a bounded
/// result.
pub const DETAILED_TESTS: usize = 100;
/// Tests listed; the counts cover every test.
pub const LISTED_TESTS: usize = 5000;

// A test's outcome (a plain comment: a type's doc comment would become
// its schema's description).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    // Plain comments: documented variants would become a `oneOf`.
    // Passed (or an xfail test that passed, non-strict).
    Passed,
    // An assertion or exception in the test.
    Failed,
    // Skipped.
    Skipped,
    // An error in setup, teardown or collection.
    Error,
    // Expected to fail, and failed.
    Xfail,
    // Expected to fail (strictly), and passed.
    Xpass,
}

impl Outcome {
    /// Every outcome, in the order counts are listed.
    pub const ALL: [Outcome; 6] = [
        Outcome::Passed,
        Outcome::Failed,
        Outcome::Skipped,
        Outcome::Error,
        Outcome::Xfail,
        Outcome::Xpass,
    ];

    /// The name in results.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Passed => "passed",
            Outcome::Failed => "failed",
            Outcome::Skipped => "skipped",
            Outcome::Error => "error",
            Outcome::Xfail => "xfail",
            Outcome::Xpass => "xpass",
        }
    }
}

// A place in a file (plain comments: a result type's doc comment would
// become its schema's description).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Frame {
    // The file, as pytest printed it (relative to the rootdir when inside it).
    pub file: String,
    // 1-based line.
    pub line: u64,
}

/// One `<testcase>`.
#[derive(Debug, Clone, PartialEq)]
pub struct TestCase {
    /// pytest's node id (`tests/test_a.py::TestX::test_y[1]`), rebuilt from
    /// `file`, `classname` and `name`.
    pub node_id: String,
    /// The test's file.
    pub file: Option<String>,
    /// 1-based first line of the test's definition (its first decorator, if any).
    pub line: Option<u64>,
    /// What happened.
    pub outcome: Outcome,
    /// Seconds (setup, call and teardown).
    pub duration: f64,
    /// pytest's one-line message (assertion, exception, skip or xfail reason).
    pub message: Option<String>,
    /// The traceback's frames, outermost first.
    pub traceback: Vec<Frame>,
    /// The failure text (pytest's traceback with source), its tail.
    pub details: Option<String>,
    /// Captured stdout / stderr of a failing test, their tails.
    pub stdout: Option<String>,
    /// See `stdout`.
    pub stderr: Option<String>,
}

/// The whole report.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Report {
    /// Every test case, in report order.
    pub tests: Vec<TestCase>,
    /// Sum of the suites' `time`, seconds.
    pub duration: f64,
}

/// The report inside `stream` (pytest wrote it to the job's stderr): the
/// last declaration followed by a complete `<testsuites>` document.
pub fn find(stream: &[u8]) -> Option<&str> {
    locate(stream).and_then(|r| std::str::from_utf8(&stream[r]).ok())
}

/// Where [`find`]'s report is in `stream`, as a byte range.
pub fn locate(stream: &[u8]) -> Option<std::ops::Range<usize>> {
    let (offset, text) = match std::str::from_utf8(stream) {
        Ok(t) => (0, t),
        Err(_) => {
            // A stray non-UTF-8 byte before the report must not hide it.
            let start = find_bytes_rev(stream, DECLARATION.as_bytes())?;
            (start, std::str::from_utf8(&stream[start..]).ok()?)
        }
    };
    let mut search_end = text.len();
    while let Some(start) = text[..search_end].rfind(DECLARATION) {
        if let Some(len) = text[start..].find(END) {
            return Some(offset + start..offset + start + len + END.len());
        }
        search_end = start;
    }
    None
}

fn find_bytes_rev(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).rposition(|w| w == needle)
}

/// Parse a report.
pub fn parse(xml: &str) -> Result<Report, String> {
    let doc = roxmltree::Document::parse(xml)
        .map_err(|e| format!("pytest's JUnit report is not well-formed XML: {e}"))?;
    let mut report = Report::default();
    for suite in doc.root_element().descendants().filter(|n| n.has_tag_name("testsuite")) {
        report.duration +=
            suite.attribute("time").and_then(|t| t.parse::<f64>().ok()).unwrap_or(0.0);
        for case in suite.children().filter(|n| n.has_tag_name("testcase")) {
            report.tests.push(test_case(case));
        }
    }
    Ok(report)
}

fn test_case(case: roxmltree::Node) -> TestCase {
    let classname = case.attribute("classname").unwrap_or("");
    let name = case.attribute("name").unwrap_or("");
    let file = case.attribute("file").map(str::to_string);
    // xunit1's `line` is 0-based (pytest's `location`).
    let line = case.attribute("line").and_then(|l| l.parse::<u64>().ok()).map(|l| l + 1);
    let child = case.children().find(|n| {
        n.has_tag_name("failure") || n.has_tag_name("error") || n.has_tag_name("skipped")
    });
    let message = child.and_then(|c| c.attribute("message")).map(str::to_string);
    let outcome = match child.map(|c| (c.tag_name().name(), c.attribute("type"))) {
        None => Outcome::Passed,
        Some(("failure", _))
            if message.as_deref().is_some_and(|m| m.starts_with("[XPASS(strict)]")) =>
        {
            Outcome::Xpass
        }
        Some(("failure", _)) => Outcome::Failed,
        Some(("error", _)) => Outcome::Error,
        Some((_, Some("pytest.xfail"))) => Outcome::Xfail,
        Some(_) if message.as_deref() == Some("xfail-marked test passes unexpectedly") => {
            Outcome::Xpass
        }
        Some(_) => Outcome::Skipped,
    };
    let text = child
        .and_then(|c| c.text())
        .filter(|_| matches!(outcome, Outcome::Failed | Outcome::Error));
    let section = |tag: &str| {
        case.children()
            .find(|n| n.has_tag_name(tag))
            .and_then(|n| n.text())
            .map(|t| tail(t, OUTPUT_BYTES))
    };
    TestCase {
        node_id: node_id(classname, name, file.as_deref()),
        file,
        line,
        outcome,
        duration: case.attribute("time").and_then(|t| t.parse().ok()).unwrap_or(0.0),
        message,
        traceback: text.map(frames).unwrap_or_default(),
        details: text.map(|t| tail(t, DETAILS_BYTES)),
        stdout: section("system-out"),
        stderr: section("system-err"),
    }
}

/// pytest's node id from the report's names. pytest writes
/// `classname = "tests.test_a.TestX"`, `name = "test_y[1]"` for
/// `tests/test_a.py::TestX::test_y[1]`, and `classname = ""`,
/// `name = "tests.test_a"` for a module that failed to collect.
pub fn node_id(classname: &str, name: &str, file: Option<&str>) -> String {
    let Some(file) = file else {
        return if classname.is_empty() {
            name.to_string()
        } else {
            format!("{classname}::{name}")
        };
    };
    let module = file.strip_suffix(".py").unwrap_or(file).replace('/', ".");
    if classname.is_empty() && name == module {
        return file.to_string();
    }
    let mut parts = vec![file.to_string()];
    if let Some(rest) = classname.strip_prefix(module.as_str()) {
        parts.extend(rest.split('.').filter(|p| !p.is_empty()).map(str::to_string));
    }
    parts.push(name.to_string());
    parts.join("::")
}

/// The frames of a traceback, in order: pytest's location lines
/// (`path.py:12: …`, unindented) and Python's (`File "path.py", line 12`).
pub fn frames(text: &str) -> Vec<Frame> {
    text.lines().filter_map(|l| pytest_location(l).or_else(|| python_location(l))).collect()
}

/// `tests/test_a.py:12: AssertionError` / `…:12: in helper`: a `.py` path
/// at the start of the line, then `:<line>:`. Source lines are indented and
/// argument lines (`x = 'a:1:b'`) do not name a `.py` file before the line
/// number, so neither is taken for a location.
fn pytest_location(line: &str) -> Option<Frame> {
    if line.starts_with(char::is_whitespace) {
        return None;
    }
    let idx = line.find(".py:")? + 3;
    let (path, rest) = line.split_at(idx);
    let digits: String = rest[1..].chars().take_while(|c| c.is_ascii_digit()).collect();
    if digits.is_empty() || !rest[1 + digits.len()..].starts_with(':') || path.contains(" = ") {
        return None;
    }
    Some(Frame { file: path.to_string(), line: digits.parse().ok()? })
}

/// `  File "tests/test_a.py", line 12, in test_x` (`--tb=native`).
fn python_location(line: &str) -> Option<Frame> {
    let rest = line.trim_start().strip_prefix("File \"")?;
    let (path, rest) = rest.split_once("\", line ")?;
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    Some(Frame { file: path.to_string(), line: digits.parse().ok()? })
}

/// The last `max` bytes of `text` (on a character boundary), marked when cut.
fn tail(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let start =
        (text.len() - max..text.len()).find(|i| text.is_char_boundary(*i)).unwrap_or(text.len());
    format!("[… {} bytes cut …]\n{}", start, &text[start..])
}

impl Report {
    /// How many tests had each outcome.
    pub fn count(&self, o: Outcome) -> usize {
        self.tests.iter().filter(|t| t.outcome == o).count()
    }

    /// The tests and counts (the first [`LISTED_TESTS`] listed, the first
    /// [`DETAILED_TESTS`] non-passing ones with details and output).
    pub fn summary(&self) -> Summary {
        let n = |o| self.count(o);
        let counts = Counts {
            passed: n(Outcome::Passed),
            failed: n(Outcome::Failed),
            skipped: n(Outcome::Skipped),
            error: n(Outcome::Error),
            xfail: n(Outcome::Xfail),
            xpass: n(Outcome::Xpass),
            total: self.tests.len(),
        };
        let mut detailed = 0;
        let tests = self
            .tests
            .iter()
            .take(LISTED_TESTS)
            .map(|t| {
                let with_details = t.outcome != Outcome::Passed && detailed < DETAILED_TESTS;
                detailed += usize::from(with_details);
                let keep = |s: &Option<String>| if with_details { s.clone() } else { None };
                TestEntry {
                    node_id: t.node_id.clone(),
                    outcome: t.outcome,
                    file: t.file.clone(),
                    line: t.line,
                    duration: t.duration,
                    message: t.message.clone(),
                    location: t.traceback.last().cloned(),
                    traceback: (!t.traceback.is_empty()).then(|| t.traceback.clone()),
                    details: keep(&t.details),
                    stdout: keep(&t.stdout),
                    stderr: keep(&t.stderr),
                }
            })
            .collect();
        Summary {
            counts,
            tests,
            tests_truncated: self.tests.len() > LISTED_TESTS,
            duration: self.duration,
        }
    }
}

/// [`Report::summary`]: what the verb's result says of the report.
#[derive(Debug)]
pub struct Summary {
    /// How many tests had each outcome.
    pub counts: Counts,
    /// The listed tests.
    pub tests: Vec<TestEntry>,
    /// More than [`LISTED_TESTS`].
    pub tests_truncated: bool,
    /// Seconds.
    pub duration: f64,
}

// How many tests had each outcome (a plain comment: a type's doc comment
// would become its schema's description).
#[derive(Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Counts {
    pub passed: usize,
    pub failed: usize,
    pub skipped: usize,
    pub error: usize,
    pub xfail: usize,
    pub xpass: usize,
    pub total: usize,
}

// One test in the result.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TestEntry {
    pub node_id: String,
    pub outcome: Outcome,
    pub file: Option<String>,
    /// 1-based first line of the test's definition (its first decorator)
    pub line: Option<u64>,
    /// seconds
    pub duration: f64,
    pub message: Option<String>,
    /// where it failed: the innermost frame
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Frame")]
    pub location: Option<Frame>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Vec<Frame>")]
    pub traceback: Option<Vec<Frame>>,
    /// pytest's failure text (tail)
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub details: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub stdout: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub stderr: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A report written by pytest 9.2 (`-o junit_family=xunit1 -o
    /// junit_logging=all -o junit_log_passing_tests=false`), trimmed.
    const REPORT: &str = r#"<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests"><testsuite name="pytest" errors="1" failures="2" skipped="2" tests="8" time="0.077" hostname="vm"><testcase classname="tests.test_sample" name="test_passes" file="tests/test_sample.py" line="5" time="0.002" /><testcase classname="tests.test_sample" name="test_fails" file="tests/test_sample.py" line="8" time="0.001"><failure message="AssertionError: x must be two&#10;assert 3 == 2">def test_fails():
        value = 3
&gt;       helper(value)

tests/test_sample.py:11: 
_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ 

x = 3, s = 'a.py:1: b'

    def helper(x):
&gt;       assert x == 2, "x must be two"
E       AssertionError: x must be two
E       assert 3 == 2

tests/test_sample.py:4: AssertionError</failure><system-out>--------------------------------- Captured Out ---------------------------------
hello
</system-out></testcase><testcase classname="tests.test_sample" name="test_skipped" file="tests/test_sample.py" line="12" time="0.000"><skipped type="pytest.skip" message="not today">/tmp/x/tests/test_sample.py:13: not today</skipped></testcase><testcase classname="tests.test_sample" name="test_errors" file="tests/test_sample.py" line="20" time="0.001"><error message="failed on setup with &quot;RuntimeError: fixture exploded&quot;">@pytest.fixture
    def broken():
&gt;       raise RuntimeError("fixture exploded")
E       RuntimeError: fixture exploded

tests/test_sample.py:19: RuntimeError</error></testcase><testcase classname="tests.test_sample" name="test_xfail" file="tests/test_sample.py" line="23" time="0.000"><skipped type="pytest.xfail" message="known bug" /></testcase><testcase classname="tests.test_sample.TestGroup" name="test_strict[a&lt;b]" file="tests/test_sample.py" line="27" time="0.000"><failure message="[XPASS(strict)] ">[XPASS(strict)] </failure></testcase><testcase classname="" name="tests.test_broken" file="tests/test_broken.py" time="0.000"><error message="collection failure">Traceback:
tests/test_broken.py:1: in &lt;module&gt;
    import nonexistent_module_xyz
E   ModuleNotFoundError: No module named 'nonexistent_module_xyz'</error></testcase><testcase classname="tests.test_native" name="test_n" file="tests/test_native.py" line="0" time="0.5"><failure message="ZeroDivisionError: division by zero">Traceback (most recent call last):
  File "tests/test_native.py", line 2, in test_n
    1 / 0
ZeroDivisionError: division by zero</failure></testcase></testsuite></testsuites>"#;

    #[test]
    fn every_outcome_is_read_with_file_line_and_message() {
        let r = parse(REPORT).unwrap();
        let got: Vec<(&str, Outcome)> =
            r.tests.iter().map(|t| (t.node_id.as_str(), t.outcome)).collect();
        assert_eq!(
            got,
            [
                ("tests/test_sample.py::test_passes", Outcome::Passed),
                ("tests/test_sample.py::test_fails", Outcome::Failed),
                ("tests/test_sample.py::test_skipped", Outcome::Skipped),
                ("tests/test_sample.py::test_errors", Outcome::Error),
                ("tests/test_sample.py::test_xfail", Outcome::Xfail),
                ("tests/test_sample.py::TestGroup::test_strict[a<b]", Outcome::Xpass),
                ("tests/test_broken.py", Outcome::Error),
                ("tests/test_native.py::test_n", Outcome::Failed),
            ]
        );
        let fails = &r.tests[1];
        assert_eq!(
            (fails.file.as_deref(), fails.line),
            (Some("tests/test_sample.py"), Some(9)),
            "xunit1 lines are 0-based"
        );
        assert_eq!(fails.message.as_deref(), Some("AssertionError: x must be two\nassert 3 == 2"));
        assert_eq!(
            fails.traceback,
            [
                Frame { file: "tests/test_sample.py".into(), line: 11 },
                Frame { file: "tests/test_sample.py".into(), line: 4 }
            ],
            "the argument line `s = 'a.py:1: b'` is not a frame"
        );
        assert!(fails.stdout.as_deref().unwrap().contains("hello"));
        assert_eq!(r.tests[2].message.as_deref(), Some("not today"));
        assert!(r.tests[2].traceback.is_empty(), "a skip has no traceback");
        assert_eq!(r.tests[3].traceback, [Frame { file: "tests/test_sample.py".into(), line: 19 }]);
        assert_eq!(
            r.tests[6].traceback,
            [Frame { file: "tests/test_broken.py".into(), line: 1 }],
            "--tb=short style"
        );
        assert_eq!(
            r.tests[7].traceback,
            [Frame { file: "tests/test_native.py".into(), line: 2 }],
            "--tb=native style"
        );
        assert_eq!(r.tests[7].line, Some(1));
        assert!((r.duration - 0.077).abs() < 1e-9);
    }

    #[test]
    fn counts_and_json() {
        let r = parse(REPORT).unwrap();
        let s = r.summary();
        assert_eq!(
            s.counts,
            Counts { passed: 1, failed: 2, skipped: 1, error: 2, xfail: 1, xpass: 1, total: 8 }
        );
        let j = serde_json::to_value(&s.tests).unwrap();
        assert_eq!(
            j[1]["location"],
            serde_json::json!({"file": "tests/test_sample.py", "line": 4})
        );
        assert!(j[1]["details"]
            .as_str()
            .unwrap()
            .ends_with("tests/test_sample.py:4: AssertionError"));
        assert!(j[0].get("details").is_none() && j[0].get("traceback").is_none(), "{}", j[0]);
        assert!(!s.tests_truncated);
    }

    #[test]
    fn the_report_is_found_among_other_output() {
        let stream = format!("DeprecationWarning: x\n{REPORT}\nException ignored in atexit\n");
        assert_eq!(find(stream.as_bytes()), Some(REPORT));
        // A report cut short is not a report.
        assert_eq!(find(&REPORT.as_bytes()[..REPORT.len() - 4]), None);
        // A stray non-UTF-8 byte before it does not hide it.
        let mut bytes = b"\xff\xfe junk\n".to_vec();
        bytes.extend_from_slice(REPORT.as_bytes());
        assert_eq!(find(&bytes), Some(REPORT));
        assert_eq!(find(b"no report"), None);
    }

    #[test]
    fn long_texts_keep_their_tail() {
        let t = tail(&"x".repeat(10_000), 100);
        assert!(t.starts_with("[… 9900 bytes cut …]\n"));
        assert!(t.ends_with(&"x".repeat(100)));
        assert_eq!(tail("short", 100), "short");
    }

    #[test]
    fn node_ids_fall_back_when_names_do_not_line_up() {
        assert_eq!(
            node_id("prefix.tests.test_a", "test_b", Some("tests/test_a.py")),
            "tests/test_a.py::test_b"
        );
        assert_eq!(node_id("tests.test_a", "test_b", None), "tests.test_a::test_b");
    }
}
