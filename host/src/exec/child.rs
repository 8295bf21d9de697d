//! One program's life, start to reaped, on a blocking thread: its stdout
//! and stderr read with `poll(2)` up to their bound, its deadline kept by
//! the same `poll`, its end seen through a pidfd (Linux), and its process
//! group killed on a deadline, an overflow, a failed read, or when whoever
//! awaited the run goes away ([`Group::abandon`]).
//!
//! Why not tokio's process support: each readiness event of its pipes and
//! its child travels through the runtime's I/O driver and wakes the task
//! anew; for a program as short as `git status` (2 ms) that cost about
//! 0.15 ms per run on this machine (`VERBGATE_BENCH_EXEC_BREAKDOWN=1`),
//! where a thread blocked in `poll`, as std's `Command::output` does, costs
//! about as much as std.

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::process::{Child, ExitStatus};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// The process group a run leads, shared between the thread that runs it
/// and the task that awaits it.
#[derive(Debug, Default)]
pub struct Group {
    state: Mutex<GroupState>,
}

#[derive(Debug, Default)]
struct GroupState {
    /// The program's pid, which is also its group's id, while it is not
    /// yet reaped (its pid cannot be reused until then, so a kill never
    /// reaches a stranger).
    pid: Option<i32>,
    /// Whoever awaited the run went away: nothing starts from now on, and
    /// a program already starting is killed at once.
    abandoned: bool,
}

impl Group {
    fn lock(&self) -> std::sync::MutexGuard<'_, GroupState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether the run was abandoned before its program started.
    fn abandoned(&self) -> bool {
        self.lock().abandoned
    }

    /// The run started its program, `pid`. False (and the program
    /// killed) when the run was abandoned meanwhile.
    fn started(&self, pid: i32) -> bool {
        let mut state = self.lock();
        state.pid = Some(pid).filter(|p| *p > 1);
        if state.abandoned {
            kill(state.pid);
            return false;
        }
        true
    }

    /// Kill the program and its group now (the program is not reaped yet).
    fn kill(&self) {
        kill(self.lock().pid);
    }

    /// Reap the program, which has exited (so this does not wait). Under
    /// the lock: no kill can come between the reaping (after which its
    /// pid may be reused) and the group's forgetting it; what the program
    /// left running in its group is its own business from then on (it may
    /// be a legitimate daemon).
    fn reap(&self, child: &mut Child) -> std::io::Result<ExitStatus> {
        let mut state = self.lock();
        let status = child.wait();
        state.pid = None;
        status
    }

    /// [`Group::reap`] if the program has exited, without waiting.
    fn try_reap(&self, child: &mut Child) -> std::io::Result<Option<ExitStatus>> {
        let mut state = self.lock();
        let status = child.try_wait()?;
        if status.is_some() {
            state.pid = None;
        }
        Ok(status)
    }

    /// Whoever awaited the run is gone (the op was cancelled): kill the
    /// program if it runs, and any started from now on.
    pub fn abandon(&self) {
        let mut state = self.lock();
        state.abandoned = true;
        kill(state.pid);
    }
}

/// SIGKILL to the program's group and to the program itself: a program
/// may leave its group (`setpgid`) and must still die at its deadline.
fn kill(pid: Option<i32>) {
    if let Some(pid) = pid {
        // SAFETY: killpg and kill only send a signal; `pid` is our child
        // (it leads the group it was started in, process_group(0)), never
        // 0 or 1, and not yet reaped.
        unsafe {
            libc::killpg(pid, libc::SIGKILL);
            libc::kill(pid, libc::SIGKILL);
        }
    }
}

/// What a run asks for besides its command.
pub struct Bounds {
    /// Bytes kept per stream.
    pub capture: usize,
    /// Keep stdout's first `capture` bytes and stop the program, instead of
    /// failing.
    pub truncate_stdout: bool,
    /// How long the program may run, counted from its start.
    pub timeout: Duration,
}

