//! One row of the audit trail, and the closed sets its columns hold
//! (converted to text only where a row enters or leaves SQLite or JSON).

use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ToSql, ToSqlOutput, ValueRef};
use serde::{Serialize, Serializer};
use serde_json::Value;

use crate::config::Decision;
use crate::error::ErrorCode;

/// Everything recorded about one op.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Record {
    /// Row id (0 until stored).
    pub id: i64,
    /// When the op arrived, ms since the Unix epoch.
    pub time_ms: i64,
    /// How the request arrived.
    pub transport: Transport,
    /// The MCP client's name and version from `initialize` (`name/version`).
    pub client: Option<String>,
    /// The caller: a token's name over HTTP, `local` otherwise.
    pub caller: String,
    /// The verb (canonical), or the op as written when it named none.
    pub verb: String,
    /// The args as JSON, sensitive values redacted, cut at the bound.
    pub args: String,
    /// The verb's schema fingerprint, when the op named a verb.
    pub fingerprint: Option<String>,
    /// The policy's decision; none when the op failed before the policy.
    pub decision: Option<Decision>,
    /// Who decided: the rule (`policy[2]`, `default:writes_repo`), or, for
    /// an `ask`, `person`, `session_grant` or `cli_yes`.
    pub decided_by: Option<String>,
    /// The person's answer to an `ask`.
    pub answer: Option<Answer>,
    /// The program the plan ran (absolute path), if any.
    pub program: Option<String>,
    /// Its argv as a JSON array.
    pub argv: Option<String>,
    /// How the op ended (or `started`, while it runs).
    pub outcome: RowOutcome,
    /// How long the op took, ms.
    pub duration_ms: i64,
    /// The job a spawn started.
    pub job_id: Option<String>,
    /// Whether it was a dry run (nothing ran).
    pub dry_run: bool,
    /// An `exec-read` plan's read-back command: program then argv, as a
    /// JSON array.
    pub read_back: Option<String>,
}

/// How a request arrived (recorded in the audit trail).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Transport {
    /// MCP over stdin/stdout (`verbgate serve`).
    Stdio,
    /// MCP over Streamable HTTP (`verbgate serve --http`).
    Http,
    /// `verbgate request`.
    Cli,
    /// A program embedding the dispatcher (benchmarks, tests).
    #[default]
    Library,
}

impl Transport {
    /// Every transport (the export schema lists them).
    pub const ALL: &'static [Transport] =
        &[Transport::Stdio, Transport::Http, Transport::Cli, Transport::Library];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Transport::Stdio => "stdio",
            Transport::Http => "http",
            Transport::Cli => "cli",
            Transport::Library => "library",
        }
    }
}

/// The person's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// Run this op.
    AllowOnce,
    /// Run this op and every later op of this verb in this session.
    AllowSession,
    /// Do not run it.
    Decline,
    /// The person dismissed the question without choosing (an
    /// elicitation's `cancel`): nothing runs, and it is not a "no".
    Dismissed,
    /// No answer within the timeout.
    Timeout,
    /// The request was cancelled while waiting.
    Cancelled,
    /// The client could not show the question (the elicitation request
    /// failed): nobody was asked.
    Failed,
}

impl Answer {
    /// Every answer (the export schema lists them).
    pub const ALL: &'static [Answer] = &[
        Answer::AllowOnce,
        Answer::AllowSession,
        Answer::Decline,
        Answer::Dismissed,
        Answer::Timeout,
        Answer::Cancelled,
        Answer::Failed,
    ];

    /// The wire name (audit trail, error details).
    pub fn as_str(self) -> &'static str {
        match self {
            Answer::AllowOnce => "allow_once",
            Answer::AllowSession => "allow_session",
            Answer::Decline => "decline",
            Answer::Dismissed => "dismissed",
            Answer::Timeout => "timeout",
            Answer::Cancelled => "cancelled",
            Answer::Failed => "failed",
        }
    }
}

/// How an op ended, as its row says.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum RowOutcome {
    /// Written before the op acted; a row left saying so is an op whose
    /// end could not be recorded.
    #[default]
    Started,
    /// It succeeded.
    Ok,
    /// It failed with this code.
    Failed(ErrorCode),
}

impl RowOutcome {
    /// The wire name: `started`, `ok`, or the error code.
    pub fn as_str(self) -> &'static str {
        match self {
            RowOutcome::Started => "started",
            RowOutcome::Ok => "ok",
            RowOutcome::Failed(code) => code.as_str(),
        }
    }
}

/// The closed sets a row holds, as text in SQLite and JSON.
trait Wire: Sized + Copy + 'static {
    /// What the column names (for an error about a value read back).
    const WHAT: &'static str;
    /// Every value.
    fn all() -> Vec<Self>;
    /// The wire name.
    fn wire(self) -> &'static str;
}

