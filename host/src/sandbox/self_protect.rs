//! What verbgate does to itself first thing, before it reads a request or
//! starts a thread: the confined programs it starts run as the same user,
//! and the sandbox alone does not keep them from acting on verbgate.
//!
//! - **Not dumpable** (Linux `PR_SET_DUMPABLE 0`) and **no core file**
//!   (`RLIMIT_CORE` 0, soft and hard): a crash of the server or a job's
//!   supervisor never writes its memory (tokens, the cache's MAC key, other
//!   callers' requests) into a core file in the directory it runs in; and
//!   same-user processes cannot read its `/proc/PID/{environ,mem,…}`.
//!   Lowering the hard limit is one-way, so a confined program that raised
//!   it through `prlimit` (which seccomp refuses as well) would still get
//!   no core.
//! - **No inherited descriptors**: every descriptor above stderr that the
//!   process found open at start (left open by whatever started verbgate —
//!   a shell's `3>>file`, a leaky parent) is marked close-on-exec, so none
//!   reaches a program verbgate starts. verbgate's own descriptors are all
//!   opened close-on-exec already (Rust's standard library, SQLite,
//!   tokio), and the three standard streams are the only ones a program
//!   gets.

/// Apply all three to this process. Failures are returned for the caller
/// to report; the server does not start without them.
pub fn protect_this_process() -> std::io::Result<()> {
    no_core_dumps()?;
    not_dumpable()?;
    close_inherited_on_exec()
}

fn no_core_dumps() -> std::io::Result<()> {
    let none = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: setrlimit reads the struct we pass.
    if unsafe { libc::setrlimit(libc::RLIMIT_CORE, &none) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(target_os = "linux")]
fn not_dumpable() -> std::io::Result<()> {
    // SAFETY: a plain integer prctl on this process.
    if unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn not_dumpable() -> std::io::Result<()> {
    // macOS: no core file (above) is what applies; task ports of a process
    // are not open to other same-user processes without a debugger
    // entitlement.
    Ok(())
}

/// Mark every descriptor from 3 up close-on-exec.
fn close_inherited_on_exec() -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        const CLOSE_RANGE_CLOEXEC: libc::c_uint = 1 << 2;
        // SAFETY: close_range takes integers; with CLOEXEC it closes nothing.
        let r = unsafe {
            libc::syscall(
                libc::SYS_close_range,
                3 as libc::c_uint,
                libc::c_uint::MAX,
                CLOSE_RANGE_CLOEXEC,
            )
        };
        if r == 0 {
            return Ok(());
        }
        // Older than Linux 5.11: one descriptor at a time, below.
    }
    mark_each_cloexec()
}

/// The portable way: `F_SETFD FD_CLOEXEC` on every open descriptor below
/// the process's limit.
fn mark_each_cloexec() -> std::io::Result<()> {
    // SAFETY: getrlimit writes the struct we pass.
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    let max = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0 {
        lim.rlim_cur.min(1 << 20) as libc::c_int
    } else {
        1024
    };
    for fd in 3..max {
        // SAFETY: fcntl on a descriptor that may not be open fails with
        // EBADF and changes nothing.
        unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFD);
            if flags >= 0 && flags & libc::FD_CLOEXEC == 0 {
                libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_descriptor_above_stderr_is_marked_close_on_exec() {
        use std::os::fd::AsRawFd;
        // A descriptor opened without O_CLOEXEC, as a parent would leave it.
        let path = std::ffi::CString::new("/dev/null").unwrap();
        // SAFETY: open of a valid C string.
        let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY) };
        assert!(fd > 2);
        // SAFETY: F_GETFD on a descriptor we own.
        assert_eq!(unsafe { libc::fcntl(fd, libc::F_GETFD) } & libc::FD_CLOEXEC, 0);
        super::close_inherited_on_exec().unwrap();
        // SAFETY: as above.
        assert_ne!(unsafe { libc::fcntl(fd, libc::F_GETFD) } & libc::FD_CLOEXEC, 0);
        // The fallback does the same.
        // SAFETY: F_SETFD on a descriptor we own.
        unsafe { libc::fcntl(fd, libc::F_SETFD, 0) };
        super::mark_each_cloexec().unwrap();
        // SAFETY: as above.
        assert_ne!(unsafe { libc::fcntl(fd, libc::F_GETFD) } & libc::FD_CLOEXEC, 0);
        let stdin = std::io::stdin();
        // The standard streams are left as they were (stdin stays inheritable).
        // SAFETY: as above.
        let _ = unsafe { libc::fcntl(stdin.as_raw_fd(), libc::F_GETFD) };
        // SAFETY: closing the descriptor this test opened.
        unsafe { libc::close(fd) };
    }
}
