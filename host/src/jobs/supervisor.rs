//! The supervisor: `verbgate __supervise --state DIR --id ID`, started
//! detached in its own session for every job. It starts the program in its
//! own process group, copies its stdout/stderr into the job's files through
//! pipes (counting, see [`super::capture`]), records pid, process start time
//! and boot id, waits, and records the end — so a job's end is recorded even
//! if the MCP server that started it has died.
//!
//! Invariants:
//! - **No started program is left unsupervised.** If recording the start
//!   fails, the supervisor kills the program's group, waits for it, and
//!   records `record_failed` (retrying the write); it never exits while the
//!   program it started runs on unrecorded.
//! - **Every job is bounded**: past its time limit or its output cap the
//!   group gets TERM, then KILL after [`TERM_GRACE`].
//! - **The end says what happened**: `killed` only when a kill was sent
//!   before the program ended (`kill_sent_ms`), or the supervisor stopped it
//!   for a kill requested before it started; a program that ended on its own
//!   first keeps its own end.

use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use super::capture::{pump, Event};
use super::model::Stream;
use super::model::{End, Job, Reason, Started, State, Status};
use super::process::{boot_id, now_ms, signal_group, start_time};
use super::store::Store;
use super::testhook;

/// Time between TERM and KILL when the supervisor stops a job.
pub const TERM_GRACE: Duration = Duration::from_secs(2);
/// After the program and its leftovers are gone, how long to keep copying
/// what is still in the pipes (a descriptor passed to a process outside the
/// tree could keep them open) before recording the end.
const DRAIN_AFTER_EXIT: Duration = Duration::from_secs(2);
/// Attempts (one second apart) at a store write that must not be lost.
const RECORD_ATTEMPTS: u32 = 10;

/// Run the supervisor for job `id`. Returns a process exit code.
pub fn supervise(state_dir: &Path, id: &str, sandbox: Option<&str>) -> i32 {
    // Beside its server in the same cgroup: it must not reorganise it.
    #[cfg(target_os = "linux")]
    crate::sandbox::cgroup::forbid_setup();
    // Leave the session of whoever started the job, so the supervisor (and
    // the job) outlive it and its terminal. It was started without a
    // process group of its own, so it is no group leader and setsid works.
    // SAFETY: setsid takes no arguments and touches no memory of ours.
    unsafe {
        libc::setsid();
    }
    // Every process of the job's tree that loses its parent comes to us,
    // wherever it moved its group or session, so none outlives the job: once
    // the program is reaped, every child left is a leftover of its tree.
    if let Err(e) = crate::exec::orphans::become_reaper() {
        eprintln!("verbgate supervisor for job {id}: cannot become the job tree's reaper: {e}");
        return 1;
    }
    match supervise_inner(state_dir, id, sandbox) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("verbgate supervisor for job {id}: {e:#}");
            1
        }
    }
}

/// The confinement of the profile given as JSON (none: unconfined) and its
/// private TMPDIR, to be removed when the job is over. The command is made
/// and started through the confinement
/// ([`crate::sandbox::Confinement::command`], `spawn`).
fn confine(
    sandbox: Option<&str>,
) -> Result<Option<(crate::sandbox::RunTmp, crate::sandbox::Confinement)>, String> {
    let Some(text) = sandbox else { return Ok(None) };
    let profile: crate::sandbox::Profile = serde_json::from_str(text)
        .map_err(|e| format!("the job's sandbox profile is unreadable: {e}"))?;
    let tmp = crate::sandbox::RunTmp::new().map_err(|e| e.message)?;
    let confinement =
        crate::sandbox::Confinement::new(&profile, tmp.path()).map_err(|e| e.message)?;
    Ok(Some((tmp, confinement)))
}

/// The job's first process, as the supervisor signals it: its process
/// group, and the process itself — a program may leave its group
/// (`setpgid` into another of the session) and must still stop at its
/// limit. On Linux the process is signalled through a pidfd opened while
/// it was surely not yet reaped, so a signal never reaches a stranger that
/// reused its pid (the wait thread may reap it at any moment).
struct Leader {
    pid: i64,
    #[cfg(target_os = "linux")]
    pidfd: Option<std::os::fd::OwnedFd>,
}

