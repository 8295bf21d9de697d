//! The bundled cargo verbs: jobs whose results are mapped from cargo's JSON
//! messages and libtest's stable line format.

use serde_json::{json, Value};
use verbgate_tests::Env;

fn crate_env(lib_rs: &str) -> Env {
    // These tests are about what the verbs do; the policy (which asks
    // before running repository code) is tested in `policy`.
    let env = Env::new().allowing(&["cargo.*"]);
    std::fs::write(
        env.root.join("Cargo.toml"),
        "[package]\nname = \"sample\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    )
    .unwrap();
    std::fs::create_dir_all(env.root.join("src")).unwrap();
    std::fs::write(env.root.join("src/lib.rs"), lib_rs).unwrap();
    env
}

fn run_job(env: &Env, verb: &str, args: Value) -> Value {
    let r = env.run_job(verb, args);
    assert_eq!(r["ok"], true, "{r}");
    r["result"]["result"].clone()
}

#[test]
fn check_reports_an_error_and_a_warning_with_file_and_line() {
    // `unused_parens` is an early lint, so rustc reports it even though the
    // type error stops compilation before later lints run.
    let env = crate_env("pub fn f() -> u32 {\n    let _x = (1);\n    \"not a number\"\n}\n");
    let r = run_job(&env, "cargo.check", json!({}));
    assert_eq!(r["success"], false, "{r}");
    let diags = r["diagnostics"].as_array().unwrap();
    let err = diags
        .iter()
        .find(|d| d["level"] == "error" && d["file"] == "src/lib.rs")
        .unwrap_or_else(|| panic!("{r}"));
    assert_eq!(err["line"], 3);
    assert_eq!(err["code"], "E0308");
    let warn = diags
        .iter()
        .find(|d| d["level"] == "warning" && d["file"] == "src/lib.rs")
        .unwrap_or_else(|| panic!("{r}"));
    assert_eq!(warn["line"], 2);
    assert!(warn["message"].as_str().unwrap().contains("parentheses"), "{warn}");
    assert!(r["counts"]["errors"].as_u64().unwrap() >= 1);
    assert!(r["counts"]["warnings"].as_u64().unwrap() >= 1);
}

#[test]
fn test_reports_counts_and_names() {
    let env = crate_env("#[cfg(test)]\nmod tests {\n    #[test]\n    fn passes() {}\n    #[test]\n    fn fails() { assert_eq!(1, 2, \"deliberate\"); }\n    #[test]\n    #[ignore]\n    fn skipped() {}\n}\n");
    let r = run_job(&env, "cargo.test", json!({}));
    assert_eq!(r["success"], false, "{r}");
    let t = &r["tests"];
    assert_eq!(
        (t["passed"].clone(), t["failed"].clone(), t["ignored"].clone()),
        (json!(1), json!(1), json!(1)),
        "{r}"
    );
    let failed =
        t["results"].as_array().unwrap().iter().find(|x| x["outcome"] == "failed").unwrap();
    assert_eq!(failed["name"], "tests::fails");
    assert!(failed["output"].as_str().unwrap().contains("deliberate"), "{failed}");
    // A filter narrows the run, and cannot smuggle a harness option in.
    let only = run_job(&env, "cargo.test", json!({"filter": "passes"}));
    assert_eq!(only["tests"]["passed"], 1, "{only}");
    assert_eq!(only["tests"]["failed"], 0);
    let fp = env.request(&json!({"help": "cargo.test"}))["help"]["schema_fingerprint"].clone();
    let evil = env.request(&json!({"ops": [{"op": "cargo.test", "args": {"filter": "--nocapture"}, "schema_fingerprint": fp}]}));
    assert_eq!(evil["results"][0]["error"]["code"], "unsafe_argv", "{evil}");
}

#[test]
fn metadata_lists_packages_and_targets() {
    let env = crate_env("pub fn f() {}\n");
    let r = env.op("cargo.metadata", json!({}));
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(r["result"]["workspace_members"], json!(["sample"]));
    let p = &r["result"]["packages"][0];
    assert_eq!(p["name"], "sample");
    assert_eq!(p["targets"][0]["kind"], json!(["lib"]));
}
