//! The bundled `jest` plugin: `jest.run`, a supervised job whose
//! `job.result` gives per-test outcomes — file, describe path and title,
//! status, duration, the test's line, the failure's message and where it
//! happened — from `jest --json` (read by [`js_report`]); jest's terminal
//! output is never read.
//!
//! `--json` puts the report alone on stdout and everything else (progress,
//! the tests' console output) on stderr. `--ci` keeps jest from writing new
//! snapshots, `--testLocationInResults` adds each test's line,
//! `--no-watchman` keeps it from starting a watchman daemon, and
//! `--passWithNoTests` makes an empty selection a result (`no_tests`).
//! Tests are chosen by typed parameters only: files as confined paths
//! (`--runTestsByPath`: exact paths, not patterns), the name pattern as a
//! `--testNamePattern=` option.

use schemars::JsonSchema;
use serde::Deserialize;
use verbgate_plugin_sdk::{cmd, Effect, OpError, Outcome, Plan, Verb, VerbKind};

/// `jest.run` args.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct RunArgs {
    /// test files to run, relative to dir
    #[serde(default)]
    #[schemars(length(min = 1, max = 256), inner(length(min = 1)))]
    files: Vec<String>,
    /// only tests whose full name matches this regular expression
    #[schemars(length(min = 1, max = 1024))]
    name: Option<String>,
    /// directory to run in (jest's rootDir unless its config says otherwise), relative to the root
    #[schemars(length(min = 1))]
    dir: Option<String>,
}

/// `jest.run`.
struct Run;

impl Verb for Run {
    const NAME: &'static str = "jest.run";
    const SUMMARY: &'static str = "Per-test outcomes";
    const KIND: VerbKind = VerbKind::Spawn;
    const PROGRAMS: &'static [&'static str] = &["jest"];
    // The tests and the config are the repository's code, which may write
    // files; a job.
    const EFFECTS: &'static [Effect] =
        &[Effect::ReadsRepo, Effect::WritesRepo, Effect::RunsRepoCode, Effect::LongRunning];
    type Args = RunArgs;
    type Output = js_report::RunResult;

    fn plan(args: &RunArgs) -> Result<Plan, OpError> {
        let mut c = cmd("jest")
            .env("NO_COLOR", "1")
            .lit("--json")
            .lit("--ci")
            .lit("--testLocationInResults")
            .lit("--no-watchman")
            .lit("--passWithNoTests");
        if let Some(dir) = &args.dir {
            c = c.cwd(dir);
        }
        if let Some(name) = &args.name {
            c = c.opt("testNamePattern", name);
        }
        if !args.files.is_empty() {
            c = c.lit("--runTestsByPath");
        }
        // No `--` marker: jest's parser (yargs) reads options after it too,
        // so the host's refusal of a path starting with `-` is what keeps
        // each one a path.
        for f in &args.files {
            c = c.path(f);
        }
        Ok(Plan::Spawn(c.into()))
    }

    fn map(_: &RunArgs, outcome: &Outcome) -> Result<js_report::RunResult, OpError> {
        js_report::map_outcome("jest", outcome)
    }
}

verbgate_plugin_sdk::plugin!(Jest { name: "jest", version: "0.1.0", verbs: [Run] });

#[cfg(test)]
mod tests {
    use super::*;
    use verbgate_plugin_sdk::Arg;

    #[test]
    fn files_are_exact_confined_paths_and_the_name_an_option() {
        let Plan::Spawn(c) =
            Jest::plan("jest.run", r#"{"files":["test/a.test.js"],"name":"adds"}"#).unwrap()
        else {
            panic!("not a spawn")
        };
        let at = c
            .args
            .iter()
            .position(|a| matches!(a, Arg::Literal(l) if l == "--runTestsByPath"))
            .expect("exact paths");
        assert!(matches!(&c.args[at + 1], Arg::Path(p) if p == "test/a.test.js"));
        assert!(c.args.iter().any(
            |a| matches!(a, Arg::Option(o) if o.name == "testNamePattern" && o.value == "adds")
        ));
        let Plan::Spawn(c) = Jest::plan("jest.run", "{}").unwrap() else { panic!("not a spawn") };
        assert!(!c.args.iter().any(|a| matches!(a, Arg::Literal(l) if l == "--runTestsByPath")));
    }

    #[test]
    fn a_suite_that_failed_to_run_is_an_error_entry() {
        let report = r#"{"numFailedTestSuites":1,"numRuntimeErrorTestSuites":1,"testResults":[{"name":"/r/t/broken.test.js","status":"failed","message":"  ● Test suite failed to run\n\n    Cannot find module './x' from 't/broken.test.js'\n\n    > 1 | require('./x');\n","assertionResults":[]}]}"#;
        let v = verbgate_plugin_sdk::serde_json::to_value(
            js_report::map_outcome(
                "jest",
                &Outcome::exited(1, report).with_stderr("FAIL t/broken.test.js"),
            )
            .unwrap(),
        )
        .unwrap();
        assert_eq!(v["status"], "error");
        assert_eq!(v["tests"][0]["outcome"], "error");
        assert_eq!(
            v["tests"][0]["message"], "Cannot find module './x' from 't/broken.test.js'",
            "{v}"
        );
        assert_eq!(v["counts"]["error"], 1);
    }
}
