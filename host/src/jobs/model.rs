//! The job lifecycle vocabulary: statuses, their terminality and outcome,
//! and the closed set of reason codes. Callers read `terminal` and
//! `outcome` instead of copying our status names.

use serde::{Deserialize, Serialize};

/// Which stream.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Stream {
    /// The program's stdout (the default).
    #[default]
    Stdout,
    /// The program's stderr.
    Stderr,
}

impl Stream {
    /// The stream's name (also its file name in the job directory).
    pub fn name(self) -> &'static str {
        match self {
            Stream::Stdout => "stdout",
            Stream::Stderr => "stderr",
        }
    }
}

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
    pub const ALL: &'static [Status] = &[
        Status::Preparing,
        Status::Running,
        Status::Succeeded,
        Status::Failed,
        Status::Killed,
        Status::TimedOut,
        Status::Lost,
    ];

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

/// Why a job ended: a closed set, documented in docs/jobs.md, written to the
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

    /// The end of a program that ended on its own: by its exit code, else
    /// its signal.
    pub fn of_exit(code: Option<i32>) -> (End, Reason) {
        match code {
            Some(0) => (End::Succeeded, Reason::ExitedZero),
            Some(_) => (End::Failed, Reason::ExitedNonzero),
            None => (End::Failed, Reason::Signaled),
        }
    }
}

/// How a job ended: the terminal statuses, so an end can only be written
/// with one of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum End {
    /// Exited 0.
    Succeeded,
    /// Exited non-zero, died by a signal, could not start, or was stopped
    /// for a bound it crossed.
    Failed,
    /// Stopped by `job.kill`.
    Killed,
    /// Ran past its time limit and was stopped.
    TimedOut,
    /// Its processes are gone and no end was ever recorded.
    Lost,
}

impl End {
    /// The status this end shows as.
    pub fn status(self) -> Status {
        match self {
            End::Succeeded => Status::Succeeded,
            End::Failed => Status::Failed,
            End::Killed => Status::Killed,
            End::TimedOut => Status::TimedOut,
            End::Lost => Status::Lost,
        }
    }

    /// The end a terminal status names (`None` for a live one).
    pub fn of(status: Status) -> Option<End> {
        Some(match status {
            Status::Preparing | Status::Running => return None,
            Status::Succeeded => End::Succeeded,
            Status::Failed => End::Failed,
            Status::Killed => End::Killed,
            Status::TimedOut => End::TimedOut,
            Status::Lost => End::Lost,
        })
    }
}

/// The program as its supervisor started it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Started {
    /// Program pid (also its process group id).
    pub pid: i64,
    /// Its start time in the platform's unit (see
    /// [`super::process::start_time`]: the pid-reuse guard);
    /// `None` when it was already gone when the supervisor looked.
    pub pid_start: Option<i64>,
    /// When it started, epoch ms.
    pub started_ms: i64,
}

/// A job's end, with what was recorded about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ended {
    /// How it ended.
    pub end: End,
    /// Why.
    pub reason: Reason,
    /// When, epoch ms.
    pub ended_ms: i64,
    /// The program, if it was ever started.
    pub started: Option<Started>,
    /// Its exit code.
    pub exit_code: Option<i32>,
    /// The signal that ended it.
    pub signal: Option<i32>,
}

/// Where a job is in its life, carrying what that stage has (as pueue's
/// task status does): a running job always has a pid, an ended one always
/// has a reason and an end time, and a live job has neither.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum State {
    /// Recorded; the supervisor has not started the program yet.
    #[default]
    Preparing,
    /// The program runs under its supervisor.
    Running(Started),
    /// Nothing will change it again.
    Ended(Ended),
}

impl State {
    /// The wire status.
    pub fn status(&self) -> Status {
        match self {
            State::Preparing => Status::Preparing,
            State::Running(_) => Status::Running,
            State::Ended(e) => e.end.status(),
        }
    }

    /// The program as started, while running or after.
    pub fn started(&self) -> Option<Started> {
        match self {
            State::Preparing => None,
            State::Running(s) => Some(*s),
            State::Ended(e) => e.started,
        }
    }

