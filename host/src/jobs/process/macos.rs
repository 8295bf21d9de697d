//! Process facts on macOS, from libproc and sysctl (there is no `/proc`).

use std::mem::{size_of, MaybeUninit};

/// `proc_pidinfo(PROC_PIDTBSDINFO)` for `pid`, or `None` if it is gone.
fn bsd_info(pid: i64) -> Option<libc::proc_bsdinfo> {
    let pid = libc::c_int::try_from(pid).ok()?;
    let mut info = MaybeUninit::<libc::proc_bsdinfo>::zeroed();
    let size = size_of::<libc::proc_bsdinfo>() as libc::c_int;
    // SAFETY: the buffer is a proc_bsdinfo of exactly `size` bytes; the call
    // writes at most that many and returns how many it wrote.
    let n = unsafe { libc::proc_pidinfo(pid, libc::PROC_PIDTBSDINFO, 0, info.as_mut_ptr().cast(), size) };
    // SAFETY: a full-size answer initialised the whole struct (it started zeroed).
    (n == size).then(|| unsafe { info.assume_init() })
}

/// The process's start time in microseconds since the epoch, `None` for a
/// missing or zombie process.
pub fn start_time(pid: i64) -> Option<i64> {
    let info = bsd_info(pid)?;
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
    let r = unsafe { libc::sysctlbyname(name.as_ptr(), buf.as_mut_ptr().cast(), &mut len, std::ptr::null_mut(), 0) };
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
    super::pgrp_listing::any_live(listed, &pids, |pid| start_time(pid as i64).is_some())
}
