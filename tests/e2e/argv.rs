//! Argv safety, asserted on what the fixture program actually received: a
//! caller value can never reach it as an option.

use serde_json::json;
use verbgate_tests::Env;

fn echo_env() -> Env {
    Env::with_plugin("fixture-echo")
}

#[test]
fn option_like_caller_values_never_reach_an_option_position() {
    let env = echo_env();
    for evil in ["--upload-pack=evil", "-c", "--", "-"] {
        let r = env.op("echo.argv", json!({ "word": evil }));
        assert_eq!(r["ok"], false, "{evil}: {r}");
        assert_eq!(r["error"]["code"], "unsafe_argv", "{evil}: {r}");
        assert_eq!(r["error"]["value"], evil);
    }
}

#[test]
fn option_values_are_one_word_and_values_after_the_marker_are_positional() {
    let env = echo_env();
    let r = env.op(
        "echo.argv",
        json!({ "flag": "--upload-pack=evil -c x", "tail": ["-c", "--upload-pack=evil"] }),
    );
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(
        r["result"]["argv"],
        json!(["--flag=--upload-pack=evil -c x", "--", "-c", "--upload-pack=evil"])
    );
}

#[test]
fn nul_in_a_value_is_refused() {
    let env = echo_env();
    let r = env.op("echo.argv", json!({ "word": "a\u{0}b" }));
    assert_eq!(r["error"]["code"], "unsafe_argv", "{r}");
}

#[test]
fn the_environment_is_cleared_to_the_allow_list() {
    let env = echo_env();
    let out = env
        .cmd(&[
            "request",
            &json!({"ops": [{"op": "echo.argv", "args": {"stdin": "in"}}]}).to_string(),
        ])
        .env("VERBGATE_TEST_SECRET", "leak")
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let result = &v["results"][0]["result"];
    assert_eq!(result["stdin"], "in", "{v}");
    let envs = result["env"].as_object().unwrap();
    assert!(!envs.contains_key("VERBGATE_TEST_SECRET"), "{v}");
    for k in envs.keys() {
        assert!(verbgate::config::DEFAULT_ENV_ALLOW.contains(&k.as_str()), "unexpected env {k}");
    }
    assert_eq!(result["cwd"], env.root.canonicalize().unwrap().display().to_string());
}

#[test]
fn dry_run_shows_the_plan_without_running_it() {
    let env = echo_env();
    let r =
        env.request(&json!({"ops": [{"op": "echo.argv", "args": {"word": "w"}, "dry_run": true}]}));
    let plan = &r["results"][0]["result"]["plan"];
    assert_eq!(plan["kind"], "exec", "{r}");
    assert_eq!(plan["command"]["argv"], json!(["argv", "w"]));
    assert!(plan["command"]["program"].as_str().unwrap().ends_with("verbgate-fixture-cli"));
}

#[test]
fn aliases_work_but_unknown_params_are_named() {
    let env = echo_env();
    let r = env.op("echo.args", json!({ "word": "x" }));
    assert_eq!(r["ok"], true, "{r}");
    let out = env.request(&json!({"ops": [{"op": "echo.argv", "args": {"wrod": "x"}}, {"op": "echo.argv", "args": {"flga": "x"}}]}));
    assert_eq!(out["status"], "partial");
    let e = &out["results"][0]["error"];
    assert_eq!(e["code"], "unknown_param");
    assert_eq!(e["param"], "wrod");
    assert_eq!(e["did_you_mean"], json!(["word"]));
    // The schema travels once, referenced by fingerprint from both errors.
    let fp = e["schema_fingerprint"].as_str().unwrap();
    assert_eq!(out["results"][1]["error"]["schema_fingerprint"], fp);
    assert_eq!(out["schemas"].as_object().unwrap().len(), 1);
    assert_eq!(out["schemas"][fp]["additionalProperties"], false);
}

/// A `path` is read by the program relative to the directory it runs in
/// (`repo`), so that is where it is confined: `sub/link -> /etc` must be
/// refused even though `root/link` does not exist (the old check looked
/// there and let the program read `/etc` through the link).
#[test]
fn a_path_is_confined_relative_to_the_repo_it_is_read_in() {
    let env = Env::new();
    let sub = env.root.join("sub");
    std::fs::create_dir(&sub).unwrap();
    verbgate_tests::git(&sub, &["init", "-q", "-b", "main"]);
    std::os::unix::fs::symlink("/etc", sub.join("link")).unwrap();
    std::os::unix::fs::symlink("../..", sub.join("up")).unwrap();
    for (verb, path) in
        [("git.log", "link"), ("git.log", "link/passwd"), ("git.diff", "link"), ("git.log", "up")]
    {
        let res = env.op(verb, json!({"repo": "sub", "path": path}));
        assert_eq!(res["ok"], false, "{verb} {path}: {res}");
        assert_eq!(res["error"]["code"], "plan_refused", "{verb} {path}: {res}");
        assert_eq!(res["error"]["path"], path, "{res}");
    }
    // A path inside the repo is still fine.
    std::fs::write(sub.join("a.txt"), "x").unwrap();
    let res = env.op("git.log", json!({"repo": "sub", "path": "a.txt"}));
    assert_eq!(res["ok"], true, "{res}");
}
