//! Spawn verbs as tasks (SEP-2663, the `io.modelcontextprotocol/tasks`
//! extension), for clients whose requests declare it.
//!
//! A `request` call whose ops started jobs answers a `CreateTaskResult`
//! instead of the envelope, once the call has finished (its job rows are
//! durable by then) and the task's record is written. The record lives
//! beside the job store (`$VERBGATE_HOME/state/tasks/<id>.json`, 0600 in
//! a 0700 directory), not in rmcp's in-memory task manager, so a task
//! outlives the server process that created it, as its jobs do.
//!
//! - `tasks/get` observes the jobs through the dispatcher (`job.wait`
//!   with no wait, then `job.result` once none is still running), as the
//!   caller: `working` while a job runs, then `completed` with the
//!   envelope the caller would otherwise assemble from `job.wait` and
//!   `job.result` — each spawn op's entry replaced by its job's mapped
//!   result (status, outcome, reason, exit code), every other op's entry
//!   as the call answered it. `failed` only when the jobs cannot be
//!   observed at all (no job store, `job.*` outside the token's allow
//!   list).
//! - `tasks/cancel` is `job.kill` of every job not yet ended, through the
//!   dispatcher (a job with an entity is killed by its CLI's own kill, no
//!   fallback; the same reason codes). When a kill fails, the cancel
//!   fails with the kills' envelope and the task runs on.
//! - A task id is 128 random bits, and answers only to the caller that
//!   created it (the job owner: `local`, or the token by its hash); any
//!   other caller gets the answer an unknown id gets.
//! - `ttlMs` is the job retention (`limits.job_retain_days`): records
//!   older than that are removed, as their jobs are. `pollIntervalMs` is
//!   [`POLL_INTERVAL`].
//!
//! Not done: task status notifications. rmcp 3.11 cannot route them
//! through `subscriptions/listen` (its filter has no task ids), so a
//! client polls `tasks/get`; nothing pretends to notify.

use anyhow::{Context, Result};
use chrono::{TimeZone, Utc};
use rmcp::model::{
    CallToolResult, CreateTaskResult, DetailedTask, GetTaskResult, JsonObject, Task, TaskPayload,
    TaskStatus,
};
use rmcp::ErrorData as McpError;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::dispatch::{Caller, Dispatcher, Observer};
use crate::private_files::{
    ensure_private_dir, random_bytes, read_regular_capped, write_private_file, ReadRefusal,
};

/// The polling interval a task suggests.
pub const POLL_INTERVAL: Duration = Duration::from_secs(1);

/// Largest task record read back (the call's envelope is bounded by the
/// batch cap and each plugin's output bound; this leaves room).
const RECORD_BYTES: u64 = 16 << 20;

/// The durable task records of one verbgate home.
#[derive(Debug, Clone)]
pub struct Tasks {
    dir: PathBuf,
    ttl: Duration,
}

/// One task: the call that created it and what became of it.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Record {
    id: String,
    /// The job owner of the caller that created it.
    owner: String,
    created_ms: i64,
    updated_ms: i64,
    /// The call's envelope as it finished (spawn ops carry their job).
    envelope: Value,
    /// `(op index, job id)` for every op that started a job.
    jobs: Vec<(usize, String)>,
    /// The finished envelope, once no job runs any more.
    done: Option<Value>,
    /// Set by `tasks/cancel` once every kill succeeded.
    cancelled: bool,
}

impl Tasks {
    /// The records under `state_dir/tasks`, kept for `ttl` (the job
    /// retention).
    pub fn open(state_dir: &Path, ttl: Duration) -> Result<Tasks> {
        let dir = state_dir.join("tasks");
        ensure_private_dir(&dir)?;
        Ok(Tasks { dir, ttl })
    }

    fn path(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.json"))
    }

    /// Make a task of a finished call for `owner`, if its ops started
    /// jobs: the record is durable before this returns. `None` when no op
    /// started a job (the call answers its envelope).
    pub fn create(&self, owner: &str, envelope: &Value) -> Result<Option<CreateTaskResult>> {
        let jobs = jobs_of(envelope);
        if jobs.is_empty() {
            return Ok(None);
        }
        self.prune();
        let now = Utc::now().timestamp_millis();
        let id = format!("task-{}", hex::encode(random_bytes(16)?));
        let record = Record {
            id,
            owner: owner.to_string(),
            created_ms: now,
            updated_ms: now,
            envelope: envelope.clone(),
            jobs,
            done: None,
            cancelled: false,
        };
        self.save(&record)?;
        Ok(Some(CreateTaskResult::new(self.task(
            &record,
            TaskStatus::Working,
            Some(self.progress_message(&record, 0)),
        ))))
    }

