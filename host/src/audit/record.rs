//! One row of the audit trail.

use serde::Serialize;
use serde_json::Value;

/// Everything recorded about one op.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Record {
    /// Row id (0 until stored).
    pub id: i64,
    /// When the op arrived, ms since the Unix epoch.
    pub time_ms: i64,
    /// `stdio`, `http` or `cli`.
    pub transport: String,
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
    /// `allow`, `ask` or `deny`; none when the op failed before the policy.
    pub decision: Option<String>,
    /// Who decided: the rule (`policy[2]`, `default:writes_repo`), or, for
    /// an `ask`, `person`, `session_grant` or `cli_yes`.
    pub decided_by: Option<String>,
    /// The person's answer to an `ask` (`allow_once`, `allow_session`,
    /// `decline`, `timeout`, `cancelled`).
    pub answer: Option<String>,
    /// The program the plan ran (absolute path), if any.
    pub program: Option<String>,
    /// Its argv as a JSON array.
    pub argv: Option<String>,
    /// `ok`, or the error code the op ended with.
    pub outcome: String,
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
        assert!(!text.contains("hunter2") && text.contains(REDACTED) && text.contains("\"name\":\"x\""), "{text}");
        let long = json!({"s": "y".repeat(10_000), "t": "z".repeat(300)});
        let cut = redact(&long, &[], 100);
        assert!(cut.len() <= 100 && cut.ends_with('…'), "{} {cut}", cut.len());
        // Seen before: one long first value pushed every other param out.
        let first_long = json!({"message": "m".repeat(10_000), "paths": ["a.txt"], "force": true});
        let kept = redact(&first_long, &[], 4096);
        assert!(kept.contains("(10000 bytes)") && kept.contains("\"paths\":[\"a.txt\"]") && kept.contains("\"force\":true"), "{kept}");
    }
}
