//! The bundled `vitest` plugin: `vitest.run`, a supervised job whose
//! `job.result` gives per-test outcomes — file, describe path and title,
//! status, duration, the test's line, the failure's message and where it
//! happened — from vitest's `json` reporter (jest's report shape, read by
//! [`js_report`]); vitest's terminal output is never read.
//!
//! With the `json` reporter alone vitest writes nothing but the report on
//! stdout (the tests' console output is not printed), so the report is
//! stdout. `CI=true` keeps vitest from writing new snapshots (an
//! unreviewed `.snap` file is a write the caller did not ask for), and
//! `--passWithNoTests` makes an empty selection a result (`no_tests`), not
//! a failure. Tests are chosen by typed parameters only: file filters as
//! confined paths, the name pattern as a `--testNamePattern=` option.

use schemars::JsonSchema;
use serde::Deserialize;
use verbgate_plugin_sdk::{cmd, Effect, OpError, Outcome, Plan, Verb, VerbKind};

/// `vitest.run` args.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct RunArgs {
    /// test files to run (vitest keeps those whose path contains one), relative to dir
    #[serde(default)]
    #[schemars(length(min = 1, max = 256), inner(length(min = 1)))]
    files: Vec<String>,
    /// only tests whose full name matches this regular expression
    #[schemars(length(min = 1, max = 1024))]
    name: Option<String>,
    /// directory to run in (the project root vitest uses), relative to the root
    #[schemars(length(min = 1))]
    dir: Option<String>,
}

/// `vitest.run`.
struct Run;

impl Verb for Run {
    const NAME: &'static str = "vitest.run";
    const SUMMARY: &'static str = "Per-test outcomes";
    const KIND: VerbKind = VerbKind::Spawn;
    const PROGRAMS: &'static [&'static str] = &["vitest"];
    // The tests and the config are the repository's code, which may write
    // files; a job.
    const EFFECTS: &'static [Effect] =
        &[Effect::ReadsRepo, Effect::WritesRepo, Effect::RunsRepoCode, Effect::LongRunning];
    type Args = RunArgs;
    type Output = js_report::RunResult;

    fn plan(args: &RunArgs) -> Result<Plan, OpError> {
        let mut c = cmd("vitest")
            .env("CI", "true")
            .env("NO_COLOR", "1")
            .lit("run")
            .lit("--reporter=json")
            .lit("--includeTaskLocation")
            .lit("--passWithNoTests");
        if let Some(dir) = &args.dir {
            c = c.cwd(dir);
        }
        if let Some(name) = &args.name {
            c = c.opt("testNamePattern", name);
        }
        // Filters are positional; no `--` marker, so the host's refusal of
        // a path starting with `-` is what keeps each one a filter.
        for f in &args.files {
            c = c.path(f);
        }
        Ok(Plan::Spawn(c.into()))
    }

    fn map(_: &RunArgs, outcome: &Outcome) -> Result<js_report::RunResult, OpError> {
        js_report::map_outcome("vitest", outcome)
    }
}

verbgate_plugin_sdk::plugin!(Vitest { name: "vitest", version: "0.1.0", verbs: [Run] });

#[cfg(test)]
mod tests {
    use super::*;
    use verbgate_plugin_sdk::Arg;

    #[test]
    fn filters_are_confined_paths_and_the_name_an_option() {
        let Plan::Spawn(c) = Vitest::plan(
            "vitest.run",
            r#"{"files":["test/a"],"name":"adds|subtracts","dir":"web"}"#,
        )
        .unwrap() else {
            panic!("not a spawn")
        };
        assert_eq!(c.cwd.as_deref(), Some("web"));
        assert!(c.args.iter().any(|a| matches!(a, Arg::Path(p) if p == "test/a")));
        assert!(c.args.iter().any(|a| matches!(a, Arg::Option(o) if o.name == "testNamePattern" && o.value == "adds|subtracts")));
        assert!(c.env.contains(&("CI".to_string(), "true".to_string())), "no snapshot is written");
    }

    #[test]
    fn a_run_without_a_report_is_the_program_failing() {
        let e = js_report::map_outcome(
            "vitest",
            &Outcome::exited(1, "").with_stderr("Error: failed to load config"),
        )
        .unwrap_err();
        assert_eq!(e.code, "exit_nonzero");
        assert!(
            e.message.contains("no JSON report") && e.message.contains("failed to load config"),
            "{}",
            e.message
        );
        let report = r#"{"numTotalTestSuites":1,"testResults":[{"name":"/r/a.test.js","status":"passed","assertionResults":[{"ancestorTitles":[],"title":"t","status":"passed","duration":1,"failureMessages":[]}]}]}"#;
        let v = verbgate_plugin_sdk::serde_json::to_value(
            js_report::map_outcome("vitest", &Outcome::exited(0, report)).unwrap(),
        )
        .unwrap();
        assert_eq!(
            (v["status"].as_str(), v["counts"]["passed"].as_u64(), v["success"].as_bool()),
            (Some("passed"), Some(1), Some(true))
        );
    }
}