    fn save(&self, record: &Record) -> Result<()> {
        let bytes = serde_json::to_vec(record).context("cannot encode a task record")?;
        write_private_file(&self.path(&record.id), &bytes)
    }

    /// The record of task `id` if `owner` created it; any other caller,
    /// an id that is not one, and an expired task get one answer.
    fn load(&self, id: &str, owner: &str) -> Result<Record, McpError> {
        let unknown = || {
            McpError::invalid_params(
                format!(
                    "no task `{}`: it does not exist, was created by another caller, or expired with its jobs (limits.job_retain_days); start the work again, or follow its jobs with job.wait",
                    crate::text::escape(id, 80)
                ),
                Some(json!({ "taskId": crate::text::escape(id, 80) })),
            )
        };
        // Ids are ours: `task-` and 32 hex digits, so no path can be formed.
        let well_formed = id
            .strip_prefix("task-")
            .is_some_and(|h| h.len() == 32 && h.bytes().all(|b| b.is_ascii_hexdigit()));
        if !well_formed {
            return Err(unknown());
        }
        let bytes = match read_regular_capped(&self.path(id), RECORD_BYTES) {
            Ok(b) => b,
            Err(ReadRefusal::Missing) => return Err(unknown()),
            Err(ReadRefusal::Refused(why)) => {
                return Err(McpError::internal_error(format!("the record of task `{id}` cannot be read ({why}); its jobs can be followed with job.wait"), None))
            }
        };
        let record: Record = serde_json::from_slice(&bytes)
            .map_err(|e| McpError::internal_error(format!("the record of task `{id}` is damaged ({e}); its jobs can be followed with job.wait"), None))?;
        if record.owner != owner || self.expired(&record) {
            return Err(unknown());
        }
        Ok(record)
    }

    fn expired(&self, record: &Record) -> bool {
        let age = Utc::now().timestamp_millis().saturating_sub(record.created_ms);
        u128::try_from(age).unwrap_or(0) > self.ttl.as_millis()
    }

    /// Remove records past the retention.
    fn prune(&self) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else { return };
        for entry in entries.flatten() {
            let old = entry
                .metadata()
                .ok()
                .and_then(|m| m.modified().ok())
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age > self.ttl);
            if old {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }

    fn task(&self, record: &Record, status: TaskStatus, message: Option<String>) -> Task {
        let mut task =
            Task::new(record.id.clone(), status, iso(record.created_ms), iso(record.updated_ms))
                .with_ttl_ms(u64::try_from(self.ttl.as_millis()).unwrap_or(u64::MAX))
                .with_poll_interval_ms(POLL_INTERVAL.as_millis() as u64);
        task.status_message = message;
        task
    }

    fn progress_message(&self, record: &Record, finished: usize) -> String {
        format!(
            "{finished} of {} jobs finished; poll tasks/get, or follow the jobs with job.wait: {}",
            record.jobs.len(),
            job_list(record)
        )
    }

    /// `tasks/get` of task `id` for `caller`.
    pub async fn get(
        &self,
        dispatcher: &Arc<Dispatcher>,
        id: &str,
        caller: Caller,
    ) -> Result<GetTaskResult, McpError> {
        let mut record = self.load(id, &caller.owner)?;
        if record.cancelled {
            let message = format!("cancelled by tasks/cancel: every job was killed ({}); job.result reads what each left", job_list(&record));
            return Ok(GetTaskResult::new(DetailedTask::new(
                self.task(&record, TaskStatus::Cancelled, Some(message)),
                TaskPayload::Cancelled,
            )));
        }
        if let Some(done) = &record.done {
            return Ok(GetTaskResult::new(DetailedTask::new(
                self.task(&record, TaskStatus::Completed, None),
                TaskPayload::Completed { result: tool_result(done, &record.jobs) },
            )));
        }
        let caller = Arc::new(caller);
        let ids: Vec<&str> = record.jobs.iter().map(|(_, id)| id.as_str()).collect();
        let wait = run(
            dispatcher,
            &caller,
            json!({ "ops": [{ "op": "job.wait", "args": { "ids": ids, "max_wait_seconds": 0 } }] }),
        )
        .await;
        let observed = &wait["results"][0];
        if observed["ok"] != true {
            let error = json!({ "code": -32603, "message": "the task's jobs cannot be observed", "data": observed["error"] });
            let detailed = DetailedTask::new(
                self.task(
                    &record,
                    TaskStatus::Failed,
                    Some("the task's jobs cannot be observed".into()),
                ),
                TaskPayload::Failed { error: object(error) },
            );
            return Ok(GetTaskResult::new(detailed));
        }
        let waited = &observed["result"];
        let running = |key: &str| waited[key].as_array().is_some_and(|a| !a.is_empty());
        if running("pending") || running("unresolved_spawn") {
            let finished = waited["terminal"].as_array().map_or(0, Vec::len);
            return Ok(GetTaskResult::new(DetailedTask::new(
                self.task(
                    &record,
                    TaskStatus::Working,
                    Some(self.progress_message(&record, finished)),
                ),
                TaskPayload::Working,
            )));
        }
        // Every job has ended (or is gone for good): the mapped results.
        let ops: Vec<Value> = record
            .jobs
            .iter()
            .map(|(_, id)| json!({ "op": "job.result", "args": { "id": id } }))
            .collect();
        let results = run(dispatcher, &caller, json!({ "ops": ops })).await;
        let done = finished_envelope(&record.envelope, &record.jobs, &results);
        record.done = Some(done.clone());
        record.updated_ms = Utc::now().timestamp_millis();
        if let Err(e) = self.save(&record) {
            // The answer stands; the next get maps the results again.
            tracing::warn!(task = %record.id, error = %format!("{e:#}"), "cannot record a finished task");
        }
        Ok(GetTaskResult::new(DetailedTask::new(
            self.task(&record, TaskStatus::Completed, None),
            TaskPayload::Completed { result: tool_result(&done, &record.jobs) },
        )))
    }