impl Leader {
    fn of(child: &Child) -> Leader {
        let pid = child.id() as i64;
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::FromRawFd;
            // SAFETY: pidfd_open takes a pid and flags; the child is ours
            // and not yet waited for, so the pid is its.
            let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
            // SAFETY: the kernel just returned this descriptor to us.
            let pidfd = (fd >= 0).then(|| unsafe { std::os::fd::OwnedFd::from_raw_fd(fd as i32) });
            Leader { pid, pidfd }
        }
        #[cfg(not(target_os = "linux"))]
        Leader { pid }
    }

    /// Send `signal` to the group and to the process (without a pidfd —
    /// macOS, old kernels — to the group only).
    fn signal(&self, signal: i32) {
        signal_group(self.pid, signal);
        #[cfg(target_os = "linux")]
        if let Some(fd) = &self.pidfd {
            use std::os::fd::AsRawFd;
            // SAFETY: pidfd_send_signal takes a descriptor we own, a signal
            // number and no info; once the process is reaped it fails
            // with ESRCH and signals nobody.
            unsafe {
                libc::syscall(
                    libc::SYS_pidfd_send_signal,
                    fd.as_raw_fd(),
                    signal,
                    std::ptr::null::<libc::siginfo_t>(),
                    0u32,
                );
            }
        }
    }
}

/// Why the supervisor stopped the program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    TimeLimit,
    OutputLimit,
    CaptureFailed,
}

impl Stop {
    fn end(self) -> (End, Reason) {
        match self {
            Stop::TimeLimit => (End::TimedOut, Reason::TimeLimit),
            Stop::OutputLimit => (End::Failed, Reason::OutputLimit),
            Stop::CaptureFailed => (End::Failed, Reason::CaptureFailed),
        }
    }
}

/// What happened while the program ran.
#[derive(Debug, Default)]
struct Run {
    stop: Option<Stop>,
    truncated: [bool; 2],
    capture_errors: Vec<String>,
    drained: usize,
}

impl Run {
    /// Note an output event; returns a reason to stop the program, if any.
    fn note(&mut self, ev: &Event) -> Option<Stop> {
        match ev {
            Event::LimitReached(s) => {
                self.truncated[*s as usize] = true;
                Some(Stop::OutputLimit)
            }
            Event::CaptureFailed(msg) => {
                self.capture_errors.push(msg.clone());
                Some(Stop::CaptureFailed)
            }
            Event::Drained => {
                self.drained += 1;
                None
            }
            Event::Exited(..) => None,
        }
    }
}

