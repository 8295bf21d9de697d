//! Linux: each confined program in PID, user and mount namespaces of its
//! own, with a fresh `/proc` and a bound on its processes.
//!
//! What Landlock and seccomp cannot give, a PID namespace does:
//!
//! - **The tree ends with the program.** When the program exits, the
//!   namespace's first process exits too, and the kernel kills everything
//!   left in the namespace — a `setsid`/double-fork daemon included, however
//!   fast it hops to new pids — before anyone sees the program's end.
//! - **No other process can be named.** `kill`, `prlimit`, `sched_*` and
//!   `/proc` take pids of the namespace only; the server, its supervisors
//!   and the user's other processes have none there, and the fresh `/proc`
//!   lists the program's own tree and nothing else.
//! - **A process bound.** Since Linux 6.14 `pid_max` is per PID namespace
//!   and its owner may set it: the namespace then has no pid left to give
//!   past `processes` (threads take pids too), so `fork` fails with EAGAIN.
//!   It binds root as well (`RLIMIT_NPROC` binds neither root nor, outside
//!   a namespace, one tree rather than every process of the user). Once
//!   the namespace's pids wrap, the kernel skips the first 300, so a tree
//!   that has started many processes over its life may hold up to 299 fewer
//!   at once.
//!
//! `unshare(CLONE_NEWUSER)` needs a single-threaded caller and a mount needs
//! a process Landlock does not yet restrict, so neither can happen in the
//! server. The server starts its own binary instead ([`command`]), which
//! before anything else ([`main`]) unshares, forks the namespace's first
//! process (which mounts the fresh `/proc`, reaps orphans and forwards
//! signals to a program that left the process group) and that forks the
//! program, which confines itself — capabilities dropped, `no_new_privs`,
//! Landlock, seccomp — and `exec`s. The outer process waits and exits the
//! way the program did (its code, or its signal), so callers see the
//! program.
//!
//! Signals: the outer process and the first one stay in the program's
//! process group. Group signals reach the program directly; both of ours
//! survive every catchable one (a `SIGTERM` to the group ends the program,
//! and through it the namespace, gracefully); `SIGKILL` ends them all.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::cgroup::{Base, Tree, Version};
use super::profile::Profile;

/// The first argument that makes the verbgate binary this wrapper.
pub const ENTRY: &str = "__sandbox-exec";

/// The exit code of a wrapper that could not set the program up (the
/// reason is on its stderr); as a shell's "cannot execute".
const SETUP_FAILED: i32 = 126;

/// Where, in the run's private `TMPDIR`, the server leaves the program's
/// directory and environment for the wrapper, which reads and removes it
/// before anything of the program runs. Not in the wrapper's own
/// environment: the dynamic loader would read `LD_*` and `GLIBC_TUNABLES`
/// there for the wrapper itself, unconfined, and an empty
/// `LD_LIBRARY_PATH` entry is the working directory — the repository.
const LAUNCH_FILE: &str = ".verbgate-launch";

/// The asynchronous signals the wrapper's two processes outlive (blocked
/// in the outer one, forwarded by the first one), so that the program
/// alone decides what a signal to its group does: every catchable one but
/// the job-control and synchronous (fault) signals, real-time ones too.
fn caught() -> Vec<libc::c_int> {
    let mut signals = vec![
        libc::SIGHUP,
        libc::SIGINT,
        libc::SIGQUIT,
        libc::SIGUSR1,
        libc::SIGUSR2,
        libc::SIGPIPE,
        libc::SIGALRM,
        libc::SIGTERM,
        libc::SIGSTKFLT,
        libc::SIGURG,
        libc::SIGXCPU,
        libc::SIGXFSZ,
        libc::SIGVTALRM,
        libc::SIGPROF,
        libc::SIGWINCH,
        libc::SIGIO,
        libc::SIGPWR,
    ];
    signals.extend(libc::SIGRTMIN()..=libc::SIGRTMAX());
    signals
}

/// The set of [`caught`] signals.
fn caught_set() -> libc::sigset_t {
    // SAFETY: sigemptyset/sigaddset fill the set they are given.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for signal in caught() {
            libc::sigaddset(&mut set, signal);
        }
        set
    }
}

