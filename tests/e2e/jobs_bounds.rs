//! Jobs are bounded (issue 11, part 4) and never left unsupervised (part
//! 7): the running-job cap, the output cap per stream, the default and
//! maximum time limits, retention (`verbgate jobs prune` and server start),
//! and a supervisor that cannot record a start or read output. Each test
//! attacks one bound with real jobs of the fixture CLI.

use serde_json::{json, Value};
use std::time::Duration;
use verbgate::jobs::model::{Job, State};
use verbgate::jobs::store::Store;
use verbgate_tests::mcp::Session;
use verbgate_tests::Env;

fn jobs_env(limits: &str) -> Env {
    Env::with_plugin("fixture-echo").with_config(&format!("[limits]\n{limits}\n"))
}

fn store(env: &Env) -> Store {
    Store::open(&env.home.join("state")).unwrap()
}

/// Spawn `echo.job` with `args` (and extra environment for `verbgate`);
/// the op's result entry.
fn spawn_with(env: &Env, args: Value, vars: &[(&str, &str)]) -> Value {
    let fp = env.request(&json!({"help": "echo.job"}))["help"]["schema_fingerprint"]
        .as_str()
        .unwrap()
        .to_string();
    let req =
        json!({"ops": [{"op": "echo.job", "args": args, "schema_fingerprint": fp}]}).to_string();
    let out = env.cmd(&["request", &req]).envs(vars.iter().copied()).output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    v["results"][0].clone()
}

