//! The bundled `npm.run` verb against the real npm, on the fixture project
//! in `tests/fixtures/npm-project`: scripts are targets resolved from
//! `npm pkg get scripts`, run as jobs with their pre-scripts, take no
//! extra arguments, and an edited script changes the fingerprint.

use serde_json::{json, Value};
use std::path::Path;
use verbgate_tests::{copy_tree, Env};

fn project_env() -> Env {
    let env = Env::new();
    copy_tree(&Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/npm-project"), &env.root);
    env
}

fn fingerprint(env: &Env, target: &str) -> Value {
    let help = env.request(&json!({"help": format!("npm.run:{target}")}));
    help["help"]["schema_fingerprint"].clone()
}

fn start(env: &Env, args: Value, fp: &Value) -> Value {
    env.request(&json!({"ops": [{"op": "npm.run", "args": args, "schema_fingerprint": fp}]}))
        ["results"][0]
        .clone()
}

fn run(env: &Env, args: Value, fp: &Value) -> Value {
    let started = start(env, args, fp);
    let Some(id) = started["result"]["job"]["id"].as_str().map(str::to_string) else {
        return started;
    };
    let w = env.op("job.wait", json!({"ids": [&id], "max_wait_seconds": 120}));
    assert_eq!(w["result"]["all_terminal"], true, "{w}");
    env.op("job.result", json!({"id": id}))
}

#[test]
fn a_script_runs_as_a_job_with_its_pre_script_and_reports_its_exit() {
    let env = project_env();
    let listing = env.request(&json!({"help": "npm.run:"}));
    let names: Vec<&str> = listing["help"]["targets"]
        .as_array()
        .unwrap_or_else(|| panic!("{listing}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["prebuild", "build", "fail"], "{listing}");
    let fp = fingerprint(&env, "build");
    let r = run(&env, json!({"target": "build"}), &fp);
    let result = &r["result"]["result"];
    assert_eq!(
        (result["success"].clone(), result["exit_code"].clone()),
        (json!(true), json!(0)),
        "{r}"
    );
    assert!(result["stdout_tail"].as_str().unwrap().contains("built"), "{r}");
    assert_eq!(
        std::fs::read_to_string(env.root.join("prebuilt.txt")).unwrap(),
        "pre",
        "npm ran the prebuild script"
    );
    assert_eq!(std::fs::read_to_string(env.root.join("built.txt")).unwrap(), "done");

    let r = run(&env, json!({"target": "fail"}), &fingerprint(&env, "fail"));
    let result = &r["result"]["result"];
    assert_eq!(
        (result["success"].clone(), result["exit_code"].clone()),
        (json!(false), json!(3)),
        "{r}"
    );
    assert!(result["stderr_tail"].as_str().unwrap().contains("failing on purpose"), "{r}");
}

#[test]
fn a_script_takes_no_arguments_and_an_edited_script_is_a_changed_target() {
    let env = project_env();
    let fp = fingerprint(&env, "build");
    let r = run(&env, json!({"target": "build", "args": ["--", "--evil"]}), &fp);
    assert_eq!(r["error"]["code"], "unknown_param", "{r}");
    let r = run(&env, json!({"target": "deploy"}), &fp);
    assert_eq!(r["error"]["code"], "not_found", "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("build"), "names the scripts: {r}");
    // Editing the prebuild script changes what `build` does: the op says
    // so (the target changed since the caller's fingerprint), as just.run does.
    let manifest = std::fs::read_to_string(env.root.join("package.json"))
        .unwrap()
        .replace("'pre'", "'edited'");
    std::fs::write(env.root.join("package.json"), manifest).unwrap();
    let started = start(&env, json!({"target": "build"}), &fp);
    assert_eq!(
        started["result"]["target"]["changed"], true,
        "the change must be reported: {started}"
    );
    assert_ne!(started["result"]["target"]["fingerprint"], fp);
    let unchanged = start(&env, json!({"target": "fail"}), &fingerprint(&env, "fail"));
    assert_eq!(unchanged["result"]["target"]["changed"], false, "{unchanged}");
}

#[test]
fn a_root_without_package_json_has_no_scripts() {
    let env = Env::new();
    let r = env.request(&json!({"help": "npm.run:build"}));
    assert_eq!(r["error"]["code"], "not_found", "{r}");
}

#[test]
fn the_catalog_with_every_bundled_verb_is_at_most_100_bytes_a_verb() {
    // The catalog is paid on every discovery call: with the JavaScript, Go
    // and Python verbs it must still average at most 100 bytes a verb,
    // every map it carries included.
    for tool in verbgate_tests::TEST_TOOLS {
        verbgate_tests::require_test_tool(tool);
    }
    let env = Env::new();
    let (code, response, _) = env.run(&["request", r#"{"help": true}"#]);
    assert_eq!(code, 0, "{response}");
    let verbs: usize = response["help"]["verbs"]
        .as_object()
        .unwrap()
        .values()
        .map(|g| g.as_array().unwrap().len())
        .sum();
    assert!(verbs >= 36, "{verbs} verbs: {response}");
    assert!(
        response["help"].get("unavailable").is_none(),
        "every program is installed: {response}"
    );
    let bytes = response.to_string().len();
    assert!(
        bytes <= 100 * verbs,
        "the catalog is {bytes} bytes for {verbs} verbs ({} a verb)",
        bytes / verbs
    );
}
