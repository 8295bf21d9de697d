//! `exec-read` plans: a write, then a read-back of the state it left. Both
//! commands pass every check before either runs; the read-back runs only
//! after the write exited 0; a dry run and the audit trail show both.

use serde_json::{json, Value};
use verbgate_tests::Env;

fn hostile() -> Env {
    // The exec-read verbs write the root (writes_repo, which the default
    // policy asks about); these tests are about what runs, not the policy.
    let env = Env::new().allowing(&["hostile.*"]);
    env.install("fixture-hostile");
    env
}

#[test]
fn a_read_back_naming_an_undeclared_program_refuses_the_op_before_the_write_runs() {
    let env = hostile();
    let r = env.op("hostile.sneakyread", json!({}));
    assert_eq!(r["error"]["code"], "plan_refused", "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("`sh`"), "{r}");
    assert!(r["error"].get("wrote").is_none(), "nothing was written: {r}");
    assert!(
        !env.root.join("wrote.txt").exists(),
        "the write ran although its read-back was refused"
    );
    assert!(!env.root.join("pwned.txt").exists());
}

#[test]
fn a_read_verb_cannot_plan_a_write() {
    let env = hostile();
    let r = env.op("hostile.readwrites", json!({}));
    assert_eq!(r["error"]["code"], "plan_refused", "{r}");
    assert_eq!(r["error"]["plan_kind"], "exec_read", "{r}");
    assert!(!env.root.join("wrote.txt").exists() && !env.root.join("read.txt").exists());
}

#[test]
fn the_read_back_runs_only_after_the_write_succeeded() {
    let env = hostile();
    let failed = env.op("hostile.failthenread", json!({}));
    assert_eq!(failed["result"], json!({ "exit_code": 3, "read_back": null }), "{failed}");
    assert!(!env.root.join("read.txt").exists(), "the read-back ran after a failed write");

    let done = env.op("hostile.okthenread", json!({}));
    assert!(env.root.join("wrote.txt").exists(), "{done}");
    let back: Value = serde_json::from_str(
        done["result"]["read_back"].as_str().unwrap_or_else(|| panic!("{done}")),
    )
    .unwrap();
    assert_eq!(back["argv"], json!(["read", "back"]));
}

#[test]
fn a_dry_run_shows_both_commands_and_runs_neither() {
    let env = hostile();
    let r = env
        .request(&json!({ "ops": [{ "op": "hostile.okthenread", "args": {}, "dry_run": true }] }));
    let plan = &r["results"][0]["result"]["plan"];
    assert_eq!(plan["kind"], "exec_read", "{r}");
    assert_eq!(plan["command"]["argv"], json!(["touch", "wrote.txt"]), "{r}");
    assert_eq!(plan["read_back"]["argv"], json!(["argv", "read", "back"]), "{r}");
    assert!(!env.root.join("wrote.txt").exists());
}

#[test]
fn the_audit_trail_records_the_read_back() {
    let env = hostile();
    assert_eq!(env.op("hostile.okthenread", json!({}))["ok"], true);
    let out = env.cmd(&["audit", "--json", "--verb", "hostile.okthenread"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let row: Value =
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().last().unwrap()).unwrap();
    assert_eq!(row["argv"], json!(["touch", "wrote.txt"]).to_string(), "{row}");
    let back: Vec<String> = serde_json::from_str(row["read_back"].as_str().unwrap()).unwrap();
    assert!(back[0].ends_with("verbgate-fixture-cli"), "{row}");
    assert_eq!(back[1..], ["argv", "read", "back"], "{row}");
}

#[test]
fn a_failing_read_back_says_the_write_already_happened() {
    let env = hostile();
    let r = env.op("hostile.bigreadback", json!({}));
    assert!(env.root.join("wrote.txt").exists());
    assert_eq!(r["error"]["code"], "output_overflow", "{r}");
    assert_eq!(r["error"]["wrote"], true, "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("the write ran and exited 0, but its read-back failed"),
        "{r}"
    );
}

/// The write turns the read-back's directory into a link out of the root:
/// the read-back is prepared again after the write and refused.
#[test]
fn a_read_back_is_confined_again_after_the_write() {
    let env = hostile();
    std::fs::create_dir(env.root.join("sub")).unwrap();
    let r = env.op("hostile.swapthenread", json!({}));
    assert!(env.root.join("sub").is_symlink(), "the write ran: {r}");
    assert_eq!(r["error"]["code"], "plan_refused", "{r}");
    assert_eq!(r["error"]["wrote"], true, "{r}");
    assert!(!env.tmp.path().join("read.txt").exists(), "the read-back ran outside the root");
}
