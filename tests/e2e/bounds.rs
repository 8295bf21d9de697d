//! Bounds on every request: names are bounded before any did-you-mean,
//! messages never repeat a caller's megabytes, per-op problems are capped,
//! and a fingerprint has a fixed length. Each answer comes at once (an
//! upper bound only a hang would blow) and stays small.

use serde_json::{json, Value};
use std::io::Write;
use std::process::Stdio;
use std::time::{Duration, Instant};
use verbgate_tests::Env;

/// Long enough that a quadratic edit distance never finishes.
const MEGABYTE: usize = 1 << 20;
/// Generous: every one of these answers in well under a second.
const HANG: Duration = Duration::from_secs(10);
/// What "small" means for an answer to a hostile request.
const SMALL: usize = 64 << 10;

/// Send `request` on stdin (it is too big for one argv entry); return the
/// envelope, its size and how long the answer took.
fn timed(env: &Env, request: &Value) -> (Value, usize, Duration) {
    let started = Instant::now();
    let mut child = env
        .cmd(&["request", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let text = request.to_string();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(text.as_bytes()));
    // A hang fails the test instead of holding it forever.
    let pid = child.id();
    let (done, watching) = std::sync::mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        if watching.recv_timeout(HANG * 6).is_err() {
            let _ = std::process::Command::new("kill").arg("-9").arg(pid.to_string()).status();
        }
    });
    let out = child.wait_with_output().unwrap();
    let _ = done.send(());
    watchdog.join().unwrap();
    let _ = writer.join().unwrap();
    assert!(
        out.status.code().is_some(),
        "verbgate did not answer within {:?} and was killed",
        HANG * 6
    );
    let elapsed = started.elapsed();
    let body: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout[..out.stdout.len().min(2000)])
        )
    });
    (body, out.stdout.len(), elapsed)
}

fn head(v: &Value) -> String {
    let s = v.to_string();
    s.chars().take(2000).collect()
}

#[test]
fn eight_unknown_ops_with_megabyte_names_answer_at_once() {
    let env = Env::new();
    let ops: Vec<Value> =
        (0..8).map(|i| json!({"op": format!("{i}{}", "g".repeat(MEGABYTE))})).collect();
    let (out, size, took) = timed(&env, &json!({ "ops": ops }));
    assert!(took < HANG, "took {took:?}");
    assert_eq!(out["error"]["code"], "invalid_request", "{}", head(&out));
    assert_eq!(out["error"]["field"], "op", "{}", head(&out));
    assert_eq!(out["error"]["limit"], 128, "{}", head(&out));
    assert!(size < SMALL, "a {size}-byte answer");
}

#[test]
fn help_for_a_megabyte_verb_name_answers_at_once() {
    let env = Env::new();
    let (out, size, took) = timed(&env, &json!({ "help": "g".repeat(MEGABYTE) }));
    assert!(took < HANG, "took {took:?}");
    assert_eq!(out["error"]["code"], "invalid_request", "{}", head(&out));
    assert!(size < SMALL, "a {size}-byte answer");
    // A name that merely looks like a typo still gets its suggestion.
    let (out, _, _) = timed(&env, &json!({ "help": "git.lgo" }));
    assert_eq!(out["error"]["did_you_mean"], json!(["git.log"]), "{out}");
}

#[test]
fn a_megabyte_unknown_parameter_name_answers_at_once_and_small() {
    let env = Env::new();
    let mut args = serde_json::Map::new();
    args.insert("l".repeat(MEGABYTE), json!(1));
    let (out, size, took) = timed(&env, &json!({ "ops": [{"op": "git.log", "args": args}] }));
    assert!(took < HANG, "took {took:?}");
    assert_eq!(out["results"][0]["error"]["code"], "unknown_param", "{}", head(&out));
    assert!(size < SMALL, "a {size}-byte answer");
}

