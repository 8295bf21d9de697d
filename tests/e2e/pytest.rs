//! The bundled `pytest.run` verb against the real pytest (`just
//! test-tools`), on the fixture suite in `tests/fixtures/pytest-suite`: one
//! test of every outcome, each reported from pytest's JUnit report with its
//! file and line; selection through typed parameters only; pytest pinned to
//! its directory.

use serde_json::{json, Value};
use std::path::Path;
use verbgate_tests::{copy_tree, require_test_tool, Env};

/// An environment whose root is a copy of the fixture suite.
fn suite_env() -> Env {
    require_test_tool("pytest");
    // An operator's rule lets pytest run without asking even with the
    // sandbox off (the policy tests are below and in `e2e/policy`).
    Env::new().allowing(&["pytest.*"]).with_fixture("pytest-suite")
}

fn spawn(env: &Env, args: Value) -> Value {
    env.spawn("pytest.run", args)
}

/// Run a job to its end; `job.result`'s answer.
fn run_job(env: &Env, args: Value) -> Value {
    let r = env.run_job("pytest.run", args);
    assert_eq!(r["ok"], true, "{r}");
    r["result"].clone()
}

fn outcomes(r: &Value) -> Vec<(String, String)> {
    r["tests"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"))
        .iter()
        .map(|t| (t["node_id"].as_str().unwrap().into(), t["outcome"].as_str().unwrap().into()))
        .collect()
}

fn test<'a>(r: &'a Value, node_id: &str) -> &'a Value {
    r["tests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["node_id"] == node_id)
        .unwrap_or_else(|| panic!("{node_id} missing: {r}"))
}

#[test]
fn every_outcome_is_reported_with_file_and_line() {
    let env = suite_env();
    let job = run_job(&env, json!({}));
    let r = &job["result"];
    assert_eq!(
        (r["success"].clone(), r["exit_code"].clone(), r["status"].clone()),
        (json!(false), json!(1), json!("failed")),
        "{job}"
    );
    let f = "tests/test_outcomes.py";
    let want: Vec<(String, String)> = [
        ("test_passes", "passed"),
        ("test_fails", "failed"),
        ("test_skipped", "skipped"),
        ("test_errors", "error"),
        ("test_xfail", "xfail"),
        ("test_xpass_strict", "xpass"),
        ("test_slow", "passed"),
        ("TestGroup::test_param[a<b]", "passed"),
        ("TestGroup::test_param[c&d]", "passed"),
    ]
    .iter()
    .map(|(n, o)| (format!("{f}::{n}"), o.to_string()))
    .collect();
    assert_eq!(outcomes(r), want);
    assert_eq!(
        r["counts"],
        json!({"passed": 4, "failed": 1, "skipped": 1, "error": 1, "xfail": 1, "xpass": 1, "total": 9})
    );

    let fails = test(r, &format!("{f}::test_fails"));
    assert_eq!(
        (fails["file"].as_str(), fails["line"].as_u64()),
        (Some(f), Some(14)),
        "the test's def line: {fails}"
    );
    assert_eq!(fails["location"], json!({"file": f, "line": 7}), "it failed in helper(): {fails}");
    assert_eq!(fails["traceback"], json!([{"file": f, "line": 17}, {"file": f, "line": 7}]));
    assert!(fails["message"].as_str().unwrap().contains("value must be two"), "{fails}");
    assert!(fails["details"].as_str().unwrap().contains("assert 3 == 2"), "{fails}");
    assert!(
        fails["stdout"].as_str().unwrap().contains("captured stdout of a failing test"),
        "{fails}"
    );
    assert!(
        fails["stderr"].as_str().unwrap().contains("captured stderr of a failing test"),
        "{fails}"
    );
    assert!(fails["duration"].as_f64().unwrap() >= 0.0);

    let errors = test(r, &format!("{f}::test_errors"));
    assert_eq!(errors["location"], json!({"file": f, "line": 27}), "the fixture's raise: {errors}");
    assert!(errors["message"].as_str().unwrap().contains("fixture exploded"), "{errors}");
    assert_eq!(test(r, &format!("{f}::test_skipped"))["message"], "not on this machine");
    assert_eq!(test(r, &format!("{f}::test_xfail"))["message"], "known bug");
    assert_eq!(test(r, &format!("{f}::test_passes"))["line"], 10);
    // The terminal output stays on stdout for job.output; the report went
    // to stderr and is not what job.result parsed from stdout.
    let out = env.op("job.output", json!({"id": job["id"], "stream": "stdout"}));
    assert!(out["result"]["data"].as_str().unwrap().contains("short test summary"), "{out}");
}