/// Why a run ended without a whole output.
#[derive(Debug)]
pub enum Failure {
    /// The program could not be started.
    Start(std::io::Error),
    /// It ran past its deadline and was killed.
    Timeout,
    /// A stream produced more than its bound (`"stdout"` or `"stderr"`).
    Overflow(&'static str),
    /// Reading a stream failed: the output is incomplete.
    Read(&'static str, String),
    /// Waiting for the program failed.
    Wait(String),
}

/// A program that ran to its end.
#[derive(Debug)]
pub struct Finished {
    /// How it ended.
    pub status: ExitStatus,
    /// Its stdout (cut at the bound when truncation was asked for).
    pub stdout: Vec<u8>,
    /// Its stderr.
    pub stderr: Vec<u8>,
    /// stdout was cut, and the program stopped, at the bound.
    pub truncated: bool,
}

/// Start the program with `start` and run it to its end (blocking: call
/// on a thread of its own). `stdin`, when given, is written from a helper
/// thread (a program may read it and write output at the same time).
pub fn run(
    start: impl FnOnce() -> std::io::Result<Child>,
    stdin: Option<Vec<u8>>,
    bounds: &Bounds,
    group: &Group,
) -> Result<Finished, Failure> {
    if group.abandoned() {
        return Err(Failure::Start(std::io::Error::other("the op was cancelled before it began")));
    }
    let mut child = super::orphans::spawn(start).map_err(Failure::Start)?;
    // Forgotten on every way out, after the reap each path makes.
    let _registered = Registered(child.id());
    let deadline = Instant::now() + bounds.timeout;
    if !group.started(child.id() as i32) {
        // Killed by `started`: the wait is short.
        let _ = group.reap(&mut child);
        return Err(Failure::Start(std::io::Error::other("the op was cancelled")));
    }
    if let (Some(bytes), Some(mut pipe)) = (stdin, child.stdin.take()) {
        // A program that exits without reading its input is not an error.
        let writer = std::thread::Builder::new().name("verbgate-stdin".into()).spawn(move || {
            let _ = pipe.write_all(&bytes);
        });
        if let Err(e) = writer {
            group.kill();
            let _ = finish(&mut child, group);
            return Err(Failure::Start(std::io::Error::other(format!(
                "cannot start the thread that writes its input: {e}"
            ))));
        }
    }
    let pumped = pump(&mut child, bounds, deadline, group);
    if pumped.is_err() {
        group.kill();
    }
    let status = reap(&mut child, deadline, group);
    let (stdout, stderr, truncated) = pumped?;
    let status = status?;
    Ok(Finished { status, stdout, stderr, truncated })
}

/// A started program, registered as ours ([`super::orphans`]) until the
/// run that reaped it returns.
struct Registered(u32);

impl Drop for Registered {
    fn drop(&mut self) {
        super::orphans::forget(self.0);
    }
}

/// One captured stream.
struct Stream {
    name: &'static str,
    pipe: Option<Box<dyn ReadFd>>,
    kept: Vec<u8>,
}

/// A pipe end poll can watch and read.
trait ReadFd: Read + Send {
    fn fd(&self) -> RawFd;
}

impl<T: Read + AsRawFd + Send> ReadFd for T {
    fn fd(&self) -> RawFd {
        self.as_raw_fd()
    }
}

/// Read both streams to their end (or the deadline, or a bound).
fn pump(
    child: &mut Child,
    bounds: &Bounds,
    deadline: Instant,
    group: &Group,
) -> Result<(Vec<u8>, Vec<u8>, bool), Failure> {
    let mut streams = [
        Stream {
            name: "stdout",
            pipe: child.stdout.take().map(|p| Box::new(p) as Box<dyn ReadFd>),
            kept: Vec::new(),
        },
        Stream {
            name: "stderr",
            pipe: child.stderr.take().map(|p| Box::new(p) as Box<dyn ReadFd>),
            kept: Vec::new(),
        },
    ];
    let mut truncated = false;
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let mut fds: Vec<libc::pollfd> = streams
            .iter()
            .filter_map(|s| s.pipe.as_ref())
            .map(|p| libc::pollfd { fd: p.fd(), events: libc::POLLIN, revents: 0 })
            .collect();
        if fds.is_empty() {
            let [out, err] = streams;
            return Ok((out.kept, err.kept, truncated));
        }
        let ready = wait_ready(&mut fds, deadline)?;
        if !ready {
            return Err(Failure::Timeout);
        }
        for stream in &mut streams {
            let Some(pipe) = stream.pipe.as_mut() else { continue };
            let fd = pipe.fd();
            if !fds.iter().any(|p| p.fd == fd && p.revents != 0) {
                continue;
            }
            match pipe.read(&mut chunk) {
                Ok(0) => stream.pipe = None,
                Ok(n) => {
                    let fits = bounds.capture - stream.kept.len();
                    stream.kept.extend_from_slice(&chunk[..n.min(fits)]);
                    if n > fits {
                        if stream.name == "stdout" && bounds.truncate_stdout {
                            // Keep what fits and stop the program: it would
                            // block on a pipe nobody reads any more.
                            group.kill();
                            truncated = true;
                            stream.pipe = None;
                        } else {
                            return Err(Failure::Overflow(stream.name));
                        }
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Failure::Read(stream.name, e.to_string())),
            }
        }
    }
}

/// Wait until one of `fds` is ready (true) or the deadline passes (false).
fn wait_ready(fds: &mut [libc::pollfd], deadline: Instant) -> Result<bool, Failure> {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(false);
        }
        // Rounded up: a poll that returns a hair before the deadline only
        // loops once more.
        let ms = left.as_millis().min(i32::MAX as u128 - 1) as i32 + 1;
        // SAFETY: `fds` is a valid, exclusively borrowed array of pollfd.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
        if n > 0 {
            return Ok(true);
        }
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(Failure::Wait(format!("poll on its output failed: {e}")));
            }
        }
    }
}