/// Leave what the server set for the program (its working directory and
/// environment, taken off `cmd`) where the wrapper reads it, and start the
/// wrapper with neither: an empty environment, in `/`.
pub fn hand_over(cmd: &mut Command, tmp: &Path) -> std::io::Result<()> {
    let mut launch = Vec::new();
    if let Some(dir) = cmd.get_current_dir() {
        launch.extend_from_slice(dir.as_os_str().as_bytes());
    }
    for (key, value) in cmd.get_envs() {
        if let Some(value) = value {
            launch.push(0);
            launch.extend_from_slice(key.as_bytes());
            launch.push(b'=');
            launch.extend_from_slice(value.as_bytes());
        }
    }
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(tmp.join(LAUNCH_FILE))?
        .write_all(&launch)?;
    cmd.env_clear().current_dir("/");
    Ok(())
}

/// The program's working directory and environment, from the file
/// [`hand_over`] left (removed here).
fn take_launch(tmp: &Path) -> Result<(OsString, Vec<(OsString, OsString)>), String> {
    let path = tmp.join(LAUNCH_FILE);
    let bytes = std::fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let _ = std::fs::remove_file(&path);
    let mut parts = bytes.split(|b| *b == 0);
    let dir = OsStr::from_bytes(parts.next().unwrap_or_default()).to_os_string();
    let env = parts
        .filter_map(|kv| {
            let at = kv.iter().position(|b| *b == b'=')?;
            Some((
                OsStr::from_bytes(&kv[..at]).to_os_string(),
                OsStr::from_bytes(&kv[at + 1..]).to_os_string(),
            ))
        })
        .collect();
    Ok((dir, env))
}

/// A command that runs `program` confined by `profile` (with `tmp`
/// writable) in namespaces of its own, with at most `processes` processes
/// and, given `memory` (where, how many bytes), a memory cgroup of its own.
/// The caller adds the program's arguments, environment, directory and
/// standard streams as for the program itself.
pub fn command(
    profile: &Profile,
    tmp: &Path,
    processes: u64,
    memory: Option<(&Base, u64)>,
    program: &Path,
) -> Command {
    // /proc/self/exe: this very binary, even if the file was replaced or
    // removed since (an upgrade while serving).
    let mut cmd = Command::new("/proc/self/exe");
    cmd.arg0("verbgate-sandbox").arg(ENTRY);
    for p in &profile.read {
        cmd.arg("--read").arg(p);
    }
    for p in &profile.write {
        cmd.arg("--write").arg(p);
    }
    if profile.network {
        cmd.arg("--network");
    }
    if profile.unix_sockets {
        cmd.arg("--unix-sockets");
    }
    cmd.arg("--tmp").arg(tmp).arg("--processes").arg(processes.to_string());
    if let Some((base, bytes)) = memory {
        let version = match base.version {
            Version::V1 => "--cgroup-v1",
            Version::V2 => "--cgroup-v2",
        };
        cmd.arg(version).arg(&base.dir).arg("--memory").arg(bytes.to_string());
    }
    cmd.arg("--").arg(program);
    cmd
}

/// What the wrapper was asked to run.
struct Spec {
    profile: Profile,
    tmp: PathBuf,
    processes: u64,
    /// Where the tree's memory cgroup goes, and its limit in bytes.
    memory: Option<(Base, u64)>,
    program: OsString,
    args: Vec<OsString>,
}

