//! The bundled `npm` plugin: `npm.run`, a two-stage verb. Its targets are
//! the `scripts` of the root's `package.json`, read with `npm pkg get
//! scripts` (npm's JSON answer, never `npm run`'s human listing). A
//! script's identity is its command together with its `pre`/`post`
//! scripts, which `npm run` runs around it: editing any of them changes the
//! target's fingerprint, so a caller holding an old fingerprint is told the
//! script changed before it runs.
//!
//! There is no argument channel: a script runs exactly as `package.json`
//! writes it (`npm run <script>`, nothing after it), so a caller cannot
//! append words to a command line the repository wrote. npm's update check
//! (a network call to the registry) is turned off.

use schemars::JsonSchema;
use serde::Deserialize;
use verbgate_plugin_sdk::{
    cmd, errors, json, Cmd, Command, Effect, ErrorCode, Map, OpError, Outcome, OutcomeExt, Plan,
    Resolved, RunTails, Value, Verb, VerbKind,
};
/// Most of a script's command shown as its summary.
const SUMMARY_BYTES: usize = 200;

/// `npm` with the settings every call shares, as npm's own flags: no
/// update check (a registry call), no funding or audit chatter, no colour.
fn npm() -> Cmd {
    cmd("npm")
        .lit("--update-notifier=false")
        .lit("--fund=false")
        .lit("--audit=false")
        .lit("--color=false")
}

/// The command that lists the scripts.
fn scripts_cmd() -> Command {
    npm().lit("pkg").lit("get").lit("scripts").into()
}

/// The scripts `npm pkg get scripts` printed.
fn scripts(outcome: &Outcome) -> Result<Map<String, Value>, OpError> {
    let v: Result<Value, _> = verbgate_plugin_sdk::serde_json::from_slice(&outcome.stdout);
    // npm answers an unreadable package.json with a JSON error object.
    if let Ok(Value::Object(o)) = &v {
        if let Some(err) = o.get("error") {
            if err["code"] == "ENOENT" {
                return Err(errors::not_found("there is no package.json in the root directory"));
            }
            return Err(errors::op_error(
                ErrorCode::ExitNonzero,
                &format!(
                    "npm cannot read package.json: {}",
                    err["summary"].as_str().unwrap_or("(no reason given)")
                ),
                Some(json!({ "npm_error": err })),
            ));
        }
    }
    outcome.success()?;
    match v {
        Ok(Value::Object(map)) => Ok(map.into_iter().filter(|(_, cmd)| cmd.is_string()).collect()),
        Ok(_) => {
            Err(errors::invalid_output("npm pkg get scripts printed JSON that is not an object"))
        }
        Err(e) => {
            Err(errors::invalid_output(&format!("npm pkg get scripts printed non-JSON: {e}")))
        }
    }
}

/// One line, no control characters, at most [`SUMMARY_BYTES`].
fn one_line(text: &str) -> String {
    let flat: String = text.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    if flat.len() <= SUMMARY_BYTES {
        return flat;
    }
    let mut end = SUMMARY_BYTES;
    while !flat.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &flat[..end])
}

/// `npm.run` args: the script, and nothing else (its resolved schema is
/// `target` alone, closed).
#[derive(Deserialize, JsonSchema)]
struct RunArgs {
    /// the package.json script to run
    #[schemars(length(min = 1))]
    target: String,
    /// Nothing: the resolved schema admits no other field.
    #[serde(flatten)]
    #[schemars(skip)]
    _rest: Map<String, Value>,
}

/// `npm.run`.
struct Run;

