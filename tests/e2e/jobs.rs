//! Durable supervised jobs end to end: spawn through a fingerprinted spawn
//! verb, observe with job.wait, read with job.output / job.result, stop with
//! job.kill — across `verbgate request` processes and an MCP server that
//! dies mid-job.

use serde_json::{json, Value};
use std::time::{Duration, Instant};
use verbgate_tests::mcp::Session;
use verbgate_tests::Env;

fn jobs_env() -> Env {
    // echo.entityjob writes its runs into the root (writes_repo, which the
    // default policy asks about).
    Env::with_plugin("fixture-echo").allowing(&["echo.*"])
}

fn fingerprint(env: &Env) -> String {
    env.request(&json!({"help": "echo.job"}))["help"]["schema_fingerprint"]
        .as_str()
        .unwrap()
        .to_string()
}

fn spawn(env: &Env, args: Value) -> String {
    let fp = fingerprint(env);
    let out =
        env.request(&json!({"ops": [{"op": "echo.job", "args": args, "schema_fingerprint": fp}]}));
    let r = &out["results"][0];
    assert_eq!(r["ok"], true, "{out}");
    assert_eq!(r["result"]["next"]["op"], "job.wait");
    r["result"]["job"]["id"].as_str().unwrap().to_string()
}

fn wait(env: &Env, ids: &[&str], max_wait: f64) -> Value {
    let r = env.op(
        "job.wait",
        json!({"ids": ids, "max_wait_seconds": max_wait, "poll_interval_seconds": 0.2}),
    );
    assert_eq!(r["ok"], true, "{r}");
    r["result"].clone()
}

#[test]
fn a_job_runs_to_its_end_and_its_result_is_mapped_by_its_plugin() {
    let env = jobs_env();
    let id = spawn(&env, json!({"word": "hello"}));
    let w = wait(&env, &[&id], 20.0);
    assert_eq!(w["all_terminal"], true, "{w}");
    assert_eq!(w["terminal"], json!([id]));
    let e = &w["jobs"][0];
    assert_eq!(
        (e["status"].clone(), e["outcome"].clone(), e["reason_code"].clone()),
        (json!("succeeded"), json!("success"), json!("exited_zero"))
    );
    let result = env.op("job.result", json!({"id": &id}));
    assert_eq!(result["result"]["result"]["argv"], json!(["hello"]), "{result}");
    assert_eq!(result["result"]["plugin_changed"], false);
    let out = env.op("job.output", json!({"id": &id[..14]}));
    assert_eq!(out["result"]["encoding"], "utf8", "{out}");
    assert!(out["result"]["data"].as_str().unwrap().contains("\"argv\":[\"hello\"]"));
    assert_eq!(out["result"]["eof"], true);
    let listed = env.op("job.list", json!({"verb": "echo.job"}));
    assert_eq!(listed["result"]["jobs"][0]["id"], id.as_str());
    let status = env.op("job.status", json!({"id": &id}));
    assert_eq!(status["result"]["exit_code"], 0);
}

#[test]
fn failures_and_time_limits_are_recorded_with_reasons() {
    let env = jobs_env();
    let failed = spawn(&env, json!({"exit_code": 3}));
    let limited = spawn(&env, json!({"sleep_ms": 30000, "time_limit_ms": 300}));
    let w = wait(&env, &[&failed, &limited], 20.0);
    assert_eq!(w["all_terminal"], true, "{w}");
    assert_eq!(w["jobs"][0]["status"], "failed");
    assert_eq!(w["jobs"][0]["reason_code"], "exited_nonzero");
    assert_eq!(w["jobs"][1]["status"], "timed_out");
    assert_eq!(w["jobs"][1]["reason_code"], "time_limit");
    let r = env.op("job.result", json!({"id": failed}));
    assert_eq!(r["result"]["error"]["code"], "exit_nonzero", "{r}");
    let err = env.op("job.output", json!({"id": &failed, "stream": "stderr"}));
    assert!(err["result"]["data"].as_str().unwrap().contains("job failed on purpose"), "{err}");
}

