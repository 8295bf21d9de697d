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
    let message = if said.is_empty() { format!("the program {what}") } else { format!("the program {what}: {said}") };
    op_error(
        "exit_nonzero",
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
        let mut o = Outcome::exited(1, "On branch main\nnothing added to commit but untracked files present\n");
        o.stderr = Vec::new();
        let e = exit_nonzero(&o);
        assert!(e.message.contains("nothing added to commit"), "{}", e.message);
        let details: Value = serde_json::from_str(e.details.as_deref().unwrap()).unwrap();
        assert_eq!(details["stderr"], "");
        assert!(details["stdout"].as_str().unwrap().contains("nothing added"));
        let long = Outcome::exited(1, "x".repeat(10_000)).with_stderr("é".repeat(5_000));
        let e = exit_nonzero(&long);
        assert!(e.message.len() < 2 * TAIL_BYTES + 100 && e.message.contains('é'), "{}", e.message.len());
        let details: Value = serde_json::from_str(e.details.as_deref().unwrap()).unwrap();
        assert_eq!(details["stdout"].as_str().unwrap().len(), TAIL_BYTES);
    }
}
