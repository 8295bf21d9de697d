//! Kill is exact (issue 11, part 5): a kill only ever signals the process
//! its supervisor started (pid, start time and boot id re-checked), a job
//! with an entity is never signalled (SPEC §7.3), and the record says what
//! really happened when a job ends on its own while a kill is under way.
//!
//! A reused pid and another boot are simulated by editing the job's row in
//! the real store to point at an unrelated live process the test started.

use serde_json::{json, Value};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};
use std::time::Duration;
use verbgate::jobs::model::State;
use verbgate::jobs::process::start_time;
use verbgate::jobs::store::Store;
use verbgate_tests::Env;

fn jobs_env() -> Env {
    // echo.entityjob writes its runs into the root (writes_repo, which the
    // default policy asks about).
    Env::with_plugin("fixture-echo").allowing(&["echo.*"])
}

fn store(env: &Env) -> Store {
    Store::open(&env.home.join("state")).unwrap()
}

fn spawn_verb(env: &Env, verb: &str, args: Value) -> String {
    let fp = env.request(&json!({"help": verb}))["help"]["schema_fingerprint"]
        .as_str()
        .unwrap()
        .to_string();
    let out = env.request(&json!({"ops": [{"op": verb, "args": args, "schema_fingerprint": fp}]}));
    out["results"][0]["result"]["job"]["id"].as_str().unwrap_or_else(|| panic!("{out}")).to_string()
}

fn wait(env: &Env, id: &str, max_wait: f64) -> Value {
    let r = env.op(
        "job.wait",
        json!({"ids": [id], "max_wait_seconds": max_wait, "poll_interval_seconds": 0.2}),
    );
    assert_eq!(r["ok"], true, "{r}");
    r["result"].clone()
}

fn status(env: &Env, id: &str) -> Value {
    env.op("job.status", json!({"id": id}))["result"].clone()
}

/// A running `echo.job` sleeping a minute, with its record.
fn running_job(env: &Env) -> (String, Value) {
    let id = spawn_verb(env, "echo.job", json!({"sleep_ms": 60000}));
    assert_eq!(wait(env, &id, 1.0)["pending"], json!([id]));
    let st = status(env, &id);
    assert_eq!(st["status"], "running", "{st}");
    (id, st)
}

/// An unrelated process in its own process group: what a reused pid finds.
fn bystander() -> Child {
    Command::new("sleep").arg("60").process_group(0).spawn().unwrap()
}

fn still_alive(c: &mut Child) -> bool {
    c.try_wait().unwrap().is_none()
}

fn kill_hard(pid: i64) {
    let _ = Command::new("kill").args(["-KILL", "--", &pid.to_string()]).status();
}

/// The job's supervisor and program die without recording an end, as after
/// an OOM kill or a crash.
fn supervisor_dies(st: &Value) {
    kill_hard(st["supervisor_pid"].as_i64().unwrap());
    std::thread::sleep(Duration::from_millis(100));
    kill_hard(-st["pid"].as_i64().unwrap());
    std::thread::sleep(Duration::from_millis(100));
}

#[test]
fn a_kill_never_signals_a_process_that_reused_the_jobs_pid() {
    let env = jobs_env();
    let (id, st) = running_job(&env);
    supervisor_dies(&st);
    let mut other = bystander();
    let other_pid = other.id() as i64;
    // The recorded pid now belongs to another process (its start time
    // differs from the recorded one).
    store(&env)
        .update(&id, |j| {
            if let State::Running(s) = &mut j.state {
                s.pid = other_pid;
            }
        })
        .unwrap();
    let k = env.op("job.kill", json!({"id": &id, "grace_seconds": 0}));
    assert_eq!(k["ok"], true, "{k}");
    assert!(still_alive(&mut other), "job.kill signalled an unrelated process group: {k}");
    assert_eq!(k["result"]["signalled"], false, "{k}");
    assert_eq!(
        (k["result"]["job"]["status"].clone(), k["result"]["job"]["reason_code"].clone()),
        (json!("lost"), json!("process_gone_no_end")),
        "{k}"
    );
    let _ = other.kill();
}

#[test]
fn a_kill_never_signals_a_process_recorded_in_another_boot() {
    let env = jobs_env();
    let (id, st) = running_job(&env);
    supervisor_dies(&st);
    let mut other = bystander();
    let other_pid = other.id() as i64;
    let other_start = start_time(other_pid);
    // Pid and start time both match a live process, but the record is from
    // another boot: after a reboot, both numbers start again from zero.
    store(&env)
        .update(&id, |j| {
            if let State::Running(s) = &mut j.state {
                s.pid = other_pid;
                s.pid_start = other_start;
            }
            j.boot_id = Some("00000000-0000-0000-0000-000000000000".into());
        })
        .unwrap();
    let k = env.op("job.kill", json!({"id": &id, "grace_seconds": 0}));
    assert!(
        still_alive(&mut other),
        "job.kill signalled a process from another boot's record: {k}"
    );
    assert_eq!(k["result"]["job"]["status"], "lost", "{k}");
    let _ = other.kill();
}

