//! Reading an [`Outcome`] in `map`, and building one in a unit test.
//!
//! The builders exist so a plugin's tests feed `map` exactly what the host
//! would (`Outcome::exited(0, stdout)`), without spelling out every field of
//! the WIT record — and without a test double: the same `map` runs.

use schemars::JsonSchema;
use serde::Serialize;

use crate::{errors, OpError, Outcome, ReadBackOutcome, Value};

/// Helpers on an [`Outcome`].
pub trait OutcomeExt {
    /// Ok when the program exited 0, else an `exit_nonzero` error carrying the
    /// exit code, signal and the tail of stderr.
    fn success(&self) -> Result<(), OpError>;
    /// Stdout as text (lossy for invalid UTF-8).
    fn stdout_text(&self) -> std::borrow::Cow<'_, str>;
    /// Stderr as text (lossy for invalid UTF-8).
    fn stderr_text(&self) -> std::borrow::Cow<'_, str>;
    /// The host call's JSON result, parsed.
    fn host_json(&self) -> Result<Value, OpError>;
    /// Whether this is the entity-extraction call for a running job.
    fn is_running(&self) -> bool;
    /// An `exec-read` plan's read-back, as an outcome of its own (so the
    /// same helpers read it); `None` when it did not run.
    fn read_back(&self) -> Option<Outcome>;
}

impl OutcomeExt for Outcome {
    fn success(&self) -> Result<(), OpError> {
        if self.exit_code == Some(0) {
            return Ok(());
        }
        Err(errors::exit_nonzero(self))
    }
    fn stdout_text(&self) -> std::borrow::Cow<'_, str> {
        String::from_utf8_lossy(&self.stdout)
    }
    fn stderr_text(&self) -> std::borrow::Cow<'_, str> {
        String::from_utf8_lossy(&self.stderr)
    }
    fn is_running(&self) -> bool {
        self.running
    }
    fn read_back(&self) -> Option<Outcome> {
        self.read_back.as_ref().map(|r| Outcome {
            exit_code: r.exit_code,
            signal: r.signal,
            stdout: r.stdout.clone(),
            stderr: r.stderr.clone(),
            stdout_truncated: r.stdout_truncated,
            ..Outcome::empty()
        })
    }
    fn host_json(&self) -> Result<Value, OpError> {
        let text = self
            .host_result
            .as_deref()
            .ok_or_else(|| errors::invalid_output("the host call returned no result"))?;
        serde_json::from_str(text)
            .map_err(|e| errors::invalid_output(&format!("host result is not JSON: {e}")))
    }
}

impl Outcome {
    fn empty() -> Outcome {
        Outcome {
            exit_code: None,
            signal: None,
            stdout: Vec::new(),
            stderr: Vec::new(),
            host_result: None,
            running: false,
            stdout_truncated: false,
            read_back: None,
        }
    }

    /// A program that exited with `code`, having printed `stdout`.
    pub fn exited(code: i32, stdout: impl Into<Vec<u8>>) -> Outcome {
        Outcome { exit_code: Some(code), stdout: stdout.into(), ..Outcome::empty() }
    }

    /// A program killed by `signal`.
    pub fn killed(signal: i32) -> Outcome {
        Outcome { signal: Some(signal), ..Outcome::empty() }
    }

    /// A spawned job still running, with its output so far (the call that
    /// asks the verb for the job's entity).
    pub fn running(stdout: impl Into<Vec<u8>>) -> Outcome {
        Outcome { running: true, stdout: stdout.into(), ..Outcome::empty() }
    }

    /// The result of a host call.
    pub fn host(result: Value) -> Outcome {
        Outcome { host_result: Some(result.to_string()), ..Outcome::empty() }
    }

    /// The same outcome with `stderr`.
    pub fn with_stderr(mut self, stderr: impl Into<Vec<u8>>) -> Outcome {
        self.stderr = stderr.into();
        self
    }

    /// The same outcome with the read-back of an `exec-read` plan (which
    /// the host runs only after the first command exited 0).
    pub fn with_read_back(mut self, read_back: Outcome) -> Outcome {
        self.read_back = Some(ReadBackOutcome {
            exit_code: read_back.exit_code,
            signal: read_back.signal,
            stdout: read_back.stdout,
            stderr: read_back.stderr,
            stdout_truncated: read_back.stdout_truncated,
        });
        self
    }

    /// The same outcome, its stdout cut at the host's capture bound.
    pub fn truncated(mut self) -> Outcome {
        self.stdout_truncated = true;
        self
    }
}

/// How much of each stream a [`RunTails`] keeps.
pub const RUN_TAIL_BYTES: usize = 16 * 1024;

/// The result of a job that runs a program for what it does (a justfile
/// recipe, a package.json script): whether it succeeded and the end of
/// what it printed; `job.output` pages through all of it. `map` returns
/// `RunTails::of(outcome)`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct RunTails {
    // Exited 0.
    pub success: bool,
    // `None` when a signal ended it.
    pub exit_code: Option<i32>,
    /// the last 16 KiB (job.output has all of it)
    pub stdout_tail: String,
    // The same of stderr.
    pub stderr_tail: String,
}

impl RunTails {
    /// A finished job's exit and the last [`RUN_TAIL_BYTES`] of each stream.
    pub fn of(outcome: &Outcome) -> RunTails {
        RunTails {
            success: outcome.exit_code == Some(0),
            exit_code: outcome.exit_code,
            stdout_tail: run_tail(&outcome.stdout),
            stderr_tail: run_tail(&outcome.stderr),
        }
    }
}

/// The last [`RUN_TAIL_BYTES`] of a stream as text, cut on a character
/// boundary (a UTF-8 continuation byte is `10xxxxxx`).
fn run_tail(bytes: &[u8]) -> String {
    let mut start = bytes.len().saturating_sub(RUN_TAIL_BYTES);
    while start < bytes.len() && bytes[start] & 0xC0 == 0x80 {
        start += 1;
    }
    String::from_utf8_lossy(&bytes[start..]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_tails_keep_the_end_of_each_stream_on_a_character_boundary() {
        let long = format!("{}{}", "é".repeat(RUN_TAIL_BYTES), "end");
        let t = RunTails::of(&Outcome::exited(2, long).with_stderr("boom\n"));
        assert_eq!((t.success, t.exit_code, t.stderr_tail.as_str()), (false, Some(2), "boom\n"));
        assert!(
            t.stdout_tail.ends_with("end")
                && t.stdout_tail.len() < RUN_TAIL_BYTES
                && !t.stdout_tail.contains('\u{fffd}'),
            "{}",
            t.stdout_tail.len()
        );
    }
}
