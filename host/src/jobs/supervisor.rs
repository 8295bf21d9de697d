//! The supervisor: `verbgate __supervise --state DIR --id ID`, started
//! detached in its own session for every job. It starts the program in its
//! own process group with stdout/stderr streamed to files, records pid and
//! process start time, waits, and records the exit code or signal — so a job's
//! end is recorded even if the MCP server that started it has died.

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use super::model::{reason, Status};
use super::process::{now_ms, signal_group, start_time};
use super::store::Store;

/// Time between TERM and KILL when a time limit stops a job.
pub const TERM_GRACE: Duration = Duration::from_secs(2);

/// Run the supervisor for job `id`. Returns a process exit code.
pub fn supervise(state_dir: &Path, id: &str) -> i32 {
    match supervise_inner(state_dir, id) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("verbgate supervisor for job {id}: {e:#}");
            1
        }
    }
}

fn supervise_inner(state_dir: &Path, id: &str) -> anyhow::Result<()> {
    let store = Store::open(state_dir)?;
    let job = store.get(id)?.ok_or_else(|| anyhow::anyhow!("no job {id}"))?;
    if job.status != Status::Preparing {
        return Ok(());
    }
    let dir = store.job_dir(id);
    crate::config::ensure_private_dir(&dir)?;
    let open = |name: &str| {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(dir.join(name))
    };
    let (stdout, stderr) = (open("stdout")?, open("stderr")?);
    let argv: Vec<String> = serde_json::from_str(&job.argv)?;
    let env: std::collections::BTreeMap<String, String> = serde_json::from_str(&job.env)?;
    let spawned = Command::new(&job.program)
        .args(&argv)
        .env_clear()
        .envs(&env)
        .current_dir(&job.cwd)
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .spawn();
    let me = std::process::id() as i64;
    let my_start = start_time(me);
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => {
            let msg = format!("cannot start {}: {e}", job.program);
            store.update(id, |j| {
                j.status = Status::Failed;
                j.reason_code = Some(reason::LAUNCH_FAILED.into());
                j.error = Some(msg.clone());
                j.ended_ms = Some(now_ms());
                j.supervisor_pid = Some(me);
                j.supervisor_start = my_start;
            })?;
            return Ok(());
        }
    };
    let pid = child.id() as i64;
    let pid_start = start_time(pid);
    // preparing → running, unless a kill arrived first.
    let started = store.update(id, |j| {
        if j.status == Status::Preparing {
            j.status = Status::Running;
            j.started_ms = Some(now_ms());
            j.pid = Some(pid);
            j.pid_start = pid_start;
            j.supervisor_pid = Some(me);
            j.supervisor_start = my_start;
        }
    })?;
    if started.status != Status::Running || started.kill_requested_ms.is_some() {
        signal_group(pid, libc::SIGKILL);
    }

    // Wait in a thread so the time limit can interrupt.
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait());
    });
    let limit = (job.time_limit_ms > 0).then(|| Duration::from_millis(job.time_limit_ms));
    let mut hit_limit = false;
    let status = match limit.map(|l| rx.recv_timeout(l)) {
        Some(Err(mpsc::RecvTimeoutError::Timeout)) => {
            hit_limit = true;
            signal_group(pid, libc::SIGTERM);
            match rx.recv_timeout(TERM_GRACE) {
                Ok(s) => s,
                Err(_) => {
                    signal_group(pid, libc::SIGKILL);
                    rx.recv()?
                }
            }
        }
        Some(Ok(s)) => s,
        Some(Err(mpsc::RecvTimeoutError::Disconnected)) => anyhow::bail!("lost the wait thread"),
        None => rx.recv()?,
    };
    let (code, signal) = match &status {
        Ok(s) => (s.code(), s.signal()),
        Err(_) => (None, None),
    };
    store.update(id, |j| {
        if j.status.terminal() {
            return;
        }
        j.ended_ms = Some(now_ms());
        j.exit_code = code;
        j.signal = signal;
        let (st, why) = if j.kill_requested_ms.is_some() {
            (Status::Killed, reason::KILL_REQUESTED)
        } else if hit_limit {
            (Status::TimedOut, reason::TIME_LIMIT)
        } else if code == Some(0) {
            (Status::Succeeded, reason::EXITED_ZERO)
        } else if code.is_some() {
            (Status::Failed, reason::EXITED_NONZERO)
        } else {
            (Status::Failed, reason::SIGNALED)
        };
        j.status = st;
        j.reason_code = Some(why.into());
    })?;
    Ok(())
}