#[test]
fn job_wait_with_two_hundred_thousand_ids_is_a_small_answer() {
    let env = Env::new();
    let ids: Vec<String> = (0..200_000).map(|i| format!("z{i}")).collect();
    let (out, size, took) = timed(
        &env,
        &json!({ "ops": [{"op": "job.wait", "args": {"ids": ids, "max_wait_seconds": 0}}] }),
    );
    assert!(took < HANG, "took {took:?}");
    assert_eq!(out["results"][0]["error"]["code"], "invalid_args", "{}", head(&out));
    assert!(size < SMALL, "a {size}-byte answer");
}

/// However many problems the args have, an op reports the first few and
/// how many there were.
#[test]
fn per_op_problems_are_the_first_few_and_a_count() {
    let env = Env::new();
    let ids: Vec<Value> = (0..5000).map(|i| json!(i)).collect();
    let (out, size, took) =
        timed(&env, &json!({ "ops": [{"op": "job.wait", "args": {"ids": ids}}] }));
    assert!(took < HANG, "took {took:?}");
    let e = &out["results"][0]["error"];
    assert_eq!(e["code"], "invalid_args", "{}", head(&out));
    let listed = e["problems"].as_array().unwrap().len();
    assert!((1..=10).contains(&listed), "{listed} problems listed");
    assert!(e["problems_total"].as_u64().unwrap() >= 5000, "{}", head(e));
    assert!(size < SMALL, "a {size}-byte answer");
}

/// A fingerprint is `sha256:` and 64 hex digits; a megabyte one is refused
/// as it is, never echoed back.
#[test]
fn a_megabyte_fingerprint_is_refused_and_not_echoed() {
    let env = Env::with_plugin("fixture-echo");
    let fp = format!("sha256:{}", "0".repeat(MEGABYTE));
    let (out, size, took) = timed(
        &env,
        &json!({ "ops": [{"op": "echo.job", "args": {"word": "a"}, "dry_run": true, "schema_fingerprint": fp}] }),
    );
    assert!(took < HANG, "took {took:?}");
    assert_eq!(out["error"]["code"], "invalid_request", "{}", head(&out));
    assert_eq!(out["error"]["field"], "schema_fingerprint", "{}", head(&out));
    assert!(size < SMALL, "a {size}-byte answer");
}

/// A megabyte string failing its schema is named, not repeated.
#[test]
fn a_megabyte_invalid_value_is_not_repeated_in_the_answer() {
    let env = Env::new();
    let (out, size, took) = timed(
        &env,
        &json!({ "ops": [{"op": "job.status", "args": {"id": "!".repeat(MEGABYTE)}}] }),
    );
    assert!(took < HANG, "took {took:?}");
    let e = &out["results"][0]["error"];
    assert_eq!(e["code"], "invalid_args", "{}", head(&out));
    assert_eq!(e["param"], "id", "{}", head(&out));
    assert!(size < SMALL, "a {size}-byte answer");
}

/// Unknown request and op fields are named, but only their first bytes.
#[test]
fn unknown_megabyte_field_names_are_not_repeated() {
    let env = Env::new();
    let mut req = serde_json::Map::new();
    req.insert("x".repeat(MEGABYTE), json!(1));
    let (out, size, _) = timed(&env, &Value::Object(req));
    assert_eq!(out["error"]["code"], "invalid_request", "{}", head(&out));
    assert!(size < SMALL, "a {size}-byte answer");
    let mut op = serde_json::Map::new();
    op.insert("op".into(), json!("git.log"));
    op.insert("y".repeat(MEGABYTE), json!(1));
    let (out, size, _) = timed(&env, &json!({ "ops": [op] }));
    assert_eq!(out["error"]["code"], "invalid_request", "{}", head(&out));
    assert!(size < SMALL, "a {size}-byte answer");
    let (out, size, _) = timed(&env, &json!({ "help": ["z".repeat(MEGABYTE)] }));
    assert_eq!(out["error"]["code"], "invalid_request", "{}", head(&out));
    assert!(size < SMALL, "a {size}-byte answer");
}