macro_rules! wire {
    ($t:ty, $what:literal, $all:expr, $name:expr) => {
        impl Wire for $t {
            const WHAT: &'static str = $what;
            fn all() -> Vec<Self> {
                $all
            }
            fn wire(self) -> &'static str {
                $name(self)
            }
        }
        impl ToSql for $t {
            fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
                Ok(ToSqlOutput::from(self.wire()))
            }
        }
        impl FromSql for $t {
            fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
                from_wire(value.as_str()?).map_err(|e| FromSqlError::Other(e.into()))
            }
        }
        impl Serialize for $t {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.wire())
            }
        }
    };
}

wire!(Transport, "transport", Transport::ALL.to_vec(), Transport::as_str);
wire!(Answer, "answer", Answer::ALL.to_vec(), Answer::as_str);
wire!(
    RowOutcome,
    "outcome",
    [RowOutcome::Started, RowOutcome::Ok]
        .into_iter()
        .chain(ErrorCode::ALL.iter().map(|c| RowOutcome::Failed(*c)))
        .collect(),
    RowOutcome::as_str
);

impl ToSql for Decision {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::from(self.as_str()))
    }
}

impl FromSql for Decision {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        let text = value.as_str()?;
        [Decision::Allow, Decision::Ask, Decision::Deny]
            .into_iter()
            .find(|d| d.as_str() == text)
            .ok_or_else(|| {
                FromSqlError::Other(
                    format!(
                        "the audit trail holds an unknown decision `{}`",
                        crate::text::clip(text, 64)
                    )
                    .into(),
                )
            })
    }
}

/// A closed-set value read back from the trail: a name this verbgate does
/// not know (a newer verbgate wrote it, or the file was edited) is an
/// error naming the column and the value, never a guess.
fn from_wire<T: Wire>(text: &str) -> Result<T, String> {
    T::all().into_iter().find(|v| v.wire() == text).ok_or_else(|| {
        format!("the audit trail holds an unknown {} `{}`", T::WHAT, crate::text::clip(text, 64))
    })
}

/// The value recorded in place of a sensitive param's.
pub const REDACTED: &str = "<redacted>";

/// Longest string value kept whole in the recorded args; a longer one is
/// cut and says how many bytes it had, so one long value (a commit
/// message) cannot push the others out of the bounded text.
pub const VALUE_BYTES: usize = 256;

/// `args` as recorded: top-level `sensitive` params replaced by
/// [`REDACTED`], every string value cut at [`VALUE_BYTES`], then the whole
/// cut to `bound` bytes (a cut text ends with `…` and is no longer JSON —
/// the reader sees it was cut).
pub fn redact(args: &Value, sensitive: &[String], bound: usize) -> String {
    let mut args = args.clone();
    if let Value::Object(map) = &mut args {
        for name in sensitive {
            if let Some(v) = map.get_mut(name) {
                *v = Value::from(REDACTED);
            }
        }
    }
    clip_values(&mut args);
    let text = args.to_string();
    if text.len() <= bound {
        return text;
    }
    let mut end = bound.saturating_sub('…'.len_utf8());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// `s` cut at [`VALUE_BYTES`] (on a character boundary), noting its full
/// length; unchanged when it fits.
pub fn clip_value(s: &str) -> String {
    if s.len() <= VALUE_BYTES {
        return s.to_string();
    }
    let mut end = VALUE_BYTES;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes)", &s[..end], s.len())
}

/// Cut every string in `v` at [`VALUE_BYTES`].
fn clip_values(v: &mut Value) {
    match v {
        Value::String(s) if s.len() > VALUE_BYTES => *s = clip_value(s),
        Value::Array(items) => items.iter_mut().for_each(clip_values),
        Value::Object(map) => map.values_mut().for_each(clip_values),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sensitive_values_never_reach_the_trail_and_long_args_are_cut() {
        let args = json!({"token": "hunter2", "name": "x"});
        let text = redact(&args, &["token".into()], 4096);
        assert!(
            !text.contains("hunter2") && text.contains(REDACTED) && text.contains("\"name\":\"x\""),
            "{text}"
        );
        let long = json!({"s": "y".repeat(10_000), "t": "z".repeat(300)});
        let cut = redact(&long, &[], 100);
        assert!(cut.len() <= 100 && cut.ends_with('…'), "{} {cut}", cut.len());
        // Seen before: one long first value pushed every other param out.
        let first_long = json!({"message": "m".repeat(10_000), "paths": ["a.txt"], "force": true});
        let kept = redact(&first_long, &[], 4096);
        assert!(
            kept.contains("(10000 bytes)")
                && kept.contains("\"paths\":[\"a.txt\"]")
                && kept.contains("\"force\":true"),
            "{kept}"
        );
    }
}
