//! The bundled `go` plugin: `go.test`, `go.build` and `go.vet` as jobs
//! (a first build of a module's dependencies can take minutes), each read
//! from the go command's JSON ([`events`]): per-package and per-test
//! outcomes with the output of failures, compiler errors with their place,
//! vet diagnostics.
//!
//! The module and build caches stay the user's (`GOMODCACHE` and
//! `GOCACHE` default under `$HOME`, which the host passes; the sandbox
//! reads the one and writes the other). The verbs work offline, as cargo's
//! do: `GOPROXY=off`, so a module that is not in the module cache yet is an
//! error naming it (fetch it with `go mod download` first) rather than a
//! download, and `GOTOOLCHAIN=local`, so the go command never downloads
//! and runs another toolchain because a `go.mod` asks for one. `go build`
//! writes no binary (`-o /dev/null`). Only `go test` runs the repository's
//! code (the tests); building and vetting compile it without running it.
//!
//! Packages are named by patterns: `./...`, `./cmd/app` (relative to
//! `dir`, confined by the host) or import paths (`example.com/m/pkg`).

mod events;

use events::{AnalyzerError, Place, VetDiagnostic};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use verbgate_plugin_sdk::{
    cmd, errors, json, Cmd, Effect, ErrorCode, OpError, Outcome, OutcomeExt, Plan, Value, Verb,
    VerbKind,
};

/// The parameters every go verb shares.
#[derive(Deserialize, JsonSchema)]
struct Common {
    /// package patterns: ./..., ./cmd/app (relative to dir) or import paths (default ./...)
    #[serde(default)]
    #[schemars(length(max = 256), inner(length(min = 1, max = 512)))]
    packages: Vec<String>,
    /// directory to run in (inside the module), relative to the root
    #[schemars(length(min = 1))]
    dir: Option<String>,
}

/// `go <sub> -json` with the shared settings, in `dir`.
fn go(common: &Common, sub: &'static str) -> Cmd {
    let mut c = cmd("go").env("GOTOOLCHAIN", "local").env("GOPROXY", "off").lit(sub).lit("-json");
    if let Some(dir) = &common.dir {
        c = c.cwd(dir);
    }
    c
}

/// The package patterns, after the verb's own flags: relative ones as
/// confined paths, import paths as values (the host refuses either when it
/// starts with `-`).
fn with_packages(mut c: Cmd, common: &Common) -> Result<Cmd, OpError> {
    if common.packages.is_empty() {
        return Ok(c.lit("./..."));
    }
    for p in &common.packages {
        if p.starts_with('/') || p.split('/').any(|s| s == "..") {
            return Err(errors::op_error(
                ErrorCode::InvalidArgs,
                &format!("the package pattern {p:?} leaves the directory: use ./relative/... patterns or import paths"),
                Some(json!({ "param": "packages", "value": p })),
            ));
        }
        c = if p.starts_with('.') { c.path(p) } else { c.value(p) };
    }
    Ok(c)
}

/// A go run that printed no JSON at all: the go command refused before
/// building anything (a bad pattern, no go.mod, a toolchain it will not
/// fetch); it said why on stderr.
fn refused(outcome: &Outcome, what: &str) -> OpError {
    let mut e = errors::exit_nonzero(outcome);
    e.message = format!(
        "{what} stopped before building anything: {}",
        e.message.trim_start_matches("the program ")
    );
    e
}

/// `go.test` args.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct TestArgs {
    /// only tests matching this regular expression (go test -run)
    #[schemars(length(min = 1, max = 1024))]
    run: Option<String>,
    /// skip tests matching this regular expression (go test -skip)
    #[schemars(length(min = 1, max = 1024))]
    skip: Option<String>,
    /// go test -short
    #[serde(default)]
    short: bool,
    #[serde(flatten)]
    common: Common,
}

/// `go.test`.
struct Test;