    /// `tasks/cancel` of task `id` for `caller`: `job.kill` of each job
    /// (a finished task is left as it is).
    pub async fn cancel(
        &self,
        dispatcher: &Arc<Dispatcher>,
        id: &str,
        caller: Caller,
    ) -> Result<(), McpError> {
        let mut record = self.load(id, &caller.owner)?;
        if record.done.is_some() || record.cancelled {
            return Ok(());
        }
        let caller = Arc::new(caller);
        let ops: Vec<Value> = record
            .jobs
            .iter()
            .map(|(_, id)| json!({ "op": "job.kill", "args": { "id": id } }))
            .collect();
        let kills = run(dispatcher, &caller, json!({ "ops": ops })).await;
        let failed: Vec<&Value> = kills["results"]
            .as_array()
            .map(|r| r.iter().filter(|e| e["ok"] != true).collect())
            .unwrap_or_default();
        if !failed.is_empty() {
            return Err(McpError::internal_error(
                format!(
                    "tasks/cancel could not kill every job of task `{}` ({} of {} kills failed, first: {}: {}); the task runs on. See the kills in `data`, and retry or kill the jobs with job.kill",
                    record.id,
                    failed.len(),
                    record.jobs.len(),
                    failed[0]["error"]["code"].as_str().unwrap_or("unknown"),
                    failed[0]["error"]["message"].as_str().unwrap_or("no message")
                ),
                Some(kills),
            ));
        }
        record.cancelled = true;
        record.updated_ms = Utc::now().timestamp_millis();
        self.save(&record).map_err(|e| {
            McpError::internal_error(
                format!(
                    "the jobs were killed, but task `{}` cannot be recorded as cancelled: {e:#}",
                    record.id
                ),
                None,
            )
        })
    }
}

/// Run one request through the dispatcher as `caller`: the body.
async fn run(dispatcher: &Arc<Dispatcher>, caller: &Arc<Caller>, request: Value) -> Value {
    dispatcher.handle_as(&request, Arc::new(Observer::default()), caller.clone()).await.body
}

/// `(op index, job id)` for each op of `envelope` that started a job.
fn jobs_of(envelope: &Value) -> Vec<(usize, String)> {
    let Some(results) = envelope["results"].as_array() else { return Vec::new() };
    results
        .iter()
        .enumerate()
        .filter(|(_, r)| r["ok"] == true && r["result"].get("dry_run").is_none())
        .filter_map(|(i, r)| r["result"]["job"]["id"].as_str().map(|id| (i, id.to_string())))
        .collect()
}

/// The envelope a caller would assemble: each spawn op's entry replaced
/// by its job's `job.result` entry (under the spawn op's name), the rest
/// as the call answered them.
fn finished_envelope(envelope: &Value, jobs: &[(usize, String)], results: &Value) -> Value {
    let mut entries: Vec<Value> = envelope["results"].as_array().cloned().unwrap_or_default();
    for (k, (i, _)) in jobs.iter().enumerate() {
        if let (Some(slot), Some(mapped)) = (entries.get_mut(*i), results["results"].get(k)) {
            let op = slot["op"].clone();
            *slot = mapped.clone();
            slot["op"] = op;
        }
    }
    let all_ok = entries.iter().all(|e| e["ok"] == true);
    let mut body =
        json!({ "status": if all_ok { "success" } else { "partial" }, "results": entries });
    for extra in ["schemas"] {
        if let Some(v) = envelope.get(extra).or_else(|| results.get(extra)) {
            body[extra] = v.clone();
        }
    }
    body
}

