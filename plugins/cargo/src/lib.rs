//! The bundled `cargo` plugin: `cargo.check`, `cargo.build`, `cargo.test`
//! and `cargo.clippy` as background jobs (fingerprint-gated spawn verbs)
//! whose `job.result` maps `--message-format=json` into diagnostics and
//! test outcomes; `cargo.metadata` as an exec verb.

mod messages;

use std::marker::PhantomData;

use messages::{Diagnostic, TestOutcome, TestResult};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use verbgate_plugin_sdk::{
    cmd, errors, yes, Cmd, Effect, OpError, Outcome, OutcomeExt, Plan, Verb, VerbKind,
};

/// The parameters every build verb shares.
#[derive(Deserialize, JsonSchema)]
struct Common {
    /// only this package (-p)
    #[schemars(length(min = 1))]
    package: Option<String>,
    /// every workspace member
    #[serde(default)]
    workspace: bool,
    /// features to enable
    #[serde(default)]
    #[schemars(length(max = 64))]
    features: Vec<String>,
    /// enable every feature
    #[serde(default)]
    all_features: bool,
    /// disable default features
    #[serde(default)]
    no_default_features: bool,
    /// release profile
    #[serde(default)]
    release: bool,
    /// target triple
    #[schemars(regex(pattern = "^[A-Za-z0-9_.-]+$"))]
    target: Option<String>,
    /// tests, benches and examples too
    #[serde(default)]
    all_targets: bool,
    /// directory of the crate or workspace, relative to the root
    #[schemars(length(min = 1))]
    dir: Option<String>,
}

/// `cargo.check`, `cargo.build` and `cargo.clippy` args.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct BuildArgs {
    #[serde(flatten)]
    common: Common,
}

/// `cargo.test` args: the common ones and the test selection.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct TestArgs {
    #[serde(flatten)]
    common: Common,
    /// only tests whose name contains this
    #[schemars(length(min = 1))]
    filter: Option<String>,
    /// run every test binary even after a failure
    #[serde(default = "yes")]
    no_fail_fast: bool,
}

fn cargo(args: &Common, sub: &'static str) -> Cmd {
    let mut c = cmd("cargo").env("CARGO_TERM_COLOR", "never").lit(sub).lit("--message-format=json");
    if let Some(dir) = &args.dir {
        c = c.cwd(dir);
    }
    if let Some(p) = &args.package {
        c = c.opt("package", p);
    }
    if args.workspace {
        c = c.lit("--workspace");
    }
    if !args.features.is_empty() {
        c = c.opt("features", args.features.join(","));
    }
    if args.all_features {
        c = c.lit("--all-features");
    }
    if args.no_default_features {
        c = c.lit("--no-default-features");
    }
    if args.release {
        c = c.lit("--release");
    }
    if let Some(t) = &args.target {
        c = c.opt("target", t);
    }
    if args.all_targets {
        c = c.lit("--all-targets");
    }
    c
}

/// A finished build's result: diagnostics, and test outcomes when `tests`.
/// (cargo has no run id of its own: a running job names no entity, so
/// job.kill stops the process group.)
fn build_result(outcome: &Outcome, tests: bool) -> BuildResult {
    let r = messages::parse(&outcome.stdout);
    let count = |level: &str| r.diagnostics.iter().filter(|d| d.level == level).count();
    let counts = Counts { errors: count("error"), warnings: count("warning") };
    let tests = tests.then(|| {
        let n = |o: TestOutcome| r.tests.iter().filter(|t| t.outcome == o).count();
        Tests {
            passed: n(TestOutcome::Passed),
            failed: n(TestOutcome::Failed),
            ignored: n(TestOutcome::Ignored),
            results: r.tests,
        }
    });
    BuildResult {
        success: outcome.exit_code == Some(0),
        exit_code: outcome.exit_code,
        diagnostics: r.diagnostics,
        counts,
        tests,
    }
}

// The result of the cargo job verbs (a plain comment, as on every result
// type: a type's doc comment would become its schema's description).
#[derive(Serialize, JsonSchema)]
struct BuildResult {
    success: bool,
    exit_code: Option<i32>,
    diagnostics: Vec<Diagnostic>,
    counts: Counts,
    /// cargo.test only
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Tests")]
    tests: Option<Tests>,
}

// Diagnostics by level.
#[derive(Serialize, JsonSchema)]
struct Counts {
    errors: usize,
    warnings: usize,
}

// cargo.test's outcomes.
#[derive(Serialize, JsonSchema)]
struct Tests {
    passed: usize,
    failed: usize,
    ignored: usize,
    results: Vec<TestResult>,
}

/// A cargo subcommand run as a build verb.
trait Subcommand {
    /// The verb's name.
    const NAME: &'static str;
    /// cargo's subcommand.
    const SUB: &'static str;
    /// The verb's summary.
    const SUMMARY: &'static str;
}

