//! Facts about processes, PID-reuse safe: a pid only counts as "ours" while
//! its start time matches the one recorded when we started it, in the same
//! boot.
//!
//! The facts come from the platform, behind one small interface
//! ([`start_time`], [`boot_id`], whether a group has a live member):
//! [`linux`] reads `/proc`; [`macos`] asks libproc (`proc_pidinfo`,
//! `proc_listpgrppids`) and `sysctl kern.bootsessionuuid`. Everything else
//! here — verification, signalling, ids — is shared, and so are the tests,
//! which exercise whichever implementation the target has.

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
use linux as platform;
#[cfg(target_os = "macos")]
mod macos;
#[cfg(target_os = "macos")]
use macos as platform;
// Compiled for tests everywhere: how macOS's group listing is read is
// checked on Linux too, where the suite runs.
#[cfg(any(target_os = "macos", test))]
mod pgrp_listing;

/// The start time of `pid` in the platform's unit (Linux: clock ticks since
/// boot; macOS: microseconds since the epoch), or `None` if there is no such
/// live process (zombies count as gone: they have exited).
pub fn start_time(pid: i64) -> Option<i64> {
    if pid <= 0 {
        return None;
    }
    platform::start_time(pid)
}

/// Whether `pid` is alive and is the process that started at `start`.
pub fn alive(pid: Option<i64>, start: Option<i64>) -> bool {
    match (pid, start) {
        (Some(pid), Some(start)) => start_time(pid) == Some(start),
        (Some(pid), None) => start_time(pid).is_some(),
        _ => false,
    }
}

/// This boot's id, read once. A pid and a start time only identify a
/// process within one boot: after a reboot both restart from zero and can
/// match an unrelated process.
pub fn boot_id() -> Option<String> {
    static BOOT: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    BOOT.get_or_init(|| platform::boot_id().map(|s| s.trim().to_string()).filter(|s| !s.is_empty()))
        .clone()
}

/// Whether `pid` is provably the process recorded as (`pid`, `start`) in
/// boot `boot`: the boot is this one, and the pid is alive with that start
/// time. A record without a start time proves nothing and is never
/// verified. A record without a boot id (written before boot ids were
/// recorded) is checked by start time alone.
pub fn verified(pid: Option<i64>, start: Option<i64>, boot: Option<&str>) -> bool {
    let same_boot = match boot {
        Some(b) => boot_id().as_deref() == Some(b),
        None => true,
    };
    match (pid, start) {
        (Some(pid), Some(start)) => same_boot && start_time(pid) == Some(start),
        _ => false,
    }
}

/// Whether `boot` (a recorded boot id) is this boot; unknown counts as yes.
pub fn same_boot(boot: Option<&str>) -> bool {
    boot.is_none_or(|b| boot_id().as_deref() == Some(b))
}

/// Whether any live process is left in process group `pgid`. Zombies do
/// not count: they have exited, and an orphaned one lingers until init
/// reaps it, which must not make a finished group look alive.
pub fn group_alive(pgid: i64) -> bool {
    if pgid <= 1 {
        return false;
    }
    // SAFETY: signal 0 only checks for existence and permission.
    let r = unsafe { libc::kill(-(pgid as libc::pid_t), 0) };
    let exists = r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
    exists && platform::group_has_live_member(pgid)
}

/// Send `signal` to process group `pgid` (never to group 0 or 1).
pub fn signal_group(pgid: i64, signal: i32) {
    if pgid > 1 {
        // SAFETY: killpg only sends a signal to a group we created.
        unsafe {
            libc::killpg(pgid as libc::pid_t, signal);
        }
    }
}

/// Milliseconds since the epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// A new job id: 12 hex digits of epoch milliseconds then 8 random hex
/// digits, so ids sort by creation time and never collide in practice.
pub fn new_job_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.write_u32(std::process::id());
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    format!("{:012x}{:08x}", now_ms(), h.finish() as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_own_process_is_alive_and_a_wrong_start_time_is_not() {
        let me = std::process::id() as i64;
        let start = start_time(me).expect("own start time");
        assert!(alive(Some(me), Some(start)));
        assert!(!alive(Some(me), Some(start + 1)), "a reused pid must not count as ours");
        assert!(!alive(Some(i32::MAX as i64), None));
    }

    #[test]
    fn verification_needs_the_start_time_and_this_boot() {
        let me = std::process::id() as i64;
        let start = start_time(me);
        let boot = boot_id().expect("the platform's boot id");
        assert!(verified(Some(me), start, Some(&boot)));
        assert!(
            verified(Some(me), start, None),
            "a record from before boot ids counts by start time"
        );
        assert!(
            !verified(Some(me), start, Some("another-boot")),
            "another boot's record is never ours"
        );
        assert!(!verified(Some(me), None, Some(&boot)), "no start time proves nothing");
        assert!(!verified(Some(me), start.map(|s| s + 1), Some(&boot)));
    }

    #[test]
    fn a_group_is_alive_while_a_member_runs_and_not_once_only_zombies_remain() {
        use std::os::unix::process::CommandExt;
        let mut child =
            std::process::Command::new("sleep").arg("30").process_group(0).spawn().unwrap();
        let pgid = child.id() as i64;
        assert!(group_alive(pgid));
        signal_group(pgid, libc::SIGKILL);
        // Not reaped yet: a zombie, which must not count.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while group_alive(pgid) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(!group_alive(pgid), "a group of zombies counts as gone");
        child.wait().unwrap();
    }

    #[test]
    fn ids_are_unique_and_time_ordered() {
        let a = new_job_id();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = new_job_id();
        assert!(a < b);
        assert_eq!(a.len(), 20);
        let many: std::collections::HashSet<String> = (0..1000).map(|_| new_job_id()).collect();
        assert_eq!(many.len(), 1000);
    }
}