impl Verb for Test {
    const NAME: &'static str = "go.test";
    const SUMMARY: &'static str = "Per-test outcomes";
    const KIND: VerbKind = VerbKind::Spawn;
    const PROGRAMS: &'static [&'static str] = &["go"];
    const EFFECTS: &'static [Effect] =
        &[Effect::ReadsRepo, Effect::WritesRepo, Effect::RunsRepoCode, Effect::LongRunning];
    type Args = TestArgs;
    type Output = events::TestResult;

    fn plan(args: &TestArgs) -> Result<Plan, OpError> {
        let mut c = go(&args.common, "test");
        if let Some(r) = &args.run {
            c = c.opt("run", r);
        }
        if let Some(s) = &args.skip {
            c = c.opt("skip", s);
        }
        if args.short {
            c = c.lit("-short");
        }
        Ok(Plan::Spawn(with_packages(c, &args.common)?.into()))
    }

    fn map(_: &TestArgs, outcome: &Outcome) -> Result<events::TestResult, OpError> {
        // (The go command has no run id of its own: a running job names no
        // entity, and job.kill stops the group.)
        let run = events::test_run(&outcome.stdout);
        let out = run.to_result(outcome.exit_code);
        if out.packages.is_empty() && run.build.failed.is_empty() && outcome.exit_code != Some(0) {
            return Err(refused(outcome, "go test"));
        }
        Ok(out)
    }
}

/// `go.build` and `go.vet` args.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct PackagesArgs {
    #[serde(flatten)]
    common: Common,
}

/// `go.build`.
struct Build;

impl Verb for Build {
    const NAME: &'static str = "go.build";
    const SUMMARY: &'static str = "Build errors with place";
    const KIND: VerbKind = VerbKind::Spawn;
    const PROGRAMS: &'static [&'static str] = &["go"];
    const EFFECTS: &'static [Effect] = &[Effect::ReadsRepo, Effect::LongRunning];
    type Args = PackagesArgs;
    type Output = BuildResult;

    fn plan(args: &PackagesArgs) -> Result<Plan, OpError> {
        Ok(Plan::Spawn(
            with_packages(go(&args.common, "build").lit("-o").lit("/dev/null"), &args.common)?
                .into(),
        ))
    }

    fn map(_: &PackagesArgs, outcome: &Outcome) -> Result<BuildResult, OpError> {
        let mut build = events::Build::default();
        for line in outcome.stdout_text().lines() {
            if let Ok(e) = verbgate_plugin_sdk::serde_json::from_str::<Value>(line) {
                build.take(&e);
            }
        }
        if outcome.exit_code != Some(0) && build.failed.is_empty() {
            return Err(refused(outcome, "go build"));
        }
        Ok(BuildResult {
            success: outcome.exit_code == Some(0),
            exit_code: outcome.exit_code,
            truncated: build.total > build.errors.len(),
            errors: build.errors,
            failed_packages: build.failed,
        })
    }
}

// `go.build`'s result (a plain comment, as on every result type: a type's
// doc comment would become its schema's description).
#[derive(Serialize, JsonSchema)]
struct BuildResult {
    success: bool,
    exit_code: Option<i32>,
    errors: Vec<Place>,
    failed_packages: Vec<String>,
    /// more than 2000 errors
    truncated: bool,
}

/// `go.vet`.
struct Vet;

impl Verb for Vet {
    const NAME: &'static str = "go.vet";
    const SUMMARY: &'static str = "Vet diagnostics";
    const KIND: VerbKind = VerbKind::Spawn;
    const PROGRAMS: &'static [&'static str] = &["go"];
    const EFFECTS: &'static [Effect] = &[Effect::ReadsRepo, Effect::LongRunning];
    type Args = PackagesArgs;

    type Output = VetResult;

    fn plan(args: &PackagesArgs) -> Result<Plan, OpError> {
        Ok(Plan::Spawn(with_packages(go(&args.common, "vet"), &args.common)?.into()))
    }

    fn map(_: &PackagesArgs, outcome: &Outcome) -> Result<VetResult, OpError> {
        let (diagnostics, analyzer_errors, total) =
            events::vet(&outcome.stdout).map_err(|e| errors::invalid_output(&e))?;
        // `go vet -json` exits 0 with diagnostics; non-zero means a package
        // could not be checked at all (its reason is on stderr) — or
        // nothing was, when stdout is empty too.
        if outcome.exit_code != Some(0)
            && outcome.stdout.iter().all(u8::is_ascii_whitespace)
            && outcome.stderr.is_empty()
        {
            return Err(refused(outcome, "go vet"));
        }
        let stderr = outcome.stderr_text();
        let start = stderr.len().saturating_sub(4096);
        let start =
            (start..stderr.len()).find(|i| stderr.is_char_boundary(*i)).unwrap_or(stderr.len());
        Ok(VetResult {
            success: outcome.exit_code == Some(0) && total == 0 && analyzer_errors.is_empty(),
            exit_code: outcome.exit_code,
            truncated: total > diagnostics.len(),
            diagnostics,
            analyzer_errors,
            stderr_tail: stderr[start..].trim().to_string(),
        })
    }
}