    /// The end, once there is one.
    pub fn ended(&self) -> Option<&Ended> {
        match self {
            State::Ended(e) => Some(e),
            _ => None,
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
    /// Time limit, ms, if it has one.
    pub time_limit_ms: Option<u64>,
    /// Where it is in its life, with what that stage recorded.
    pub state: State,
    /// CAS version: every status write bumps it.
    pub version: i64,
    /// Created, epoch ms.
    pub created_ms: i64,
    /// Supervisor pid.
    pub supervisor_pid: Option<i64>,
    /// Start time of the supervisor process (PID-reuse guard).
    pub supervisor_start: Option<i64>,
    /// The fronted CLI's own id for this run, if the plugin extracted one.
    pub entity: Option<String>,
    /// When `job.kill` was asked, epoch ms.
    pub kill_requested_ms: Option<i64>,
    /// A launch, record or capture error message.
    pub error: Option<String>,
    /// The boot's id when the job started ([`super::process::boot_id`]): pids and
    /// start times only mean something within one boot.
    pub boot_id: Option<String>,
    /// When a kill's signal (or the fronted CLI's own kill) was sent, epoch
    /// ms: an end observed before it is the program's own, not the kill's.
    pub kill_sent_ms: Option<i64>,
    /// Cap on each of stdout and stderr, bytes (none: a job recorded
    /// before the cap existed).
    pub output_limit_bytes: Option<u64>,
    /// stdout was cut at `output_limit_bytes`.
    pub stdout_truncated: bool,
    /// stderr was cut at `output_limit_bytes`.
    pub stderr_truncated: bool,
    /// Who started it: `local` (the machine's user: stdio, the command
    /// line) or `token:<first 16 hex of its hash>` over HTTP. Only its
    /// owner — or a caller granted every job — sees it.
    pub owner: String,
}

impl Job {
    /// The record as callers see it.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "id": self.id,
            "kind": self.verb,
            "label": self.label,
            "status": self.status().as_str(),
            "terminal": self.status().terminal(),
            "outcome": self.status().outcome(),
            "reason_code": self.reason_code(),
            "plugin": self.plugin,
            "created_ms": self.created_ms,
            "started_ms": self.started_ms(),
            "ended_ms": self.ended_ms(),
            "duration_ms": self.ended_ms().zip(self.started_ms()).map(|(e, s)| e - s),
            "exit_code": self.exit_code(),
            "signal": self.signal(),
            "pid": self.pid(),
            "supervisor_pid": self.supervisor_pid,
            "entity": self.entity,
            "error": self.error,
            "time_limit_ms": self.time_limit_ms,
            "output_limit_bytes": self.output_limit_bytes,
            "truncated": self.truncated_streams(),
            "kill_requested_ms": self.kill_requested_ms,
        })
    }

    /// The streams cut at the output cap.
    pub fn truncated_streams(&self) -> Vec<&'static str> {
        [Stream::Stdout, Stream::Stderr]
            .into_iter()
            .filter(|s| self.truncated(*s))
            .map(Stream::name)
            .collect()
    }

    /// Whether `stream` was cut at the output cap.
    pub fn truncated(&self, stream: Stream) -> bool {
        match stream {
            Stream::Stdout => self.stdout_truncated,
            Stream::Stderr => self.stderr_truncated,
        }
    }

    /// Whether the recorded program (the process group leader) is provably
    /// the process the supervisor started: same boot, same pid, same start
    /// time. Only then may its group be signalled on its own say-so.
    pub fn leader_verified(&self) -> bool {
        let started = self.state.started();
        super::process::verified(
            started.map(|s| s.pid),
            started.and_then(|s| s.pid_start),
            self.boot_id.as_deref(),
        )
    }

    /// Whether the recorded supervisor is provably alive (same boot, pid
    /// and start time).
    pub fn supervisor_verified(&self) -> bool {
        super::process::verified(
            self.supervisor_pid,
            self.supervisor_start,
            self.boot_id.as_deref(),
        )
    }

    /// The wire status.
    pub fn status(&self) -> Status {
        self.state.status()
    }

    /// Why it ended (once it has).
    pub fn reason_code(&self) -> Option<Reason> {
        self.state.ended().map(|e| e.reason)
    }

    /// The program's pid (its process group id), once started.
    pub fn pid(&self) -> Option<i64> {
        self.state.started().map(|s| s.pid)
    }

    /// When the program started, epoch ms.
    pub fn started_ms(&self) -> Option<i64> {
        self.state.started().map(|s| s.started_ms)
    }

    /// When it ended, epoch ms.
    pub fn ended_ms(&self) -> Option<i64> {
        self.state.ended().map(|e| e.ended_ms)
    }

    /// The program's exit code.
    pub fn exit_code(&self) -> Option<i32> {
        self.state.ended().and_then(|e| e.exit_code)
    }

    /// The signal that ended the program.
    pub fn signal(&self) -> Option<i32> {
        self.state.ended().and_then(|e| e.signal)
    }

    /// Record this job's end now as `end` for `reason`, keeping what was
    /// recorded about the program; the exit code and signal, if any, are
    /// `exit`. A job that already ended is left alone.
    pub fn finish(&mut self, end: End, reason: Reason, exit: (Option<i32>, Option<i32>)) {
        if let State::Ended(_) = self.state {
            return;
        }
        let (exit_code, signal) = exit;
        self.state = State::Ended(Ended {
            end,
            reason,
            ended_ms: super::process::now_ms(),
            started: self.state.started(),
            exit_code,
            signal,
        });
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
        for s in Status::ALL {
            assert_eq!(
                End::of(*s).map(End::status),
                s.terminal().then_some(*s),
                "an end is exactly a terminal status"
            );
        }
    }

    #[test]
    fn an_end_keeps_the_start_and_is_written_once() {
        let mut j = Job::default();
        let started = Started { pid: 42, pid_start: Some(7), started_ms: 1 };
        j.state = State::Running(started);
        j.finish(End::Failed, Reason::Signaled, (None, Some(9)));
        assert_eq!(
            (j.status(), j.pid(), j.signal(), j.reason_code()),
            (Status::Failed, Some(42), Some(9), Some(Reason::Signaled))
        );
        let first = j.clone();
        j.finish(End::Killed, Reason::KillRequested, (None, None));
        assert_eq!(j, first, "an ended job is never ended again");
    }

    #[test]
    fn reason_wire_names_round_trip_and_match_serde() {
        for r in Reason::ALL {
            assert_eq!(Reason::parse(r.as_str()), Some(*r));
            assert_eq!(
                serde_json::to_value(r).unwrap(),
                serde_json::Value::String(r.as_str().into())
            );
        }
    }
}
