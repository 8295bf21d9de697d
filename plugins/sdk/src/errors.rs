//! [`OpError`]s with the stable codes of the verbgate error vocabulary.
//! A plugin reports one of the codes in [`ErrorCode`] — callers branch on
//! the code, people read the message — and the type keeps it from
//! inventing one.

use crate::{OpError, Outcome, Value};

/// The codes a plugin may report: the host's list of plugin codes (its
/// `PLUGIN_CODES`, in `host/src/dispatch`), in the host's wire spelling.
/// The host passes one of these through as the op's code; any other code
/// becomes `plugin_error` (with the plugin's code as `plugin_code`). The
/// end-to-end test `golden::the_sdk_error_codes_are_the_hosts_plugin_codes`
/// fails when this list and the host's differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// The args are well-formed but cannot be used.
    InvalidArgs,
    /// The program failed (see [`exit_nonzero`]).
    ExitNonzero,
    /// The program's output could not be understood.
    InvalidOutput,
    /// Something the caller named does not exist.
    NotFound,
    /// A prefix or name the caller gave matches more than one thing.
    AmbiguousId,
    /// What the verb needs is not there (a tool too old, a transport
    /// closed, an identity not configured).
    Unavailable,
    /// The program (or what it waited on) ran out of time.
    Timeout,
    /// The verb is not one this plugin knows.
    UnknownVerb,
}

impl ErrorCode {
    /// Every code, in the host's order.
    pub const ALL: [ErrorCode; 8] = [
        ErrorCode::InvalidArgs,
        ErrorCode::ExitNonzero,
        ErrorCode::InvalidOutput,
        ErrorCode::NotFound,
        ErrorCode::AmbiguousId,
        ErrorCode::Unavailable,
        ErrorCode::Timeout,
        ErrorCode::UnknownVerb,
    ];

    /// The wire name (`invalid_args`).
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidArgs => "invalid_args",
            ErrorCode::ExitNonzero => "exit_nonzero",
            ErrorCode::InvalidOutput => "invalid_output",
            ErrorCode::NotFound => "not_found",
            ErrorCode::AmbiguousId => "ambiguous_id",
            ErrorCode::Unavailable => "unavailable",
            ErrorCode::Timeout => "timeout",
            ErrorCode::UnknownVerb => "unknown_verb",
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An error with a code, a message and an optional details object.
pub fn op_error(code: ErrorCode, message: &str, details: Option<Value>) -> OpError {
    OpError {
        code: code.as_str().to_string(),
        message: message.to_string(),
        details: details.map(|d| d.to_string()),
    }
}

/// An error with a code outside [`ErrorCode`], which the host reports as
/// `plugin_error` (the code kept as `plugin_code`). Only for components
/// that play a misbehaving plugin (the test fixtures); a verb reports an
/// [`ErrorCode`].
pub fn unlisted_error(code: &str, message: &str, details: Option<Value>) -> OpError {
    OpError {
        code: code.to_string(),
        message: message.to_string(),
        details: details.map(|d| d.to_string()),
    }
}

/// The args are well-formed but cannot be used (`invalid_args`).
pub fn invalid_args(message: &str) -> OpError {
    op_error(ErrorCode::InvalidArgs, message, None)
}

/// The verb is not one this plugin knows (`unknown_verb`).
pub fn unknown_verb(verb: &str) -> OpError {
    op_error(
        ErrorCode::UnknownVerb,
        &format!("this plugin has no verb `{verb}`"),
        Some(serde_json::json!({ "verb": verb })),
    )
}

/// The program's output could not be understood (`invalid_output`).
pub fn invalid_output(message: &str) -> OpError {
    op_error(ErrorCode::InvalidOutput, message, None)
}

/// Something the caller named does not exist (`not_found`).
pub fn not_found(message: &str) -> OpError {
    op_error(ErrorCode::NotFound, message, None)
}

/// What the verb needs is not there (`unavailable`).
pub fn unavailable(message: &str) -> OpError {
    op_error(ErrorCode::Unavailable, message, None)
}

/// How much of each stream an [`exit_nonzero`] error carries.
pub const TAIL_BYTES: usize = 2048;

/// The last [`TAIL_BYTES`] of a stream as trimmed text (cut on a character
/// boundary).
fn tail(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let start = text.len().saturating_sub(TAIL_BYTES);
    let start = (start..text.len()).find(|i| text.is_char_boundary(*i)).unwrap_or(text.len());
    text[start..].trim().to_string()
}

/// The program failed (`exit_nonzero`), with exit code, signal and the last
/// 2 KiB of stderr *and* of stdout, so the caller can see why: a program
/// may explain itself on either (git's "nothing added to commit" is on
/// stdout). The message quotes stderr, or stdout when stderr is empty.
pub fn exit_nonzero(outcome: &Outcome) -> OpError {
    let stderr = tail(&outcome.stderr);
    let stdout = tail(&outcome.stdout);
    let what = match (outcome.exit_code, outcome.signal) {
        (Some(code), _) => format!("exited with status {code}"),
        (None, Some(sig)) => format!("was killed by signal {sig}"),
        (None, None) => "did not exit normally".to_string(),
    };
    let said = if stderr.is_empty() { &stdout } else { &stderr };
    let message = if said.is_empty() {
        format!("the program {what}")
    } else {
        format!("the program {what}: {said}")
    };
    op_error(
        ErrorCode::ExitNonzero,
        &message,
        Some(serde_json::json!({
            "exit_code": outcome.exit_code,
            "signal": outcome.signal,
            "stderr": stderr,
            "stdout": stdout,
        })),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_explained_on_stdout_carries_it() {
        let mut o = Outcome::exited(
            1,
            "On branch main\nnothing added to commit but untracked files present\n",
        );
        o.stderr = Vec::new();
        let e = exit_nonzero(&o);
        assert!(e.message.contains("nothing added to commit"), "{}", e.message);
        let details: Value = serde_json::from_str(e.details.as_deref().unwrap()).unwrap();
        assert_eq!(details["stderr"], "");
        assert!(details["stdout"].as_str().unwrap().contains("nothing added"));
        let long = Outcome::exited(1, "x".repeat(10_000)).with_stderr("é".repeat(5_000));
        let e = exit_nonzero(&long);
        assert!(
            e.message.len() < 2 * TAIL_BYTES + 100 && e.message.contains('é'),
            "{}",
            e.message.len()
        );
        let details: Value = serde_json::from_str(e.details.as_deref().unwrap()).unwrap();
        assert_eq!(details["stdout"].as_str().unwrap().len(), TAIL_BYTES);
    }

    #[test]
    fn every_code_is_listed_once_in_snake_case() {
        let names: Vec<&str> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
        let mut unique = names.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), names.len());
        assert!(
            names.iter().all(|n| n.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')),
            "{names:?}"
        );
        assert_eq!(op_error(ErrorCode::AmbiguousId, "m", None).code, "ambiguous_id");
    }
}
