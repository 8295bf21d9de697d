//! Constructors for [`OpError`] with the stable codes of the verbgate error
//! vocabulary. A plugin should use these rather than invent codes: callers
//! branch on the code, people read the message.

use crate::{OpError, Outcome, Value};

/// An error with any code, message and optional details object.
pub fn op_error(code: &str, message: &str, details: Option<Value>) -> OpError {
    OpError { code: code.to_string(), message: message.to_string(), details: details.map(|d| d.to_string()) }
}

/// The args are well-formed but cannot be used (`invalid_args`).
pub fn invalid_args(message: &str) -> OpError {
    op_error("invalid_args", message, None)
}

/// The verb is not one this plugin knows (`unknown_verb`).
pub fn unknown_verb(verb: &str) -> OpError {
    op_error("unknown_verb", &format!("this plugin has no verb `{verb}`"), Some(serde_json::json!({ "verb": verb })))
}

/// The program's output could not be understood (`invalid_output`).
pub fn invalid_output(message: &str) -> OpError {
    op_error("invalid_output", message, None)
}

/// Something the caller named does not exist (`not_found`).
pub fn not_found(message: &str) -> OpError {
    op_error("not_found", message, None)
}

/// The program failed (`exit_nonzero`), with exit code, signal and the last
/// 2 KiB of stderr so the caller can see why.
pub fn exit_nonzero(outcome: &Outcome) -> OpError {
    let stderr = String::from_utf8_lossy(&outcome.stderr);
    let tail_start = stderr.len().saturating_sub(2048);
    let tail_start = (tail_start..stderr.len()).find(|i| stderr.is_char_boundary(*i)).unwrap_or(stderr.len());
    let tail = stderr[tail_start..].trim();
    let what = match (outcome.exit_code, outcome.signal) {
        (Some(code), _) => format!("exited with status {code}"),
        (None, Some(sig)) => format!("was killed by signal {sig}"),
        (None, None) => "did not exit normally".to_string(),
    };
    let message = if tail.is_empty() { format!("the program {what}") } else { format!("the program {what}: {tail}") };
    op_error(
        "exit_nonzero",
        &message,
        Some(serde_json::json!({
            "exit_code": outcome.exit_code,
            "signal": outcome.signal,
            "stderr": tail,
        })),
    )
}