// `go.vet`'s result.
#[derive(Serialize, JsonSchema)]
struct VetResult {
    /// every package vetted without a diagnostic
    success: bool,
    exit_code: Option<i32>,
    diagnostics: Vec<VetDiagnostic>,
    analyzer_errors: Vec<AnalyzerError>,
    /// more than 2000 diagnostics
    truncated: bool,
    /// what go vet said about packages it could not check (they do not type-check): its text, unparsed
    stderr_tail: String,
}

verbgate_plugin_sdk::plugin!(Go { name: "go", version: "0.1.0", verbs: [Test, Build, Vet] });

#[cfg(test)]
mod tests {
    use super::*;
    use verbgate_plugin_sdk::Arg;

    #[test]
    fn patterns_are_paths_or_values_and_never_leave_the_directory() {
        let Plan::Spawn(c) = Go::plan(
            "go.test",
            r#"{"packages":["./pkg/...","example.com/m/x"],"run":"TestA","short":true}"#,
        )
        .unwrap() else {
            panic!("not a spawn")
        };
        assert!(c.args.iter().any(|a| matches!(a, Arg::Path(p) if p == "./pkg/...")));
        assert!(c.args.iter().any(|a| matches!(a, Arg::Value(v) if v == "example.com/m/x")));
        assert!(c
            .args
            .iter()
            .any(|a| matches!(a, Arg::Option(o) if o.name == "run" && o.value == "TestA")));
        assert!(c.env.contains(&("GOTOOLCHAIN".to_string(), "local".to_string())));
        for bad in ["../other/...", "/abs/pkg", "./a/../../b"] {
            let e = Go::plan("go.vet", &format!(r#"{{"packages":[{bad:?}]}}"#)).unwrap_err();
            assert_eq!(e.code, "invalid_args", "{bad}");
        }
        let Plan::Spawn(c) = Go::plan("go.build", "{}").unwrap() else { panic!("not a spawn") };
        assert!(matches!(c.args.last(), Some(Arg::Literal(l)) if l == "./..."));
    }

    #[test]
    fn a_build_that_refused_to_start_is_an_error_and_build_errors_have_places() {
        let e = Go::map_result(
            "go.build",
            "{}",
            &Outcome::exited(1, "")
                .with_stderr("go: go.mod requires go >= 1.99 (running go 1.27; GOTOOLCHAIN=local)"),
        )
        .unwrap_err();
        assert_eq!(e.code, "exit_nonzero");
        assert!(e.message.contains("GOTOOLCHAIN=local"), "{}", e.message);
        let out = "{\"ImportPath\":\"m/b\",\"Action\":\"build-output\",\"Output\":\"# m/b\\n\"}\n{\"ImportPath\":\"m/b\",\"Action\":\"build-output\",\"Output\":\"b/b.go:3:23: undefined: x\\n\"}\n{\"ImportPath\":\"m/b\",\"Action\":\"build-fail\"}\n";
        let v: Value = verbgate_plugin_sdk::serde_json::from_str(
            &Go::map_result("go.build", "{}", &Outcome::exited(1, out)).unwrap(),
        )
        .unwrap();
        assert_eq!(
            v["errors"],
            json!([{ "package": "m/b", "file": "b/b.go", "line": 3, "column": 23, "message": "undefined: x" }])
        );
        assert_eq!(v["failed_packages"], json!(["m/b"]));
    }
}