/// A build verb (`cargo.check`, `cargo.build`, `cargo.clippy`): the same
/// args, plan and result around a different subcommand.
struct Build<S>(PhantomData<S>);

impl<S: Subcommand> Verb for Build<S> {
    const NAME: &'static str = S::NAME;
    const SUMMARY: &'static str = S::SUMMARY;
    const KIND: VerbKind = VerbKind::Spawn;
    // No `network`: in the OS sandbox cargo builds offline (the host sets
    // CARGO_NET_OFFLINE), from what is already fetched; an operator lets it
    // fetch with `[[sandbox.allow]] verbs = ["cargo.*"] network = true`.
    const EFFECTS: &'static [Effect] =
        &[Effect::ReadsRepo, Effect::WritesRepo, Effect::RunsRepoCode, Effect::LongRunning];
    const PROGRAMS: &'static [&'static str] = &["cargo"];
    type Args = BuildArgs;
    type Output = BuildResult;

    fn plan(args: &BuildArgs) -> Result<Plan, OpError> {
        Ok(Plan::Spawn(cargo(&args.common, S::SUB).into()))
    }

    fn map(_: &BuildArgs, outcome: &Outcome) -> Result<BuildResult, OpError> {
        Ok(build_result(outcome, false))
    }
}

struct Check;
impl Subcommand for Check {
    const NAME: &'static str = "cargo.check";
    const SUB: &'static str = "check";
    const SUMMARY: &'static str = "Type-check; diagnostics with file and line";
}

struct Compile;
impl Subcommand for Compile {
    const NAME: &'static str = "cargo.build";
    const SUB: &'static str = "build";
    const SUMMARY: &'static str = "Build; diagnostics with file and line";
}

struct Clippy;
impl Subcommand for Clippy {
    const NAME: &'static str = "cargo.clippy";
    const SUB: &'static str = "clippy";
    const SUMMARY: &'static str = "Clippy lints with file and line";
}

/// `cargo.test`.
struct Test;

impl Verb for Test {
    const NAME: &'static str = "cargo.test";
    const SUMMARY: &'static str = "Run tests; per-test outcomes and counts";
    const KIND: VerbKind = VerbKind::Spawn;
    // No `network`: in the OS sandbox cargo builds offline (the host sets
    // CARGO_NET_OFFLINE), from what is already fetched; an operator lets it
    // fetch with `[[sandbox.allow]] verbs = ["cargo.*"] network = true`.
    const EFFECTS: &'static [Effect] =
        &[Effect::ReadsRepo, Effect::WritesRepo, Effect::RunsRepoCode, Effect::LongRunning];
    const PROGRAMS: &'static [&'static str] = &["cargo"];
    type Args = TestArgs;
    type Output = BuildResult;

    fn plan(args: &TestArgs) -> Result<Plan, OpError> {
        let mut c = cargo(&args.common, "test");
        if args.no_fail_fast {
            c = c.lit("--no-fail-fast");
        }
        if let Some(filter) = &args.filter {
            // After cargo's `--` the *test harness* parses options, so
            // this is not an end-of-options marker: the filter stays a
            // plain value, refused by the host if it starts with `-`.
            c = c.lit("--").value(filter);
        }
        Ok(Plan::Spawn(c.into()))
    }

    fn map(_: &TestArgs, outcome: &Outcome) -> Result<BuildResult, OpError> {
        Ok(build_result(outcome, true))
    }
}

/// `cargo.metadata` args.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct MetadataArgs {
    /// directory of the crate or workspace, relative to the root
    #[schemars(length(min = 1))]
    dir: Option<String>,
}

/// `cargo.metadata`.
struct Metadata;

impl Verb for Metadata {
    const NAME: &'static str = "cargo.metadata";
    const SUMMARY: &'static str = "Workspace members, packages and their targets";
    const KIND: VerbKind = VerbKind::Exec;
    const EFFECTS: &'static [Effect] = &[Effect::ReadsRepo, Effect::RunsRepoCode];
    const PROGRAMS: &'static [&'static str] = &["cargo"];
    type Args = MetadataArgs;
    type Output = MetadataResult;

    fn plan(args: &MetadataArgs) -> Result<Plan, OpError> {
        let mut c = cmd("cargo")
            .env("CARGO_TERM_COLOR", "never")
            .lit("metadata")
            .lit("--format-version=1")
            .lit("--no-deps");
        if let Some(dir) = &args.dir {
            c = c.cwd(dir);
        }
        Ok(Plan::Exec(c.into()))
    }

    fn map(_: &MetadataArgs, outcome: &Outcome) -> Result<MetadataResult, OpError> {
        outcome.success()?;
        let m: MetadataOut =
            verbgate_plugin_sdk::serde_json::from_slice(&outcome.stdout).map_err(|e| {
                errors::invalid_output(&format!(
                    "cargo metadata printed JSON verbgate cannot read: {e}"
                ))
            })?;
        let workspace_members = m
            .workspace_members
            .iter()
            .filter_map(|id| m.packages.iter().find(|p| p.id == *id).map(|p| p.name.clone()))
            .collect();
        Ok(MetadataResult {
            workspace_root: m.workspace_root,
            workspace_members,
            packages: m.packages,
        })
    }
}

