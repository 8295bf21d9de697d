//! Hostile plugins cost one op, never the server: an infinite loop, a
//! memory bomb, a trap, a 10 MB result and an undeclared program each give
//! their own per-op error, and an op after them in the same process works.

use serde_json::{json, Value};
use verbgate_tests::Env;

fn hostile_env() -> Env {
    let env = Env::new().with_config(
        "[limits]\nplugin_timeout_ms = 500\nplugin_memory_mib = 32\nplugin_output_bytes = 1048576",
    );
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
    let env =
        Env::new().with_config("[limits]\nplugin_timeout_ms = 800\nplugin_concurrent_calls = 2");
    env.install("fixture-hostile");
    let r = results(&env, &["hostile.sleep", "hostile.sleep", "hostile.sleep"]);
    let codes: Vec<(&str, &str)> = r
        .iter()
        .map(|r| {
            (
                r["error"]["code"].as_str().unwrap_or("ok"),
                r["error"]["limit"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(codes.iter().filter(|c| c.0 == "plugin_timeout").count(), 2, "{codes:?}");
    let refused =
        r.iter().find(|r| r["error"]["code"] == "plugin_limit").unwrap_or_else(|| panic!("{r:?}"));
    assert_eq!(refused["error"]["limit"], "concurrent_calls", "{refused}");
    assert_eq!(
        refused["error"]["bound"], "concurrent_calls",
        "every plugin_limit names its bound: {refused}"
    );
    assert!(refused["error"]["message"].as_str().unwrap().contains("retry"), "{refused}");
    // The sleepers' slots are back: the next call runs.
    let r = results(&env, &["hostile.ok"]);
    assert_eq!(r[0]["ok"], true, "{}", r[0]);
}

/// A program that ran must not lose its result to a pool that is full at
/// that moment: "retry" would run a write twice. map-result waits for the
/// slot the sleepers give back at their deadline.
#[test]
fn a_program_that_ran_waits_for_a_pool_slot_to_map_its_result() {
    verbgate_tests::runtime().block_on(async {
        let env = Env::new()
            .with_config("[limits]\nplugin_timeout_ms = 3000\nplugin_concurrent_calls = 2");
        env.install("fixture-echo");
        env.install("fixture-hostile");
        let s = std::sync::Arc::new(
            verbgate_tests::mcp::Session::start(env.serve_command()).await.unwrap(),
        );
        // Both components loaded (the server compiles and describes them in
        // the background, which takes slots too) before the race is set up.
        let warm = s
            .request(json!({"ops": [{"op": "echo.argv"}, {"op": "hostile.ok"}]}))
            .await
            .unwrap()
            .structured;
        assert_eq!(warm["results"][1]["ok"], true, "{warm}");
        // The program's plan takes a slot only briefly; it then runs 1.5 s.
        let program = {
            let s = s.clone();
            tokio::spawn(async move {
                s.request(json!({"ops": [{"op": "echo.sleep", "args": {"ms": 1500}}]}))
                    .await
                    .unwrap()
                    .structured
            })
        };
        // Meanwhile two guests that wait out their deadline take both slots,
        // so when the program ends at 1.5 s the pool is full until 3.5 s.
        tokio::time::sleep(std::time::Duration::from_millis(700)).await;
        let sleepers = s
            .request(json!({"ops": [{"op": "hostile.sleep"}, {"op": "hostile.sleep"}]}))
            .await
            .unwrap()
            .structured;
        let program = program.await.unwrap();
        for r in sleepers["results"].as_array().unwrap() {
            assert_eq!(
                r["error"]["code"], "plugin_timeout",
                "both sleepers held a slot to their deadline: {sleepers}"
            );
        }
        let r = &program["results"][0];
        assert_eq!(r["ok"], true, "the program ran; its result must be mapped, not refused: {r}");
    });
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
    // Memory or output size, whichever the guest hits first: named either way.
    let r = results(&hostile_env(), &["hostile.huge"]);
    assert!(
        ["memory", "output_bytes"].contains(&r[0]["error"]["bound"].as_str().unwrap_or("")),
        "{}",
        r[0]
    );
}

#[test]
fn a_plan_naming_an_undeclared_program_is_refused() {
    assert_error_then_ok("hostile.badplan", "plan_refused");
}

#[test]
fn all_at_once_in_one_batch() {
    let env = hostile_env();
    let r = results(
        &env,
        &[
            "hostile.loop",
            "hostile.oom",
            "hostile.trap",
            "hostile.huge",
            "hostile.badplan",
            "hostile.ok",
        ],
    );
    let codes: Vec<&str> = r.iter().map(|x| x["error"]["code"].as_str().unwrap_or("ok")).collect();
    assert_eq!(
        codes,
        ["plugin_timeout", "plugin_limit", "plugin_trap", "plugin_limit", "plan_refused", "ok"]
    );
}

#[test]
fn a_result_violating_its_schema_is_invalid_output_and_a_failure_is_exit_nonzero() {
    let env = Env::new();
    env.install("fixture-echo");
    let r = env.op("echo.badresult", json!({}));
    assert_eq!(r["error"]["code"], "invalid_output", "{r}");
    let r = env.op("echo.fail", json!({"code": 3}));
    assert_eq!(r["error"]["code"], "exit_nonzero", "{r}");
    // The plugin's details are its own, under `plugin_details`.
    assert_eq!(r["error"]["plugin_details"]["exit_code"], 3, "{r}");
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

/// A verb's declared kind decides which gates it passes (a spawn verb needs
/// the fingerprint), so the plan must be of that kind: a `read` verb whose
/// plan was a spawn once started a job with no fingerprint.
#[test]
fn a_plan_of_another_kind_than_its_verb_is_refused_and_starts_nothing() {
    let env = hostile_env();
    let fp = env.request(&json!({"help": "hostile.spawnexec"}))["help"]["schema_fingerprint"]
        .as_str()
        .unwrap()
        .to_string();
    let out = env.request(&json!({"ops": [
        {"op": "hostile.readspawn"},
        {"op": "hostile.exechost"},
        {"op": "hostile.spawnexec", "schema_fingerprint": fp},
        {"op": "hostile.readspawn", "dry_run": true},
        {"op": "hostile.ok"},
    ]}));
    let r = out["results"].as_array().unwrap_or_else(|| panic!("{out}"));
    for (i, verb, declared, plan) in [
        (0, "hostile.readspawn", "read", "spawn"),
        (1, "hostile.exechost", "exec", "host"),
        (2, "hostile.spawnexec", "spawn", "exec"),
        (3, "hostile.readspawn", "read", "spawn"),
    ] {
        let e = &r[i]["error"];
        assert_eq!(e["code"], "plan_refused", "{i}: {out}");
        assert_eq!(e["verb"], verb, "{e}");
        assert_eq!(e["verb_kind"], declared, "{e}");
        assert_eq!(e["plan_kind"], plan, "{e}");
        assert_eq!(e["plugin"], "fixture-hostile", "{e}");
    }
    assert_eq!(r[4]["ok"], true, "{out}");
    let jobs = env.op("job.list", json!({}));
    assert_eq!(jobs["result"]["jobs"], json!([]), "a job was started: {jobs}");
}

/// A plugin's error details are its own: they sit under `plugin_details`
/// and never set the keys the host writes (`ok`, `op`, `code`, `plugin`,
/// `help`, `schema_fingerprint`).
#[test]
fn plugin_error_details_never_set_the_hosts_keys() {
    let env = hostile_env();
    let r = env.op("hostile.hostkeys", json!({}));
    assert_eq!(r["ok"], false, "{r}");
    assert_eq!(r["op"], "hostile.hostkeys", "{r}");
    let e = &r["error"];
    assert_eq!(e["code"], "not_found", "{r}");
    assert_eq!(e["plugin"], "fixture-hostile", "{r}");
    for key in ["ok", "op", "help", "schema_fingerprint"] {
        assert!(e.get(key).is_none(), "the plugin set `{key}` in the host's error: {r}");
    }
    assert_eq!(e["plugin_details"]["help"], json!({"help": "trust.add"}), "{r}");
    assert_eq!(e["plugin_details"]["ok"], true, "{r}");
}

/// Error text from `plan` and `map-result` is bounded like results are:
/// a 5 MiB message or details is a `plugin_limit` naming the bound, and
/// the answer stays small.
#[test]
fn plugin_error_text_past_its_bounds_is_a_plugin_limit() {
    let env = hostile_env();
    let started = std::time::Instant::now();
    let out = env.request(&json!({"ops": [{"op": "hostile.bigmessage"}, {"op": "hostile.bigdetails"}, {"op": "hostile.mapbigerror"}, {"op": "hostile.ok"}]}));
    assert!(started.elapsed() < std::time::Duration::from_secs(10), "took {:?}", started.elapsed());
    let r = out["results"].as_array().unwrap_or_else(|| panic!("{out}"));
    for (i, bound) in
        [(0, "error_message_bytes"), (1, "error_details_bytes"), (2, "error_details_bytes")]
    {
        let e = &r[i]["error"];
        assert_eq!(e["code"], "plugin_limit", "{i}: {e}");
        assert_eq!(e["bound"], bound, "{e}");
        assert!(e["actual"].as_u64().unwrap() > e["limit"].as_u64().unwrap(), "{e}");
    }
    assert_eq!(r[3]["ok"], true);
    let size = out.to_string().len();
    assert!(size < 64 << 10, "a {size}-byte answer");
}

/// Plans are bounded before anything is prepared or run: argv entries and
/// bytes, stdin bytes, environment variables.
#[test]
fn plans_past_their_bounds_are_plugin_limits() {
    let env = hostile_env();
    let started = std::time::Instant::now();
    let ops: Vec<Value> =
        ["hostile.argvflood", "hostile.argvbig", "hostile.stdinbig", "hostile.envflood"]
            .iter()
            .map(|op| json!({"op": op, "dry_run": true}))
            .collect();
    let out = env.request(&json!({ "ops": ops }));
    assert!(started.elapsed() < std::time::Duration::from_secs(10), "took {:?}", started.elapsed());
    let r = out["results"].as_array().unwrap_or_else(|| panic!("{out}"));
    for (i, bound) in
        [(0, "plan_args"), (1, "plan_argv_bytes"), (2, "plan_stdin_bytes"), (3, "plan_env")]
    {
        let e = &r[i]["error"];
        assert_eq!(e["code"], "plugin_limit", "{i}: {e}");
        assert_eq!(e["bound"], bound, "{e}");
        assert!(e["actual"].as_u64().unwrap() > e["limit"].as_u64().unwrap(), "{e}");
        assert_eq!(e["plugin"], "fixture-hostile", "{e}");
    }
    assert!(out.to_string().len() < 64 << 10, "{} bytes", out.to_string().len());
}

/// A two-stage verb's resolved target is plugin text too.
#[test]
fn a_resolved_target_past_its_bounds_is_a_plugin_limit() {
    let env = hostile_env();
    let out = env.request(&json!({"help": "hostile.target:x"}));
    assert_eq!(
        out["error"]["code"],
        "plugin_limit",
        "{}",
        &out.to_string()[..out.to_string().len().min(2000)]
    );
    assert_eq!(out["error"]["bound"], "summary_bytes", "{}", out["error"]);
    assert!(out.to_string().len() < 64 << 10);
}

/// `describe` text is checked per verb: a summary past its bound or with
/// control characters (terminal escapes) refuses that verb, not the plugin.
#[test]
fn summaries_past_the_bound_or_with_control_characters_refuse_their_verb() {
    let env = hostile_env();
    let verbs = env.verbs();
    let unavailable = verbs["unavailable"].as_array().unwrap();
    let code_for = |verb: &str| {
        unavailable
            .iter()
            .find(|u| u["verb"] == verb)
            .map(|u| u["code"].as_str().unwrap().to_string())
    };
    assert_eq!(code_for("hostile.longsummary").as_deref(), Some("plugin_limit"), "{verbs}");
    assert_eq!(code_for("hostile.escape").as_deref(), Some("control_characters"), "{verbs}");
    let names: Vec<&str> =
        verbs["verbs"].as_array().unwrap().iter().map(|v| v["verb"].as_str().unwrap()).collect();
    assert!(
        names.contains(&"hostile.ok")
            && !names.contains(&"hostile.escape")
            && !names.contains(&"hostile.longsummary"),
        "{names:?}"
    );
    let text = verbs.to_string();
    assert!(!text.contains('\u{1b}'), "a terminal escape reached the output");
}

/// 50,000 verbs are refused past the verb-count bound before any per-verb
/// work (they once took 94 s and 386 MiB to load).
#[test]
fn fifty_thousand_verbs_are_refused_at_once() {
    let env = Env::new();
    env.install("fixture-flood");
    let started = std::time::Instant::now();
    let verbs = env.verbs();
    assert!(started.elapsed() < std::time::Duration::from_secs(20), "took {:?}", started.elapsed());
    let refusal = verbs["unavailable"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["source"].as_str().unwrap().ends_with("fixture-flood.wasm"))
        .unwrap_or_else(|| panic!("{}", &verbs.to_string()[..2000]));
    assert_eq!(refusal["code"], "plugin_limit", "{refusal}");
    assert!(refusal["reason"].as_str().unwrap().contains("verbs"), "{refusal}");
    assert!(!verbs["verbs"]
        .as_array()
        .unwrap()
        .iter()
        .any(|v| v["verb"].as_str().unwrap().starts_with("flood.")));
}

/// Plugin text is rejected, never sanitized: a version with terminal
/// escapes refuses the component.
#[test]
fn a_version_with_terminal_escapes_refuses_the_component() {
    let env = Env::new();
    env.install("fixture-garish");
    let verbs = env.verbs();
    let refusal = verbs["unavailable"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["source"].as_str().unwrap().ends_with("fixture-garish.wasm"))
        .unwrap_or_else(|| panic!("{verbs}"));
    assert_eq!(refusal["code"], "control_characters", "{refusal}");
    assert!(!verbs.to_string().contains('\u{1b}'), "a terminal escape reached the output");
    assert!(
        !verbs["plugins"].as_array().unwrap().iter().any(|p| p["name"] == "fixture-garish"),
        "{verbs}"
    );
}