#[test]
fn a_job_that_leaves_its_process_group_still_stops_at_its_time_limit() {
    // The attack: the job's first process moves itself into its parent's
    // group, so a kill of the group it was started in misses it. Seen
    // before the mend: the job ran on past its limit, still `running`.
    let env = jobs_env();
    let id = spawn(&env, json!({"escape_ms": 30000, "time_limit_ms": 500}));
    let w = wait(&env, &[&id], 15.0);
    assert_eq!(w["all_terminal"], true, "{w}");
    assert_eq!(w["jobs"][0]["status"], "timed_out", "{w}");
    let out = env.op("job.output", json!({"id": &id}));
    let line: Value = serde_json::from_str(out["result"]["data"].as_str().unwrap().trim()).unwrap();
    assert_eq!(line["escaped"], true, "the program did leave its group: {line}");
    // The pid it printed is its own namespace's: find it as seen here.
    let inner = line["pid"].as_i64().unwrap();
    let gone = (0..100).any(|_| {
        let alive = verbgate_tests::outer_pid(inner, "escape 30000").is_some_and(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .is_ok_and(|st| !st.rsplit(')').next().unwrap_or("").trim_start().starts_with('Z'))
        });
        if alive {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        !alive
    });
    assert!(gone, "the job's process (pid {inner} in its namespace) outlived its time limit");
}

#[test]
fn a_bounded_wait_expires_without_error_and_without_changing_the_job() {
    let env = jobs_env();
    let id = spawn(&env, json!({"sleep_ms": 4000}));
    let before = env.op("job.status", json!({"id": &id}))["result"].clone();
    let w = wait(&env, &[&id, "ffffffffffff"], 0.3);
    assert_eq!(w["timed_out"], true, "{w}");
    assert_eq!(w["pending"], json!([id]));
    assert_eq!(w["errors"], json!(["ffffffffffff"]));
    assert_eq!(w["jobs"][1]["error"]["code"], "not_found");
    assert_eq!(w["max_wait_seconds"], 0.3);
    let after = env.op("job.status", json!({"id": &id}))["result"].clone();
    assert_eq!(before["status"].as_str().map(|s| s == "preparing" || s == "running"), Some(true));
    assert_eq!(after["ended_ms"], Value::Null);
    // Clamps are echoed.
    let c = env
        .op("job.wait", json!({"ids": [&id], "max_wait_seconds": 0, "poll_interval_seconds": 99}));
    assert_eq!(c["result"]["poll_interval_seconds"], 10.0);
    env.op("job.kill", json!({"id": id, "grace_seconds": 0}));
}

#[test]
fn wait_wakes_on_the_end_not_at_the_next_poll_tick() {
    let env = jobs_env();
    let id = spawn(&env, json!({"sleep_ms": 300}));
    let start = Instant::now();
    let r = env
        .op("job.wait", json!({"ids": [id], "max_wait_seconds": 30, "poll_interval_seconds": 10}));
    let took = start.elapsed();
    assert_eq!(r["result"]["all_terminal"], true, "{r}");
    // A 10 s poll interval must not delay noticing a 0.3 s job.
    assert!(took < Duration::from_secs(5), "wait took {took:?}");
}

#[test]
fn kill_stops_the_process_group_and_is_a_no_op_afterwards() {
    let env = jobs_env();
    let id = spawn(&env, json!({"sleep_ms": 60000}));
    // Let it start.
    let w = wait(&env, &[&id], 0.5);
    assert_eq!(w["pending"], json!([id]), "{w}");
    let k = env.op("job.kill", json!({"id": &id, "grace_seconds": 1}));
    assert_eq!(k["ok"], true, "{k}");
    assert_eq!(k["result"]["killed"], true, "{k}");
    assert_eq!(k["result"]["job"]["status"], "killed");
    assert_eq!(k["result"]["job"]["outcome"], "cancelled");
    let pid = k["result"]["job"]["pid"].as_i64().unwrap();
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}/stat")).exists()
            || std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap().contains(") Z "),
        "process {pid} survived"
    );
    let again = env.op("job.kill", json!({"id": &id}));
    assert_eq!(again["result"]["already_terminal"], true, "{again}");
    assert_eq!(again["result"]["killed"], false);
}

