//! Hostile plugins cost one op, never the server: an infinite loop, a
//! memory bomb, a trap, a 10 MB result and an undeclared program each give
//! their own per-op error, and an op after them in the same process works.

use serde_json::{json, Value};
use verbgate_tests::Env;

fn hostile_env() -> Env {
    let env = Env::new().with_config("[limits]\nplugin_timeout_ms = 500\nplugin_memory_mib = 32\nplugin_output_bytes = 1048576");
    env.install("fixture-hostile");
    env
}

fn results(env: &Env, ops: &[&str]) -> Vec<Value> {
    let ops: Vec<Value> = ops.iter().map(|op| json!({ "op": op })).collect();
    let out = env.request(&json!({ "ops": ops }));
    out["results"].as_array().unwrap_or_else(|| panic!("{out}")).clone()
}

fn assert_error_then_ok(op: &str, code: &str) {
    let env = hostile_env();
    let r = results(&env, &[op, "hostile.ok"]);
    assert_eq!(r[0]["ok"], false, "{op}: {}", r[0]);
    assert_eq!(r[0]["error"]["code"], code, "{op}: {}", r[0]);
    assert_eq!(r[0]["error"]["plugin"], "fixture-hostile");
    assert_eq!(r[1]["ok"], true, "the op after {op} must still work: {}", r[1]);
    assert_eq!(r[1]["result"], json!({"fine": true}));
}

#[test]
fn an_infinite_loop_in_plan_is_a_plugin_timeout() {
    assert_error_then_ok("hostile.loop", "plugin_timeout");
}

/// A guest that waits (a WASI clock sleep of an hour) runs no wasm code in
/// which the epoch deadline could fire; the wall-clock guard stops it at
/// the same deadline.
#[test]
fn an_hour_long_sleep_in_plan_is_a_plugin_timeout_at_the_deadline() {
    let started = std::time::Instant::now();
    assert_error_then_ok("hostile.sleep", "plugin_timeout");
    // Generous: the deadline is 500 ms; an unguarded sleep would take an hour.
    assert!(started.elapsed() < std::time::Duration::from_secs(60), "took {:?}", started.elapsed());
}

/// Past the instance pool, a call is refused at once with a limit that
/// says so (never queued, never a crash), and the pool recovers.
#[test]
fn calls_past_the_instance_pool_get_concurrent_calls_and_the_pool_recovers() {
    let env = Env::new().with_config("[limits]\nplugin_timeout_ms = 800\nplugin_concurrent_calls = 2");
    env.install("fixture-hostile");
    let r = results(&env, &["hostile.sleep", "hostile.sleep", "hostile.sleep"]);
    let codes: Vec<(&str, &str)> = r.iter().map(|r| (r["error"]["code"].as_str().unwrap_or("ok"), r["error"]["limit"].as_str().unwrap_or(""))).collect();
    assert_eq!(codes.iter().filter(|c| c.0 == "plugin_timeout").count(), 2, "{codes:?}");
    let refused = r.iter().find(|r| r["error"]["code"] == "plugin_limit").unwrap_or_else(|| panic!("{r:?}"));
    assert_eq!(refused["error"]["limit"], "concurrent_calls", "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("retry"), "{refused}");
    // The sleepers' slots are back: the next call runs.
    let r = results(&env, &["hostile.ok"]);
    assert_eq!(r[0]["ok"], true, "{}", r[0]);
}

#[test]
fn a_memory_bomb_is_a_plugin_limit() {
    assert_error_then_ok("hostile.oom", "plugin_limit");
}

#[test]
fn a_trap_is_a_plugin_trap() {
    assert_error_then_ok("hostile.trap", "plugin_trap");
}

#[test]
fn a_ten_megabyte_result_is_a_plugin_limit() {
    assert_error_then_ok("hostile.huge", "plugin_limit");
}

#[test]
fn a_plan_naming_an_undeclared_program_is_refused() {
    assert_error_then_ok("hostile.badplan", "plan_refused");
}

#[test]
fn all_at_once_in_one_batch() {
    let env = hostile_env();
    let r = results(&env, &["hostile.loop", "hostile.oom", "hostile.trap", "hostile.huge", "hostile.badplan", "hostile.ok"]);
    let codes: Vec<&str> = r.iter().map(|x| x["error"]["code"].as_str().unwrap_or("ok")).collect();
    assert_eq!(codes, ["plugin_timeout", "plugin_limit", "plugin_trap", "plugin_limit", "plan_refused", "ok"]);
}

#[test]
fn a_result_violating_its_schema_is_invalid_output_and_a_failure_is_exit_nonzero() {
    let env = Env::new();
    env.install("fixture-echo");
    let r = env.op("echo.badresult", json!({}));
    assert_eq!(r["error"]["code"], "invalid_output", "{r}");
    let r = env.op("echo.fail", json!({"code": 3}));
    assert_eq!(r["error"]["code"], "exit_nonzero", "{r}");
    assert_eq!(r["error"]["exit_code"], 3, "{r}");
}

/// map-result's instance is made while the program runs; its deadline
/// still counts from the call, so a program that outlives the plugin
/// deadline is mapped normally (not stopped as if the plugin had run long).
#[test]
fn a_program_longer_than_the_plugin_deadline_is_still_mapped() {
    let env = Env::new().with_config("[limits]\nplugin_timeout_ms = 300");
    env.install("fixture-echo");
    let slow = env.op("echo.sleep", json!({"ms": 900}));
    assert_eq!(slow["ok"], true, "{slow}");
    assert_eq!(slow["result"], json!({"slept_ms": 900}), "{slow}");
}
