//! Spawn verbs as SEP-2663 tasks (issue 28): for a client that declares
//! `io.modelcontextprotocol/tasks`, a call that starts jobs answers a task
//! backed by the job store. Driven by the official Python SDK (a
//! `ClientExtension` polling `tasks/get`, protocol 2026-07-28) and by
//! rmcp's own client (`call_tool_once`, `get_task`, `cancel_task`) in both
//! lifecycles: `initialize` (2025-11-25) and `server/discover` (2026-07-28).

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, ClientCapabilities, ClientConfig,
    GetTaskParams, Implementation, ProtocolVersion, TaskPayload, TaskStatus,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient};
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};
use verbgate_tests::{runtime, target_dir, verbgate_bin, Env};

/// A client that declares the tasks extension (or not).
#[derive(Clone)]
struct TasksClient {
    tasks: bool,
}

impl ClientHandler for TasksClient {
    fn get_info(&self) -> ClientConfig {
        let caps = if self.tasks {
            ClientCapabilities::builder().enable_tasks().build()
        } else {
            ClientCapabilities::default()
        };
        ClientConfig::new(caps, Implementation::new("tasks-test", "1"))
    }
}

type Client = RunningService<RoleClient, TasksClient>;

fn lifecycle(modern: bool) -> ClientLifecycleMode {
    if modern {
        ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] }
    } else {
        ClientLifecycleMode::Initialize
    }
}

async fn connect(env: &Env, modern: bool, tasks: bool) -> Client {
    let transport = TokioChildProcess::new(env.serve_command()).expect("start verbgate serve");
    TasksClient { tasks }
        .serve_with_lifecycle(transport, lifecycle(modern))
        .await
        .expect("MCP session")
}

/// One `request` call, answered as it comes (a task or a result).
async fn call(client: &Client, args: Value) -> CallToolResponse {
    let Value::Object(map) = args else { panic!("arguments must be an object") };
    client
        .call_tool_once(CallToolRequestParams::new("request").with_arguments(map))
        .await
        .expect("tools/call")
}

async fn envelope(client: &Client, args: Value) -> Value {
    match call(client, args).await {
        CallToolResponse::Complete(r) => r.structured_content.expect("structured content"),
        _ => panic!("expected a plain result"),
    }
}

async fn task_id(client: &Client, args: Value) -> String {
    match call(client, args).await {
        CallToolResponse::Task(t) => {
            assert_eq!(t.task.status, TaskStatus::Working);
            assert_eq!(t.task.poll_interval_ms, Some(1000));
            assert_eq!(t.task.ttl_ms, Some(14 * 86_400_000), "the job retention");
            t.task.task_id
        }
        CallToolResponse::Complete(r) => panic!("expected a task, got {:?}", r.structured_content),
        _ => panic!("expected a task"),
    }
}

async fn fingerprint(client: &Client, verb: &str) -> String {
    envelope(client, json!({"help": verb})).await["help"]["schema_fingerprint"]
        .as_str()
        .unwrap()
        .to_string()
}

