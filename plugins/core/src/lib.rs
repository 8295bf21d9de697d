//! The bundled `core` plugin: the job verbs. Their schemas (what a caller
//! may send) and result shapes live here; the observation and the kill
//! themselves are native host operations, planned as `host` calls — only
//! this bundled component may plan them. Each verb's args struct is both
//! its schema and what the host call carries (serialized back, defaults
//! filled in), so the two cannot drift apart.
//!
//! A job verb's result is the host's JSON, read into the verb's result
//! type — the fields callers rely on, typed, and the host's other fields
//! kept as they are (a flattened map) — so the result schema is derived
//! from the type the result passes through.

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};
use verbgate_plugin_sdk::serde_json;
use verbgate_plugin_sdk::{
    errors, Effect, HostCall, Map, OpError, Outcome, OutcomeExt, Plan, Value, Verb, VerbKind,
};

// A job's status (the host's `jobs::model::Status`, in its spelling; a
// plain comment, as on every result type: a type's doc comment would
// become its schema's description).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum JobStatus {
    Preparing,
    Running,
    Succeeded,
    Failed,
    Killed,
    TimedOut,
    Lost,
}

// How a job ended, when it has (the host's `Status::outcome`).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum JobOutcome {
    Success,
    Failure,
    Cancelled,
}

// A job's record as the host writes it (`job.status`, `job.list`'s
// entries, `job.kill`'s `job`).
#[derive(Serialize, Deserialize, JsonSchema)]
struct JobRecord {
    id: String,
    /// the verb that started the job
    kind: String,
    label: String,
    status: JobStatus,
    terminal: bool,
    outcome: Option<JobOutcome>,
    reason_code: Option<String>,
    created_ms: i64,
    started_ms: Option<i64>,
    ended_ms: Option<i64>,
    duration_ms: Option<i64>,
    exit_code: Option<i32>,
    signal: Option<i32>,
    // The host's other fields (plugin, pid, entity, error, limits, …), as
    // it wrote them.
    #[serde(flatten)]
    more: Map<String, Value>,
}

// `job.list`'s result.
#[derive(Serialize, Deserialize, JsonSchema)]
struct JobList {
    jobs: Vec<JobRecord>,
    #[serde(flatten)]
    more: Map<String, Value>,
}

// `job.output`'s result: a page of a stream.
#[derive(Serialize, Deserialize, JsonSchema)]
struct OutputPage {
    id: String,
    stream: Stream,
    offset: u64,
    next_offset: u64,
    total_bytes: u64,
    eof: bool,
    encoding: Encoding,
    data: String,
    // limit_reached, truncated_at.
    #[serde(flatten)]
    more: Map<String, Value>,
}

// How `job.output`'s data is written.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Encoding {
    Utf8,
    Base64,
}

// `job.result`'s result.
#[derive(Serialize, Deserialize, JsonSchema)]
struct JobResultOut {
    id: String,
    /// the verb that started the job
    kind: String,
    status: JobStatus,
    outcome: Option<JobOutcome>,
    /// the plugin that maps the output is not the one that started the job
    plugin_changed: bool,
    /// the job's output mapped by its verb (that verb's result schema); absent when the mapping failed
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Value")]
    result: Option<Value>,
    /// why the mapping failed (an error object), when it did
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Value")]
    error: Option<Value>,
    // terminal, reason_code, exit_code, note.
    #[serde(flatten)]
    more: Map<String, Value>,
}

/// A field that is there, even as `null`, is `Some` (serde reads a
/// `null` into `None` otherwise, and the field would be lost).
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

// `job.wait`'s result.
#[derive(Serialize, Deserialize, JsonSchema)]
struct WaitResult {
    jobs: Vec<WaitEntry>,
    all_terminal: bool,
    timed_out: bool,
    terminal: Vec<String>,
    pending: Vec<String>,
    stopped_without_end: Vec<String>,
    unresolved_spawn: Vec<String>,
    max_wait_seconds: f64,
    poll_interval_seconds: f64,
    unresolved_spawn_after_seconds: f64,
    // errors, waited_ms.
    #[serde(flatten)]
    more: Map<String, Value>,
}

// One id `job.wait` was given: the job it names, or why it names none.
#[derive(Serialize, Deserialize, JsonSchema)]
struct WaitEntry {
    id: String,
    kind: Option<String>,
    label: Option<String>,
    status: Option<JobStatus>,
    terminal: bool,
    outcome: Option<JobOutcome>,
    reason_code: Option<String>,
    possibly_orphaned: bool,
    /// why the id names no job (an error object); null when it names one
    error: Value,
    #[serde(flatten)]
    more: Map<String, Value>,
}

