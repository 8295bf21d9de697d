//! The bundled `vitest.run` verb against the real vitest (`just
//! test-tools`, pinned in scripts/node-tools), on the fixture suite in
//! `tests/fixtures/vitest-suite`: a passing, a failing, a skipped, a todo
//! test and a file that errors before its tests run, each mapped from
//! vitest's JSON reporter; selection by typed parameters only.

use serde_json::{json, Value};
use verbgate_tests::{js_outcomes, js_test, require_test_tool, Env};

/// An environment whose root is a copy of the fixture suite.
fn suite_env() -> Env {
    require_test_tool("vitest");
    Env::new().with_fixture("vitest-suite")
}

fn spawn(env: &Env, args: Value) -> Value {
    env.spawn("vitest.run", args)
}

/// Run a job to its end; `job.result`'s answer.
fn run_job(env: &Env, args: Value) -> Value {
    let r = env.run_job("vitest.run", args);
    assert_eq!(r["ok"], true, "{r}");
    r["result"]["result"].clone()
}

#[test]
fn every_outcome_is_mapped_from_the_json_reporter() {
    let env = suite_env();
    let r = run_job(&env, json!({}));
    assert_eq!(
        (r["success"].clone(), r["exit_code"].clone(), r["status"].clone()),
        (json!(false), json!(1), json!("error")),
        "{r}"
    );
    let got = js_outcomes(&r);
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
    assert_eq!(got, want, "{r}");
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
        "the test's own line: {fails}"
    );
    assert_eq!(
        fails["failure_location"],
        json!({"file": file, "line": 3, "column": 17}),
        "it failed in helper(): {fails}"
    );
    assert!(fails["message"].as_str().unwrap().contains("expected 3 to be 2"), "{fails}");
    assert!(
        fails["details"].as_str().unwrap().contains("outcomes.test.js:12"),
        "the stack, with the call site: {fails}"
    );
    assert!(fails["duration_ms"].as_f64().unwrap() >= 0.0);
    assert_eq!(test("throws")["message"], "TypeError: boom");
    let broken = r["tests"].as_array().unwrap().iter().find(|t| t["outcome"] == "error").unwrap();
    assert!(broken["message"].as_str().unwrap().contains("does-not-exist.js"), "{broken}");
}

#[test]
fn tests_are_selected_by_file_and_name_and_a_filter_is_never_an_option() {
    let env = suite_env();
    let r = run_job(&env, json!({"files": ["test/outcomes.test.js"], "name": "adds"}));
    assert_eq!(
        (r["status"].clone(), r["counts"]["passed"].clone()),
        (json!("passed"), json!(1)),
        "{r}"
    );
    assert_eq!(r["success"], true, "{r}");
    let r = run_job(&env, json!({"files": ["test/nothing-here"]}));
    assert_eq!(
        (r["status"].clone(), r["counts"]["total"].clone()),
        (json!("no_tests"), json!(0)),
        "{r}"
    );
    for (args, code) in [
        (json!({"files": ["--reporter=verbose"]}), "unsafe_argv"),
        (json!({"files": ["../outside"]}), "plan_refused"),
        (json!({"args": ["--update"]}), "unknown_param"),
    ] {
        let r = spawn(&env, args.clone());
        assert_eq!(r["error"]["code"], code, "{args}: {r}");
    }
}

#[test]
fn a_run_writes_no_snapshot_and_runs_without_asking_in_the_sandbox() {
    let env = suite_env();
    std::fs::write(
        env.root.join("test/snap.test.js"),
        "test('snap', () => { expect({a: 1}).toMatchSnapshot(); });\n",
    )
    .unwrap();
    let r = run_job(&env, json!({"files": ["test/snap.test.js"]}));
    // CI=true: a missing snapshot fails the test instead of being written.
    assert_eq!(r["counts"]["failed"], 1, "{r}");
    assert!(!env.root.join("test/__snapshots__").exists(), "no snapshot file was written");
    let help = env.request(&json!({"help": "vitest.run"}));
    assert_eq!(
        help["help"]["effects"],
        json!(["reads_repo", "writes_repo", "runs_repo_code", "long_running"]),
        "{help}"
    );
}