/// Read the wrapper's arguments (those after [`ENTRY`]).
fn parse(mut args: impl Iterator<Item = OsString>) -> Result<Spec, String> {
    let mut profile = Profile {
        read: vec![],
        write: vec![],
        network: false,
        signals: false,
        unix_sockets: false,
        processes: None,
        memory_mib: None,
    };
    let (mut tmp, mut processes, mut cgroup, mut memory) = (None, None, None, None);
    let value = |args: &mut dyn Iterator<Item = OsString>, flag: &str| {
        args.next().ok_or_else(|| format!("{flag} needs a value"))
    };
    loop {
        let Some(arg) = args.next() else { return Err("no program after --".into()) };
        match arg.to_str() {
            Some("--read") => profile.read.push(value(&mut args, "--read")?.into()),
            Some("--write") => profile.write.push(value(&mut args, "--write")?.into()),
            Some("--network") => profile.network = true,
            Some("--unix-sockets") => profile.unix_sockets = true,
            Some("--tmp") => tmp = Some(PathBuf::from(value(&mut args, "--tmp")?)),
            Some("--processes") => processes = Some(count(value(&mut args, "--processes")?)?),
            Some("--memory") => memory = Some(count(value(&mut args, "--memory")?)?),
            Some(flag @ ("--cgroup-v1" | "--cgroup-v2")) => {
                let version = if flag == "--cgroup-v1" { Version::V1 } else { Version::V2 };
                cgroup = Some(Base { dir: value(&mut args, flag)?.into(), version });
            }
            Some("--") => break,
            _ => return Err(format!("unknown argument {arg:?}")),
        }
    }
    let program = args.next().ok_or("no program after --")?;
    let memory = match (cgroup, memory) {
        (Some(base), Some(bytes)) => Some((base, bytes)),
        (None, None) => None,
        _ => return Err("--memory and --cgroup-v1/--cgroup-v2 go together".into()),
    };
    Ok(Spec {
        memory,
        profile,
        tmp: tmp.ok_or("--tmp is missing")?,
        processes: processes.ok_or("--processes is missing")?,
        program,
        args: args.collect(),
    })
}

/// A count argument's value.
fn count(v: OsString) -> Result<u64, String> {
    v.to_str().and_then(|v| v.parse::<u64>().ok()).ok_or_else(|| format!("{v:?} is not a count"))
}

/// The wrapper: called by `main` when the first argument is [`ENTRY`],
/// before anything else runs (no thread may exist yet). Never returns.
pub fn main() -> ! {
    let spec = match parse(std::env::args_os().skip(2)) {
        Ok(s) => s,
        Err(e) => fail(&format!("bad arguments: {e}")),
    };
    let (dir, env) = match take_launch(&spec.tmp) {
        Ok(launch) => launch,
        Err(e) => fail(&e),
    };
    // Made before the namespaces, by the user verbgate runs as; joined by
    // the namespace's first process, so the whole tree is in it.
    let tree = spec.memory.as_ref().map(|(base, bytes)| match Tree::make(base, *bytes) {
        Ok(t) => t,
        Err(e) => fail(&e),
    });
    if let Err(e) = enter_namespaces() {
        if let Some(t) = &tree {
            t.discard();
        }
        fail(&format!("cannot make the program's namespaces: {e}"));
    }
    let status = match run_first_process(spec.processes, tree.as_ref(), || {
        // In the program's process, just before its exec. The ruleset is
        // built here, after the fresh `/proc` was mounted: a rule holds the
        // directory it was opened on, and the old `/proc` is not the new.
        let confinement = match super::linux::Confinement::new(&spec.profile, &spec.tmp) {
            Ok(c) => c,
            Err(e) => fail(&e),
        };
        if let Err(e) = confinement.confine_this_thread() {
            fail(&format!("cannot confine the program: {e}"));
        }
        let mut cmd = Command::new(&spec.program);
        cmd.args(&spec.args).env_clear().envs(env);
        if !dir.is_empty() {
            cmd.current_dir(&dir);
        }
        let e = cmd.exec();
        eprintln!("verbgate sandbox: cannot run {}: {e}", Path::new(&spec.program).display());
        // SAFETY: _exit ends this process at once.
        unsafe { libc::_exit(if e.kind() == std::io::ErrorKind::NotFound { 127 } else { 126 }) }
    }) {
        Ok(s) => s,
        Err(e) => {
            if let Some(t) = tree {
                t.remove();
            }
            fail(&format!("cannot start the program's namespace: {e}"))
        }
    };
    if let Some(tree) = tree {
        // The namespace has ended: nothing is left in the cgroup.
        let killed = tree.oom_kills();
        if killed > 0 {
            let mib = spec.memory.as_ref().map_or(0, |(_, b)| b >> 20);
            eprintln!(
                "verbgate sandbox: the program's processes reached their memory bound ({mib} MiB, limits.max_memory_mib) and the kernel ended {killed} of them"
            );
        }
        tree.remove();
    }
    exit_as(status)
}