#[test]
fn a_job_whose_processes_vanish_is_reaped_as_lost_by_the_first_observer() {
    let env = jobs_env();
    let id = spawn(&env, json!({"sleep_ms": 60000}));
    assert_eq!(wait(&env, &[&id], 0.5)["pending"], json!([id]));
    let st = env.op("job.status", json!({"id": &id}))["result"].clone();
    let (sup, pid) = (st["supervisor_pid"].as_i64().unwrap(), st["pid"].as_i64().unwrap());
    // Kill the supervisor first so nobody records an end, then the program.
    unsafe_kill(sup);
    std::thread::sleep(Duration::from_millis(100));
    unsafe_kill(-pid);
    std::thread::sleep(Duration::from_millis(100));
    let w = wait(&env, &[&id], 5.0);
    assert_eq!(w["jobs"][0]["status"], "lost", "{w}");
    assert_eq!(w["jobs"][0]["reason_code"], "process_gone_no_end");
    assert_eq!(w["terminal"], json!([id]));
}

fn unsafe_kill(pid: i64) {
    let status = std::process::Command::new("kill")
        .arg("-KILL")
        .arg("--")
        .arg(pid.to_string())
        .status()
        .unwrap();
    assert!(status.success(), "kill {pid}");
}

#[test]
fn jobs_survive_the_server_and_are_shared_between_cli_and_mcp() {
    let rt = verbgate_tests::runtime();
    let env = jobs_env();
    let fp = fingerprint(&env);
    let id = rt.block_on(async {
        let s = Session::start(env.serve_command()).await.unwrap();
        let r = s.request(json!({"ops": [{"op": "echo.job", "args": {"sleep_ms": 800}, "schema_fingerprint": fp}]})).await.unwrap();
        let id = r.structured["results"][0]["result"]["job"]["id"].as_str().unwrap().to_string();
        // The server goes away while the job runs.
        drop(s);
        id
    });
    // A terminal process that never saw the job waits for it.
    let w = wait(&env, &[&id], 20.0);
    assert_eq!(w["jobs"][0]["status"], "succeeded", "{w}");
    // And a job started from the terminal is visible to an MCP session.
    let cli_job = spawn(&env, json!({"word": "from-cli"}));
    rt.block_on(async {
        let s = Session::start(env.serve_command()).await.unwrap();
        let r = s.request(json!({"ops": [{"op": "job.wait", "args": {"ids": [cli_job], "max_wait_seconds": 20}}]})).await.unwrap();
        assert_eq!(r.structured["results"][0]["result"]["all_terminal"], true, "{}", r.structured);
        s.close().await.unwrap();
    });
}

