//! The job lifecycle vocabulary: statuses, their terminality and outcome,
//! and the closed set of reason codes. Callers read `terminal` and
//! `outcome` instead of copying our status names.

use serde::{Deserialize, Serialize};

/// Where a job is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Recorded; the supervisor has not yet started the program.
    #[default]
    Preparing,
    /// The program is running under its supervisor.
    Running,
    /// Exited 0.
    Succeeded,
    /// Exited non-zero, died by a signal, or could not start.
    Failed,
    /// Stopped by `job.kill`.
    Killed,
    /// Ran past its time limit and was stopped.
    TimedOut,
    /// Its processes are gone and no end was ever recorded.
    Lost,
}

impl Status {
    /// Every status.
    pub const ALL: &'static [Status] =
        &[Status::Preparing, Status::Running, Status::Succeeded, Status::Failed, Status::Killed, Status::TimedOut, Status::Lost];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Preparing => "preparing",
            Status::Running => "running",
            Status::Succeeded => "succeeded",
            Status::Failed => "failed",
            Status::Killed => "killed",
            Status::TimedOut => "timed_out",
            Status::Lost => "lost",
        }
    }

    /// Parse a wire name.
    pub fn parse(s: &str) -> Option<Status> {
        Status::ALL.iter().copied().find(|x| x.as_str() == s)
    }

    /// Whether the job has ended (nothing will change it again).
    pub fn terminal(self) -> bool {
        !matches!(self, Status::Preparing | Status::Running)
    }

    /// `success`, `failure`, `cancelled`, or `None` while not terminal.
    pub fn outcome(self) -> Option<&'static str> {
        match self {
            Status::Preparing | Status::Running => None,
            Status::Succeeded => Some("success"),
            Status::Failed | Status::TimedOut | Status::Lost => Some("failure"),
            Status::Killed => Some("cancelled"),
        }
    }
}

/// Why a job ended (closed set, documented in README).
pub mod reason {
    /// The program exited 0.
    pub const EXITED_ZERO: &str = "exited_zero";
    /// The program exited with a non-zero code.
    pub const EXITED_NONZERO: &str = "exited_nonzero";
    /// The program was killed by a signal nobody asked for.
    pub const SIGNALED: &str = "signaled";
    /// The program could not be started.
    pub const LAUNCH_FAILED: &str = "launch_failed";
    /// `job.kill` stopped it.
    pub const KILL_REQUESTED: &str = "kill_requested";
    /// It ran past its time limit.
    pub const TIME_LIMIT: &str = "time_limit";
    /// Its processes were gone with no end recorded (reaped by an observer).
    pub const PROCESS_GONE_NO_END: &str = "process_gone_no_end";
    /// Every reason code.
    pub const ALL: &[&str] =
        &[EXITED_ZERO, EXITED_NONZERO, SIGNALED, LAUNCH_FAILED, KILL_REQUESTED, TIME_LIMIT, PROCESS_GONE_NO_END];
}

/// One job as stored. `Job::default()` is a fresh `preparing` record with
/// nothing recorded yet.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Job {
    /// Time-ordered unique id.
    pub id: String,
    /// The spawn verb that started it.
    pub verb: String,
    /// The plugin that planned it, and that plugin's digest then.
    pub plugin: String,
    /// SHA-256 of the plugin component when the job started.
    pub plugin_digest: String,
    /// The op's args (JSON text), for `job.result`'s mapping.
    pub args: String,
    /// A short human label (program and arguments).
    pub label: String,
    /// Absolute program path.
    pub program: String,
    /// Rendered argv (JSON array text).
    pub argv: String,
    /// Working directory.
    pub cwd: String,
    /// Environment (JSON object text).
    pub env: String,
    /// Time limit, ms (0 = none).
    pub time_limit_ms: u64,
    /// Status.
    pub status: Status,
    /// Why it ended.
    pub reason_code: Option<String>,
    /// CAS version: every status write bumps it.
    pub version: i64,
    /// Created, epoch ms.
    pub created_ms: i64,
    /// Program started, epoch ms.
    pub started_ms: Option<i64>,
    /// Ended, epoch ms.
    pub ended_ms: Option<i64>,
    /// Exit code.
    pub exit_code: Option<i32>,
    /// Terminating signal.
    pub signal: Option<i32>,
    /// Supervisor pid and its start time (clock ticks since boot).
    pub supervisor_pid: Option<i64>,
    /// Start time of the supervisor process (PID-reuse guard).
    pub supervisor_start: Option<i64>,
    /// Program pid (also its process group id).
    pub pid: Option<i64>,
    /// Start time of the program process (PID-reuse guard).
    pub pid_start: Option<i64>,
    /// The fronted CLI's own id for this run, if the plugin extracted one.
    pub entity: Option<String>,
    /// When `job.kill` was asked, epoch ms.
    pub kill_requested_ms: Option<i64>,
    /// A launch error message.
    pub error: Option<String>,
}

impl Job {
    /// The record as callers see it.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "id": self.id,
            "kind": self.verb,
            "label": self.label,
            "status": self.status.as_str(),
            "terminal": self.status.terminal(),
            "outcome": self.status.outcome(),
            "reason_code": self.reason_code,
            "plugin": self.plugin,
            "created_ms": self.created_ms,
            "started_ms": self.started_ms,
            "ended_ms": self.ended_ms,
            "duration_ms": self.ended_ms.zip(self.started_ms).map(|(e, s)| e - s),
            "exit_code": self.exit_code,
            "signal": self.signal,
            "pid": self.pid,
            "supervisor_pid": self.supervisor_pid,
            "entity": self.entity,
            "error": self.error,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminality_and_outcome_cover_every_status() {
        for s in Status::ALL {
            assert_eq!(Status::parse(s.as_str()), Some(*s));
            assert_eq!(s.terminal(), s.outcome().is_some(), "{s:?}");
        }
        assert_eq!(Status::Killed.outcome(), Some("cancelled"));
        assert_eq!(Status::Lost.outcome(), Some("failure"));
    }
}