/// Unshare the user, PID and mount namespaces, mapping the user's own uid
/// and gid to themselves (so files keep their owners).
fn enter_namespaces() -> std::io::Result<()> {
    // SAFETY: getuid/getgid cannot fail.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    // SAFETY: unshare takes flags only.
    if unsafe { libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWPID | libc::CLONE_NEWNS) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // An unprivileged gid map needs setgroups denied first.
    std::fs::write("/proc/self/setgroups", "deny")?;
    std::fs::write("/proc/self/uid_map", format!("{uid} {uid} 1"))?;
    std::fs::write("/proc/self/gid_map", format!("{gid} {gid} 1"))?;
    Ok(())
}

/// The program's pid in its namespace, for the first process's signal
/// forwarding.
static PROGRAM: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

/// The first process's handler: a program that left the process group
/// missed a signal sent to it; pass it on. (One still in the group got it.)
extern "C" fn forward(signal: libc::c_int) {
    let pid = PROGRAM.load(std::sync::atomic::Ordering::Relaxed);
    // SAFETY: getpgid and kill are async-signal-safe system calls.
    unsafe {
        if pid > 0 && libc::getpgid(pid) != libc::getpgid(0) {
            libc::kill(pid, signal);
        }
    }
}

/// Install `handler` for every [`caught`] signal.
fn catch(handler: libc::sighandler_t) {
    for signal in caught() {
        // SAFETY: a zeroed sigaction with a handler that only makes
        // async-signal-safe calls (or SIG_DFL); SA_RESTART keeps waitpid
        // going.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = handler;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

/// Block (`true`) or unblock the [`caught`] signals for this process.
fn block_caught(block: bool) {
    let set = caught_set();
    let how = if block { libc::SIG_BLOCK } else { libc::SIG_UNBLOCK };
    // SAFETY: sigprocmask reads one set.
    unsafe { libc::sigprocmask(how, &set, std::ptr::null_mut()) };
}

/// Take every [`caught`] signal pending for this process off its queue.
fn take_pending() -> Vec<libc::c_int> {
    let set = caught_set();
    let none = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    let mut taken = Vec::new();
    loop {
        // SAFETY: sigtimedwait with a zero timeout dequeues one pending
        // signal of the set, or fails (EAGAIN) when none is.
        let signal = unsafe { libc::sigtimedwait(&set, std::ptr::null_mut(), &none) };
        if signal <= 0 {
            return taken;
        }
        taken.push(signal);
    }
}

/// Fork the namespace's first process, which forks the program (running
/// `program` in it) and reaps; the program's wait status.
fn run_first_process(
    processes: u64,
    tree: Option<&Tree>,
    program: impl FnOnce(),
) -> std::io::Result<libc::c_int> {
    let [status_read, status_write] = pipe()?;
    let [alive_read, alive_write] = pipe()?;
    // From now on a signal to the program's group waits, in this process
    // and the first one, until the program exists to get it.
    block_caught(true);
    // SAFETY: this process has one thread; the child only makes system
    // calls (and the program's child execs).
    let first = unsafe { libc::fork() };
    if first < 0 {
        return Err(std::io::Error::last_os_error());
    }
    if first == 0 {
        // SAFETY: closing our copies of the outer process's ends.
        unsafe {
            libc::close(status_read);
            libc::close(alive_write);
        }
        first_process(status_write, alive_read, processes, tree, program);
    }
    // SAFETY: closing the first process's ends here.
    unsafe {
        libc::close(status_write);
        libc::close(alive_read);
    }
    let mut raw: libc::c_int = 0;
    // SAFETY: waitpid writes one int.
    while unsafe { libc::waitpid(first, &mut raw, 0) } < 0 {
        if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return Err(std::io::Error::last_os_error());
        }
    }
    let mut reported = [0u8; 4];
    // SAFETY: read writes at most 4 bytes into `reported`.
    let n = unsafe { libc::read(status_read, reported.as_mut_ptr().cast(), 4) };
    // The first process reports the program's status; if it died first
    // (killed), its own status is the answer.
    Ok(if n == 4 { libc::c_int::from_ne_bytes(reported) } else { raw })
}

/// The namespace's pid 1: mount a fresh `/proc`, bound the namespace's
/// pids, start the program, reap every orphan, and on the program's end
/// report its status and exit, which ends everything else in the namespace.
fn first_process(
    status: libc::c_int,
    alive: libc::c_int,
    processes: u64,
    tree: Option<&Tree>,
    program: impl FnOnce(),
) -> ! {
    // SAFETY: prctl and poll on our own descriptors; mount with constant
    // C strings.
    unsafe {
        // Dies with the outer process (a SIGKILL to the group, a crash),
        // and so does the namespace; if that is already gone, stop now.
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        let mut fd = libc::pollfd { fd: alive, events: 0, revents: 0 };
        if libc::poll(&mut fd, 1, 0) != 0 {
            libc::_exit(SETUP_FAILED);
        }
        // Nothing of the program's may read this process's memory.
        libc::prctl(libc::PR_SET_DUMPABLE, 0);
    }
    // Into the tree's memory cgroup before anything else is started. This
    // process is single-threaded, as `join` needs: it was forked from the
    // wrapper after that unshared a user namespace, which the kernel allows
    // a single-threaded caller only.
    if let Some(e) = tree.and_then(|t| t.join().err()) {
        fail(&format!("cannot join the program's memory cgroup: {e}"));
    }
    // A cgroup namespace rooted at the tree's cgroup: where cgroup v2 is
    // mounted with `nsdelegate`, nothing in it may move a process outside
    // (clone3, which could, is refused by the seccomp filter besides).
    // SAFETY: unshare takes flags only.
    if tree.is_some() && unsafe { libc::unshare(libc::CLONE_NEWCGROUP) } != 0 {
        fail(&format!(
            "cannot give the program a cgroup namespace: {}",
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: mount with constant C strings.
    unsafe {
        let none = std::ptr::null::<libc::c_char>();
        if libc::mount(none, c"/".as_ptr(), none, libc::MS_REC | libc::MS_PRIVATE, std::ptr::null())
            != 0
            || libc::mount(
                c"proc".as_ptr(),
                c"/proc".as_ptr(),
                c"proc".as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                std::ptr::null(),
            ) != 0
        {
            fail(&format!("cannot mount a fresh /proc: {}", std::io::Error::last_os_error()));
        }
    }
    // Room for `processes` pids (this process, the program and its tree)
    // even after the pids wrap, when the kernel skips the first 300.
    if let Err(e) = std::fs::write("/proc/sys/kernel/pid_max", (processes + 300).to_string()) {
        fail(&format!(
            "cannot bound the program's processes (pid_max of its PID namespace, Linux 6.14+): {e}"
        ));
    }
    // The program may hold the namespace's root uid (verbgate run as root):
    // sysctls check that uid, not capabilities, so /proc/sys is made
    // read-only (Landlock keeps the program from unmounting it).
    // SAFETY: mount with constant C strings.
    unsafe {
        let none = std::ptr::null::<libc::c_char>();
        let sys = c"/proc/sys".as_ptr();
        let flags = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
        if libc::mount(sys, sys, none, libc::MS_BIND | libc::MS_REC, std::ptr::null()) != 0
            || libc::mount(
                none,
                sys,
                none,
                libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY | flags,
                std::ptr::null(),
            ) != 0
        {
            fail(&format!("cannot make /proc/sys read-only: {}", std::io::Error::last_os_error()));
        }
    }
    catch(forward as extern "C" fn(libc::c_int) as libc::sighandler_t);
    // Signals sent to the group before the program existed: it missed them.
    let missed = take_pending();
    // SAFETY: single-threaded; the child execs.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        fail(&format!("cannot start the program: {}", std::io::Error::last_os_error()));
    }
    if pid == 0 {
        // SAFETY: the program keeps no descriptor of ours.
        unsafe {
            libc::close(status);
            libc::close(alive);
        }
        // The program starts with every signal as the kernel's default,
        // none blocked: what reaches it from now on does what it would.
        catch(libc::SIG_DFL);
        block_caught(false);
        program();
        // SAFETY: `program` execs or exits; never here.
        unsafe { libc::_exit(SETUP_FAILED) }
    }
    PROGRAM.store(pid, std::sync::atomic::Ordering::Relaxed);
    for signal in missed {
        // SAFETY: a signal to our own child.
        unsafe { libc::kill(pid, signal) };
    }
    block_caught(false);
    loop {
        let mut raw: libc::c_int = 0;
        // SAFETY: waitpid writes one int.
        let reaped = unsafe { libc::waitpid(-1, &mut raw, 0) };
        if reaped == pid {
            // SAFETY: write reads 4 bytes; _exit ends the namespace.
            unsafe {
                libc::write(status, raw.to_ne_bytes().as_ptr().cast(), 4);
                libc::_exit(0);
            }
        }
        if reaped < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            // SAFETY: as above.
            unsafe { libc::_exit(SETUP_FAILED) }
        }
    }
}

/// End this process the way the program ended: its exit code, or its
/// signal (raised here, with core dumps off).
fn exit_as(status: libc::c_int) -> ! {
    if libc::WIFEXITED(status) {
        // SAFETY: _exit ends the process.
        unsafe { libc::_exit(libc::WEXITSTATUS(status)) }
    }
    let signal = if libc::WIFSIGNALED(status) { libc::WTERMSIG(status) } else { libc::SIGKILL };
    // SAFETY: plain signal calls on this process.
    unsafe {
        let none = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        libc::setrlimit(libc::RLIMIT_CORE, &none);
        libc::signal(signal, libc::SIG_DFL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, signal);
        libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        libc::raise(signal);
        libc::_exit(128 + signal)
    }
}

/// A pipe whose ends are closed on `exec`.
fn pipe() -> std::io::Result<[libc::c_int; 2]> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(fds)
}

/// Say why the program could not be set up, and exit.
fn fail(why: &str) -> ! {
    eprintln!("verbgate sandbox: {why}");
    // SAFETY: _exit ends the process.
    unsafe { libc::_exit(SETUP_FAILED) }
}

/// Whether `arg` is the wrapper's entry argument.
pub fn is_entry(arg: Option<&OsStr>) -> bool {
    arg.is_some_and(|a| a.as_bytes() == ENTRY.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStringExt;

    #[test]
    fn the_wrapper_reads_back_exactly_what_the_command_gave_it() {
        // A path that is not UTF-8 and one that looks like a flag survive.
        let odd = PathBuf::from(OsString::from_vec(b"/srv/r\xffot".to_vec()));
        let profile = Profile {
            read: vec!["/usr".into(), "--network".into()],
            write: vec![odd.clone()],
            network: false,
            signals: false,
            unix_sockets: true,
            processes: None,
            memory_mib: None,
        };
        let base = Base { dir: "/sys/fs/cgroup/memory/a b".into(), version: Version::V1 };
        let cmd = command(
            &profile,
            Path::new("/tmp/run"),
            512,
            Some((&base, 1 << 30)),
            Path::new("/bin/prog"),
        );
        let mut args = cmd.get_args().map(OsStr::to_os_string);
        assert_eq!(args.next().as_deref(), Some(OsStr::new(ENTRY)));
        let mut with_program_args = args.collect::<Vec<_>>();
        with_program_args.push("--read".into());
        let spec = parse(with_program_args.into_iter()).unwrap();
        assert_eq!(spec.profile, profile);
        assert_eq!(spec.tmp, Path::new("/tmp/run"));
        assert_eq!(spec.processes, 512);
        assert_eq!(spec.memory, Some((base, 1 << 30)));
        assert_eq!(spec.program, "/bin/prog");
        assert_eq!(spec.args, vec![OsString::from("--read")], "after the program, all are its own");
    }

    #[test]
    fn bad_wrapper_arguments_say_what_is_wrong() {
        let parse_strs = |a: &[&str]| parse(a.iter().map(OsString::from)).err().unwrap();
        assert!(parse_strs(&["--tmp", "/t", "--"]).contains("no program"));
        assert!(parse_strs(&["--tmp", "/t", "--processes", "many", "--", "p"]).contains("many"));
        assert!(parse_strs(&["--bogus"]).contains("--bogus"));
        assert!(parse_strs(&["--processes", "9", "--", "p"]).contains("--tmp"));
        let half = parse_strs(&["--tmp", "/t", "--processes", "9", "--memory", "64", "--", "p"]);
        assert!(half.contains("go together"), "{half}");
        let v2 =
            ["--tmp", "/t", "--processes", "9", "--cgroup-v2", "/c", "--memory", "64", "--", "p"];
        let spec = parse(v2.iter().map(OsString::from)).unwrap();
        assert_eq!(spec.memory, Some((Base { dir: "/c".into(), version: Version::V2 }, 64)));
    }
}
