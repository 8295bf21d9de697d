//! The bundled `cargo` plugin: `cargo.check`, `cargo.build`, `cargo.test`
//! and `cargo.clippy` as background jobs (fingerprint-gated spawn verbs)
//! whose `job.result` maps `--message-format=json` into diagnostics and
//! test outcomes; `cargo.metadata` as an exec verb.

mod messages;

use verbgate_plugin_sdk::{
    cmd, errors, json, plugin_info, verb, Args, Cmd, Effect, OpError, Outcome, OutcomeExt, Param, Plan, Plugin, PluginInfo, Schema, Value, VerbKind,
    VerbSpecExt,
};

struct Cargo;

/// The spawn verbs and the cargo subcommand each runs.
const BUILD_VERBS: &[(&str, &str, &str)] = &[
    ("cargo.check", "check", "Type-check; diagnostics with file and line"),
    ("cargo.build", "build", "Build; diagnostics with file and line"),
    ("cargo.test", "test", "Run tests; per-test outcomes and counts"),
    ("cargo.clippy", "clippy", "Clippy lints with file and line"),
];

fn common_params(s: Schema) -> Schema {
    s.param("package", Param::string("only this package (-p)").min_length(1))
        .param("workspace", Param::boolean("every workspace member").default(json!(false)))
        .param("features", Param::strings("features to enable").max_items(64))
        .param("all_features", Param::boolean("enable every feature").default(json!(false)))
        .param("no_default_features", Param::boolean("disable default features").default(json!(false)))
        .param("release", Param::boolean("release profile").default(json!(false)))
        .param("target", Param::string("target triple").pattern("^[A-Za-z0-9_.-]+$"))
        .param("all_targets", Param::boolean("tests, benches and examples too").default(json!(false)))
        .param("dir", Param::string("directory of the crate or workspace, relative to the root").min_length(1))
}

fn cargo(args: &Args, sub: &'static str) -> Result<Cmd, OpError> {
    let mut c = cmd("cargo").env("CARGO_TERM_COLOR", "never").lit(sub).lit("--message-format=json");
    if let Some(dir) = args.str("dir")? {
        c = c.cwd(dir);
    }
    if let Some(p) = args.str("package")? {
        c = c.opt("package", p);
    }
    if args.bool_or("workspace", false)? {
        c = c.lit("--workspace");
    }
    let features = args.strs("features")?;
    if !features.is_empty() {
        c = c.opt("features", features.join(","));
    }
    if args.bool_or("all_features", false)? {
        c = c.lit("--all-features");
    }
    if args.bool_or("no_default_features", false)? {
        c = c.lit("--no-default-features");
    }
    if args.bool_or("release", false)? {
        c = c.lit("--release");
    }
    if let Some(t) = args.str("target")? {
        c = c.opt("target", t);
    }
    if args.bool_or("all_targets", false)? {
        c = c.lit("--all-targets");
    }
    Ok(c)
}

impl Plugin for Cargo {
    fn describe() -> PluginInfo {
        let mut verbs: Vec<_> = BUILD_VERBS
            .iter()
            .map(|(name, _, summary)| {
                let mut s = common_params(Schema::new());
                if *name == "cargo.test" {
                    s = s
                        .param("filter", Param::string("only tests whose name contains this").min_length(1))
                        .param("no_fail_fast", Param::boolean("run every test binary even after a failure").default(json!(true)));
                }
                verb(name, VerbKind::Spawn, summary, s)
                    .programs(&["cargo"])
                    // Build scripts and tests are the repository's code; cargo
                    // writes target/ and Cargo.lock and may fetch crates.
                    .effects(&[Effect::ReadsRepo, Effect::WritesRepo, Effect::RunsRepoCode, Effect::LongRunning, Effect::Network])
                    .result_schema(messages::result_schema())
            })
            .collect();
        verbs.push(
            verb(
                "cargo.metadata",
                VerbKind::Exec,
                "Workspace members, packages and their targets",
                Schema::new().param("dir", Param::string("directory of the crate or workspace, relative to the root").min_length(1)),
            )
            .programs(&["cargo"])
            // `--no-deps` fetches nothing, but the repository's own
            // `.cargo/config.toml` can name programs cargo runs (rustc-wrapper).
            .effects(&[Effect::ReadsRepo, Effect::RunsRepoCode])
            .result_schema(json!({
                "type": "object",
                "required": ["workspace_root", "workspace_members", "packages"],
                "properties": { "packages": { "type": "array", "items": { "type": "object", "required": ["name", "version", "targets"] } } }
            })),
        );
        plugin_info("cargo", "0.1.0", verbs)
    }

    fn plan(verb: &str, args: &Args) -> Result<Plan, OpError> {
        if verb == "cargo.metadata" {
            let mut c = cmd("cargo").env("CARGO_TERM_COLOR", "never").lit("metadata").lit("--format-version=1").lit("--no-deps");
            if let Some(dir) = args.str("dir")? {
                c = c.cwd(dir);
            }
            return Ok(Plan::Exec(c.into()));
        }
        let Some((_, sub, _)) = BUILD_VERBS.iter().find(|(name, _, _)| *name == verb) else {
            return Err(errors::unknown_verb(verb));
        };
        let mut c = cargo(args, sub)?;
        if verb == "cargo.test" {
            if args.bool_or("no_fail_fast", true)? {
                c = c.lit("--no-fail-fast");
            }
            if let Some(filter) = args.str("filter")? {
                // After cargo's `--` the *test harness* parses options, so
                // this is not an end-of-options marker: the filter stays a
                // plain value, refused by the host if it starts with `-`.
                c = c.lit("--").value(filter);
            }
        }
        Ok(Plan::Spawn(c.into()))
    }

    fn map_result(verb: &str, _args: &Args, outcome: &Outcome) -> Result<Value, OpError> {
        if verb == "cargo.metadata" {
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
            return Ok(json!({ "workspace_root": m["workspace_root"], "workspace_members": members, "packages": packages }));
        }
        if outcome.is_running() {
            // cargo has no run id of its own: no entity, so job.kill stops
            // the process group.
            return Ok(json!({}));
        }
        let r = messages::parse(&outcome.stdout);
        let count = |level: &str| r.diagnostics.iter().filter(|d| d["level"] == level).count();
        let mut out = json!({
            "success": outcome.exit_code == Some(0),
            "exit_code": outcome.exit_code,
            "diagnostics": r.diagnostics,
            "counts": { "errors": count("error"), "warnings": count("warning") },
        });
        if verb == "cargo.test" {
            let n = |o: &str| r.tests.iter().filter(|t| t["outcome"] == o).count();
            out["tests"] = json!({ "passed": n("passed"), "failed": n("failed"), "ignored": n("ignored"), "results": r.tests });
        }
        Ok(out)
    }
}

verbgate_plugin_sdk::plugin!(Cargo);
