//! The bundled `core` plugin: the job verbs. Their schemas (what a caller
//! may send) and result shapes live here; the observation and the kill
//! themselves are native host operations, planned as `host` calls — only
//! this bundled component may plan them. Each verb's args struct is both
//! its schema and what the host call carries (serialized back, defaults
//! filled in), so the two cannot drift apart.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use verbgate_plugin_sdk::serde_json;
use verbgate_plugin_sdk::{json, Effect, HostCall, OpError, Outcome, OutcomeExt, Plan, Value, Verb, VerbKind};

/// A job's status (the host's `jobs::model::Status`, in its spelling).
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

/// The status names, as the `job.list` parameter's schema spells them.
fn statuses() -> Value {
    verbgate_plugin_sdk::params_schema::<JobStatus>()["enum"].clone()
}

/// The shape every job record has (job.status, job.list entries).
fn record_schema() -> Value {
    json!({
        "type": "object",
        "required": ["id", "kind", "label", "status", "terminal", "outcome", "reason_code"],
        "properties": {
            "id": { "type": "string" },
            "kind": { "type": "string", "description": "the verb that started the job" },
            "label": { "type": "string" },
            "status": { "type": "string", "enum": statuses() },
            "terminal": { "type": "boolean" },
            "outcome": { "type": ["string", "null"], "enum": ["success", "failure", "cancelled", null] },
            "reason_code": { "type": ["string", "null"] },
            "created_ms": { "type": "integer" },
            "started_ms": { "type": ["integer", "null"] },
            "ended_ms": { "type": ["integer", "null"] },
            "duration_ms": { "type": ["integer", "null"] },
            "exit_code": { "type": ["integer", "null"] },
            "signal": { "type": ["integer", "null"] }
        }
    })
}

/// A job verb plans a host call named after itself, carrying its args.
fn host_call<V: Verb>(args: &impl Serialize) -> Result<Plan, OpError> {
    let args = serde_json::to_string(args).map_err(|e| verbgate_plugin_sdk::errors::invalid_args(&format!("`{}`: {e}", V::NAME)))?;
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
/// host's JSON, unchanged.
macro_rules! job_verb {
    ($ty:ident, $name:literal, $kind:ident, $summary:literal, $args:ty, $result:expr) => {
        struct $ty;
        impl Verb for $ty {
            const NAME: &'static str = $name;
            const SUMMARY: &'static str = $summary;
            const KIND: VerbKind = VerbKind::$kind;
            const EFFECTS: &'static [Effect] = &[];
            type Args = $args;
            fn result_schema() -> Option<Value> {
                Some($result)
            }
            fn plan(args: &$args) -> Result<Plan, OpError> {
                host_call::<Self>(args)
            }
            fn map(_: &$args, outcome: &Outcome) -> Result<Value, OpError> {
                outcome.host_json()
            }
        }
    };
}

job_verb!(Status, "job.status", Read, "One job's record", IdArgs, record_schema());

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

job_verb!(
    List,
    "job.list",
    Read,
    "Recent jobs, newest first",
    ListArgs,
    json!({ "type": "object", "required": ["jobs"], "properties": { "jobs": { "type": "array", "items": record_schema() } } })
);

/// Which output stream of a job.
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

job_verb!(
    Output,
    "job.output",
    Read,
    "A page of a job's stdout or stderr",
    OutputArgs,
    json!({
        "type": "object",
        "required": ["id", "stream", "offset", "next_offset", "total_bytes", "eof", "encoding", "data"],
        "properties": { "encoding": { "enum": ["utf8", "base64"] }, "data": { "type": "string" }, "eof": { "type": "boolean" } }
    })
);

job_verb!(
    JobResult,
    "job.result",
    Read,
    "A finished job's output, mapped by the verb that started it",
    IdArgs,
    json!({ "type": "object", "required": ["id", "kind", "status", "outcome", "plugin_changed"] })
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
    json!({
        "type": "object",
        "required": ["jobs", "all_terminal", "timed_out", "terminal", "pending", "stopped_without_end", "unresolved_spawn",
                     "max_wait_seconds", "poll_interval_seconds", "unresolved_spawn_after_seconds"],
        "properties": { "jobs": { "type": "array", "items": { "type": "object",
            "required": ["id", "kind", "label", "status", "terminal", "outcome", "reason_code", "possibly_orphaned", "error"] } } }
    })
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

job_verb!(Kill, "job.kill", Control, "Stop a job (a no-op for a finished one)", KillArgs, json!({ "type": "object", "required": ["id", "killed", "job"] }));

verbgate_plugin_sdk::plugin!(Core { name: "core", version: "0.1.0", verbs: [Status, List, Output, JobResult, Wait, Kill] });

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_verbs_plan_host_calls_with_their_args_and_defaults() {
        let Plan::Host(call) = Core::plan("job.list", r#"{"status":"timed_out"}"#).unwrap() else { panic!("not a host call") };
        assert_eq!(call.name, "job.list");
        let args: Value = serde_json::from_str(&call.args).unwrap();
        assert_eq!(args, json!({ "limit": 20, "status": "timed_out", "verb": null }));
        let Plan::Host(kill) = Core::plan("job.kill", r#"{"id":"abc"}"#).unwrap() else { panic!("not a host call") };
        assert_eq!(serde_json::from_str::<Value>(&kill.args).unwrap(), json!({ "id": "abc", "grace_seconds": 3.0 }));
    }

    #[test]
    fn a_misspelt_parameter_is_refused_not_ignored() {
        let e = Core::plan("job.list", r#"{"limt":5}"#).unwrap_err();
        assert_eq!(e.code, "invalid_args");
        assert!(e.message.contains("limt"), "{}", e.message);
    }

    #[test]
    fn the_record_schema_lists_the_statuses_the_parameter_accepts() {
        assert_eq!(record_schema()["properties"]["status"]["enum"], json!(["preparing", "running", "succeeded", "failed", "killed", "timed_out", "lost"]));
    }

    #[test]
    fn results_are_the_hosts_json() {
        let out = Outcome::host(json!({ "id": "abc", "status": "running" }));
        assert_eq!(Core::map_result("job.status", r#"{"id":"abc"}"#, &out).unwrap(), r#"{"id":"abc","status":"running"}"#);
    }
}