#[test]
fn an_observer_reaps_a_job_recorded_in_another_boot_as_lost() {
    let env = jobs_env();
    let (id, st) = running_job(&env);
    // Everything matches except the boot: nothing recorded is provably ours.
    store(&env).update(&id, |j| j.boot_id = Some("another-boot".into())).unwrap();
    let w = wait(&env, &id, 0.0);
    assert_eq!(
        (w["jobs"][0]["status"].clone(), w["jobs"][0]["reason_code"].clone()),
        (json!("lost"), json!("process_gone_no_end")),
        "{w}"
    );
    kill_hard(-st["pid"].as_i64().unwrap());
}

#[test]
fn a_job_with_an_entity_whose_plugin_is_gone_is_not_signalled() {
    let env = jobs_env();
    let id = spawn_verb(&env, "echo.entityjob", json!({}));
    std::thread::sleep(Duration::from_millis(400));
    // Its entity is on record (a status read or earlier kill attempt put it
    // there); then the plugin is uninstalled.
    let pid = status(&env, &id)["pid"].as_i64().unwrap();
    store(&env).update(&id, |j| j.entity = Some(format!("\"E{pid}\""))).unwrap();
    std::fs::remove_file(env.plugins.join("fixture-echo.wasm")).unwrap();
    let k = env.op("job.kill", json!({"id": &id, "grace_seconds": 0}));
    assert_eq!(k["ok"], false, "{k}");
    assert_eq!(
        (k["error"]["code"].clone(), k["error"]["signalled"].clone()),
        (json!("kill_failed"), json!(false)),
        "{k}"
    );
    assert!(k["error"]["message"].as_str().unwrap().contains("no longer loaded"), "{k}");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(wait(&env, &id, 0.0)["pending"], json!([id]), "the job's group was signalled");
    kill_hard(-pid);
}

#[test]
fn a_job_with_an_entity_its_kill_plan_cannot_stop_is_not_signalled() {
    let env = jobs_env();
    let (id, st) = running_job(&env);
    // echo.job's kill-plan names no command for any entity.
    store(&env).update(&id, |j| j.entity = Some("\"run-1\"".into())).unwrap();
    let k = env.op("job.kill", json!({"id": &id, "grace_seconds": 0}));
    assert_eq!(
        (k["error"]["code"].clone(), k["error"]["signalled"].clone()),
        (json!("kill_failed"), json!(false)),
        "{k}"
    );
    assert!(k["error"]["message"].as_str().unwrap().contains("kill-plan names no command"), "{k}");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(wait(&env, &id, 0.0)["pending"], json!([id]), "the job's group was signalled");
    kill_hard(-st["pid"].as_i64().unwrap());
}

#[test]
fn a_job_that_ends_on_its_own_before_the_kill_lands_keeps_its_own_end() {
    let env = jobs_env();
    let id = spawn_verb(&env, "echo.job", json!({"sleep_ms": 1500}));
    assert_eq!(wait(&env, &id, 0.5)["pending"], json!([id]));
    // A kill was asked (an entity kill under way, or a TERM not yet sent)
    // when the program exits 0 by itself.
    store(&env)
        .update(&id, |j| j.kill_requested_ms = Some(verbgate::jobs::process::now_ms()))
        .unwrap();
    let w = wait(&env, &id, 20.0);
    assert_eq!(
        (w["jobs"][0]["status"].clone(), w["jobs"][0]["reason_code"].clone()),
        (json!("succeeded"), json!("exited_zero")),
        "{w}"
    );
    assert_eq!(status(&env, &id)["exit_code"], 0);
}

#[test]
fn an_entity_kill_that_succeeds_without_ending_the_job_leaves_no_stale_kill_mark() {
    let env = jobs_env();
    let id = spawn_verb(&env, "echo.entityjob", json!({}));
    std::thread::sleep(Duration::from_millis(400));
    let pid = status(&env, &id)["pid"].as_i64().unwrap();
    // The run's entity id, from the file it keeps (`<id>.run`).
    let run = std::fs::read_dir(env.root.join(".fixture-entities"))
        .unwrap()
        .flatten()
        .find_map(|e| e.file_name().to_str()?.strip_suffix(".run").map(String::from))
        .expect("the entity run keeps its file");
    // The CLI's own kill will report success but stop something else.
    let mut decoy = bystander();
    std::fs::write(env.root.join(format!(".fixture-entities/{run}.pid")), decoy.id().to_string())
        .unwrap();
    let k = env.op("job.kill", json!({"id": &id}));
    assert_eq!(k["ok"], true, "{k}");
    assert_eq!(
        (k["result"]["killed"].clone(), k["result"]["ended"].clone()),
        (json!(false), json!(false)),
        "{k}"
    );
    assert_eq!(k["result"]["job"]["kill_requested_ms"], Value::Null, "{k}");
    let _ = decoy.wait();
    // Later the program dies of something else: that is not a kill.
    kill_hard(pid);
    let w = wait(&env, &id, 20.0);
    assert_eq!(
        (w["jobs"][0]["status"].clone(), w["jobs"][0]["reason_code"].clone()),
        (json!("failed"), json!("signaled")),
        "{w}"
    );
}