#[test]
fn tests_are_selected_by_keyword_markers_and_node_ids() {
    let env = suite_env();
    let r = run_job(&env, json!({"keyword": "passes or param"}));
    assert_eq!(r["result"]["counts"]["total"], 3, "{r}");
    assert_eq!(
        (r["result"]["success"].clone(), r["result"]["status"].clone()),
        (json!(true), json!("passed"))
    );
    let r = run_job(&env, json!({"markers": "slow"}));
    assert_eq!(
        outcomes(&r["result"]),
        [("tests/test_outcomes.py::test_slow".to_string(), "passed".to_string())]
    );
    let r = run_job(
        &env,
        json!({"node_ids": ["tests/test_outcomes.py::test_fails", "tests/test_outcomes.py::TestGroup"]}),
    );
    assert_eq!(
        r["result"]["counts"],
        json!({"passed": 2, "failed": 1, "skipped": 0, "error": 0, "xfail": 0, "xpass": 0, "total": 3}),
        "{r}"
    );
    let r = run_job(&env, json!({"maxfail": 1}));
    assert_eq!(r["result"]["counts"]["failed"], 1, "{r}");
    assert!(r["result"]["counts"]["total"].as_u64().unwrap() < 9, "maxfail stops the run: {r}");
    let r = run_job(&env, json!({"keyword": "nothing_matches_this"}));
    assert_eq!(
        (r["result"]["status"].clone(), r["result"]["counts"]["total"].clone()),
        (json!("no_tests"), json!(0)),
        "{r}"
    );
    // A malformed expression is pytest's usage error, reported as such.
    let r = run_job(&env, json!({"keyword": "(("}));
    assert_eq!(r["error"]["code"], "invalid_args", "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("-k"), "{r}");
}

#[test]
fn selection_values_never_become_options_or_leave_the_root() {
    let env = suite_env();
    for (args, code) in [
        (json!({"keyword": "--help"}), "unsafe_argv"),
        (json!({"markers": "-p evil"}), "unsafe_argv"),
        (json!({"node_ids": ["../outside.py"]}), "plan_refused"),
        (json!({"node_ids": ["/etc/passwd"]}), "plan_refused"),
        (json!({"dir": "../"}), "plan_refused"),
        // pytest parses options even after `--` (`pytest -- --co` only
        // collects), so a node id may never start with `-`.
        (json!({"node_ids": ["--co"]}), "unsafe_argv"),
        (json!({"node_ids": ["tests", "-p evil"]}), "unsafe_argv"),
        (json!({"args": ["-p", "evil"]}), "unknown_param"),
    ] {
        let r = spawn(&env, args.clone());
        assert_eq!(r["error"]["code"], code, "{args}: {r}");
    }
}

#[test]
fn a_module_that_fails_to_collect_is_an_error_at_its_line() {
    let env = suite_env();
    std::fs::write(
        env.root.join("tests/test_broken.py"),
        "import nonexistent_module_xyz\n\ndef test_x():\n    pass\n",
    )
    .unwrap();
    let r = run_job(&env, json!({}));
    let r = &r["result"];
    assert_eq!(r["status"], "interrupted", "{r}");
    let broken = test(r, "tests/test_broken.py");
    assert_eq!(broken["outcome"], "error");
    assert_eq!(broken["location"], json!({"file": "tests/test_broken.py", "line": 1}), "{broken}");
    assert!(broken["details"].as_str().unwrap().contains("nonexistent_module_xyz"), "{broken}");
}

#[test]
fn pytest_runs_repository_code_and_is_pinned_to_its_directory() {
    let env = suite_env();
    let h = env.request(&json!({"help": "pytest.run"}));
    assert_eq!(h["help"]["runs_repository_code"], true, "{h}");
    // Without the operator's rule and without the OS sandbox, the default
    // policy asks first (and a request without a terminal cannot ask)...
    let unruled = Env::new().with_config("[sandbox]\nmode = \"off\"\n");
    copy_tree(&Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/pytest-suite"), &unruled.root);
    let r = spawn(&unruled, json!({}));
    assert_eq!(
        (r["error"]["code"].as_str(), r["error"]["rule"].as_str()),
        (Some("consent_required"), Some("default:runs_repo_code")),
        "{r}"
    );
    // ...while in the sandbox (the default) the suite runs without asking:
    // it can reach nothing outside the root.
    let sandboxed = Env::new();
    copy_tree(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/pytest-suite"),
        &sandboxed.root,
    );
    let h = sandboxed.request(&json!({"help": "pytest.run"}));
    assert_eq!(h["help"]["policy"]["rule"], "default:sandboxed_repo_code", "{h}");
    assert_eq!(spawn(&sandboxed, json!({}))["ok"], true);
    // Configuration above the root that someone else could have written
    // (an `addopts = -p <module>` loads their code) is refused.
    let planted = env.tmp.path().join("pytest.ini");
    let marker = env.tmp.path().join("planted-conftest-ran");
    std::fs::write(&planted, "[pytest]\naddopts = -p planted_plugin\n").unwrap();
    std::fs::write(
        env.tmp.path().join("conftest.py"),
        format!("open({:?}, 'w').close()\n", marker.display().to_string()),
    )
    .unwrap();
    std::fs::set_permissions(&planted, std::os::unix::fs::PermissionsExt::from_mode(0o666))
        .unwrap();
    let r = spawn(&env, json!({}));
    assert_eq!(r["error"]["code"], "untrusted_config", "{r}");
    assert_eq!(r["error"]["path"], planted.canonicalize().unwrap().display().to_string(), "{r}");
    // Made ours and harmless, it is used as pytest would use it: with no
    // configuration in the root, pytest takes the first one above, and
    // would then load conftest.py files up to that directory — but
    // `--confcutdir=.` keeps a conftest.py above the root from loading.
    std::fs::write(&planted, "[pytest]\n").unwrap();
    std::fs::set_permissions(&planted, std::os::unix::fs::PermissionsExt::from_mode(0o644))
        .unwrap();
    std::fs::remove_file(env.root.join("pytest.ini")).unwrap();
    let r = run_job(&env, json!({"keyword": "passes"}));
    assert_eq!(r["result"]["status"], "passed", "{r}");
    assert!(!marker.exists(), "a conftest.py above the root was loaded");
    assert!(!env.root.join(".pytest_cache").exists(), "the cache plugin is off");
}

#[test]
fn without_pytest_the_verb_is_unavailable_and_says_why() {
    let env = Env::new().with_program("pytest", "/nonexistent/bin/pytest");
    let r = spawn(&env, json!({}));
    assert_eq!(r["error"]["code"], "unavailable", "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("programs.pytest"), "{r}");
}

/// Spawn, and if a job started (the old behaviour), wait for it to end so
/// whatever it writes is written before the test looks.
fn spawn_and_settle(env: &Env, args: Value) -> Value {
    let r = spawn(env, args);
    if let Some(id) = r["result"]["job"]["id"].as_str() {
        env.op("job.wait", json!({"ids": [id], "max_wait_seconds": 120}));
    }
    r
}

#[test]
fn an_at_file_is_never_expanded_from_a_keyword_or_a_node_id() {
    // pytest's argparse expands `@file` into the file's lines, as further
    // arguments, wherever it appears (`fromfile_prefix_chars`): an option
    // value, a node id, even after `--`. The file can be anywhere, and its
    // lines can be any option.
    let env = suite_env();
    let written = env.tmp.path().join("outside-report.xml");
    let outside = env.tmp.path().join("outside-opts.txt");
    std::fs::write(&outside, format!("passes\n--junitxml={}\n", written.display())).unwrap();
    let r = spawn_and_settle(&env, json!({"keyword": format!("@{}", outside.display())}));
    assert_eq!(r["error"]["code"], "unsafe_argv", "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains('@'), "the message says why: {r}");
    assert!(
        !written.exists(),
        "pytest read options from a file outside the root and wrote outside it"
    );

    // A file the repository itself carries, named as a node id.
    std::fs::write(env.root.join("opts.txt"), format!("--junitxml={}\n", written.display()))
        .unwrap();
    for id in ["@opts.txt", "@tests/test_outcomes.py"] {
        let r = spawn_and_settle(&env, json!({"node_ids": ["tests", id]}));
        assert_eq!(r["error"]["code"], "unsafe_argv", "{id}: {r}");
        assert!(!written.exists(), "{id}: pytest read its options from the repository's opts.txt and wrote outside the root");
    }
    // `markers` too.
    let r = spawn_and_settle(&env, json!({"markers": "@opts.txt"}));
    assert_eq!(r["error"]["code"], "unsafe_argv", "{r}");
    assert!(!written.exists());
}

#[test]
fn a_node_id_through_a_link_out_of_the_root_is_refused() {
    // `link.py` alone is refused (a symlink leading outside); the node id
    // `link.py::test_x` used to be checked as one path component that does
    // not exist, so pytest ran the test file outside the root.
    let env = suite_env();
    let elsewhere = tempfile::tempdir().unwrap();
    let marker = elsewhere.path().join("outside-test-ran");
    let outside = elsewhere.path().join("test_outside.py");
    std::fs::write(
        &outside,
        format!("def test_x():\n    open({:?}, 'w').close()\n", marker.display().to_string()),
    )
    .unwrap();
    std::os::unix::fs::symlink(&outside, env.root.join("link.py")).unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), env.root.join("linkdir")).unwrap();
    for id in
        ["link.py", "link.py::test_x", "link.py::test_x[a]", "linkdir/test_outside.py::test_x"]
    {
        let r = spawn_and_settle(&env, json!({"node_ids": [id]}));
        assert_eq!(r["error"]["code"], "plan_refused", "{id}: {r}");
        assert!(!marker.exists(), "{id}: a test file outside the root ran");
    }
    // A node id inside the root still runs.
    let r = run_job(&env, json!({"node_ids": ["tests/test_outcomes.py::test_passes"]}));
    assert_eq!(r["result"]["counts"]["passed"], 1, "{r}");
}