/// A finished envelope as the `CallToolResult` a task completes with:
/// `isError` when no op succeeded, a job counting as its outcome says
/// (the same rule as a call's, [`crate::dispatch::nothing_succeeded`]).
fn tool_result(envelope: &Value, jobs: &[(usize, String)]) -> JsonObject {
    let at: Vec<usize> = jobs.iter().map(|(i, _)| *i).collect();
    let result = if crate::dispatch::nothing_succeeded(envelope, &at) {
        CallToolResult::structured_error(envelope.clone())
    } else {
        CallToolResult::structured(envelope.clone())
    };
    object(serde_json::to_value(result).unwrap_or(Value::Null))
}

fn object(v: Value) -> JsonObject {
    match v {
        Value::Object(m) => m,
        _ => JsonObject::new(),
    }
}

fn job_list(record: &Record) -> String {
    record.jobs.iter().map(|(_, id)| id.as_str()).collect::<Vec<_>>().join(", ")
}

fn iso(ms: i64) -> String {
    Utc.timestamp_millis_opt(ms)
        .single()
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn envelope() -> Value {
        json!({ "status": "partial", "results": [
            { "ok": true, "op": "echo.job", "result": { "job": { "id": "j1" }, "next": {} } },
            { "ok": true, "op": "git.status", "result": { "clean": true } },
            { "ok": true, "op": "echo.job", "result": { "dry_run": true, "plan": {} } },
            { "ok": false, "op": "echo.job", "error": { "code": "job_limit" } },
            { "ok": true, "op": "cargo.test", "result": { "job": { "id": "j2" } } },
        ]})
    }

    #[test]
    fn only_ops_that_started_a_job_make_a_task_and_their_entries_become_the_mapped_results() {
        assert_eq!(jobs_of(&envelope()), [(0, "j1".to_string()), (4, "j2".to_string())]);
        assert!(jobs_of(&json!({"status": "success", "help": {}})).is_empty());
        let mapped = json!({ "status": "partial", "results": [
            { "ok": true, "op": "job.result", "result": { "id": "j1", "status": "succeeded", "exit_code": 0, "result": { "argv": ["x"] } } },
            { "ok": false, "op": "job.result", "error": { "code": "job_not_finished" } },
        ]});
        let done = finished_envelope(&envelope(), &jobs_of(&envelope()), &mapped);
        assert_eq!(done["results"][0]["op"], "echo.job");
        assert_eq!(done["results"][0]["result"]["exit_code"], 0);
        assert_eq!(
            done["results"][1]["result"]["clean"], true,
            "ops that started no job keep their entry"
        );
        assert_eq!(done["results"][4]["op"], "cargo.test");
        assert_eq!(done["results"][4]["error"]["code"], "job_not_finished");
        assert_eq!(done["status"], "partial");
    }

    #[test]
    fn a_task_answers_only_its_owner_and_only_ids_of_its_own_form() {
        let dir = tempfile::tempdir().unwrap();
        let tasks = Tasks::open(dir.path(), Duration::from_secs(3600)).unwrap();
        let created = tasks.create("token:aaaa", &envelope()).unwrap().expect("jobs make a task");
        let id = created.task.task_id.clone();
        assert!(id.starts_with("task-") && id.len() == 37, "{id}");
        assert_eq!(created.task.poll_interval_ms, Some(1000));
        assert_eq!(created.task.ttl_ms, Some(3_600_000));
        assert!(tasks.load(&id, "token:aaaa").is_ok());
        let other = tasks.load(&id, "token:bbbb").unwrap_err();
        let missing =
            tasks.load("task-00000000000000000000000000000000", "token:aaaa").unwrap_err();
        assert_eq!(
            other.message.replace(&id, "ID"),
            missing.message.replace("task-00000000000000000000000000000000", "ID"),
            "no oracle"
        );
        assert!(tasks.load("../../etc/passwd", "token:aaaa").is_err());
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(tasks.path(&id)).unwrap().permissions(),
        );
        assert_eq!(mode & 0o777, 0o600);
        let none = tasks.create("local", &json!({"status": "success", "results": [{"ok": true, "op": "git.status", "result": {}}]})).unwrap();
        assert!(none.is_none(), "a call that started no job is no task");
    }
}
