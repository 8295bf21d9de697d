//! The bundled `cargo` plugin: `cargo.check`, `cargo.build`, `cargo.test`
//! and `cargo.clippy` as background jobs (fingerprint-gated spawn verbs)
//! whose `job.result` maps `--message-format=json` into diagnostics and
//! test outcomes; `cargo.metadata` as an exec verb.

mod messages;

use std::marker::PhantomData;

use schemars::JsonSchema;
use serde::Deserialize;
use verbgate_plugin_sdk::{cmd, errors, json, yes, Cmd, Effect, OpError, Outcome, OutcomeExt, Plan, Value, Verb, VerbKind};

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
fn build_result(outcome: &Outcome, tests: bool) -> Value {
    if outcome.is_running() {
        // cargo has no run id of its own: no entity, so job.kill stops
        // the process group.
        return json!({});
    }
    let r = messages::parse(&outcome.stdout);
    let count = |level: &str| r.diagnostics.iter().filter(|d| d["level"] == level).count();
    let mut out = json!({
        "success": outcome.exit_code == Some(0),
        "exit_code": outcome.exit_code,
        "diagnostics": r.diagnostics,
        "counts": { "errors": count("error"), "warnings": count("warning") },
    });
    if tests {
        let n = |o: &str| r.tests.iter().filter(|t| t["outcome"] == o).count();
        out["tests"] = json!({ "passed": n("passed"), "failed": n("failed"), "ignored": n("ignored"), "results": r.tests });
    }
    out
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
    const EFFECTS: &'static [Effect] = &[Effect::ReadsRepo, Effect::WritesRepo, Effect::RunsRepoCode, Effect::LongRunning];
    const PROGRAMS: &'static [&'static str] = &["cargo"];
    type Args = BuildArgs;

    fn result_schema() -> Option<Value> {
        Some(messages::result_schema())
    }

    fn plan(args: &BuildArgs) -> Result<Plan, OpError> {
        Ok(Plan::Spawn(cargo(&args.common, S::SUB).into()))
    }

    fn map(_: &BuildArgs, outcome: &Outcome) -> Result<Value, OpError> {
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
    const EFFECTS: &'static [Effect] = &[Effect::ReadsRepo, Effect::WritesRepo, Effect::RunsRepoCode, Effect::LongRunning];
    const PROGRAMS: &'static [&'static str] = &["cargo"];
    type Args = TestArgs;

    fn result_schema() -> Option<Value> {
        Some(messages::result_schema())
    }

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

    fn map(_: &TestArgs, outcome: &Outcome) -> Result<Value, OpError> {
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

    fn result_schema() -> Option<Value> {
        Some(json!({
            "type": "object",
            "required": ["workspace_root", "workspace_members", "packages"],
            "properties": { "packages": { "type": "array", "items": { "type": "object", "required": ["name", "version", "targets"] } } }
        }))
    }

    fn plan(args: &MetadataArgs) -> Result<Plan, OpError> {
        let mut c = cmd("cargo").env("CARGO_TERM_COLOR", "never").lit("metadata").lit("--format-version=1").lit("--no-deps");
        if let Some(dir) = &args.dir {
            c = c.cwd(dir);
        }
        Ok(Plan::Exec(c.into()))
    }

    fn map(_: &MetadataArgs, outcome: &Outcome) -> Result<Value, OpError> {
        outcome.success()?;
        let m: Value = verbgate_plugin_sdk::serde_json::from_slice(&outcome.stdout)
            .map_err(|e| errors::invalid_output(&format!("cargo metadata printed non-JSON: {e}")))?;
        let packages: Vec<Value> = m["packages"]
            .as_array()
            .map(|ps| {
                ps.iter()
                    .map(|p| {
                        let targets: Vec<Value> = p["targets"]
                            .as_array()
                            .map(|ts| ts.iter().map(|t| json!({ "name": t["name"], "kind": t["kind"], "src_path": t["src_path"] })).collect())
                            .unwrap_or_default();
                        json!({ "name": p["name"], "version": p["version"], "id": p["id"], "edition": p["edition"], "manifest_path": p["manifest_path"], "targets": targets })
                    })
                    .collect()
            })
            .unwrap_or_default();
        let members: Vec<Value> = m["workspace_members"]
            .as_array()
            .map(|ids| ids.iter().filter_map(|id| m["packages"].as_array()?.iter().find(|p| p["id"] == *id).map(|p| p["name"].clone())).collect())
            .unwrap_or_default();
        Ok(json!({ "workspace_root": m["workspace_root"], "workspace_members": members, "packages": packages }))
    }
}

verbgate_plugin_sdk::plugin!(Cargo {
    name: "cargo",
    version: "0.1.0",
    verbs: [Build<Check>, Build<Compile>, Test, Build<Clippy>, Metadata],
});

#[cfg(test)]
mod tests {
    use super::*;
    use verbgate_plugin_sdk::serde_json;

    #[test]
    fn test_filters_go_after_the_harness_marker_as_values() {
        let Plan::Spawn(c) = Cargo::plan("cargo.test", r#"{"filter":"parse","features":["a","b"]}"#).unwrap() else { panic!("not a spawn") };
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
        assert_eq!(words, ["test", "--message-format=json", "--features=a,b", "--no-fail-fast", "--", "value:parse"]);
    }

    #[test]
    fn test_only_params_are_refused_on_check() {
        assert_eq!(Cargo::plan("cargo.check", r#"{"filter":"x"}"#).unwrap_err().code, "invalid_args");
    }

    #[test]
    fn a_finished_test_run_counts_outcomes() {
        let stdout = concat!(r#"{"reason":"compiler-message","message":{"level":"warning","message":"unused","code":null,"spans":[],"rendered":"w"}}"#, "\n");
        let v: Value = serde_json::from_str(&Cargo::map_result("cargo.test", "{}", &Outcome::exited(0, stdout)).unwrap()).unwrap();
        assert_eq!(v["success"], true);
        assert_eq!(v["counts"]["warnings"], 1);
        assert!(v["tests"].is_object());
    }
}