// `job.kill`'s result.
#[derive(Serialize, Deserialize, JsonSchema)]
struct KillResult {
    id: String,
    killed: bool,
    job: JobRecord,
    // not_needed, signalled, escalated_to_sigkill, delegated, …
    #[serde(flatten)]
    more: Map<String, Value>,
}

/// The host call's result, read into the verb's result type.
fn host_result<V: Verb>(outcome: &Outcome) -> Result<V::Output, OpError>
where
    V::Output: serde::de::DeserializeOwned,
{
    serde_json::from_value(outcome.host_json()?).map_err(|e| {
        errors::invalid_output(&format!("`{}`: the host's result does not fit: {e}", V::NAME))
    })
}

/// A job verb plans a host call named after itself, carrying its args.
fn host_call<V: Verb>(args: &impl Serialize) -> Result<Plan, OpError> {
    let args = serde_json::to_string(args)
        .map_err(|e| verbgate_plugin_sdk::errors::invalid_args(&format!("`{}`: {e}", V::NAME)))?;
    Ok(Plan::Host(HostCall { name: V::NAME.to_string(), args }))
}

/// Args naming one job.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct IdArgs {
    /// job id, or a unique prefix of it
    #[schemars(length(min = 1, max = 64), regex(pattern = "^[0-9a-zA-Z]+$"))]
    id: String,
}

/// Declares a job verb: a host call named after itself whose result is the
/// host's JSON, read into `$result`.
macro_rules! job_verb {
    ($ty:ident, $name:literal, $kind:ident, $summary:literal, $args:ty, $result:ty) => {
        struct $ty;
        impl Verb for $ty {
            const NAME: &'static str = $name;
            const SUMMARY: &'static str = $summary;
            const KIND: VerbKind = VerbKind::$kind;
            const EFFECTS: &'static [Effect] = &[];
            type Args = $args;
            type Output = $result;
            fn plan(args: &$args) -> Result<Plan, OpError> {
                host_call::<Self>(args)
            }
            fn map(_: &$args, outcome: &Outcome) -> Result<$result, OpError> {
                host_result::<Self>(outcome)
            }
        }
    };
}

job_verb!(Status, "job.status", Read, "One job's record", IdArgs, JobRecord);

fn list_limit() -> u64 {
    20
}

/// `job.list` args.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ListArgs {
    /// most jobs to list
    #[serde(default = "list_limit")]
    #[schemars(range(min = 1, max = 500))]
    limit: u64,
    /// only jobs with this status
    status: Option<JobStatus>,
    /// only jobs started by this verb
    verb: Option<String>,
}

job_verb!(List, "job.list", Read, "Recent jobs, newest first", ListArgs, JobList);

// Which output stream of a job.
#[derive(Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "snake_case")]
enum Stream {
    #[default]
    Stdout,
    Stderr,
}

fn output_limit() -> u64 {
    65536
}

/// `job.output` args.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct OutputArgs {
    /// job id, or a unique prefix of it
    #[schemars(length(min = 1, max = 64), regex(pattern = "^[0-9a-zA-Z]+$"))]
    id: String,
    /// which stream
    #[serde(default)]
    stream: Stream,
    /// byte offset to start at
    #[serde(default)]
    #[schemars(range(min = 0))]
    offset: u64,
    /// most bytes to return
    #[serde(default = "output_limit")]
    #[schemars(range(min = 1, max = 1048576))]
    limit: u64,
}

job_verb!(Output, "job.output", Read, "A page of a job's stdout or stderr", OutputArgs, OutputPage);

job_verb!(
    JobResult,
    "job.result",
    Read,
    "A finished job's output, mapped by the verb that started it",
    IdArgs,
    JobResultOut
);

fn max_wait() -> f64 {
    25.0
}
fn poll_interval() -> f64 {
    1.0
}

/// `job.wait` args.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct WaitArgs {
    /// job ids or unique prefixes
    #[schemars(length(min = 1, max = 100))]
    ids: Vec<String>,
    /// longest wait; clamped to [0, 300]; 0 = snapshot
    #[serde(default = "max_wait")]
    max_wait_seconds: f64,
    /// liveness check interval; clamped to [0.05, 10]
    #[serde(default = "poll_interval")]
    poll_interval_seconds: f64,
}

job_verb!(
    Wait,
    "job.wait",
    Read,
    "Wait (bounded) for jobs to end; reports every id",
    WaitArgs,
    WaitResult
);