// What `cargo.metadata` reads of `cargo metadata --format-version=1`
// (other fields are ignored).
#[derive(Deserialize)]
struct MetadataOut {
    workspace_root: String,
    workspace_members: Vec<String>,
    packages: Vec<Package>,
}

// `cargo.metadata`'s result.
#[derive(Serialize, JsonSchema)]
struct MetadataResult {
    workspace_root: String,
    /// the members' package names
    workspace_members: Vec<String>,
    packages: Vec<Package>,
}

// A package, as cargo metadata describes it (the fields kept).
#[derive(Deserialize, Serialize, JsonSchema)]
struct Package {
    name: String,
    version: String,
    id: String,
    edition: String,
    manifest_path: String,
    targets: Vec<Target>,
}

// A package's target.
#[derive(Deserialize, Serialize, JsonSchema)]
struct Target {
    name: String,
    /// lib, bin, test, example, bench, custom-build, …
    kind: Vec<String>,
    src_path: String,
}

verbgate_plugin_sdk::plugin!(Cargo {
    name: "cargo",
    version: "0.1.0",
    verbs: [Build<Check>, Build<Compile>, Test, Build<Clippy>, Metadata],
});

#[cfg(test)]
mod tests {
    use super::*;
    use verbgate_plugin_sdk::{serde_json, Value};

    #[test]
    fn test_filters_go_after_the_harness_marker_as_values() {
        let Plan::Spawn(c) =
            Cargo::plan("cargo.test", r#"{"filter":"parse","features":["a","b"]}"#).unwrap()
        else {
            panic!("not a spawn")
        };
        let words: Vec<String> = c
            .args
            .iter()
            .map(|a| match a {
                verbgate_plugin_sdk::Arg::Literal(l) => l.clone(),
                verbgate_plugin_sdk::Arg::Value(v) => format!("value:{v}"),
                verbgate_plugin_sdk::Arg::Option(o) => format!("--{}={}", o.name, o.value),
                other => format!("{other:?}"),
            })
            .collect();
        assert_eq!(
            words,
            [
                "test",
                "--message-format=json",
                "--features=a,b",
                "--no-fail-fast",
                "--",
                "value:parse"
            ]
        );
    }

    #[test]
    fn test_only_params_are_refused_on_check() {
        assert_eq!(
            Cargo::plan("cargo.check", r#"{"filter":"x"}"#).unwrap_err().code,
            "invalid_args"
        );
    }

    #[test]
    fn metadata_keeps_members_by_name_and_each_packages_targets() {
        let out = r#"{"packages":[{"name":"a","version":"0.1.0","id":"path+file:///r/a#0.1.0","edition":"2021","manifest_path":"/r/a/Cargo.toml","license":null,
            "targets":[{"name":"a","kind":["lib"],"src_path":"/r/a/src/lib.rs","edition":"2021"}]}],
            "workspace_members":["path+file:///r/a#0.1.0"],"workspace_root":"/r","target_directory":"/r/target","version":1}"#;
        let v: Value = serde_json::from_str(
            &Cargo::map_result("cargo.metadata", "{}", &Outcome::exited(0, out)).unwrap(),
        )
        .unwrap();
        assert_eq!(v["workspace_members"], serde_json::json!(["a"]));
        assert_eq!(
            v["packages"][0]["targets"][0],
            serde_json::json!({ "name": "a", "kind": ["lib"], "src_path": "/r/a/src/lib.rs" })
        );
        let e = Cargo::map_result("cargo.metadata", "{}", &Outcome::exited(0, "{}")).unwrap_err();
        assert_eq!(e.code, "invalid_output");
        assert_eq!(
            Cargo::map_result("cargo.test", "{}", &Outcome::running("")).unwrap(),
            "{}",
            "a running job names no entity"
        );
    }

    #[test]
    fn a_finished_test_run_counts_outcomes() {
        let stdout = concat!(
            r#"{"reason":"compiler-message","message":{"level":"warning","message":"unused","code":null,"spans":[],"rendered":"w"}}"#,
            "\n"
        );
        let v: Value = serde_json::from_str(
            &Cargo::map_result("cargo.test", "{}", &Outcome::exited(0, stdout)).unwrap(),
        )
        .unwrap();
        assert_eq!(v["success"], true);
        assert_eq!(v["counts"]["warnings"], 1);
        assert!(v["tests"].is_object());
    }
}
