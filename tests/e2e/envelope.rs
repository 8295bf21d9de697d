//! The per-op envelope through `verbgate request`: schema fingerprints on
//! spawn verbs, schemas carried once, the allow list, input order.

use serde_json::json;
use verbgate_tests::Env;

fn echo_env() -> Env {
    Env::with_plugin("fixture-echo")
}

#[test]
fn spawn_verbs_require_the_current_fingerprint() {
    let env = echo_env();
    let help = env.request(&json!({"help": "echo.job"}));
    let fp = help["help"]["schema_fingerprint"].as_str().unwrap().to_string();
    assert_eq!(help["help"]["fingerprint_required"], true);

    let out = env.request(&json!({"ops": [
        {"op": "echo.job", "args": {"word": "a"}, "dry_run": true},
        {"op": "echo.job", "args": {"word": "b"}, "dry_run": true, "schema_fingerprint": "sha256:0000"},
        {"op": "echo.job", "args": {"word": "c"}, "dry_run": true, "schema_fingerprint": fp},
    ]}));
    let r = out["results"].as_array().unwrap();
    assert_eq!(r[0]["error"]["code"], "fingerprint_required", "{out}");
    assert_eq!(r[1]["error"]["code"], "fingerprint_stale", "{out}");
    for e in [&r[0]["error"], &r[1]["error"]] {
        assert_eq!(e["schema_fingerprint"], fp.as_str());
        assert_eq!(e["help"], json!({"help": "echo.job"}));
    }
    // One schema, carried once for both rejections.
    assert_eq!(out["schemas"].as_object().unwrap().len(), 1);
    assert_eq!(out["schemas"][&fp], help["help"]["params_schema"]);
    assert_eq!(r[2]["ok"], true, "{out}");
    assert_eq!(r[2]["result"]["plan"]["kind"], "spawn");
    assert_eq!(out["status"], "partial");
}

#[test]
fn exec_verbs_need_no_fingerprint_and_results_keep_input_order() {
    let env = echo_env();
    let out = env.request(&json!({"ops": [
        {"op": "echo.sleep", "args": {"ms": 400}},
        {"op": "echo.argv", "args": {"word": "second"}},
        {"op": "nope.verb"},
        {"op": "echo.argv", "args": {"word": "fourth"}},
    ]}));
    let r = out["results"].as_array().unwrap();
    assert_eq!(r.len(), 4);
    assert_eq!(r[0]["result"]["slept_ms"], 400, "{out}");
    assert_eq!(r[1]["result"]["argv"], json!(["second"]));
    assert_eq!(r[2]["error"]["code"], "unknown_verb");
    assert_eq!(r[3]["result"]["argv"], json!(["fourth"]));
    let ops: Vec<&str> = r.iter().map(|x| x["op"].as_str().unwrap()).collect();
    assert_eq!(ops, ["echo.sleep", "echo.argv", "nope.verb", "echo.argv"]);
}

#[test]
fn the_allow_list_narrows_the_surface() {
    let env = Env::new().with_config("allow = [\"git.*\", \"echo.argv\"]");
    env.install("fixture-echo");
    let verbs = env.verbs();
    let names: Vec<&str> =
        verbs["verbs"].as_array().unwrap().iter().map(|v| v["verb"].as_str().unwrap()).collect();
    assert!(names.contains(&"git.log") && names.contains(&"echo.argv"), "{names:?}");
    assert!(!names.contains(&"echo.fail"), "{names:?}");
    let why =
        verbs["unavailable"].as_array().unwrap().iter().find(|u| u["verb"] == "echo.fail").unwrap();
    assert_eq!(why["code"], "not_allowed");
    assert_eq!(env.op("echo.fail", json!({"code": 1}))["error"]["code"], "unknown_verb");
}

#[test]
fn a_request_that_is_not_json_is_an_explicit_error() {
    let env = Env::new();
    let (code, out, _) = env.run(&["request", "{not json"]);
    assert_eq!(code, 4);
    assert_eq!(out["status"], "error");
    assert_eq!(out["error"]["code"], "invalid_request");
}

#[test]
fn wrong_types_and_values_outside_an_enum_name_the_param_and_other_ops_still_run() {
    let env = echo_env();
    let out = env.request(&json!({"ops": [
        {"op": "echo.argv", "args": {"word": 5}},
        {"op": "job.list", "args": {"status": "bogus"}},
        {"op": "echo.fail", "args": {"code": 999}},
        {"op": "echo.argv", "args": {"word": "fine"}},
    ]}));
    let r = out["results"].as_array().unwrap();
    for (i, param) in [(0, "word"), (1, "status"), (2, "code")] {
        assert_eq!(r[i]["error"]["code"], "invalid_args", "{out}");
        assert_eq!(r[i]["error"]["param"], param, "{out}");
        let fp = r[i]["error"]["schema_fingerprint"].as_str().unwrap();
        assert!(out["schemas"][fp].is_object(), "schema attached for {param}");
    }
    assert_eq!(r[3]["result"]["argv"], json!(["fine"]));
}

#[test]
fn the_fingerprint_changes_when_the_schema_changes() {
    // Two verbs with different schemas have different fingerprints, and a
    // verb's fingerprint is the canonical hash of exactly the schema help shows.
    let env = echo_env();
    let a = env.request(&json!({"help": "echo.argv"}))["help"].clone();
    let b = env.request(&json!({"help": "echo.fail"}))["help"].clone();
    assert_ne!(a["schema_fingerprint"], b["schema_fingerprint"]);
    let fp = verbgate::json::fingerprint(&a["params_schema"]);
    assert_eq!(a["schema_fingerprint"], fp.as_str());
    let mut changed = a["params_schema"].clone();
    changed["properties"]["word"]["maxLength"] = json!(3);
    assert_ne!(verbgate::json::fingerprint(&changed), fp);
}