/// Wait for the program's end (killing it and its group at the deadline)
/// and reap it. Its streams are closed by now; a program that closed them
/// and kept running is waited for until the deadline.
fn reap(child: &mut Child, deadline: Instant, group: &Group) -> Result<ExitStatus, Failure> {
    let wait = |e: std::io::Error| Failure::Wait(e.to_string());
    if let Some(status) = exited_by(child, deadline, group).map_err(wait)? {
        return Ok(status);
    }
    group.kill();
    finish(child, group).map_err(wait)?;
    Err(Failure::Timeout)
}

/// Reap a program that was sent SIGKILL: wait for its exit without the
/// group's lock (an abandoning task must never block on it), then reap.
fn finish(child: &mut Child, group: &Group) -> std::io::Result<ExitStatus> {
    loop {
        let far = Instant::now() + Duration::from_secs(3600);
        if let Some(status) = exited_by(child, far, group)? {
            return Ok(status);
        }
    }
}

/// The program's status once it has exited (reaped), or `None` if it
/// still runs at `deadline`.
#[cfg(target_os = "linux")]
fn exited_by(
    child: &mut Child,
    deadline: Instant,
    group: &Group,
) -> std::io::Result<Option<ExitStatus>> {
    use std::os::fd::{FromRawFd, OwnedFd};
    // SAFETY: pidfd_open takes a pid and flags; the child is ours and not
    // reaped, so the pid is its.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, child.id() as libc::pid_t, 0) };
    if fd < 0 {
        return exited_by_polling(child, deadline, group);
    }
    // SAFETY: the kernel just returned this descriptor to us.
    let pidfd = unsafe { OwnedFd::from_raw_fd(fd as RawFd) };
    let mut fds = [libc::pollfd { fd: pidfd.as_raw_fd(), events: libc::POLLIN, revents: 0 }];
    match wait_ready(&mut fds, deadline) {
        Ok(true) => group.reap(child).map(Some),
        Ok(false) => Ok(None),
        // poll itself failed: ask the slow way rather than call it a timeout.
        Err(_) => exited_by_polling(child, deadline, group),
    }
}

#[cfg(not(target_os = "linux"))]
fn exited_by(
    child: &mut Child,
    deadline: Instant,
    group: &Group,
) -> std::io::Result<Option<ExitStatus>> {
    exited_by_polling(child, deadline, group)
}

/// Ask until it has exited or the deadline passed, sleeping a little
/// longer each time.
fn exited_by_polling(
    child: &mut Child,
    deadline: Instant,
    group: &Group,
) -> std::io::Result<Option<ExitStatus>> {
    let mut nap = Duration::from_micros(50);
    loop {
        if let Some(status) = group.try_reap(child)? {
            return Ok(Some(status));
        }
        let now = Instant::now();
        if now >= deadline {
            return Ok(None);
        }
        std::thread::sleep(nap.min(deadline - now));
        nap = (nap * 2).min(Duration::from_millis(20));
    }
}
