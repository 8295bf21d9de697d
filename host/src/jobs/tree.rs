//! A job's whole process tree ends with the job. Its program may start
//! daemons that leave its process group and session (`setsid`, a double
//! fork): signals to the group miss them, and they would go on writing into
//! the root after the job, `job.kill` and the server are gone.
//!
//! Linux: the supervisor makes itself a *child subreaper*
//! (`PR_SET_CHILD_SUBREAPER`), so every process of the job's tree that
//! loses its parent is re-parented to the supervisor instead of to init —
//! wherever it moved its group or session, it cannot leave that ancestry.
//! When the program ends (on its own, at its limit, or killed), every child
//! the supervisor still has is one of those leftovers: each is killed and
//! reaped, and their own children, re-parented in turn, the same way until
//! none is left. A child of ours that is not yet reaped keeps its pid, so
//! the kill never reaches a stranger.
//!
//! macOS has no subreaper: there the group signal is all (documented in
//! SECURITY.md).

use std::time::{Duration, Instant};

/// How long [`end_leftovers`] keeps killing re-parented processes before
/// it gives up (a process stuck in the kernel cannot be reaped at once).
const SWEEP_FOR: Duration = Duration::from_secs(10);

/// Make this process the reaper of its orphaned descendants.
pub fn become_reaper() -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    // SAFETY: a plain integer prctl on this process.
    if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Kill and reap every child this process has (call it once the job's own
/// program was reaped: all that remain are its leftovers), until none is
/// left. Returns how many were killed.
pub fn end_leftovers() -> usize {
    let me = std::process::id() as i64;
    let until = Instant::now() + SWEEP_FOR;
    let mut killed = 0;
    loop {
        let children = children_of(me);
        if children.is_empty() || Instant::now() >= until {
            return killed;
        }
        for pid in &children {
            // SAFETY: kill and waitpid on our own unreaped child: its pid
            // cannot have been reused.
            unsafe {
                if libc::kill(*pid as libc::pid_t, libc::SIGKILL) == 0 {
                    killed += 1;
                }
            }
        }
        for pid in &children {
            // Reap it (a zombie is listed until then); a process the kernel
            // has not let go of yet is reaped on a later round.
            for _ in 0..50 {
                // SAFETY: as above.
                let r = unsafe {
                    libc::waitpid(*pid as libc::pid_t, std::ptr::null_mut(), libc::WNOHANG)
                };
                if r != 0 {
                    break;
                }
                std::thread::sleep(Duration::from_millis(2));
            }
        }
    }
}

/// The pids whose parent is `parent` (Linux: from `/proc/*/stat`; this
/// kernel may lack `/proc/PID/task/TID/children`).
#[cfg(target_os = "linux")]
fn children_of(parent: i64) -> Vec<i64> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str()?.parse::<i64>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            // `pid (comm) state ppid …`; comm may hold spaces and parens.
            let after = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or_default();
            after.split_whitespace().nth(1).and_then(|p| p.parse::<i64>().ok()) == Some(parent)
        })
        .collect()
}

#[cfg(not(target_os = "linux"))]
fn children_of(_parent: i64) -> Vec<i64> {
    Vec::new()
}