fn spawn_entity(env: &Env, fail_kill: bool) -> String {
    let fp = env.request(&json!({"help": "echo.entityjob"}))["help"]["schema_fingerprint"]
        .as_str()
        .unwrap()
        .to_string();
    let out = env.request(&json!({"ops": [{"op": "echo.entityjob", "args": {"fail_kill": fail_kill}, "schema_fingerprint": fp}]}));
    let id = out["results"][0]["result"]["job"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{out}"))
        .to_string();
    // Let the entity CLI start and print its id.
    std::thread::sleep(Duration::from_millis(400));
    id
}

#[test]
fn a_kill_of_a_job_whose_verb_is_now_denied_runs_nothing() {
    // Seen before: with echo.* denied after the job started, job.kill still
    // ran the plugin's kill-plan and its program (`entity kill …`).
    let env = jobs_env();
    let id = spawn_entity(&env, false);
    let env = env.with_config("[[policy]]\nverbs = [\"echo.*\"]\ndecision = \"deny\"\n");
    let k = env.op("job.kill", json!({"id": &id}));
    assert_eq!(k["error"]["code"], "policy_denied", "{k}");
    let s = env.op("job.status", json!({"id": &id}));
    assert_eq!(
        s["result"]["status"], "running",
        "the job was neither killed by its CLI nor signalled: {s}"
    );
    // Clean up as the operator would: allow it again, then kill.
    let env = env.with_config("");
    assert_eq!(env.op("job.kill", json!({"id": &id}))["ok"], true);
}

#[test]
fn a_job_with_an_entity_is_killed_by_its_own_cli() {
    let env = jobs_env();
    let id = spawn_entity(&env, false);
    let k = env.op("job.kill", json!({"id": &id}));
    assert_eq!(k["ok"], true, "{k}");
    let r = &k["result"];
    assert_eq!(r["delegated"], true, "{k}");
    assert!(r["entity"].as_str().unwrap().starts_with('E'), "{k}");
    assert_eq!(r["kill"]["exit_code"], 0);
    assert_eq!(
        r["kill"]["output"]["killed"], r["entity"],
        "the CLI's structured outcome is returned"
    );
    assert_eq!(r["job"]["status"], "killed", "{k}");
    assert_eq!(
        env.op("job.status", json!({"id": &id}))["result"]["entity"],
        r["entity"].to_string()
    );
}

#[test]
fn a_failed_entity_kill_is_returned_and_never_falls_back_to_signals() {
    let env = jobs_env();
    let id = spawn_entity(&env, true);
    let k = env.op("job.kill", json!({"id": &id}));
    assert_eq!(k["ok"], false, "{k}");
    assert_eq!(k["error"]["code"], "kill_failed", "{k}");
    assert_eq!(k["error"]["signalled"], false);
    assert_eq!(k["error"]["kill"]["exit_code"], 3, "{k}");
    // The job is still running: nothing signalled its process group.
    std::thread::sleep(Duration::from_millis(300));
    let w = wait(&env, &[&id], 0.0);
    assert_eq!(w["pending"], json!([id]), "{w}");
    let st = env.op("job.status", json!({"id": &id}))["result"].clone();
    unsafe_kill(-st["pid"].as_i64().unwrap());
}

#[test]
fn a_job_killed_by_a_signal_from_outside_records_the_signal() {
    let env = jobs_env();
    let id = spawn(&env, json!({"sleep_ms": 60000}));
    assert_eq!(wait(&env, &[&id], 0.5)["pending"], json!([id]));
    let pid = env.op("job.status", json!({"id": &id}))["result"]["pid"].as_i64().unwrap();
    unsafe_kill(pid);
    let w = wait(&env, &[&id], 10.0);
    let st = env.op("job.status", json!({"id": &id}))["result"].clone();
    assert_eq!(w["jobs"][0]["status"], "failed", "{w}");
    assert_eq!(w["jobs"][0]["reason_code"], "signaled");
    assert_eq!(st["signal"], 9, "{st}");
    assert_eq!(st["exit_code"], Value::Null);
}

#[test]
fn output_paging_returns_every_byte_exactly_once() {
    let env = jobs_env();
    let total = 200_003usize;
    let id = spawn(&env, json!({"spew_bytes": total}));
    assert_eq!(wait(&env, &[&id], 20.0)["all_terminal"], true);
    let mut got = String::new();
    let mut offset = 0u64;
    let mut pages = 0;
    loop {
        let p = env.op("job.output", json!({"id": &id, "offset": offset, "limit": 65536}))
            ["result"]
            .clone();
        assert_eq!(p["offset"], offset, "{p}");
        got.push_str(p["data"].as_str().unwrap());
        offset = p["next_offset"].as_u64().unwrap();
        pages += 1;
        if p["eof"] == true {
            break;
        }
        assert!(pages < 10, "paging does not end");
    }
    let expected: String = (0..total).map(|i| char::from(b'0' + (i % 10) as u8)).collect();
    assert_eq!(got.len(), total);
    assert!(got == expected, "pages must concatenate to the exact output");
    assert_eq!(pages, 4);
}

#[test]
fn kill_reaches_grandchildren_and_programs_that_ignore_term() {
    let env = jobs_env();
    let family = spawn(&env, json!({"family_ms": 60000}));
    let stubborn = spawn(&env, json!({"stubborn_ms": 60000}));
    std::thread::sleep(Duration::from_millis(500));
    let out = env.op("job.output", json!({"id": &family}))["result"]["data"]
        .as_str()
        .unwrap()
        .to_string();
    let inner: i64 =
        serde_json::from_str::<Value>(out.trim()).unwrap()["grandchild"].as_i64().unwrap();
    // The pid it printed is its namespace's: the grandchild as seen here.
    let grandchild = verbgate_tests::outer_pid(inner, "sleep 60000")
        .unwrap_or_else(|| panic!("no grandchild {inner} running")) as i64;
    let k = env.op("job.kill", json!({"id": &family, "grace_seconds": 2}));
    assert_eq!(k["result"]["job"]["status"], "killed", "{k}");
    let gone = |pid: i64| {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| s.contains(") Z "))
            .unwrap_or(true)
    };
    let deadline = Instant::now() + Duration::from_secs(3);
    while !gone(grandchild) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(gone(grandchild), "the grandchild {grandchild} survived the kill");

    let k = env.op("job.kill", json!({"id": &stubborn, "grace_seconds": 0.5}));
    assert_eq!(k["result"]["job"]["status"], "killed", "{k}");
    assert_eq!(k["result"]["escalated_to_sigkill"], true, "{k}");
}

