//! The bundled `core` plugin: the job verbs. Their schemas (what a caller
//! may send) and result shapes live here; the observation and the kill
//! themselves are native host operations, planned as `host` calls — only
//! this bundled component may plan them.

use verbgate_plugin_sdk::{
    errors, json, plugin_info, verb, Args, HostCall, OpError, Outcome, OutcomeExt, Param, Plan, Plugin, PluginInfo, Schema, Value, VerbKind, VerbSpecExt,
};

struct Core;

const STATUSES: &[&str] = &["preparing", "running", "succeeded", "failed", "killed", "timed_out", "lost"];

fn id_param() -> Param {
    Param::string("job id, or a unique prefix of it").min_length(1).max_length(64).pattern("^[0-9a-zA-Z]+$").required()
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
            "status": { "type": "string", "enum": STATUSES },
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

impl Plugin for Core {
    fn describe() -> PluginInfo {
        plugin_info(
            "core",
            "0.1.0",
            vec![
                verb("job.status", VerbKind::Read, "One job's record", Schema::new().param("id", id_param())).result_schema(record_schema()),
                verb(
                    "job.list",
                    VerbKind::Read,
                    "Recent jobs, newest first",
                    Schema::new()
                        .param("limit", Param::integer("most jobs to list").min(1).max(500).default(json!(20)))
                        .param("status", Param::string("only jobs with this status").one_of(STATUSES))
                        .param("verb", Param::string("only jobs started by this verb")),
                )
                .result_schema(json!({ "type": "object", "required": ["jobs"], "properties": { "jobs": { "type": "array", "items": record_schema() } } })),
                verb(
                    "job.output",
                    VerbKind::Read,
                    "A page of a job's stdout or stderr",
                    Schema::new()
                        .param("id", id_param())
                        .param("stream", Param::string("which stream").one_of(&["stdout", "stderr"]).default(json!("stdout")))
                        .param("offset", Param::integer("byte offset to start at").min(0).default(json!(0)))
                        .param("limit", Param::integer("most bytes to return").min(1).max(1 << 20).default(json!(65536))),
                )
                .result_schema(json!({
                    "type": "object",
                    "required": ["id", "stream", "offset", "next_offset", "total_bytes", "eof", "encoding", "data"],
                    "properties": { "encoding": { "enum": ["utf8", "base64"] }, "data": { "type": "string" }, "eof": { "type": "boolean" } }
                })),
                verb("job.result", VerbKind::Read, "A finished job's output, mapped by the verb that started it", Schema::new().param("id", id_param()))
                    .result_schema(json!({ "type": "object", "required": ["id", "kind", "status", "outcome", "plugin_changed"] })),
                verb(
                    "job.wait",
                    VerbKind::Read,
                    "Wait (bounded) for jobs to end; reports every id",
                    Schema::new()
                        .param("ids", Param::strings("job ids or unique prefixes").min_length(1).max_items(100).required())
                        .param("max_wait_seconds", Param::number("longest wait; clamped to [0, 300]; 0 = snapshot").default(json!(25)))
                        .param("poll_interval_seconds", Param::number("liveness check interval; clamped to [0.05, 10]").default(json!(1))),
                )
                .result_schema(json!({
                    "type": "object",
                    "required": ["jobs", "all_terminal", "timed_out", "terminal", "pending", "stopped_without_end", "unresolved_spawn",
                                 "max_wait_seconds", "poll_interval_seconds", "unresolved_spawn_after_seconds"],
                    "properties": { "jobs": { "type": "array", "items": { "type": "object",
                        "required": ["id", "kind", "label", "status", "terminal", "outcome", "reason_code", "possibly_orphaned", "error"] } } }
                })),
                verb(
                    "job.kill",
                    VerbKind::Control,
                    "Stop a job (a no-op for a finished one)",
                    Schema::new()
                        .param("id", id_param())
                        .param("grace_seconds", Param::number("seconds between TERM and KILL").min_f(0.0).max_f(60.0).default(json!(3))),
                )
                .result_schema(json!({ "type": "object", "required": ["id", "killed", "job"] })),
            ],
        )
    }

    fn plan(verb: &str, args: &Args) -> Result<Plan, OpError> {
        match verb {
            "job.status" | "job.list" | "job.output" | "job.result" | "job.wait" | "job.kill" => {
                Ok(Plan::Host(HostCall { name: verb.to_string(), args: Value::Object(args.as_map().clone()).to_string() }))
            }
            other => Err(errors::unknown_verb(other)),
        }
    }

    fn map_result(_verb: &str, _args: &Args, outcome: &Outcome) -> Result<Value, OpError> {
        outcome.host_json()
    }
}

verbgate_plugin_sdk::plugin!(Core);
