//! The audit trail as JSON Lines for a SIEM (`verbgate audit export`):
//! one self-contained object per row, oldest first, in a stable, versioned
//! shape (`"schema": "verbgate.audit/1"`). Every field is always present
//! (`null` when a row has none), times come both as RFC 3339 UTC and as
//! Unix ms, and the JSON the store keeps as text (args, argv, read-back)
//! is embedded as JSON. The shape is the [`ExportLine`] type; its JSON
//! Schema (`verbgate audit export --schema`, derived from that type) is
//! pinned by tests/golden/audit-export.schema.json and described in
//! docs/policy.md ("Exporting the trail").

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::Serialize;
use serde_json::Value;

use super::{Answer, Record, Transport, Unreadable};
use crate::config::Decision;
use crate::error::ErrorCode;

/// The schema identifier every line carries. A change to what a field
/// means, or a field removed, gets a new number; fields may be added.
pub const SCHEMA_ID: &str = "verbgate.audit/1";

/// One line of the export.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(untagged)]
#[schemars(title = "verbgate audit export line (verbgate.audit/1)")]
pub enum ExportLine {
    /// A row: one op.
    Op(Box<OpLine>),
    /// A row this verbgate cannot read (a column holds a value outside its
    /// closed set): exported so that nothing is silently skipped.
    Unreadable(UnreadableLine),
}

/// One op, as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OpLine {
    /// Always `verbgate.audit/1`.
    #[schemars(schema_with = "schema_id")]
    pub schema: &'static str,
    /// The row id: increasing, never reused while the file lives; give the
    /// last one exported to `--after-id` to continue from there.
    pub id: i64,
    /// When the op arrived, RFC 3339 UTC with milliseconds.
    pub time: String,
    /// The same instant, ms since the Unix epoch.
    pub time_unix_ms: i64,
    /// How the request arrived.
    #[schemars(schema_with = "transport")]
    pub transport: &'static str,
    /// The MCP client's `name/version` from `initialize`, if it gave one.
    pub client: Option<String>,
    /// Who asked: a static token's name, `oauth:<sub>`, `local` (stdio,
    /// CLI), or `unauthenticated` for a refused credential.
    pub caller: String,
    /// The verb (canonical), or the op as written when it named none
    /// (`authenticate` for a refused credential).
    pub verb: String,
    /// The op's args (sensitive values `"<redacted>"`), or null when the
    /// stored text is not JSON (cut at `audit.args_bytes`): then
    /// `args_text` holds it.
    pub args: Option<Value>,
    /// The stored args text when it is not JSON (cut), else null.
    pub args_text: Option<String>,
    /// The verb's schema fingerprint, when the op named a verb.
    pub fingerprint: Option<String>,
    /// The policy's decision, or null when the op failed before it.
    #[schemars(schema_with = "decision")]
    pub decision: Option<&'static str>,
    /// Who decided: `policy[N]`, `default:<effect>`, `person`,
    /// `session_grant`, `cli_yes`.
    pub decided_by: Option<String>,
    /// A person's answer to an `ask`.
    #[schemars(schema_with = "answer")]
    pub answer: Option<&'static str>,
    /// The program the op ran (absolute path).
    pub program: Option<String>,
    /// Its argv.
    pub argv: Option<Value>,
    /// `ok`, `started` (the op's end could not be recorded), or the error
    /// code it failed with (docs/errors.md).
    #[schemars(schema_with = "outcome")]
    pub outcome: &'static str,
    /// Whether it succeeded (`outcome` is `ok`).
    pub ok: bool,
    /// How long it took, ms.
    pub duration_ms: i64,
    /// The job it started.
    pub job_id: Option<String>,
    /// A dry run: nothing ran.
    pub dry_run: bool,
    /// An `exec-read` plan's read-back command: program then argv.
    pub read_back: Option<Value>,
}

/// A row that cannot be read as an op.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UnreadableLine {
    /// Always `verbgate.audit/1`.
    #[schemars(schema_with = "schema_id")]
    pub schema: &'static str,
    /// The row id.
    pub id: i64,
    /// Its verb column, as stored.
    pub verb: String,
    /// Which column holds what.
    pub unreadable: String,
}

