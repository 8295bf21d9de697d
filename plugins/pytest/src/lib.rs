//! The bundled `pytest` plugin: `pytest.run`, a supervised job whose
//! `job.result` gives per-test outcomes, durations and failure locations,
//! read from pytest's JUnit XML report — never from its terminal output.
//!
//! The plan's contract has no file a plugin can read back, so pytest writes
//! the report to the job's stderr (`--junitxml=/dev/stderr`: the host always
//! gives a job pipes, and opening `/dev/stderr` opens the same pipe), while
//! its terminal output stays on stdout for `job.output`. [`junit::find`]
//! picks the report out of whatever else reached stderr.
//!
//! pytest runs the repository's code (conftest.py, the tests, plugins its
//! configuration names), which the host marks `runs_repository_code`. It is
//! pinned to the directory it runs in: `--rootdir=.`, `--confcutdir=.` (no
//! `conftest.py` from above it), `-p no:cacheprovider` (no `.pytest_cache`,
//! no last-failed state changing what runs); the host refuses configuration
//! files above the root that someone else could have written
//! (`untrusted_config`). Tests are chosen by typed parameters only: `-k`
//! and `-m` expressions as values, node ids as confined paths (the file
//! part of `file.py::test` too) — none may start with `-` or `@` (pytest
//! parses options, and reads `@file` argument files, even after `--`, so no
//! marker is used and the host's refusal of a leading `-` or `@` before
//! one is what keeps them values).

pub mod junit;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use verbgate_plugin_sdk::{
    cmd, errors, json, Effect, ErrorCode, OpError, Outcome, Plan, Verb, VerbKind,
};

/// `pytest.run` args.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct RunArgs {
    /// tests to run: files, directories or node ids (`tests/test_a.py::test_b`), relative to dir
    #[serde(default)]
    #[schemars(length(min = 1, max = 256))]
    node_ids: Vec<String>,
    /// only tests matching this -k expression (`parse and not slow`)
    #[schemars(length(min = 1, max = 1024))]
    keyword: Option<String>,
    /// only tests matching this -m marker expression (`not network`)
    #[schemars(length(min = 1, max = 1024))]
    markers: Option<String>,
    /// stop after this many failures and errors
    #[schemars(range(min = 1, max = 100000))]
    maxfail: Option<u64>,
    /// directory to run in (pytest's rootdir), relative to the root
    #[schemars(length(min = 1))]
    dir: Option<String>,
}

// What pytest's exit status says (pytest's `ExitCode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Status {
    Passed,
    Failed,
    Interrupted,
    InternalError,
    UsageError,
    NoTests,
    Other,
    Killed,
}

impl Status {
    fn of(exit_code: Option<i32>) -> Status {
        match exit_code {
            Some(0) => Status::Passed,
            Some(1) => Status::Failed,
            Some(2) => Status::Interrupted,
            Some(3) => Status::InternalError,
            Some(4) => Status::UsageError,
            Some(5) => Status::NoTests,
            Some(_) => Status::Other,
            None => Status::Killed,
        }
    }

    /// The name in results and messages.
    fn as_str(self) -> &'static str {
        match self {
            Status::Passed => "passed",
            Status::Failed => "failed",
            Status::Interrupted => "interrupted",
            Status::InternalError => "internal_error",
            Status::UsageError => "usage_error",
            Status::NoTests => "no_tests",
            Status::Other => "other",
            Status::Killed => "killed",
        }
    }
}

/// A stream without the report pytest wrote into it.
fn without_report(stream: &[u8]) -> Vec<u8> {
    let Some(r) = junit::locate(stream) else { return stream.to_vec() };
    [&stream[..r.start], &stream[r.end..]].concat()
}

/// The last `max` bytes of a stream, as text.
fn tail(bytes: &[u8], max: usize) -> String {
    let text = String::from_utf8_lossy(&bytes[bytes.len().saturating_sub(max)..]).into_owned();
    text.trim().to_string()
}

// `pytest.run`'s result (a plain comment: a type's doc comment would
// become its schema's description).
#[derive(Debug, Serialize, JsonSchema)]
struct RunResult {
    success: bool,
    exit_code: Option<i32>,
    status: Status,
    counts: junit::Counts,
    tests: Vec<junit::TestEntry>,
    tests_truncated: bool,
    /// seconds
    duration: f64,
}

/// `pytest.run`.
struct Run;

