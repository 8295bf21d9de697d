//! Reading an [`Outcome`] in `map`, and building one in a unit test.
//!
//! The builders exist so a plugin's tests feed `map` exactly what the host
//! would (`Outcome::exited(0, stdout)`), without spelling out every field of
//! the WIT record — and without a test double: the same `map` runs.

use crate::{errors, OpError, Outcome, Value};

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
    fn host_json(&self) -> Result<Value, OpError> {
        let text = self.host_result.as_deref().ok_or_else(|| errors::invalid_output("the host call returned no result"))?;
        serde_json::from_str(text).map_err(|e| errors::invalid_output(&format!("host result is not JSON: {e}")))
    }
}

impl Outcome {
    fn empty() -> Outcome {
        Outcome { exit_code: None, signal: None, stdout: Vec::new(), stderr: Vec::new(), host_result: None, running: false, stdout_truncated: false }
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

    /// The same outcome, its stdout cut at the host's capture bound.
    pub fn truncated(mut self) -> Outcome {
        self.stdout_truncated = true;
        self
    }
}
