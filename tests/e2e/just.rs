//! `just.run`, the two-stage verb: recipes resolved from the justfile at
//! help time and again at run time, with changes reported in the result.

use serde_json::{json, Value};
use verbgate_tests::Env;

const JUSTFILE: &str = "# Greet someone\ngreet name greeting=\"hello\":\n    echo {{greeting}} {{name}}\n\n_hidden:\n    echo no\n\nfail:\n    exit 7\n";

fn just_env() -> Env {
    let env = Env::new().allowing(&["just.*"]);
    std::fs::write(env.root.join("justfile"), JUSTFILE).unwrap();
    env
}

fn run(env: &Env, args: Value, fp: Option<&Value>) -> Value {
    let mut op = json!({"op": "just.run", "args": args});
    if let Some(fp) = fp {
        op["schema_fingerprint"] = fp.clone();
    }
    env.request(&json!({ "ops": [op] }))["results"][0].clone()
}

fn result_of(env: &Env, started: &Value) -> Value {
    let id =
        started["result"]["job"]["id"].as_str().unwrap_or_else(|| panic!("{started}")).to_string();
    let w = env.op("job.wait", json!({"ids": [&id], "max_wait_seconds": 30}));
    assert_eq!(w["result"]["all_terminal"], true, "{w}");
    env.op("job.result", json!({"id": id}))["result"]["result"].clone()
}

#[test]
fn help_lists_recipes_and_resolves_one_into_a_closed_schema() {
    let env = just_env();
    let list = env.request(&json!({"help": "just.run"}));
    let names: Vec<&str> = list["help"]["targets"]
        .as_array()
        .unwrap_or_else(|| panic!("{list}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["fail", "greet"], "private recipes stay hidden: {list}");
    let greet = env.request(&json!({"help": "just.run:greet"}))["help"].clone();
    assert_eq!(greet["params_schema"]["additionalProperties"], false, "{greet}");
    assert_eq!(greet["params_schema"]["required"], json!(["target", "name"]));
    assert_eq!(greet["params_schema"]["properties"]["greeting"]["default"], "hello");
    assert_eq!(greet["summary"], "Greet someone");
    assert!(greet["schema_fingerprint"].as_str().unwrap().starts_with("sha256:"));
}

#[test]
fn a_recipe_runs_as_a_job_and_a_changed_recipe_is_reported() {
    let env = just_env();
    let fp = env.request(&json!({"help": "just.run:greet"}))["help"]["schema_fingerprint"].clone();
    let started = run(&env, json!({"target": "greet", "name": "world"}), Some(&fp));
    assert_eq!(started["ok"], true, "{started}");
    assert_eq!(started["result"]["target"]["changed"], false);
    let r = result_of(&env, &started);
    assert_eq!(r["success"], true, "{r}");
    assert_eq!(r["stdout_tail"], "hello world\n");

    // Edit the recipe after the fingerprint was read.
    std::fs::write(
        env.root.join("justfile"),
        JUSTFILE.replace("echo {{greeting}} {{name}}", "echo {{greeting}}, {{name}}!"),
    )
    .unwrap();
    let again = run(&env, json!({"target": "greet", "name": "you", "greeting": "hi"}), Some(&fp));
    assert_eq!(again["ok"], true, "{again}");
    assert_eq!(again["result"]["target"]["changed"], true, "the change must be reported: {again}");
    assert_ne!(again["result"]["target"]["fingerprint"], fp);
    assert_eq!(result_of(&env, &again)["stdout_tail"], "hi, you!\n");
}

#[test]
fn unknown_recipes_bad_params_and_missing_fingerprints_are_clear_errors() {
    let env = just_env();
    let unknown = env.request(&json!({"help": "just.run:deploy"}));
    assert_eq!(unknown["status"], "error");
    assert_eq!(unknown["error"]["code"], "not_found", "{unknown}");
    assert!(
        unknown["error"]["message"].as_str().unwrap().contains("greet"),
        "names the recipes: {unknown}"
    );
    let fp = env.request(&json!({"help": "just.run:greet"}))["help"]["schema_fingerprint"].clone();
    let typo = run(&env, json!({"target": "greet", "nmae": "x"}), Some(&fp));
    assert_eq!(typo["error"]["code"], "unknown_param", "{typo}");
    assert_eq!(typo["error"]["did_you_mean"], json!(["name"]));
    assert_eq!(typo["error"]["target_schema"]["additionalProperties"], false);
    let missing = run(&env, json!({"target": "greet", "name": "x"}), None);
    assert_eq!(missing["error"]["code"], "fingerprint_required", "{missing}");
    assert_eq!(missing["error"]["target_help"], json!({"help": "just.run:greet"}));
    let evil = run(&env, json!({"target": "greet", "name": "--justfile=/etc/passwd"}), Some(&fp));
    assert_eq!(evil["error"]["code"], "unsafe_argv", "{evil}");
    let failing_fp =
        env.request(&json!({"help": "just.run:fail"}))["help"]["schema_fingerprint"].clone();
    let failing = run(&env, json!({"target": "fail"}), Some(&failing_fp));
    let r = result_of(&env, &failing);
    assert_eq!((r["success"].clone(), r["exit_code"].clone()), (json!(false), json!(7)), "{r}");
}

/// Recipe parameters are positional. Skipping one whose default is an
/// expression used to shift every later value one place left (`{a, c}` of
/// `r a b=(expr) c="z"` ran `just r 1 3`, so `b` got `c`'s value): now the
/// call is refused naming the skipped parameter, while a skipped parameter
/// with a literal default is passed its literal.
#[test]
fn a_skipped_parameter_never_shifts_later_values() {
    let env = Env::new().allowing(&["just.*"]);
    let justfile = "r a b=(\"computed\" + \"!\") c=\"z\":\n    echo a={{a}} b={{b}} c={{c}}\n\nq a b=\"lit\" c=\"z\":\n    echo a={{a}} b={{b}} c={{c}}\n";
    std::fs::write(env.root.join("justfile"), justfile).unwrap();
    let fp = env.request(&json!({"help": "just.run:r"}))["help"]["schema_fingerprint"].clone();
    let skipped = run(&env, json!({"target": "r", "a": "1", "c": "3"}), Some(&fp));
    assert_eq!(skipped["ok"], false, "{skipped}");
    assert_eq!(skipped["error"]["code"], "invalid_args", "{skipped}");
    assert_eq!(skipped["error"]["param"], "b", "{skipped}");
    assert!(skipped["error"]["message"].as_str().unwrap().contains("explicitly"), "{skipped}");
    // Given explicitly, or with the later one left out too, it runs right.
    let full = run(&env, json!({"target": "r", "a": "1", "b": "2", "c": "3"}), Some(&fp));
    assert_eq!(result_of(&env, &full)["stdout_tail"], "a=1 b=2 c=3\n");
    let short = run(&env, json!({"target": "r", "a": "1"}), Some(&fp));
    assert_eq!(result_of(&env, &short)["stdout_tail"], "a=1 b=computed! c=z\n");
    // A literal default fills the gap.
    let fq = env.request(&json!({"help": "just.run:q"}))["help"]["schema_fingerprint"].clone();
    let literal = run(&env, json!({"target": "q", "a": "1", "c": "3"}), Some(&fq));
    assert_eq!(result_of(&env, &literal)["stdout_tail"], "a=1 b=lit c=3\n");
}