#[test]
fn five_jobs_outlive_a_killed_server_with_their_real_exit_codes() {
    let rt = verbgate_tests::runtime();
    let env = jobs_env();
    let fp = fingerprint(&env);
    let ids: Vec<String> = rt.block_on(async {
        let s = Session::start(env.serve_command()).await.unwrap();
        let ops: Vec<Value> = (0..5).map(|code| json!({"op": "echo.job", "args": {"sleep_ms": 1000, "exit_code": code}, "schema_fingerprint": fp})).collect();
        let r = s.request(json!({ "ops": ops })).await.unwrap();
        let ids = r.structured["results"].as_array().unwrap().iter().map(|x| x["result"]["job"]["id"].as_str().unwrap().to_string()).collect();
        // Dropping the session SIGKILLs `verbgate serve` while the jobs run.
        drop(s);
        ids
    });
    let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
    let w = wait(&env, &refs, 30.0);
    assert_eq!(w["all_terminal"], true, "{w}");
    for (code, id) in ids.iter().enumerate() {
        let st = env.op("job.status", json!({"id": id}))["result"].clone();
        assert_eq!(st["exit_code"], code as i64, "{st}");
        assert_eq!(st["status"], if code == 0 { "succeeded" } else { "failed" });
    }
}

#[test]
fn a_wait_cancelled_by_the_client_leaves_the_record_unchanged() {
    let rt = verbgate_tests::runtime();
    let env = jobs_env();
    let id = spawn(&env, json!({"sleep_ms": 30000}));
    std::thread::sleep(Duration::from_millis(300));
    let before = env.op("job.status", json!({"id": &id}))["result"].clone();
    rt.block_on(async {
        let s = Session::start(env.serve_command()).await.unwrap();
        s.request_then_cancel(
            json!({"ops": [{"op": "job.wait", "args": {"ids": [&id], "max_wait_seconds": 30}}]}),
            Duration::from_millis(300),
        )
        .await
        .unwrap();
        s.close().await.unwrap();
    });
    let after = env.op("job.status", json!({"id": &id}))["result"].clone();
    assert_eq!(before, after, "a cancelled wait must not touch the job");
    assert_eq!(after["status"], "running");
    env.op("job.kill", json!({"id": &id, "grace_seconds": 0}));
}

#[test]
fn a_jobs_supervisor_leaves_the_session_of_whoever_started_it() {
    // The supervisor is started without a `pre_exec` hook (which would fork
    // the whole server) and calls setsid itself: it must lead a session of
    // its own, so the job outlives the starting process and its terminal.
    let env = jobs_env();
    let id = spawn(&env, json!({"sleep_ms": 30000}));
    let mut supervisor = None;
    for _ in 0..200 {
        let s = env.op("job.status", json!({"id": &id}));
        if let Some(pid) = s["result"]["supervisor_pid"].as_i64() {
            supervisor = Some(pid);
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    let pid = supervisor.expect("the job records its supervisor") as libc::pid_t;
    // SAFETY: getsid takes a pid and touches no memory.
    let (theirs, ours) = unsafe { (libc::getsid(pid), libc::getsid(0)) };
    assert_eq!(theirs, pid, "the supervisor leads its own session");
    assert_ne!(theirs, ours, "not ours");
    assert_eq!(env.op("job.kill", json!({"id": &id}))["ok"], true);
}