fn spawn(env: &Env, args: Value) -> String {
    let r = spawn_with(env, args, &[]);
    assert_eq!(r["ok"], true, "{r}");
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

/// Make an ended job look as if it ended long ago.
fn long_ago(j: &mut Job) {
    if let State::Ended(e) = &mut j.state {
        e.ended_ms = 1_000;
    }
}

fn status(env: &Env, id: &str) -> Value {
    env.op("job.status", json!({"id": id}))["result"].clone()
}

/// Whether process group `pgid` still has a process (a zombie counts).
fn group_alive(pgid: i64) -> bool {
    std::process::Command::new("kill")
        .args(["-0", "--", &format!("-{pgid}")])
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap()
        .success()
}

/// Whether process group `pgid` is gone within a few seconds: an orphaned
/// member killed with its group stays a zombie until init reaps it.
fn group_gone(pgid: i64) -> bool {
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while group_alive(pgid) {
        if std::time::Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

#[test]
fn a_spawn_past_the_running_job_cap_is_refused_naming_the_setting() {
    let env = jobs_env("max_running_jobs = 2");
    let a = spawn(&env, json!({"sleep_ms": 60000}));
    let b = spawn(&env, json!({"sleep_ms": 60000}));
    let refused = spawn_with(&env, json!({"sleep_ms": 60000}), &[]);
    assert_eq!(refused["ok"], false, "{refused}");
    let e = &refused["error"];
    assert_eq!(e["code"], "job_limit", "{e}");
    assert_eq!((e["limit"].clone(), e["running"].clone()), (json!(2), json!(2)), "{e}");
    assert!(e["message"].as_str().unwrap().contains("limits.max_running_jobs"), "{e}");
    assert_eq!(
        env.op("job.list", json!({}))["result"]["jobs"].as_array().unwrap().len(),
        2,
        "a refused spawn leaves no job"
    );
    // A place frees up when a job ends.
    assert_eq!(env.op("job.kill", json!({"id": &a, "grace_seconds": 0}))["result"]["killed"], true);
    let c = spawn(&env, json!({"sleep_ms": 60000}));
    for id in [&b, &c] {
        env.op("job.kill", json!({"id": id, "grace_seconds": 0}));
    }
}

#[test]
fn jobs_whose_processes_are_gone_do_not_use_up_the_cap() {
    let env = jobs_env("max_running_jobs = 1");
    let a = spawn(&env, json!({"sleep_ms": 60000}));
    assert_eq!(wait(&env, &[&a], 1.0)["pending"], json!([a]));
    // The job's supervisor and program die without recording an end (as
    // after a crash): the next spawn reaps it instead of being refused.
    let st = status(&env, &a);
    for pid in [st["supervisor_pid"].as_i64().unwrap(), -st["pid"].as_i64().unwrap()] {
        std::process::Command::new("kill")
            .args(["-KILL", "--", &pid.to_string()])
            .status()
            .unwrap();
    }
    std::thread::sleep(Duration::from_millis(200));
    let b = spawn(&env, json!({"word": "after"}));
    assert_eq!(status(&env, &a)["status"], "lost");
    assert_eq!(wait(&env, &[&b], 20.0)["all_terminal"], true);
}

#[test]
fn a_stream_past_the_output_cap_keeps_exactly_the_cap_and_says_where_it_stopped() {
    let env = jobs_env("job_output_bytes = 100000");
    let id = spawn(&env, json!({"spew_bytes": 200_003}));
    let w = wait(&env, &[&id], 20.0);
    assert_eq!(w["jobs"][0]["status"], "failed", "{w}");
    assert_eq!(w["jobs"][0]["reason_code"], "output_limit", "{w}");
    let st = status(&env, &id);
    assert_eq!(st["truncated"], json!(["stdout"]), "{st}");
    assert_eq!(st["output_limit_bytes"], 100000);
    let last = env.op("job.output", json!({"id": &id, "offset": 99_990}))["result"].clone();
    assert_eq!(last["total_bytes"], 100000, "{last}");
    assert_eq!(
        (last["limit_reached"].clone(), last["truncated_at"].clone(), last["eof"].clone()),
        (json!(true), json!(100000), json!(true)),
        "{last}"
    );
    // Every kept byte is the program's, in order.
    assert_eq!(last["data"], "0123456789");
    let err = env.op("job.output", json!({"id": &id, "stream": "stderr"}))["result"].clone();
    assert_eq!(
        (err["limit_reached"].clone(), err["truncated_at"].clone()),
        (json!(false), Value::Null),
        "{err}"
    );
}

#[test]
fn a_program_that_writes_past_the_cap_is_stopped_with_its_children() {
    // The program prints its grandchild's pid (more than 10 bytes), then
    // would sleep a minute: the cap stops it and its whole group at once.
    let env = jobs_env("job_output_bytes = 10");
    let id = spawn(&env, json!({"family_ms": 60000}));
    let stubborn = spawn(&env, json!({"stubborn_ms": 60000}));
    let w = wait(&env, &[&id, &stubborn], 30.0);
    assert_eq!(w["all_terminal"], true, "a job past its output cap must be stopped: {w}");
    for e in w["jobs"].as_array().unwrap() {
        assert_eq!(
            (e["status"].clone(), e["reason_code"].clone()),
            (json!("failed"), json!("output_limit")),
            "{w}"
        );
    }
    let st = status(&env, &id);
    assert!(group_gone(st["pid"].as_i64().unwrap()), "the job's process group survived: {st}");
    // One that ignores TERM gets KILL.
    assert_eq!(status(&env, &stubborn)["signal"], 9);
    let out = env.op("job.output", json!({"id": &id}))["result"].clone();
    assert_eq!(
        (out["total_bytes"].clone(), out["truncated_at"].clone()),
        (json!(10), json!(10)),
        "{out}"
    );
}

#[test]
fn spawn_time_limits_get_a_default_and_are_clamped_to_the_maximum_and_echoed() {
    let env = jobs_env("job_timeout_ms = 1000\njob_timeout_max_ms = 2000");
    let unset = spawn_with(&env, json!({"sleep_ms": 60000}), &[]);
    assert_eq!(unset["result"]["job"]["time_limit_ms"], 1000, "{unset}");
    let asked = spawn_with(&env, json!({"sleep_ms": 60000, "time_limit_ms": 600000}), &[]);
    assert_eq!(
        asked["result"]["job"]["time_limit_ms"], 2000,
        "the plan's 600000 is clamped: {asked}"
    );
    let short = spawn_with(&env, json!({"sleep_ms": 60000, "time_limit_ms": 300}), &[]);
    assert_eq!(
        short["result"]["job"]["time_limit_ms"], 300,
        "a limit under the maximum is kept: {short}"
    );
    let ids: Vec<String> = [&unset, &asked, &short]
        .iter()
        .map(|r| r["result"]["job"]["id"].as_str().unwrap().to_string())
        .collect();
    let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
    let w = wait(&env, &refs, 30.0);
    assert_eq!(w["all_terminal"], true, "{w}");
    for e in w["jobs"].as_array().unwrap() {
        assert_eq!(
            (e["status"].clone(), e["reason_code"].clone()),
            (json!("timed_out"), json!("time_limit")),
            "{w}"
        );
    }
    assert_eq!(status(&env, &ids[1])["time_limit_ms"], 2000);
}

#[test]
fn prune_removes_old_and_surplus_jobs_but_never_running_ones_or_files_behind_a_link() {
    let env = jobs_env("job_retain_count = 1");
    let old: Vec<String> = (0..3).map(|i| spawn(&env, json!({"word": format!("w{i}")}))).collect();
    let refs: Vec<&str> = old.iter().map(String::as_str).collect();
    assert_eq!(wait(&env, &refs, 20.0)["all_terminal"], true);
    let running = spawn(&env, json!({"sleep_ms": 60000}));
    let s = store(&env);
    // The oldest job's directory is replaced by a link to a directory that
    // must survive, and the next one holds a link to it too.
    let outside = env.tmp.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("precious"), "keep").unwrap();
    std::fs::remove_dir_all(s.job_dir(&old[0])).unwrap();
    std::os::unix::fs::symlink(&outside, s.job_dir(&old[0])).unwrap();
    std::os::unix::fs::symlink(outside.join("precious"), s.job_dir(&old[1]).join("extra")).unwrap();

    let r = env.run_ok(&["jobs", "prune", "--json"]);
    let pruned: Vec<&str> =
        r["pruned"].as_array().unwrap().iter().map(|p| p["id"].as_str().unwrap()).collect();
    assert_eq!(pruned, vec![old[1].as_str(), old[0].as_str()], "{r}");
    assert!(
        r["pruned"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["why"] == "count" && p["files_removed"] == true),
        "{r}"
    );
    assert_eq!(
        std::fs::read_to_string(outside.join("precious")).unwrap(),
        "keep",
        "prune followed a link"
    );
    assert!(std::fs::symlink_metadata(s.job_dir(&old[0])).is_err() && !s.job_dir(&old[1]).exists());
    assert_eq!(env.op("job.status", json!({"id": &old[0]}))["error"]["code"], "not_found");
    assert_eq!(status(&env, &old[2])["status"], "succeeded", "the newest ended job is kept");
    assert_eq!(status(&env, &running)["terminal"], false, "a running job is never pruned");

    // Age: a job that ended long ago goes, even within the count.
    s.update(&old[2], long_ago).unwrap();
    let (code, _, _) = env.run(&["jobs", "prune", "--json"]);
    assert_eq!(code, 0);
    assert_eq!(env.op("job.status", json!({"id": &old[2]}))["error"]["code"], "not_found");
    env.op("job.kill", json!({"id": &running, "grace_seconds": 0}));
    // Plain output says what it did.
    let out = env.cmd(&["jobs", "prune"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("pruned 0 ended job(s), kept 1"), "{text}");
}

#[test]
fn the_server_prunes_at_start() {
    let env = jobs_env("job_retain_days = 1");
    let id = spawn(&env, json!({"word": "ancient"}));
    assert_eq!(wait(&env, &[&id], 20.0)["all_terminal"], true);
    store(&env).update(&id, long_ago).unwrap();
    let rt = verbgate_tests::runtime();
    rt.block_on(async {
        let s = Session::start(env.serve_command()).await.unwrap();
        s.close().await.unwrap();
    });
    assert_eq!(env.op("job.status", json!({"id": &id}))["error"]["code"], "not_found");
    assert!(!store(&env).job_dir(&id).exists());
}

#[test]
fn a_start_that_cannot_be_recorded_stops_the_program_instead_of_leaving_it_unsupervised() {
    let env = jobs_env("");
    let r =
        spawn_with(&env, json!({"family_ms": 60000}), &[("VERBGATE_TEST_FAIL_AFTER_SPAWN", "1")]);
    let id = r["result"]["job"]["id"].as_str().unwrap_or_else(|| panic!("{r}")).to_string();
    let w = wait(&env, &[&id], 20.0);
    assert_eq!(w["jobs"][0]["status"], "failed", "{w}");
    assert_eq!(w["jobs"][0]["reason_code"], "record_failed", "{w}");
    let st = status(&env, &id);
    assert!(
        st["error"].as_str().unwrap().contains("stopped rather than left running unsupervised"),
        "{st}"
    );
    let pid = st["pid"].as_i64().unwrap();
    assert!(group_gone(pid), "the program's group {pid} runs on unsupervised");
}

#[test]
fn a_failed_read_of_the_output_is_reported_not_taken_for_its_end() {
    let env = jobs_env("");
    let r = spawn_with(
        &env,
        json!({"sleep_ms": 60000}),
        &[("VERBGATE_TEST_CAPTURE_READ_ERROR", "stdout")],
    );
    let id = r["result"]["job"]["id"].as_str().unwrap_or_else(|| panic!("{r}")).to_string();
    let w = wait(&env, &[&id], 20.0);
    assert_eq!(
        (w["jobs"][0]["status"].clone(), w["jobs"][0]["reason_code"].clone()),
        (json!("failed"), json!("capture_failed")),
        "{w}"
    );
    let st = status(&env, &id);
    assert!(st["error"].as_str().unwrap().contains("reading the program's stdout failed"), "{st}");
    assert!(group_gone(st["pid"].as_i64().unwrap()));
}

#[test]
fn job_output_never_reads_through_a_link_planted_in_a_job_directory() {
    let env = jobs_env("");
    let id = spawn(&env, json!({"word": "x"}));
    assert_eq!(wait(&env, &[&id], 20.0)["all_terminal"], true);
    let secret = env.tmp.path().join("secret");
    std::fs::write(&secret, "TOPSECRET").unwrap();
    let stdout = store(&env).job_dir(&id).join("stdout");
    std::fs::remove_file(&stdout).unwrap();
    std::os::unix::fs::symlink(&secret, &stdout).unwrap();
    for (op, args) in [("job.output", json!({"id": &id})), ("job.result", json!({"id": &id}))] {
        let r = env.op(op, args);
        assert!(!r.to_string().contains("TOPSECRET"), "{op} read through a link: {r}");
    }
}

#[test]
fn job_output_is_never_written_through_a_link_planted_in_the_state_directory() {
    use std::os::unix::fs::PermissionsExt;
    let env = jobs_env("");
    let outside = env.tmp.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::set_permissions(&outside, std::fs::Permissions::from_mode(0o755)).unwrap();
    let state = env.home.join("state");
    std::fs::create_dir_all(&state).unwrap();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::os::unix::fs::symlink(&outside, state.join("jobs")).unwrap();
    let id = spawn(&env, json!({"word": "leak"}));
    let w = wait(&env, &[&id], 20.0);
    assert_eq!(
        (w["jobs"][0]["status"].clone(), w["jobs"][0]["reason_code"].clone()),
        (json!("failed"), json!("launch_failed")),
        "{w}"
    );
    assert!(status(&env, &id)["error"].as_str().unwrap().contains("symbolic link"));
    assert_eq!(
        std::fs::read_dir(&outside).unwrap().count(),
        0,
        "output was written through the link"
    );
    assert_eq!(
        std::fs::metadata(&outside).unwrap().permissions().mode() & 0o777,
        0o755,
        "the link's target was modified"
    );
}