/// `tasks/get` until the task is no longer working (at most 30 s).
async fn settle(client: &Client, id: &str) -> (TaskStatus, TaskPayload, Vec<TaskStatus>) {
    let started = Instant::now();
    let mut seen = Vec::new();
    loop {
        let got = client.peer().get_task(GetTaskParams::new(id)).await.expect("tasks/get");
        seen.push(got.task.status());
        if got.task.status() != TaskStatus::Working || started.elapsed() > Duration::from_secs(30) {
            return (got.task.status(), got.task.payload, seen);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn completed(payload: &TaskPayload) -> Value {
    match payload {
        TaskPayload::Completed { result } => result["structuredContent"].clone(),
        other => panic!("expected completed, got {other:?}"),
    }
}

/// A completed task's `isError`.
fn is_error(payload: &TaskPayload) -> bool {
    match payload {
        TaskPayload::Completed { result } => result["isError"] == true,
        other => panic!("expected completed, got {other:?}"),
    }
}

#[test]
fn rmcp_clients_get_spawn_verbs_as_tasks_in_both_lifecycles() {
    for modern in [false, true] {
        let env = Env::with_plugin("fixture-echo");
        runtime().block_on(async {
            let client = connect(&env, modern, true).await;
            let fp = fingerprint(&client, "echo.job").await;
            let job = |args: Value| json!({"op": "echo.job", "args": args, "schema_fingerprint": fp});
            let id = task_id(&client, json!({"ops": [job(json!({"sleep_ms": 1200})), {"op": "job.list", "args": {"limit": 1}}, job(json!({"exit_code": 3}))]}))
                .await;
            let (status, payload, seen) = settle(&client, &id).await;
            assert_eq!(status, TaskStatus::Completed, "modern={modern}: {seen:?}");
            assert_eq!(seen[0], TaskStatus::Working, "modern={modern}: working while the job sleeps: {seen:?}");
            let done = completed(&payload);
            let r = &done["results"];
            assert_eq!(
                (r[0]["op"].as_str(), r[0]["result"]["status"].as_str(), r[0]["result"]["exit_code"].as_i64()),
                (Some("echo.job"), Some("succeeded"), Some(0)),
                "{done}"
            );
            assert_eq!(r[1]["op"], "job.list", "an op that started no job keeps its entry: {done}");
            assert_eq!((r[2]["result"]["status"].as_str(), r[2]["result"]["exit_code"].as_i64()), (Some("failed"), Some(3)), "{done}");
            assert_eq!(r[2]["result"]["reason_code"], "exited_nonzero", "{done}");
            assert!(!is_error(&payload), "two of three ops succeeded: {done}");
            // Asked again, the same answer (recorded once).
            let (again, payload2, _) = settle(&client, &id).await;
            assert_eq!((again, completed(&payload2)), (TaskStatus::Completed, done.clone()));
            // A task whose only job failed is a failed call (issue 37: it said isError false).
            let failing = task_id(&client, json!({"ops": [job(json!({"exit_code": 3}))]})).await;
            let (status, payload, _) = settle(&client, &failing).await;
            assert_eq!(status, TaskStatus::Completed, "modern={modern}");
            assert!(is_error(&payload), "modern={modern}: {}", completed(&payload));
            let (_, payload, _) = settle(&client, &failing).await;
            assert!(is_error(&payload), "recorded, the same: {}", completed(&payload));
            // An id that is not one, and a call that started no job.
            let err = client.peer().get_task(GetTaskParams::new("task-00000000000000000000000000000000")).await.unwrap_err().to_string();
            assert!(err.contains("no task"), "{err}");
            assert_eq!(envelope(&client, json!({"ops": [{"op": "job.list", "args": {"limit": 1}}]})).await["status"], "success");
            client.cancel().await.unwrap();
            // Without the extension: job ids, as before.
            let plain = connect(&env, modern, false).await;
            let body = envelope(&plain, json!({"ops": [job(json!({"word": "plain"}))]})).await;
            assert!(body["results"][0]["result"]["job"]["id"].is_string(), "{body}");
            plain.cancel().await.unwrap();
        });
    }
}

#[test]
fn tasks_cancel_is_job_kill_with_entity_delegation_and_no_fallback() {
    let env = Env::with_plugin("fixture-echo").allowing(&["echo.entityjob"]);
    runtime().block_on(async {
        let client = connect(&env, true, true).await;
        let fp = fingerprint(&client, "echo.job").await;
        let efp = fingerprint(&client, "echo.entityjob").await;
        // A plain job: its process group is signalled.
        let id = task_id(&client, json!({"ops": [{"op": "echo.job", "args": {"sleep_ms": 60000}, "schema_fingerprint": fp}]})).await;
        client.peer().cancel_task(CancelTaskParams::new(&id)).await.expect("tasks/cancel");
        let (status, _, _) = settle(&client, &id).await;
        assert_eq!(status, TaskStatus::Cancelled);
        let jobs = envelope(&client, json!({"ops": [{"op": "job.list", "args": {"limit": 5}}]})).await;
        let listed = jobs["results"][0]["result"]["jobs"].as_array().unwrap();
        assert_eq!(listed[0]["status"], "killed", "{jobs}");

        // An entity job: killed by its CLI's own kill.
        let id = task_id(&client, json!({"ops": [{"op": "echo.entityjob", "args": {}, "schema_fingerprint": efp}]})).await;
        wait_for_entity(&client).await;
        client.peer().cancel_task(CancelTaskParams::new(&id)).await.expect("tasks/cancel");
        assert_eq!(settle(&client, &id).await.0, TaskStatus::Cancelled);
        let rows = audit(&env);
        let kills: Vec<&Value> = rows.iter().filter(|r| r["verb"] == "job.kill").collect();
        assert_eq!(kills.len(), 2, "each cancel is a job.kill in the audit trail: {rows:?}");
        assert!(kills.iter().all(|k| k["outcome"] == "ok" && k["caller"] == "local"), "{kills:?}");
        let jobs = envelope(&client, json!({"ops": [{"op": "job.list", "args": {"limit": 1}}]})).await;
        assert_eq!(jobs["results"][0]["result"]["jobs"][0]["status"], "killed", "{jobs}");

        // An entity whose CLI cannot kill it: the cancel fails, nothing
        // else is signalled, and the task runs on.
        let id = task_id(&client, json!({"ops": [{"op": "echo.entityjob", "args": {"fail_kill": true}, "schema_fingerprint": efp}]})).await;
        wait_for_entity(&client).await;
        let err = client.peer().cancel_task(CancelTaskParams::new(&id)).await.unwrap_err().to_string();
        assert!(err.contains("could not kill") && err.contains("kill_failed"), "{err}");
        let got = client.peer().get_task(GetTaskParams::new(&id)).await.unwrap();
        assert_eq!(got.task.status(), TaskStatus::Working, "no fallback: the job still runs");
        client.cancel().await.unwrap();
    });
    // Clean up: stop the entity run by the pid it recorded.
    for entry in
        std::fs::read_dir(env.root.join(".fixture-entities")).into_iter().flatten().flatten()
    {
        if let Ok(pid) = std::fs::read_to_string(entry.path()) {
            let _ = Command::new("kill").arg("-TERM").arg(pid.trim()).status();
        }
    }
}

/// Let the entity CLI start and print its id (as tests/e2e/jobs.rs does).
async fn wait_for_entity(_client: &Client) {
    tokio::time::sleep(Duration::from_millis(400)).await;
}

fn audit(env: &Env) -> Vec<Value> {
    let out = env.cmd(&["audit", "--json", "--verb", "job.kill"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn a_task_survives_a_server_restart() {
    let env = Env::with_plugin("fixture-echo");
    runtime().block_on(async {
        let client = connect(&env, true, true).await;
        let fp = fingerprint(&client, "echo.job").await;
        let id = task_id(&client, json!({"ops": [{"op": "echo.job", "args": {"sleep_ms": 2000}, "schema_fingerprint": fp}]})).await;
        // The server process ends with its client; the job runs on.
        client.cancel().await.unwrap();
        let client = connect(&env, true, true).await;
        let (status, payload, seen) = settle(&client, &id).await;
        assert_eq!(status, TaskStatus::Completed, "{seen:?}");
        assert_eq!(seen[0], TaskStatus::Working, "the new process saw the job still running: {seen:?}");
        assert_eq!(completed(&payload)["results"][0]["result"]["status"], "succeeded");
        client.cancel().await.unwrap();
    });
}

/// Run tests/python/mcp_tasks.py.
fn python(cfg: &Value) -> Value {
    let python = target_dir().join("py/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run `just python-env` (part of `just test`)",
        python.display()
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("python/mcp_tasks.py");
    let out = Command::new(&python).arg(&script).arg(cfg.to_string()).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "mcp_tasks.py failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

fn check_python(v: &Value, http: bool) {
    assert_eq!(v["protocol"], "2026-07-28", "{v}");
    assert_eq!(v["server_declares_tasks"], true, "{v}");
    let seen = v["seen"].as_array().unwrap();
    assert_eq!(seen[0]["created"]["resultType"], "task", "{v}");
    assert_eq!(seen[1]["status"], "working", "{v}");
    assert_eq!(seen.last().unwrap()["status"], "completed", "{v}");
    let r = &v["tasked"]["body"]["results"];
    assert_eq!(
        (r[0]["result"]["status"].as_str(), r[0]["result"]["exit_code"].as_i64()),
        (Some("succeeded"), Some(0)),
        "{v}"
    );
    assert_eq!(r[1]["op"], "job.list", "{v}");
    assert_eq!(
        (r[2]["result"]["status"].as_str(), r[2]["result"]["exit_code"].as_i64()),
        (Some("failed"), Some(3)),
        "{v}"
    );
    assert_eq!(v["no_job"]["status"], "success", "{v}");
    let progress = v["progress"].as_array().unwrap();
    assert!(
        !progress.is_empty() && progress[0]["total"].as_f64() == Some(1.0),
        "progress notifications on 2026-07-28: {v}"
    );
    assert!(v["unknown"]["message"].as_str().unwrap().contains("no task"), "{v}");
    if http {
        // Another token gets the answer an unknown id gets.
        let other = v["other_token"]["message"].as_str().unwrap();
        let unknown = v["unknown"]["message"].as_str().unwrap();
        let id = v["task_id"].as_str().unwrap();
        assert_eq!(
            other.replace(id, "ID"),
            unknown.replace(&format!("task-{}", "0".repeat(32)), "ID"),
            "{v}"
        );
    }
    assert!(
        v["plain"]["results"][0]["result"]["job"]["id"].is_string(),
        "without the extension: a job id: {v}"
    );
}

#[test]
fn python_sdk_tasks_extension_over_stdio_and_http() {
    let env = Env::with_plugin("fixture-echo");
    let v = python(&json!({"stdio": [verbgate_bin(), env.home, env.root, env.plugins]}));
    check_python(&v, false);

    let env = Env::with_plugin("fixture-echo");
    let first = env.run_ok(&["token", "add", "first"])["token"].as_str().unwrap().to_string();
    let second = env.run_ok(&["token", "add", "second"])["token"].as_str().unwrap().to_string();
    let server = env.serve_http(&[]);
    let v = python(&json!({"url": server.url, "token": first, "token2": second}));
    check_python(&v, true);
}