impl Verb for Run {
    const NAME: &'static str = "npm.run";
    const SUMMARY: &'static str = "Run a package.json script";
    const KIND: VerbKind = VerbKind::Spawn;
    // A script is any command the repository wrote. Like a just recipe it
    // runs in the OS sandbox without the network (an operator's
    // `[[sandbox.allow]]` opens it for scripts that need it).
    const EFFECTS: &'static [Effect] =
        &[Effect::ReadsRepo, Effect::WritesRepo, Effect::RunsRepoCode, Effect::LongRunning];
    const PROGRAMS: &'static [&'static str] = &["npm"];
    const TWO_STAGE: bool = true;
    type Args = RunArgs;
    type Output = RunTails;

    fn resolve_plan(_target: &str) -> Result<Command, OpError> {
        Ok(scripts_cmd())
    }

    fn resolve(target: &str, outcome: &Outcome) -> Result<Resolved, OpError> {
        let scripts = scripts(outcome)?;
        if target.is_empty() {
            let list: Vec<Value> =
                scripts.iter().map(|(name, c)| json!({ "name": name, "command": c })).collect();
            return Ok(Resolved {
                params_schema: Self::params_schema().to_string(),
                summary: format!("{} scripts", list.len()),
                identity: json!({ "targets": list }).to_string(),
            });
        }
        let command = scripts.get(target).and_then(Value::as_str).ok_or_else(|| {
            let names: Vec<&str> = scripts.keys().map(String::as_str).collect();
            errors::op_error(
                ErrorCode::NotFound,
                &format!("package.json has no script `{target}` (scripts: {})", names.join(", ")),
                Some(json!({ "target": target, "scripts": names })),
            )
        })?;
        // `npm run x` also runs `prex` and `postx`: they are part of what
        // the target does.
        let around = |prefix: &str| {
            scripts.get(&format!("{prefix}{target}")).cloned().unwrap_or(Value::Null)
        };
        Ok(Resolved {
            params_schema: json!({
                "type": "object",
                "properties": { "target": { "const": target, "description": "the script" } },
                "required": ["target"],
                "additionalProperties": false
            })
            .to_string(),
            summary: one_line(&format!("npm script: {command}")),
            identity: json!({ "script": target, "command": command, "pre": around("pre"), "post": around("post") }).to_string(),
        })
    }

    fn plan(args: &RunArgs) -> Result<Plan, OpError> {
        // The host checked the args against this script's closed schema:
        // `target` is all there is.
        Ok(Plan::Spawn(npm().lit("run").value(&args.target).into()))
    }

    fn map(_: &RunArgs, outcome: &Outcome) -> Result<RunTails, OpError> {
        Ok(RunTails::of(outcome))
    }
}

verbgate_plugin_sdk::plugin!(Npm { name: "npm", version: "0.1.0", verbs: [Run] });

#[cfg(test)]
mod tests {
    use super::*;
    use verbgate_plugin_sdk::Arg;

    const SCRIPTS: &str = r#"{"build":"tsc -p .","prebuild":"rm -rf dist","test":"vitest run","lines":"echo a\necho b"}"#;

    #[test]
    fn a_script_resolves_to_a_closed_schema_and_an_identity_with_its_pre_and_post_scripts() {
        let r = Npm::resolve("npm.run", "build", &Outcome::exited(0, SCRIPTS)).unwrap();
        let schema: Value = verbgate_plugin_sdk::serde_json::from_str(&r.params_schema).unwrap();
        assert_eq!(schema["additionalProperties"], false);
        assert_eq!(schema["properties"]["target"]["const"], "build");
        let identity: Value = verbgate_plugin_sdk::serde_json::from_str(&r.identity).unwrap();
        assert_eq!(
            identity,
            json!({ "script": "build", "command": "tsc -p .", "pre": "rm -rf dist", "post": null })
        );
        assert_eq!(r.summary, "npm script: tsc -p .");
        let multi = Npm::resolve("npm.run", "lines", &Outcome::exited(0, SCRIPTS)).unwrap();
        assert!(!multi.summary.chars().any(char::is_control), "{}", multi.summary);
    }

    #[test]
    fn an_unknown_script_names_the_scripts_and_a_missing_manifest_is_not_found() {
        let e = Npm::resolve("npm.run", "deploy", &Outcome::exited(0, SCRIPTS)).unwrap_err();
        assert_eq!(e.code, "not_found");
        assert!(
            e.message.contains("deploy") && e.message.contains("build, prebuild, test, lines"),
            "{}",
            e.message
        );
        let enoent = r#"{"error":{"code":"ENOENT","summary":"Could not read package.json"}}"#;
        assert_eq!(
            Npm::resolve("npm.run", "x", &Outcome::exited(254, enoent)).unwrap_err().code,
            "not_found"
        );
        let listed = Npm::resolve("npm.run", "", &Outcome::exited(0, SCRIPTS)).unwrap();
        assert_eq!(listed.summary, "4 scripts");
    }

    #[test]
    fn the_plan_runs_the_script_by_name_and_nothing_else() {
        let Plan::Spawn(c) = Npm::plan("npm.run", r#"{"target":"test"}"#).unwrap() else {
            panic!("not a spawn")
        };
        assert_eq!(c.program, "npm");
        let values: Vec<&Arg> = c.args.iter().filter(|a| !matches!(a, Arg::Literal(_))).collect();
        assert!(matches!(values.as_slice(), [Arg::Value(v)] if v == "test"), "{values:?}");
        let out = Outcome::exited(2, "built\n").with_stderr("boom\n");
        let v: Value = verbgate_plugin_sdk::serde_json::from_str(
            &Npm::map_result("npm.run", r#"{"target":"x"}"#, &out).unwrap(),
        )
        .unwrap();
        assert_eq!(
            v,
            json!({ "success": false, "exit_code": 2, "stdout_tail": "built\n", "stderr_tail": "boom\n" })
        );
    }
}
