//! The closed vocabulary of error codes and the per-op error object.
//!
//! Codes are part of the public API: callers branch on them, so they are
//! never renamed and never inferred from message text. A plugin that reports
//! a code outside this vocabulary is reported as `plugin_error` with its own
//! code kept in `plugin_code`, which keeps the vocabulary closed.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fmt;

/// Every error code verbgate emits, request-level or per-op.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorCode {
    /// The request itself is malformed (not an object, `ops` not a list, …).
    InvalidRequest,
    /// No verb (or alias) by that name is reachable.
    UnknownVerb,
    /// An argument the verb's schema does not declare.
    UnknownParam,
    /// An argument has the wrong type, range or format, or is missing.
    InvalidArgs,
    /// A spawn verb was called without `schema_fingerprint`.
    FingerprintRequired,
    /// `schema_fingerprint` does not match the verb's current schema.
    FingerprintStale,
    /// More ops than the batch cap; nothing ran.
    BatchTooLarge,
    /// The plan would put a caller value where a program reads options, or
    /// contains NUL: refused before anything ran.
    UnsafeArgv,
    /// The plan names a program (or working directory) the verb did not
    /// declare or may not use.
    PlanRefused,
    /// The plugin trapped (panic, unreachable, stack overflow).
    PluginTrap,
    /// The plugin ran past its wall-clock deadline.
    PluginTimeout,
    /// The plugin hit a resource limit (memory, output size).
    PluginLimit,
    /// The plugin reported an error with a code outside this vocabulary.
    PluginError,
    /// The program could not be started.
    LaunchFailed,
    /// The program exited non-zero.
    ExitNonzero,
    /// The plugin's result is not JSON or does not match its result schema.
    InvalidOutput,
    /// The program wrote more than the capture bound.
    OutputOverflow,
    /// The program ran past its timeout and was killed.
    Timeout,
    /// Something named by the caller does not exist.
    NotFound,
    /// An id prefix matches more than one record.
    AmbiguousId,
    /// The verb exists but cannot run here (missing program, no job store).
    Unavailable,
    /// `job.result` of a job that has not ended yet.
    JobNotFinished,
    /// An entity-aware kill (the fronted CLI's own kill) failed; the job was
    /// not signalled.
    KillFailed,
    /// The repository's own config names a program git could run (a filter,
    /// diff or merge driver, signature program, …); nothing ran.
    RepoConfigRunsPrograms,
    /// The repository git would use (its git directory or work tree) is
    /// outside the root; nothing ran.
    RepoOutsideRoot,
    /// A git verb's directory is in no repository (git would fall back to
    /// comparing plain files, `--no-index`, with any path it is given);
    /// nothing ran.
    NotARepository,
    /// Configuration a program would read from outside the root belongs to
    /// another user or is writable by others; nothing ran.
    UntrustedConfig,
    /// A file or directory verbgate would trust (its home, `cache/`,
    /// `trust/`, `state/`, `plugins/`, `keys/`, `verbgate.toml`) is owned by another
    /// user or writable by group or others: refused before anything runs.
    InsecureFile,
    /// A spawn was refused: `limits.max_running_jobs` jobs are already
    /// preparing or running.
    JobLimit,
    /// The verb is outside the calling token's allow list; nothing ran.
    NotAllowed,
    /// A `[[policy]]` rule (named in `rule`) denies the verb; nothing ran.
    PolicyDenied,
    /// The policy asks a person first, but this client cannot be asked (no
    /// MCP elicitation capability, no terminal); nothing ran. The error names
    /// the rule and the config lines that would allow the verb.
    ConsentRequired,
    /// The person asked said no (or did not answer in time); nothing ran.
    ConsentDeclined,
    /// The op's audit row could not be made durable before it would act
    /// (the database locked past its busy timeout, a full disk), so it did
    /// not run: no op runs unrecorded.
    AuditUnavailable,
    /// The OS sandbox cannot enforce the program's profile here (no
    /// Landlock), so it did not run; `[sandbox] mode = "off"` is the
    /// operator's explicit way to run unconfined.
    SandboxUnavailable,
    /// A bug in verbgate; the message says what failed.
    Internal,
}