impl From<&Record> for ExportLine {
    fn from(r: &Record) -> ExportLine {
        let (args, args_text) = match serde_json::from_str::<Value>(&r.args) {
            Ok(v) => (Some(v), None),
            Err(_) => (None, Some(r.args.clone())),
        };
        // argv and read-back are written as JSON by verbgate; one that is
        // not (an edited file) is kept as its text rather than dropped.
        let embed = |text: &Option<String>| {
            text.as_ref().map(|t| serde_json::from_str(t).unwrap_or(Value::String(t.clone())))
        };
        ExportLine::Op(Box::new(OpLine {
            schema: SCHEMA_ID,
            id: r.id,
            time: utc(r.time_ms),
            time_unix_ms: r.time_ms,
            transport: r.transport.as_str(),
            client: r.client.clone(),
            caller: r.caller.clone(),
            verb: r.verb.clone(),
            args,
            args_text,
            fingerprint: r.fingerprint.clone(),
            decision: r.decision.map(Decision::as_str),
            decided_by: r.decided_by.clone(),
            answer: r.answer.map(Answer::as_str),
            program: r.program.clone(),
            argv: embed(&r.argv),
            outcome: r.outcome.as_str(),
            ok: r.outcome == super::RowOutcome::Ok,
            duration_ms: r.duration_ms,
            job_id: r.job_id.clone(),
            dry_run: r.dry_run,
            read_back: embed(&r.read_back),
        }))
    }
}

impl From<&Unreadable> for ExportLine {
    fn from(u: &Unreadable) -> ExportLine {
        ExportLine::Unreadable(UnreadableLine {
            schema: SCHEMA_ID,
            id: u.id,
            verb: u.verb.clone(),
            unreadable: u.why.clone(),
        })
    }
}

/// The JSON Schema of a line (draft 2020-12).
pub fn schema() -> Schema {
    schemars::schema_for!(ExportLine)
}

/// `2026-12-03T10:00:00.123Z` from Unix ms.
pub fn utc(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map_or_else(|| ms.to_string(), |t| t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string())
}

fn schema_id(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"const": SCHEMA_ID})
}

fn transport(_: &mut SchemaGenerator) -> Schema {
    let names: Vec<&str> = Transport::ALL.iter().map(|t| t.as_str()).collect();
    json_schema!({"enum": names})
}

fn decision(_: &mut SchemaGenerator) -> Schema {
    let mut names: Vec<Value> = [Decision::Allow, Decision::Ask, Decision::Deny]
        .iter()
        .map(|d| d.as_str().into())
        .collect();
    names.push(Value::Null);
    json_schema!({"enum": names})
}

fn answer(_: &mut SchemaGenerator) -> Schema {
    let mut names: Vec<Value> = Answer::ALL.iter().map(|a| a.as_str().into()).collect();
    names.push(Value::Null);
    json_schema!({"enum": names})
}

fn outcome(_: &mut SchemaGenerator) -> Schema {
    let mut names = vec!["ok", "started"];
    names.extend(ErrorCode::ALL.iter().map(|c| c.as_str()));
    json_schema!({"enum": names})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::RowOutcome;

    #[test]
    fn a_line_embeds_json_keeps_cut_text_and_fits_its_schema() {
        let r = Record {
            id: 7,
            time_ms: 1_796_292_000_123,
            transport: Transport::Http,
            caller: "ci".into(),
            verb: "git.status".into(),
            args: r#"{"path":"."}"#.into(),
            decision: Some(Decision::Ask),
            answer: Some(Answer::AllowOnce),
            program: Some("/usr/bin/git".into()),
            argv: Some(r#"["status","--porcelain=v2"]"#.into()),
            outcome: RowOutcome::Failed(ErrorCode::PolicyDenied),
            ..Record::default()
        };
        let line = serde_json::to_value(ExportLine::from(&r)).unwrap();
        assert_eq!(line["schema"], SCHEMA_ID);
        assert_eq!(line["time"], "2026-12-03T10:00:00.123Z");
        assert_eq!(line["args"]["path"], ".");
        assert_eq!(line["argv"][1], "--porcelain=v2");
        assert_eq!(line["outcome"], "policy_denied");
        assert_eq!(line["ok"], false);
        assert!(line["client"].is_null(), "every field is present, null when none");
        let cut = Record { args: r#"{"path":"aaa…(+90 bytes)"#.into(), ..r.clone() };
        let cut = serde_json::to_value(ExportLine::from(&cut)).unwrap();
        assert!(cut["args"].is_null() && cut["args_text"].as_str().unwrap().starts_with("{\"path"));
        let schema = serde_json::to_value(schema()).unwrap();
        let validator = jsonschema::validator_for(&schema).unwrap();
        for l in [&line, &cut] {
            let errors: Vec<String> = validator.iter_errors(l).map(|e| e.to_string()).collect();
            assert!(errors.is_empty(), "{errors:?}\n{l}");
        }
        let mut stray = line.clone();
        stray["outcome"] = "made_up".into();
        assert!(!validator.is_valid(&stray), "outcome is a closed set");
    }
}