fn grace() -> f64 {
    3.0
}

/// `job.kill` args.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct KillArgs {
    /// job id, or a unique prefix of it
    #[schemars(length(min = 1, max = 64), regex(pattern = "^[0-9a-zA-Z]+$"))]
    id: String,
    /// seconds between TERM and KILL
    #[serde(default = "grace")]
    #[schemars(range(min = 0.0, max = 60.0))]
    grace_seconds: f64,
}

job_verb!(
    Kill,
    "job.kill",
    Control,
    "Stop a job (a no-op for a finished one)",
    KillArgs,
    KillResult
);

verbgate_plugin_sdk::plugin!(Core {
    name: "core",
    version: "0.1.0",
    verbs: [Status, List, Output, JobResult, Wait, Kill]
});

#[cfg(test)]
mod tests {
    use super::*;
    use verbgate_plugin_sdk::json;

    /// A record as the host's `Job::to_json` writes it.
    fn record() -> Value {
        json!({
            "id": "abc", "kind": "cargo.test", "label": "cargo test", "status": "running", "terminal": false, "outcome": null,
            "reason_code": null, "plugin": "cargo", "created_ms": 1, "started_ms": 2, "ended_ms": null, "duration_ms": null,
            "exit_code": null, "signal": null, "pid": 42, "entity": null, "truncated": []
        })
    }

    #[test]
    fn job_verbs_plan_host_calls_with_their_args_and_defaults() {
        let Plan::Host(call) = Core::plan("job.list", r#"{"status":"timed_out"}"#).unwrap() else {
            panic!("not a host call")
        };
        assert_eq!(call.name, "job.list");
        let args: Value = serde_json::from_str(&call.args).unwrap();
        assert_eq!(args, json!({ "limit": 20, "status": "timed_out", "verb": null }));
        let Plan::Host(kill) = Core::plan("job.kill", r#"{"id":"abc"}"#).unwrap() else {
            panic!("not a host call")
        };
        assert_eq!(
            serde_json::from_str::<Value>(&kill.args).unwrap(),
            json!({ "id": "abc", "grace_seconds": 3.0 })
        );
    }

    #[test]
    fn a_misspelt_parameter_is_refused_not_ignored() {
        let e = Core::plan("job.list", r#"{"limt":5}"#).unwrap_err();
        assert_eq!(e.code, "invalid_args");
        assert!(e.message.contains("limt"), "{}", e.message);
    }

    #[test]
    fn the_record_schema_lists_the_statuses_the_parameter_accepts() {
        let statuses =
            json!(["preparing", "running", "succeeded", "failed", "killed", "timed_out", "lost"]);
        assert_eq!(
            List::result_schema().unwrap()["properties"]["jobs"]["items"]["properties"]["status"]
                ["enum"],
            statuses
        );
        assert_eq!(List::params_schema()["properties"]["status"]["enum"], statuses);
    }

    #[test]
    fn results_are_the_hosts_json_read_through_their_types() {
        let map = |verb: &str, args: &str, host: Value| -> Result<Value, OpError> {
            Core::map_result(verb, args, &Outcome::host(host))
                .map(|text| serde_json::from_str(&text).unwrap())
        };
        assert_eq!(
            map("job.status", r#"{"id":"abc"}"#, record()).unwrap(),
            record(),
            "every field kept, the host's own too"
        );
        let done = json!({ "id": "abc", "kind": "x.y", "status": "succeeded", "terminal": true, "outcome": "success", "reason_code": null,
                           "exit_code": 0, "plugin_changed": false, "result": null });
        assert_eq!(
            map("job.result", r#"{"id":"abc"}"#, done.clone()).unwrap(),
            done,
            "a null result stays null"
        );
        let mut failed = done.clone();
        failed.as_object_mut().unwrap().remove("result");
        failed["error"] = json!({ "code": "invalid_output", "message": "m" });
        assert_eq!(map("job.result", r#"{"id":"abc"}"#, failed.clone()).unwrap(), failed);
        let killed = json!({ "id": "abc", "killed": true, "not_needed": false, "job": record() });
        assert_eq!(map("job.kill", r#"{"id":"abc"}"#, killed.clone()).unwrap(), killed);
        let e = map("job.status", r#"{"id":"abc"}"#, json!({ "id": "abc", "status": "running" }))
            .unwrap_err();
        assert_eq!(e.code, "invalid_output");
        assert!(e.message.contains("job.status"), "{}", e.message);
    }
}