impl ErrorCode {
    /// Every code, in documentation order (the golden list).
    pub const ALL: &'static [ErrorCode] = &[
        ErrorCode::InvalidRequest,
        ErrorCode::UnknownVerb,
        ErrorCode::UnknownParam,
        ErrorCode::InvalidArgs,
        ErrorCode::FingerprintRequired,
        ErrorCode::FingerprintStale,
        ErrorCode::BatchTooLarge,
        ErrorCode::UnsafeArgv,
        ErrorCode::PlanRefused,
        ErrorCode::PluginTrap,
        ErrorCode::PluginTimeout,
        ErrorCode::PluginLimit,
        ErrorCode::PluginError,
        ErrorCode::LaunchFailed,
        ErrorCode::ExitNonzero,
        ErrorCode::InvalidOutput,
        ErrorCode::OutputOverflow,
        ErrorCode::Timeout,
        ErrorCode::NotFound,
        ErrorCode::AmbiguousId,
        ErrorCode::Unavailable,
        ErrorCode::JobNotFinished,
        ErrorCode::KillFailed,
        ErrorCode::RepoConfigRunsPrograms,
        ErrorCode::RepoOutsideRoot,
        ErrorCode::NotARepository,
        ErrorCode::UntrustedConfig,
        ErrorCode::InsecureFile,
        ErrorCode::JobLimit,
        ErrorCode::NotAllowed,
        ErrorCode::PolicyDenied,
        ErrorCode::ConsentRequired,
        ErrorCode::ConsentDeclined,
        ErrorCode::AuditUnavailable,
        ErrorCode::SandboxUnavailable,
        ErrorCode::Internal,
    ];

    /// The snake_case wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidRequest => "invalid_request",
            ErrorCode::UnknownVerb => "unknown_verb",
            ErrorCode::UnknownParam => "unknown_param",
            ErrorCode::InvalidArgs => "invalid_args",
            ErrorCode::FingerprintRequired => "fingerprint_required",
            ErrorCode::FingerprintStale => "fingerprint_stale",
            ErrorCode::BatchTooLarge => "batch_too_large",
            ErrorCode::UnsafeArgv => "unsafe_argv",
            ErrorCode::PlanRefused => "plan_refused",
            ErrorCode::PluginTrap => "plugin_trap",
            ErrorCode::PluginTimeout => "plugin_timeout",
            ErrorCode::PluginLimit => "plugin_limit",
            ErrorCode::PluginError => "plugin_error",
            ErrorCode::LaunchFailed => "launch_failed",
            ErrorCode::ExitNonzero => "exit_nonzero",
            ErrorCode::InvalidOutput => "invalid_output",
            ErrorCode::OutputOverflow => "output_overflow",
            ErrorCode::Timeout => "timeout",
            ErrorCode::NotFound => "not_found",
            ErrorCode::AmbiguousId => "ambiguous_id",
            ErrorCode::Unavailable => "unavailable",
            ErrorCode::JobNotFinished => "job_not_finished",
            ErrorCode::KillFailed => "kill_failed",
            ErrorCode::RepoConfigRunsPrograms => "repo_config_runs_programs",
            ErrorCode::RepoOutsideRoot => "repo_outside_root",
            ErrorCode::NotARepository => "not_a_repository",
            ErrorCode::UntrustedConfig => "untrusted_config",
            ErrorCode::InsecureFile => "insecure_file",
            ErrorCode::JobLimit => "job_limit",
            ErrorCode::NotAllowed => "not_allowed",
            ErrorCode::PolicyDenied => "policy_denied",
            ErrorCode::ConsentRequired => "consent_required",
            ErrorCode::ConsentDeclined => "consent_declined",
            ErrorCode::AuditUnavailable => "audit_unavailable",
            ErrorCode::SandboxUnavailable => "sandbox_unavailable",
            ErrorCode::Internal => "internal",
        }
    }

    /// Parse a wire name.
    pub fn from_wire(name: &str) -> Option<ErrorCode> {
        ErrorCode::ALL.iter().copied().find(|c| c.as_str() == name)
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One failed op (or a failed request): a stable code, a message for a
/// person saying what went wrong and what to do, and structured details
/// (the offending `param`, `value`, `limit`, …) for a program.
#[derive(Debug, Clone, PartialEq)]
pub struct OpError {
    /// The stable code.
    pub code: ErrorCode,
    /// What went wrong and what to do about it.
    pub message: String,
    /// Extra fields, flattened into the error object on the wire.
    pub details: Map<String, Value>,
}

impl OpError {
    /// An error with no details.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        OpError { code, message: message.into(), details: Map::new() }
    }

    /// Add one detail field.
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.details.insert(key.to_string(), value.into());
        self
    }

    /// The wire form: `{"code", "message", ...details}`.
    pub fn to_json(&self) -> Value {
        let mut obj = Map::new();
        obj.insert("code".into(), Value::String(self.code.as_str().into()));
        obj.insert("message".into(), Value::String(self.message.clone()));
        for (k, v) in &self.details {
            if k != "code" && k != "message" {
                obj.insert(k.clone(), v.clone());
            }
        }
        Value::Object(obj)
    }
}

impl fmt::Display for OpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for OpError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_names_round_trip_and_match_serde() {
        for code in ErrorCode::ALL {
            assert_eq!(ErrorCode::from_wire(code.as_str()), Some(*code));
            let via_serde = serde_json::to_value(code).unwrap();
            assert_eq!(via_serde, Value::String(code.as_str().into()));
        }
    }

    #[test]
    fn details_cannot_override_code_or_message() {
        let e = OpError::new(ErrorCode::NotFound, "gone").with("code", "ok").with("id", "x");
        let j = e.to_json();
        assert_eq!(j["code"], "not_found");
        assert_eq!(j["id"], "x");
    }
}