impl Verb for Run {
    const NAME: &'static str = "pytest.run";
    const SUMMARY: &'static str = "pytest: per-test outcomes, failure lines";
    const KIND: VerbKind = VerbKind::Spawn;
    const PROGRAMS: &'static [&'static str] = &["pytest"];
    // conftest.py and the tests are the repository's code (which may write
    // files: __pycache__ at least); a job.
    const EFFECTS: &'static [Effect] =
        &[Effect::ReadsRepo, Effect::WritesRepo, Effect::RunsRepoCode, Effect::LongRunning];
    type Args = RunArgs;
    type Output = RunResult;

    fn plan(args: &RunArgs) -> Result<Plan, OpError> {
        let mut c = cmd("pytest")
            .lit("-p")
            .lit("no:cacheprovider")
            .lit("--rootdir=.")
            .lit("--confcutdir=.")
            .lit("--junitxml=/dev/stderr")
            // xunit1 keeps each test's file and line; failing tests keep
            // their captured output; passing ones add nothing.
            .lit("--override-ini=junit_family=xunit1")
            .lit("--override-ini=junit_logging=all")
            .lit("--override-ini=junit_log_passing_tests=false");
        if let Some(dir) = &args.dir {
            c = c.cwd(dir);
        }
        // pytest has no long form of -k and -m: the expression is the next
        // value, which the host refuses if it starts with `-`.
        if let Some(k) = &args.keyword {
            c = c.lit("-k").value(k);
        }
        if let Some(m) = &args.markers {
            c = c.lit("-m").value(m);
        }
        if let Some(n) = args.maxfail {
            c = c.lit_owned(format!("--maxfail={n}"));
        }
        // No `--` before the node ids: pytest reads options even after `--`
        // (`pytest -- --co` collects only) and expands `@file` there, so a
        // node id must never start with `-` or `@` — which the host refuses
        // for a path before `--`.
        for id in &args.node_ids {
            c = c.path(id);
        }
        Ok(Plan::Spawn(c.into()))
    }

    fn map(_: &RunArgs, outcome: &Outcome) -> Result<RunResult, OpError> {
        map_outcome(outcome)
    }
}

/// A finished pytest job's outcome → the result. (pytest has no run id of
/// its own: a running job names no entity, and job.kill stops the group.)
fn map_outcome(outcome: &Outcome) -> Result<RunResult, OpError> {
    if outcome.exit_code == Some(4) {
        // A usage error (a bad `-k`/`-m` expression, a node id that does
        // not exist, an option the project's `addopts` names that is not
        // there): no test ran, whatever the (empty) report says.
        let stderr = tail(&without_report(&outcome.stderr), 2048);
        return Err(errors::op_error(
            ErrorCode::InvalidArgs,
            &format!("pytest refused its arguments (exit 4, usage error): {stderr}"),
            Some(json!({ "exit_code": 4, "stderr": stderr })),
        ));
    }
    let Some(xml) = junit::find(&outcome.stderr) else {
        let mut e = errors::exit_nonzero(outcome);
        e.message = format!(
            "pytest wrote no JUnit report ({}); {}",
            Status::of(outcome.exit_code).as_str(),
            e.message
        );
        return Err(e);
    };
    let report = junit::parse(xml).map_err(|e| errors::invalid_output(&e))?.summary();
    Ok(RunResult {
        success: outcome.exit_code == Some(0),
        exit_code: outcome.exit_code,
        status: Status::of(outcome.exit_code),
        counts: report.counts,
        tests: report.tests,
        tests_truncated: report.tests_truncated,
        duration: report.duration,
    })
}

verbgate_plugin_sdk::plugin!(Pytest { name: "pytest", version: "0.1.0", verbs: [Run] });

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_usage_error_is_invalid_args_without_the_empty_report() {
        let report = "<?xml version=\"1.0\" encoding=\"utf-8\"?><testsuites><testsuite tests=\"0\" time=\"0\"/></testsuites>";
        let stderr = format!("ERROR: Wrong expression passed to '-k': ((\n{report}\n");
        let e = map_outcome(&Outcome::exited(4, "").with_stderr(stderr)).unwrap_err();
        assert_eq!(e.code, "invalid_args");
        assert!(
            e.message.contains("Wrong expression") && !e.message.contains("testsuites"),
            "{}",
            e.message
        );
    }

    #[test]
    fn no_report_is_the_program_failing_and_a_running_job_has_no_entity() {
        let e = map_outcome(&Outcome::killed(9)).unwrap_err();
        assert_eq!(e.code, "exit_nonzero");
        assert!(e.message.starts_with("pytest wrote no JUnit report (killed)"), "{}", e.message);
        assert_eq!(Pytest::map_result("pytest.run", "{}", &Outcome::running("")).unwrap(), "{}");
    }
}