fn supervise_inner(state_dir: &Path, id: &str, sandbox: Option<&str>) -> anyhow::Result<()> {
    let store = Store::open(state_dir)?;
    let job = store.get(id)?.ok_or_else(|| anyhow::anyhow!("no job {id}"))?;
    if job.state != State::Preparing {
        return Ok(());
    }
    let me = std::process::id() as i64;
    let my_start = start_time(me);
    let setup = || -> anyhow::Result<_> {
        let dir = store.job_dir(id);
        make_job_dir(&store.jobs_dir(), &dir)?;
        // O_NOFOLLOW: a link planted where the output goes is refused, not
        // written through.
        let open = |name: &str| {
            std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW)
                .open(dir.join(name))
        };
        let files = (open(Stream::Stdout.name())?, open(Stream::Stderr.name())?);
        let argv: Vec<String> = serde_json::from_str(&job.argv)?;
        let env: std::collections::BTreeMap<String, String> = serde_json::from_str(&job.env)?;
        Ok((files, argv, env))
    };
    // The job ends `launch_failed` with `msg`, recorded by this supervisor.
    let launch_failed = |msg: String| {
        record(&store, id, |j| {
            j.finish(End::Failed, Reason::LaunchFailed, (None, None));
            j.error = Some(msg.clone());
            j.supervisor_pid = Some(me);
            j.supervisor_start = my_start;
        })
    };
    let ((stdout_file, stderr_file), argv, env) = match setup() {
        Ok(s) => s,
        Err(e) => {
            // Nothing started; say why instead of leaving it `preparing`.
            launch_failed(format!("cannot prepare the job: {e:#}"))?;
            return Err(e);
        }
    };
    // The program and everything it starts run confined; the output files
    // were opened above, before confinement, by this (unconfined)
    // supervisor. The private TMPDIR lives as long as the supervisor.
    let _tmp = match confine(sandbox) {
        Ok(tmp) => tmp,
        Err(msg) => {
            launch_failed(msg)?;
            return Ok(());
        }
    };
    let mut cmd = match &_tmp {
        Some((_, confinement)) => confinement.command(Path::new(&job.program)),
        None => Command::new(&job.program),
    };
    cmd.args(&argv)
        .env_clear()
        .envs(&env)
        .current_dir(&job.cwd)
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // After the environment is set (env_clear above would drop it).
    if let Some((tmp, _)) = &_tmp {
        cmd.env("TMPDIR", tmp.path());
    }
    let spawned = match &_tmp {
        Some((_, confinement)) => confinement.spawn(&mut cmd),
        None => cmd.spawn(),
    };
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => {
            launch_failed(format!("cannot start {}: {e}", job.program))?;
            return Ok(());
        }
    };
    let pid = child.id() as i64;
    let leader = Leader::of(&child);
    let program = Started { pid, pid_start: start_time(pid), started_ms: now_ms() };
    // Copy output from the start, so the program never waits on a full pipe
    // while the store is being written.
    let (tx, rx) = mpsc::channel();
    for (pipe, file, stream) in [
        (
            child.stdout.take().map(|p| Box::new(p) as Box<dyn std::io::Read + Send>),
            stdout_file,
            Stream::Stdout,
        ),
        (
            child.stderr.take().map(|p| Box::new(p) as Box<dyn std::io::Read + Send>),
            stderr_file,
            Stream::Stderr,
        ),
    ] {
        let (tx, cap) = (tx.clone(), job.output_limit_bytes.unwrap_or(u64::MAX));
        if let Some(pipe) = pipe {
            // Unbuffered: what the program wrote is in the file at once, for
            // `job.output` and for naming a running job's entity.
            std::thread::spawn(move || pump(pipe, file, stream, cap, tx));
        }
    }
    // preparing → running, unless a kill arrived first.
    let started = if testhook::fail_after_spawn() {
        Err(anyhow::anyhow!("injected by VERBGATE_TEST_FAIL_AFTER_SPAWN"))
    } else {
        store.update(id, |j| {
            if j.state == State::Preparing {
                j.state = State::Running(program);
                j.supervisor_pid = Some(me);
                j.supervisor_start = my_start;
                j.boot_id = boot_id();
            }
        })
    };
    let started = match started {
        Ok(j) => j,
        Err(e) => return unrecorded_start(&store, id, child, program, me, my_start, e),
    };
    let mut stopped_for_kill = false;
    if started.status() != Status::Running || started.kill_requested_ms.is_some() {
        leader.signal(libc::SIGKILL);
        stopped_for_kill = true;
    }

    // Wait in a thread, so the time limit and output events can interrupt.
    std::thread::spawn(move || {
        let status = child.wait();
        let _ = tx.send(Event::Exited(status, now_ms()));
    });
    let limit = job.time_limit_ms.map(Duration::from_millis);
    let (mut run, status, exit_ms) = watch(&rx, &leader, limit)?;
    // The program is gone, and so is everything it started: its group, and
    // every daemon that left its group (all re-parented to us as it ended).
    crate::exec::orphans::end_all_children();
    // Copy what is still in the pipes.
    let until = Instant::now() + DRAIN_AFTER_EXIT;
    while run.drained < 2 {
        match rx.recv_timeout(until.saturating_duration_since(Instant::now())) {
            Ok(ev) => {
                if let Some(stop) = run.note(&ev) {
                    run.stop.get_or_insert(stop);
                }
            }
            Err(_) => break,
        }
    }
    let (code, signal) = match &status {
        Ok(s) => (s.code(), s.signal()),
        Err(_) => (None, None),
    };
    let wait_error = status.as_ref().err().map(|e| format!("cannot wait for the program: {e}"));
    record(&store, id, |j| {
        if j.status().terminal() {
            return;
        }
        j.stdout_truncated = run.truncated[Stream::Stdout as usize];
        j.stderr_truncated = run.truncated[Stream::Stderr as usize];
        let errors: Vec<String> =
            run.capture_errors.iter().cloned().chain(wait_error.clone()).collect();
        if !errors.is_empty() {
            j.error = Some(errors.join("; "));
        }
        // A kill counts only if it was sent before the program ended.
        let killed = stopped_for_kill || j.kill_sent_ms.is_some_and(|sent| exit_ms >= sent);
        let (end, why) = if killed {
            (End::Killed, Reason::KillRequested)
        } else if let Some(stop) = run.stop {
            stop.end()
        } else {
            Reason::of_exit(code)
        };
        j.finish(end, why, (code, signal));
    })?;
    Ok(())
}

