//! Process facts on macOS, from libproc and sysctl (there is no `/proc`).

use std::mem::{size_of, MaybeUninit};

/// `proc_pidinfo(pid, flavor, 0)` read into a `T`, or `None` if the call
/// did not fill all of it (no such process, or not one we may ask about).
///
/// # Safety
/// `T` must be the plain-data struct libproc writes for `flavor`.
unsafe fn pid_info<T>(pid: i64, flavor: libc::c_int) -> Option<T> {
    let pid = libc::c_int::try_from(pid).ok()?;
    let mut info = MaybeUninit::<T>::zeroed();
    let size = libc::c_int::try_from(size_of::<T>()).ok()?;
    // SAFETY: the buffer is a T of exactly `size` bytes; the call writes at
    // most that many and returns how many it wrote.
    let n = unsafe { libc::proc_pidinfo(pid, flavor, 0, info.as_mut_ptr().cast(), size) };
    // SAFETY: a full-size answer initialised the whole struct (it started
    // zeroed), and T is what `flavor` writes (the caller's promise).
    (n == size).then(|| unsafe { info.assume_init() })
}

/// The process's start time in microseconds since the epoch, `None` for a
/// missing or zombie process, or one of another user (libproc answers
/// `PROC_PIDTBSDINFO` only for the caller's own processes): such a pid is
/// never taken for a job's process.
pub fn start_time(pid: i64) -> Option<i64> {
    // SAFETY: PROC_PIDTBSDINFO writes a proc_bsdinfo.
    let info: libc::proc_bsdinfo = unsafe { pid_info(pid, libc::PROC_PIDTBSDINFO) }?;
    if info.pbi_status == libc::SZOMB {
        return None;
    }
    Some(info.pbi_start_tvsec as i64 * 1_000_000 + info.pbi_start_tvusec as i64)
}

/// `sysctl kern.bootsessionuuid`: a fresh UUID every boot.
pub fn boot_id() -> Option<String> {
    let mut buf = [0u8; 64];
    let mut len = buf.len();
    let name = c"kern.bootsessionuuid";
    // SAFETY: name is NUL-terminated; buf and len describe a writable buffer.
    let r = unsafe {
        libc::sysctlbyname(
            name.as_ptr(),
            buf.as_mut_ptr().cast(),
            &mut len,
            std::ptr::null_mut(),
            0,
        )
    };
    if r != 0 {
        return None;
    }
    let text = &buf[..len.min(buf.len())];
    Some(String::from_utf8_lossy(text).trim_end_matches('\0').to_string())
}

/// Whether group `pgid` has a member that is not a zombie (true when the
/// list cannot be read: then only `kill` can tell). How the answer is read
/// is in [`super::pgrp_listing`].
pub fn group_has_live_member(pgid: i64) -> bool {
    let Ok(pgid) = libc::pid_t::try_from(pgid) else { return false };
    let mut pids = vec![0 as libc::pid_t; 1024];
    let bytes = (pids.len() * size_of::<libc::pid_t>()) as libc::c_int;
    // SAFETY: the buffer holds `bytes` bytes of pid_t; the call fills at
    // most that many and returns how many pids it wrote.
    let listed = unsafe { libc::proc_listpgrppids(pgid, pids.as_mut_ptr().cast(), bytes) };
    super::pgrp_listing::any_live(listed, &pids, is_live)
}

/// Whether `pid` is a process that has not exited, whoever owns it.
/// `PROC_PIDT_SHORTBSDINFO` is answered without the same-user check that
/// `PROC_PIDTBSDINFO` makes (xnu `bsd/kern/proc_info.c`), so a setuid member
/// of a job's group (`sudo` in a recipe) counts as it does on Linux, where
/// `/proc` shows every process; with `arg` 0 a zombie is not found at all.
fn is_live(pid: libc::pid_t) -> bool {
    // SAFETY: PROC_PIDT_SHORTBSDINFO writes a proc_bsdshortinfo.
    let info: Option<libc::proc_bsdshortinfo> =
        unsafe { pid_info(pid.into(), libc::PROC_PIDT_SHORTBSDINFO) };
    info.is_some_and(|i| i.pbsi_status != libc::SZOMB)
}
