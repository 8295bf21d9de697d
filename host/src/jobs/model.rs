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

/// Why a job ended: a closed set, documented in README, written to the
/// store and the wire as its snake_case name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// The program exited 0.
    ExitedZero,
    /// The program exited with a non-zero code.
    ExitedNonzero,
    /// The program was killed by a signal nobody asked for.
    Signaled,
    /// The program could not be started.
    LaunchFailed,
    /// `job.kill` stopped it.
    KillRequested,
    /// It ran past its time limit.
    TimeLimit,
    /// Its processes were gone with no end recorded (reaped by an observer),
    /// or its recorded leader is provably not the process it started
    /// (another boot, a reused pid).
    ProcessGoneNoEnd,
    /// A stream exceeded `limits.job_output_bytes`; the supervisor stopped it.
    OutputLimit,
    /// Reading or storing the program's output failed; the supervisor
    /// stopped it rather than lose output silently.
    CaptureFailed,
    /// The supervisor started the program but could not record that; it
    /// stopped the program rather than leave it running unsupervised.
    RecordFailed,
}

impl Reason {
    /// Every reason code, in documentation order.
    pub const ALL: &'static [Reason] = &[
        Reason::ExitedZero,
        Reason::ExitedNonzero,
        Reason::Signaled,
        Reason::LaunchFailed,
        Reason::KillRequested,
        Reason::TimeLimit,
        Reason::ProcessGoneNoEnd,
        Reason::OutputLimit,
        Reason::CaptureFailed,
        Reason::RecordFailed,
    ];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::ExitedZero => "exited_zero",
            Reason::ExitedNonzero => "exited_nonzero",
            Reason::Signaled => "signaled",
            Reason::LaunchFailed => "launch_failed",
            Reason::KillRequested => "kill_requested",
            Reason::TimeLimit => "time_limit",
            Reason::ProcessGoneNoEnd => "process_gone_no_end",
            Reason::OutputLimit => "output_limit",
            Reason::CaptureFailed => "capture_failed",
            Reason::RecordFailed => "record_failed",
        }
    }

    /// Parse a wire name.
    pub fn parse(s: &str) -> Option<Reason> {
        Reason::ALL.iter().copied().find(|r| r.as_str() == s)
    }

    /// The reason for a program's own end: its exit code, else its signal.
    pub fn of_exit(code: Option<i32>) -> (Status, Reason) {
        match code {
            Some(0) => (Status::Succeeded, Reason::ExitedZero),
            Some(_) => (Status::Failed, Reason::ExitedNonzero),
            None => (Status::Failed, Reason::Signaled),
        }
    }
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
    pub reason_code: Option<Reason>,
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
    /// A launch, record or capture error message.
    pub error: Option<String>,
    /// `/proc/sys/kernel/random/boot_id` when the job started: pids and
    /// start times only mean something within one boot.
    pub boot_id: Option<String>,
    /// When a kill's signal (or the fronted CLI's own kill) was sent, epoch
    /// ms: an end observed before it is the program's own, not the kill's.
    pub kill_sent_ms: Option<i64>,
    /// Cap on each of stdout and stderr, bytes (0 = none: a job recorded
    /// before the cap existed).
    pub output_limit_bytes: u64,
    /// stdout was cut at `output_limit_bytes`.
    pub stdout_truncated: bool,
    /// stderr was cut at `output_limit_bytes`.
    pub stderr_truncated: bool,
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
            "time_limit_ms": (self.time_limit_ms > 0).then_some(self.time_limit_ms),
            "output_limit_bytes": (self.output_limit_bytes > 0).then_some(self.output_limit_bytes),
            "truncated": self.truncated_streams(),
            "kill_requested_ms": self.kill_requested_ms,
        })
    }

    /// The streams cut at the output cap.
    pub fn truncated_streams(&self) -> Vec<&'static str> {
        [("stdout", self.stdout_truncated), ("stderr", self.stderr_truncated)].into_iter().filter(|(_, t)| *t).map(|(s, _)| s).collect()
    }

    /// Whether `stream` was cut at the output cap.
    pub fn truncated(&self, stream: &str) -> bool {
        match stream {
            "stdout" => self.stdout_truncated,
            "stderr" => self.stderr_truncated,
            _ => false,
        }
    }

    /// Whether the recorded program (the process group leader) is provably
    /// the process the supervisor started: same boot, same pid, same start
    /// time. Only then may its group be signalled on its own say-so.
    pub fn leader_verified(&self) -> bool {
        super::process::verified(self.pid, self.pid_start, self.boot_id.as_deref())
    }

    /// Whether the recorded supervisor is provably alive (same boot, pid
    /// and start time).
    pub fn supervisor_verified(&self) -> bool {
        super::process::verified(self.supervisor_pid, self.supervisor_start, self.boot_id.as_deref())
    }

    /// Record this job's end now as `status` for `reason`.
    pub fn end(&mut self, status: Status, reason: Reason) {
        self.status = status;
        self.reason_code = Some(reason);
        self.ended_ms = Some(super::process::now_ms());
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

    #[test]
    fn reason_wire_names_round_trip_and_match_serde() {
        for r in Reason::ALL {
            assert_eq!(Reason::parse(r.as_str()), Some(*r));
            assert_eq!(serde_json::to_value(r).unwrap(), serde_json::Value::String(r.as_str().into()));
        }
    }
}