/// Wait for the program's exit, stopping its group when it runs past
/// `limit` or an output event says so: TERM, then KILL after
/// [`TERM_GRACE`]. Returns what happened, the wait status and when it
/// exited.
fn watch(
    rx: &Receiver<Event>,
    leader: &Leader,
    limit: Option<Duration>,
) -> anyhow::Result<(Run, std::io::Result<std::process::ExitStatus>, i64)> {
    let mut run = Run::default();
    let deadline = limit.map(|l| Instant::now() + l);
    let mut kill_at: Option<Instant> = None;
    let stop_now = |run: &mut Run, stop: Stop, kill_at: &mut Option<Instant>| {
        if run.stop.is_none() {
            run.stop = Some(stop);
            leader.signal(libc::SIGTERM);
            *kill_at = Some(Instant::now() + TERM_GRACE);
        }
    };
    loop {
        let wake = match (run.stop, kill_at) {
            (None, _) => deadline,
            (Some(_), k) => k,
        };
        let ev = match wake {
            Some(w) => match rx.recv_timeout(w.saturating_duration_since(Instant::now())) {
                Ok(ev) => ev,
                Err(RecvTimeoutError::Timeout) => {
                    if run.stop.is_none() {
                        stop_now(&mut run, Stop::TimeLimit, &mut kill_at);
                    } else {
                        leader.signal(libc::SIGKILL);
                        kill_at = None;
                    }
                    continue;
                }
                Err(RecvTimeoutError::Disconnected) => anyhow::bail!("lost the wait thread"),
            },
            None => rx.recv()?,
        };
        if let Event::Exited(status, at) = ev {
            return Ok((run, status, at));
        }
        if let Some(stop) = run.note(&ev) {
            stop_now(&mut run, stop, &mut kill_at);
        }
    }
}

/// The program started but its start could not be recorded: nobody could
/// find or stop it through the store, so stop it now, then record why.
fn unrecorded_start(
    store: &Store,
    id: &str,
    mut child: Child,
    started: Started,
    me: i64,
    my_start: Option<i64>,
    cause: anyhow::Error,
) -> anyhow::Result<()> {
    let pid = started.pid;
    Leader::of(&child).signal(libc::SIGKILL);
    let status = child.wait();
    crate::exec::orphans::end_all_children();
    let msg = format!("the program started (pid {pid}) but recording that failed ({cause:#}); it was stopped rather than left running unsupervised");
    let exit = status.as_ref().map(|s| (s.code(), s.signal())).unwrap_or((None, None));
    record(store, id, |j| {
        if j.status().terminal() {
            return;
        }
        // The program did start: the end keeps its pid.
        if j.state == State::Preparing {
            j.state = State::Running(started);
        }
        j.finish(End::Failed, Reason::RecordFailed, exit);
        j.error = Some(msg.clone());
        j.supervisor_pid = Some(me);
        j.supervisor_start = my_start;
        j.boot_id = boot_id();
    })?;
    Err(cause.context("recording the start"))
}

/// Create the job's private output directory under `jobs_dir`, never
/// through a symbolic link: a link planted where the directory goes (or in
/// place of `jobs_dir`) is refused, so output is never written elsewhere.
fn make_job_dir(jobs_dir: &Path, dir: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    let refuse_link = |d: &Path| match std::fs::symlink_metadata(d) {
        Ok(m) if m.file_type().is_symlink() => anyhow::bail!(
            "{} is a symbolic link; job output is never written through one",
            d.display()
        ),
        _ => Ok(()),
    };
    // Checked before anything touches it (making it private would chmod
    // a link's target).
    refuse_link(jobs_dir)?;
    crate::config::ensure_private_dir(jobs_dir)?;
    refuse_link(dir)?;
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => Ok(()),
        Err(e)
            if e.kind() == std::io::ErrorKind::AlreadyExists
                && std::fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_dir()) =>
        {
            Ok(())
        }
        Err(e) => Err(anyhow::anyhow!("cannot create the job directory {}: {e}", dir.display())),
    }
}

/// A store update that must not be lost (an end): retried a few times,
/// a second apart, before giving up (an observer then reaps the job).
fn record(store: &Store, id: &str, change: impl Fn(&mut Job)) -> anyhow::Result<Job> {
    let mut last = None;
    for attempt in 0..RECORD_ATTEMPTS {
        if attempt > 0 {
            std::thread::sleep(Duration::from_secs(1));
        }
        match store.update(id, &change) {
            Ok(j) => return Ok(j),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| anyhow::anyhow!("no attempt made")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_directory_is_never_created_through_a_link() {
        let tmp = tempfile::tempdir().unwrap();
        let jobs = tmp.path().join("jobs");
        make_job_dir(&jobs, &jobs.join("a1")).unwrap();
        assert!(jobs.join("a1").is_dir());
        let elsewhere = tmp.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, jobs.join("b2")).unwrap();
        let err = make_job_dir(&jobs, &jobs.join("b2")).unwrap_err().to_string();
        assert!(err.contains("symbolic link"), "{err}");
    }
}
