//! No program an op starts outlives the op. A program may start a daemon
//! that double-forks and `setsid`s out of its process group; the group kill
//! misses it and it would go on writing into the root after the op, and
//! after verbgate, has ended.
//!
//! Linux: the process that runs ops (the server, a one-shot `request`) is a
//! *child subreaper* (`PR_SET_CHILD_SUBREAPER`, [`become_reaper`]): every
//! process of a program's tree that loses its parent is re-parented to it,
//! wherever it moved its group or session. Every child verbgate starts on
//! purpose (a program, a job's supervisor) is [`spawn`]ed through this
//! module, which registers it until it is reaped; any other child is such
//! a leftover, and [`sweep`] kills and reaps it — and its own children,
//! re-parented in turn, round after round until none is left. An op's run
//! asks for a sweep when its program is reaped ([`sweep_soon`]), off the
//! op's path: the answer does not wait for the `/proc` walk (~0.3–1 ms).
//! A sweep may end a leftover of another op still running (a `sh -c 'x &'`
//! whose shell exited): a daemon ends when any op ends, never later.
//!
//! A job's supervisor is a subreaper of its own (`jobs::tree`), so a job's
//! leftovers never come here. macOS has no subreaper: the group kill is
//! all there.

use std::collections::HashMap;
use std::process::Child;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Children started on purpose and not yet reaped, by pid (a count: the
/// kernel may hand a reaped pid to the next child before its owner forgot
/// it).
static OURS: Mutex<Option<HashMap<u32, usize>>> = Mutex::new(None);

/// How long one sweep keeps killing before it gives up (a process stuck in
/// the kernel cannot be reaped at once; the next sweep tries again).
const SWEEP_FOR: Duration = Duration::from_secs(5);

/// Whether this process made itself a subreaper: only then are its
/// unregistered children leftovers (a test binary's own children are not).
static REAPER: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Make this process the reaper of its orphaned descendants.
pub fn become_reaper() -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    // SAFETY: a plain integer prctl on this process.
    if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    REAPER.store(true, Ordering::Release);
    Ok(())
}

fn ours() -> std::sync::MutexGuard<'static, Option<HashMap<u32, usize>>> {
    OURS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Start a child with `start` and register it, atomically with respect
/// to [`sweep`] (which never sees it unregistered).
pub fn spawn(start: impl FnOnce() -> std::io::Result<Child>) -> std::io::Result<Child> {
    let mut ours = ours();
    let child = start()?;
    *ours.get_or_insert_with(HashMap::new).entry(child.id()).or_default() += 1;
    Ok(child)
}

/// The child `pid` was reaped by its owner.
pub fn forget(pid: u32) {
    let mut ours = ours();
    if let Some(map) = ours.as_mut() {
        if let Some(n) = map.get_mut(&pid) {
            *n -= 1;
            if *n == 0 {
                map.remove(&pid);
            }
        }
    }
}

/// Kill and reap every child of this process that was not [`spawn`]ed
/// here, until none is left; how many were killed.
pub fn sweep() -> usize {
    if !REAPER.load(Ordering::Acquire) {
        return 0;
    }
    let me = std::process::id() as i64;
    let until = Instant::now() + SWEEP_FOR;
    let mut killed = 0;
    loop {
        // The walk of /proc is made without the lock (spawns go on).
        let listed = children_of(me);
        // One round at a time across sweeps (a request's last sweep and a
        // run's `sweep_soon`): a pid checked to be our child is killed
        // before another sweep can reap it and the pid be reused.
        let _round = ROUND.lock().unwrap_or_else(|e| e.into_inner());
        let leftovers: Vec<i64> = {
            let ours = ours();
            listed
                .into_iter()
                .filter(|pid| {
                    !ours.as_ref().is_some_and(|m| m.contains_key(&(*pid as u32)))
                        // Still our child now: an unregistered child is reaped
                        // by no one but a sweep, so its pid stays its own
                        // until then — the kill below reaches no stranger.
                        && parent_of(*pid) == Some(me)
                })
                .collect()
        };
        if leftovers.is_empty() || Instant::now() >= until {
            return killed;
        }
        killed += kill_and_reap(&leftovers);
    }
}

/// Held by a sweep from checking a round's pids to reaping them.
static ROUND: Mutex<()> = Mutex::new(());

/// SIGKILL each of `pids` (unreaped children of ours) and reap them.
fn kill_and_reap(pids: &[i64]) -> usize {
    let mut killed = 0;
    for pid in pids {
        // SAFETY: kill on an unreaped child of ours.
        if unsafe { libc::kill(*pid as libc::pid_t, libc::SIGKILL) } == 0 {
            killed += 1;
        }
    }
    for pid in pids {
        for _ in 0..50 {
            // SAFETY: waitpid on a child of ours, without blocking.
            let r =
                unsafe { libc::waitpid(*pid as libc::pid_t, std::ptr::null_mut(), libc::WNOHANG) };
            if r != 0 {
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    killed
}

/// Whether a sweep is running (1) and whether another was asked for
/// meanwhile (2).
static SWEEPING: AtomicU8 = AtomicU8::new(0);

/// Sweep on this thread now unless one is running, in which case that one
/// runs once more when done: many runs ending at once cost one or two walks.
pub fn sweep_soon() {
    if !REAPER.load(Ordering::Acquire) {
        return;
    }
    if SWEEPING.fetch_or(2, Ordering::AcqRel) & 1 != 0 {
        return;
    }
    loop {
        SWEEPING.store(1, Ordering::Release);
        sweep();
        if SWEEPING.compare_exchange(1, 0, Ordering::AcqRel, Ordering::Acquire).is_ok() {
            return;
        }
    }
}

/// The pids whose parent is `parent` (from `/proc/*/stat`: the kernels
/// verbgate is tested on lack `/proc/PID/task/TID/children`).
#[cfg(target_os = "linux")]
pub fn children_of(parent: i64) -> Vec<i64> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str()?.parse::<i64>().ok())
        .filter(|pid| parent_of(*pid) == Some(parent))
        .collect()
}

/// No subreaper, no leftovers to find.
#[cfg(not(target_os = "linux"))]
pub fn children_of(_parent: i64) -> Vec<i64> {
    Vec::new()
}

/// The parent of `pid`, from `/proc/PID/stat` (`pid (comm) state ppid …`;
/// the command name may hold spaces and parentheses).
fn parent_of(pid: i64) -> Option<i64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.split_whitespace().nth(1)?.parse().ok()
}

/// Kill and reap every child of this process (a job's supervisor, once its
/// program was reaped: all that remain are leftovers of its tree), until
/// none is left. Returns how many were killed.
pub fn end_all_children() -> usize {
    let me = std::process::id() as i64;
    let until = Instant::now() + SWEEP_FOR * 2;
    let mut killed = 0;
    loop {
        let children = children_of(me);
        if children.is_empty() || Instant::now() >= until {
            return killed;
        }
        killed += kill_and_reap(&children);
    }
}
