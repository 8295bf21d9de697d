//! The bundled `jest.run` verb against the real jest (`just test-tools`,
//! pinned in scripts/node-tools), on the fixture suite in
//! `tests/fixtures/jest-suite`: a passing, a failing, a skipped, a todo
//! test and a file that errors before its tests run, each mapped from
//! `jest --json`; selection by typed parameters only.

use serde_json::{json, Value};
use verbgate_tests::{js_outcomes, js_test, require_test_tool, Env};

/// An environment whose root is a copy of the fixture suite.
fn suite_env() -> Env {
    require_test_tool("jest");
    Env::new().with_fixture("jest-suite")
}

fn spawn(env: &Env, args: Value) -> Value {
    env.spawn("jest.run", args)
}

/// Run a job to its end; the mapped result.
fn run_job(env: &Env, args: Value) -> Value {
    let r = env.run_job("jest.run", args);
    assert_eq!(r["ok"], true, "{r}");
    r["result"]["result"].clone()
}

#[test]
fn every_outcome_is_mapped_from_jest_json() {
    let env = suite_env();
    let r = run_job(&env, json!({}));
    assert_eq!(
        (r["success"].clone(), r["exit_code"].clone(), r["status"].clone()),
        (json!(false), json!(1), json!("error")),
        "{r}"
    );
    let want: Vec<(String, String, String)> = [
        ("broken.test.js", "", "error"),
        ("outcomes.test.js", "math > adds", "passed"),
        ("outcomes.test.js", "math > fails", "failed"),
        ("outcomes.test.js", "math > later", "todo"),
        ("outcomes.test.js", "math > skipped", "skipped"),
        ("outcomes.test.js", "math > throws", "failed"),
    ]
    .iter()
    .map(|(f, n, o)| (f.to_string(), n.to_string(), o.to_string()))
    .collect();
    assert_eq!(js_outcomes(&r), want, "{r}");
    assert_eq!(
        r["counts"],
        json!({"passed": 1, "failed": 2, "skipped": 1, "todo": 1, "error": 1, "total": 6})
    );
    let test = |title: &str| js_test(&r, title);
    let fails = test("fails");
    let file = env.root.join("test/outcomes.test.js").display().to_string();
    assert_eq!(
        (fails["file"].as_str(), fails["line"].as_u64()),
        (Some(file.as_str()), Some(11)),
        "{fails}"
    );
    assert_eq!(
        fails["failure_location"],
        json!({"file": file, "line": 3, "column": 17}),
        "it failed in helper(): {fails}"
    );
    assert!(fails["message"].as_str().unwrap().contains("toBe"), "{fails}");
    assert_eq!(test("throws")["message"], "TypeError: boom");
    let broken = r["tests"].as_array().unwrap().iter().find(|t| t["outcome"] == "error").unwrap();
    assert!(broken["message"].as_str().unwrap().contains("does-not-exist.js"), "{broken}");
}

#[test]
fn tests_are_selected_by_exact_path_and_name_and_a_path_is_never_an_option() {
    let env = suite_env();
    let r = run_job(&env, json!({"files": ["test/outcomes.test.js"], "name": "adds"}));
    assert_eq!(
        (r["status"].clone(), r["counts"]["passed"].clone(), r["success"].clone()),
        (json!("passed"), json!(1), json!(true)),
        "{r}"
    );
    for (args, code) in [
        (json!({"files": ["--config=/etc/passwd"]}), "unsafe_argv"),
        (json!({"files": ["/etc/passwd"]}), "plan_refused"),
        (json!({"updateSnapshot": true}), "unknown_param"),
    ] {
        let r = spawn(&env, args.clone());
        assert_eq!(r["error"]["code"], code, "{args}: {r}");
    }
}
