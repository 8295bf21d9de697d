//! Linux: Landlock for files (every access right the kernel knows, allowed
//! only beneath the profile's paths), TCP (ABI 4+: no bind or connect
//! without `network`) and scopes (ABI 6+: no signals to, and no abstract
//! UNIX sockets of, processes outside the sandbox); seccomp for what
//! Landlock does not cover: sockets of any family but UNIX without
//! `network` (UDP, raw, netlink), `io_uring` (whose operations would not
//! pass the socket filter), `ptrace` and `process_vm_*`. `no_new_privs`
//! first, so neither needs privileges and a setuid program cannot shed
//! them.

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use landlock::{
    Access, AccessFs, AccessNet, PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreated,
    RulesetCreatedAttr, Scope, ABI,
};
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use super::profile::Profile;
use super::support::Support;

/// The Landlock ABI the kernel speaks (`None`: no Landlock).
pub fn kernel_abi() -> Option<i32> {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a null attribute and size 0 this call only reports the
    // version; it creates nothing.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    (v > 0).then_some(v as i32)
}

/// The newest ABI this build knows at or below the kernel's.
fn abi(version: i32) -> ABI {
    match version {
        i32::MIN..=0 => ABI::Unsupported,
        1 => ABI::V1,
        2 => ABI::V2,
        3 => ABI::V3,
        4 => ABI::V4,
        5 => ABI::V5,
        6 => ABI::V6,
        _ => ABI::V7,
    }
}

/// What this kernel enforces.
pub fn probe() -> Support {
    let Some(v) = kernel_abi() else {
        return Support {
            mechanism: None,
            landlock_abi: None,
            covers: vec![],
            missing: Some(
                "this kernel has no Landlock (Linux 5.13+ with landlock in its LSM list)".into(),
            ),
        };
    };
    let mut covers = vec![format!("files: Landlock ABI {v}")];
    covers.push(if v >= 4 {
        "TCP bind/connect: Landlock".to_string()
    } else {
        "TCP bind/connect: seccomp only (Landlock ABI < 4)".to_string()
    });
    covers.push("other sockets, io_uring, ptrace: seccomp".to_string());
    if v >= 6 {
        covers.push(
            "signals and abstract UNIX sockets outside the sandbox: Landlock scopes".to_string(),
        );
    }
    Support { mechanism: Some("landlock+seccomp"), landlock_abi: Some(v), covers, missing: None }
}

/// Which sockets a profile may open (seccomp's `socket` rule).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sockets {
    /// None at all (`socketpair` stays: it names no address and reaches
    /// only the two ends it makes). A UNIX socket reaches any pathname
    /// socket the program can name — the user's ssh-agent, a D-Bus bus,
    /// docker's — and Landlock (ABI < 9) does not see its `connect`.
    None,
    /// UNIX sockets only (an operator's `unix_sockets = true`).
    Unix,
    /// Every family (`network`).
    All,
}

impl Sockets {
    /// The sockets `profile` may open.
    pub fn of(profile: &Profile) -> Sockets {
        if profile.network {
            Sockets::All
        } else if profile.unix_sockets {
            Sockets::Unix
        } else {
            Sockets::None
        }
    }
}

/// The seccomp programs, compiled once per kind of socket allowance.
fn filter(sockets: Sockets) -> Result<Arc<BpfProgram>, String> {
    type Cell = std::sync::OnceLock<Result<Arc<BpfProgram>, String>>;
    static CELLS: [Cell; 3] = [Cell::new(), Cell::new(), Cell::new()];
    CELLS[sockets as usize].get_or_init(|| compile(sockets)).clone()
}

/// The system calls refused whatever their arguments.
const ALWAYS_REFUSED: &[i64] = &[
    // Debugging other processes, and io_uring, whose requests the socket
    // rule below cannot see.
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_io_uring_setup,
    // The kernel keyrings: the user's keyring is shared by all their
    // processes (keys added by ssh, kinit, ecryptfs) and Landlock does not
    // see it.
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    // inotify watches report names and uses of files in directories the
    // program may not list (Landlock checks the watched path only for
    // read, which `/home` and `~` need for a path walk); fanotify likewise.
    libc::SYS_inotify_add_watch,
    libc::SYS_fanotify_init,
];

/// Calls that act on another process named by pid: refused unless the pid
/// argument (`arg`) is 0, "myself". Landlock scopes signals and ptrace,
/// not these: `prlimit` sets another process's limits (a file-size limit
/// kills the server with SIGXFSZ; a core limit makes it dump its memory
/// into the root), the others change its scheduling.
const OWN_PID_ONLY: &[(i64, u8)] = &[
    (libc::SYS_prlimit64, 0),
    (libc::SYS_sched_setaffinity, 0),
    (libc::SYS_sched_setscheduler, 0),
    (libc::SYS_sched_setparam, 0),
    (libc::SYS_sched_setattr, 0),
];

fn compile(sockets: Sockets) -> Result<Arc<BpfProgram>, String> {
    let arch = TargetArch::try_from(std::env::consts::ARCH)
        .map_err(|e| format!("seccomp cannot filter on {}: {e}", std::env::consts::ARCH))?;
    let e = |e: seccompiler::BackendError| e.to_string();
    let ne = |arg: u8, value: u64| {
        SeccompCondition::new(arg, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, value).map_err(e)
    };
    let rule = |conditions: Vec<SeccompCondition>| SeccompRule::new(conditions).map_err(e);
    let mut rules: std::collections::BTreeMap<i64, Vec<SeccompRule>> =
        ALWAYS_REFUSED.iter().map(|call| (*call, vec![])).collect();
    for (call, arg) in OWN_PID_ONLY {
        rules.insert(*call, vec![rule(vec![ne(*arg, 0)?])?]);
    }
    // setpriority(which, who, prio) and ioprio_set(which, who, prio):
    // only "this process" (`PRIO_PROCESS`/`IOPRIO_WHO_PROCESS`, who 0) —
    // a process group or every process of the user is outside the tree.
    const IOPRIO_WHO_PROCESS: u64 = 1;
    rules.insert(
        libc::SYS_setpriority,
        vec![rule(vec![ne(0, libc::PRIO_PROCESS as u64)?])?, rule(vec![ne(1, 0)?])?],
    );
    rules.insert(
        libc::SYS_ioprio_set,
        vec![rule(vec![ne(0, IOPRIO_WHO_PROCESS)?])?, rule(vec![ne(1, 0)?])?],
    );
    match sockets {
        Sockets::All => {}
        Sockets::Unix => {
            rules.insert(libc::SYS_socket, vec![rule(vec![ne(0, libc::AF_UNIX as u64)?])?]);
        }
        Sockets::None => {
            rules.insert(libc::SYS_socket, vec![]);
        }
    }
    // A datagram socketpair `sendto`s any pathname socket (journald's,
    // `/dev/log`, a service's) and can be re-`connect`ed to one; stream
    // and seqpacket pairs stay connected to each other only.
    if sockets != Sockets::All {
        let dgram = SeccompCondition::new(
            1,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::MaskedEq(SOCK_TYPE_MASK),
            libc::SOCK_DGRAM as u64,
        )
        .map_err(e)?;
        rules.insert(libc::SYS_socketpair, vec![rule(vec![dgram])?]);
    }
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(|e| e.to_string())?;
    let mut program: BpfProgram =
        filter.try_into().map_err(|e: seccompiler::BackendError| e.to_string())?;
    refuse_x32(&mut program)?;
    refuse_clone3(&mut program)?;
    Ok(Arc::new(program))
}

/// `SOCK_NONBLOCK` and `SOCK_CLOEXEC` ride in a socket type's high bits.
const SOCK_TYPE_MASK: u64 = 0xf;

/// The x32 ABI's bit in a system call number (x86_64 only).
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

/// Refuse every system call numbered with the x32 bit. x32 calls share
/// the x86_64 audit architecture, so the filter's rules — which match
/// exact numbers — would let `socket | X32_SYSCALL_BIT` through on a
/// kernel with x32 enabled. Inserted right after seccompiler's own
/// architecture check (its first three instructions), before any of its
/// jumps, so their offsets stay right.
fn refuse_x32(program: &mut BpfProgram) -> Result<(), String> {
    if std::env::consts::ARCH != "x86_64" {
        return Ok(());
    }
    const LD_W_ABS: u16 = 0x20;
    const JGE_K: u16 = 0x35;
    const RET_K: u16 = 0x06;
    let arch_checked = program.len() > 3
        && program[0].code == LD_W_ABS
        && program[0].k == 4
        && program[2].code == RET_K;
    if !arch_checked {
        return Err("the seccomp program does not start with its architecture check".into());
    }
    let at = |code, jt, jf, k| seccompiler::sock_filter { code, jt, jf, k };
    let refuse = [
        at(LD_W_ABS, 0, 0, 0),
        at(JGE_K, 0, 1, X32_SYSCALL_BIT),
        at(RET_K, 0, 0, libc::SECCOMP_RET_ERRNO | libc::EPERM as u32),
    ];
    program.splice(3..3, refuse);
    Ok(())
}

/// Make `clone3` fail with `ENOSYS`, as on a kernel without it (libc and
/// language runtimes then fall back to `clone`): its `CLONE_INTO_CGROUP`
/// starts a child in any cgroup whose `cgroup.procs` the user may write,
/// checked by file ownership alone — Landlock sees no open — so on cgroup
/// v2 a child could leave its tree's memory cgroup. Its arguments sit in
/// memory seccomp cannot read, so the call goes as a whole (as Docker's
/// profile does). `ENOSYS`, not `EPERM`: callers fall back only on the
/// former.
fn refuse_clone3(program: &mut BpfProgram) -> Result<(), String> {
    const LD_W_ABS: u16 = 0x20;
    const JEQ_K: u16 = 0x15;
    const RET_K: u16 = 0x06;
    let arch_checked = program.len() > 3 && program[0].code == LD_W_ABS && program[0].k == 4;
    if !arch_checked {
        return Err("the seccomp program does not start with its architecture check".into());
    }
    let at = |code, jt, jf, k| seccompiler::sock_filter { code, jt, jf, k };
    let refuse = [
        at(LD_W_ABS, 0, 0, 0),
        at(JEQ_K, 0, 1, libc::SYS_clone3 as u32),
        at(RET_K, 0, 0, libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32),
    ];
    program.splice(3..3, refuse);
    Ok(())
}

/// A Landlock ruleset and a seccomp program, made in the parent.
pub struct Confinement {
    ruleset: Option<OwnedFd>,
    filter: Arc<BpfProgram>,
}

impl Confinement {
    /// Build the confinement of `profile` with `tmp` writable.
    pub fn new(profile: &Profile, tmp: &Path) -> Result<Confinement, String> {
        let version = kernel_abi()
            .ok_or("this kernel has no Landlock (Linux 5.13+ with landlock in its LSM list)")?;
        let abi = abi(version);
        let err = |e: landlock::RulesetError| format!("Landlock refused the ruleset: {e}");
        let mut ruleset = Ruleset::default().handle_access(AccessFs::from_all(abi)).map_err(err)?;
        if !profile.network && version >= 4 {
            ruleset = ruleset.handle_access(AccessNet::from_all(abi)).map_err(err)?;
        }
        if version >= 6 {
            let scopes = if profile.signals {
                Scope::AbstractUnixSocket.into()
            } else {
                Scope::from_all(abi)
            };
            ruleset = ruleset.scope(scopes).map_err(err)?;
        }
        let mut created: RulesetCreated = ruleset.create().map_err(err)?;
        let reads = profile.read.iter().map(|p| (p.as_path(), AccessFs::from_read(abi)));
        let writes = profile
            .write
            .iter()
            .map(PathBuf::as_path)
            .chain([tmp])
            .map(|p| (p, AccessFs::from_all(abi)));
        for (path, access) in reads.chain(writes) {
            let Ok(fd) = PathFd::new(path) else { continue };
            // A file takes only the rights a file can have.
            let access = if path.is_dir() { access } else { access & AccessFs::from_file(abi) };
            created = created
                .add_rule(PathBeneath::new(fd, access))
                .map_err(|e| format!("Landlock refused a rule for {}: {e}", path.display()))?;
        }
        let ruleset: Option<OwnedFd> = created.into();
        Ok(Confinement { ruleset, filter: filter(Sockets::of(profile))? })
    }

    /// Start `cmd` confined, without forking this process: a thread of its
    /// own confines itself (`no_new_privs`, Landlock's `restrict_self`,
    /// seccomp — each applies to the calling thread only) and then starts
    /// the program, which inherits all three from the thread that made it.
    /// The thread ends right after, so the confinement never reaches any
    /// other code of verbgate.
    ///
    /// Why a thread and not a `pre_exec` hook in the child: a hook forces
    /// `fork` (posix_spawn cannot run code between its clone and exec), and
    /// forking a server that holds wasmtime's pool costs milliseconds of
    /// page-table copying; spawned from the confined thread, std uses
    /// posix_spawn (`CLONE_VM | CLONE_VFORK`) and nothing is copied.
    pub fn spawn(&self, cmd: &mut std::process::Command) -> std::io::Result<std::process::Child> {
        let ruleset = self.ruleset.as_ref().map(|f| f.as_raw_fd());
        let filter: &BpfProgram = &self.filter;
        std::thread::scope(|scope| {
            let confined = std::thread::Builder::new()
                .name("verbgate-confined-start".into())
                .spawn_scoped(scope, move || {
                    confine_this_thread(ruleset, filter)?;
                    cmd.spawn()
                })?;
            confined.join().unwrap_or_else(|_| {
                Err(std::io::Error::other("the thread that starts a confined program panicked"))
            })
        })
    }

    /// Confine the calling thread (the namespace wrapper's program process,
    /// right before its `exec`).
    pub fn confine_this_thread(&self) -> std::io::Result<()> {
        confine_this_thread(self.ruleset.as_ref().map(|f| f.as_raw_fd()), &self.filter)
    }
}

/// Confine the calling thread (only it: none of these calls is given a
/// flag that would reach the process's other threads).
fn confine_this_thread(
    ruleset: Option<std::os::fd::RawFd>,
    filter: &BpfProgram,
) -> std::io::Result<()> {
    drop_capabilities()?;
    // SAFETY: prctl and landlock_restrict_self take plain integers; the
    // ruleset descriptor is open (owned by the confinement, which outlives
    // this call).
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if let Some(fd) = ruleset {
            if libc::syscall(libc::SYS_landlock_restrict_self, fd, 0u32) != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
    }
    // `apply_filter` installs for the calling thread only (no TSYNC).
    seccompiler::apply_filter(filter).map_err(|e| {
        std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!("seccomp refused the filter: {e}"),
        )
    })
}

/// `capget`/`capset`'s header (`_LINUX_CAPABILITY_VERSION_3`: two words).
#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

/// One word of `capget`/`capset`'s data.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

const CAP_VERSION_3: u32 = 0x2008_0522;

/// Give up every capability this thread holds, and every one a program it
/// starts could gain: as root, a confined program would otherwise keep
/// them all (Landlock confines files, not `sethostname`, `settimeofday`,
/// `finit_module` of a readable module, or `CAP_DAC_OVERRIDE` on files a
/// profile lets it read). The bounding set is emptied first (that needs
/// `CAP_SETPCAP`, still held), so an `exec` — where root otherwise gets
/// its capabilities back — grants none; then the thread's own sets, and
/// the ambient set. Only this thread: capabilities are per thread.
/// Without capabilities (an ordinary user) there is nothing to drop.
fn drop_capabilities() -> std::io::Result<()> {
    let mut header = CapHeader { version: CAP_VERSION_3, pid: 0 };
    let mut data = [CapData::default(); 2];
    // SAFETY: capget writes two CapData words for version 3, which `data` has.
    if unsafe { libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let held = data.iter().any(|d| d.effective | d.permitted | d.inheritable != 0);
    if !held {
        return Ok(());
    }
    // SAFETY: plain integer prctl calls on this thread's own sets.
    unsafe {
        for cap in 0..64 {
            // EINVAL past the kernel's last capability: done.
            if libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 {
                if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL) {
                    break;
                }
                return Err(std::io::Error::last_os_error());
            }
        }
        if libc::prctl(libc::PR_CAP_AMBIENT, libc::PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    let mut header = CapHeader { version: CAP_VERSION_3, pid: 0 };
    let none = [CapData::default(); 2];
    // SAFETY: capset reads two CapData words for version 3.
    if unsafe { libc::syscall(libc::SYS_capset, &mut header, none.as_ptr()) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Run `python3 -c code` (with `arg`) confined by a profile that reads
    /// only the system directories, or unconfined; its exit code.
    fn python(code: &str, arg: &str, confined: bool) -> Option<i32> {
        let tmp = tempfile::tempdir().unwrap();
        let profile = Profile {
            read: super::super::profile::SYSTEM_READ.iter().map(PathBuf::from).collect(),
            write: vec!["/dev/null".into()],
            network: false,
            signals: false,
            unix_sockets: false,
            processes: None,
            memory_mib: None,
        };
        let mut cmd = std::process::Command::new("/usr/bin/python3");
        cmd.arg("-c").arg(code).arg(arg).stderr(std::process::Stdio::null());
        let c = Confinement::new(&profile, tmp.path()).unwrap();
        let mut child = if confined { c.spawn(&mut cmd).unwrap() } else { cmd.spawn().unwrap() };
        child.wait().unwrap().code()
    }

    #[test]
    fn what_landlock_does_not_cover_seccomp_and_scopes_refuse() {
        if kernel_abi().is_none_or(|v| v < 6) {
            panic!("this test needs Landlock ABI 6+ (the machines verbgate is tested on have it)");
        }
        // A process outside the sandbox to aim at (not this test: an
        // unconfined ptrace would stop it).
        let mut target = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        let pid = target.id().to_string();
        // Each attempt exits 0 when the kernel let it happen.
        let udp = "import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM)";
        let netlink = "import socket; socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)";
        let signal = "import os, signal, sys; os.kill(int(sys.argv[1]), signal.SIGCONT)";
        // ptrace of its own child: what Landlock allows inside a domain,
        // seccomp refuses.
        let ptrace = "import ctypes, os, sys, time\npid = os.fork()\nif pid == 0:\n    time.sleep(5); os._exit(0)\nr = ctypes.CDLL(None, use_errno=True).ptrace(16, pid, 0, 0)\nos.kill(pid, 9)\nsys.exit(0 if r == 0 else 1)";
        let uring = "import ctypes, sys; l = ctypes.CDLL(None, use_errno=True); p = ctypes.create_string_buffer(120); fd = l.syscall(425, 4, p); sys.exit(0 if fd >= 0 else 1)";
        for (what, code) in [
            ("a UDP socket", udp),
            ("a netlink socket", netlink),
            ("a signal to a process outside", signal),
            ("ptrace", ptrace),
            ("io_uring", uring),
        ] {
            assert_eq!(
                python(code, &pid, false),
                Some(0),
                "unconfined, {what} works (the attack is real)"
            );
            assert_ne!(python(code, &pid, true), Some(0), "confined, {what} must be refused");
        }
        let _ = target.kill();
        let _ = target.wait();
    }

    /// The attacks of issue 36 on what Landlock does not see, each seen
    /// succeeding unconfined (so the attack is real on this machine) and
    /// refused confined; and the same calls on the program itself still
    /// work (a program may set its own limits and priority).
    #[test]
    fn clone3_looks_absent_and_programs_still_start_children() {
        // clone3 with no arguments: EINVAL where it exists; ENOSYS confined.
        let probe = format!(
            "import ctypes, sys\nl = ctypes.CDLL(None, use_errno=True)\nl.syscall({}, None, 0)\nsys.exit(ctypes.get_errno())",
            libc::SYS_clone3
        );
        assert_eq!(python(&probe, "", false), Some(libc::EINVAL), "this kernel has clone3");
        assert_eq!(
            python(&probe, "", true),
            Some(libc::ENOSYS),
            "clone3 reached the kernel confined"
        );
        // The C library falls back to clone: a child and a thread still start.
        let spawn = "import subprocess, sys, threading\nt = threading.Thread(target=lambda: None); t.start(); t.join()\nsys.exit(subprocess.run(['/bin/true']).returncode)";
        assert_eq!(python(spawn, "", true), Some(0));
    }

    #[test]
    fn sockets_keyrings_watches_and_other_processes_are_refused() {
        if kernel_abi().is_none_or(|v| v < 6) {
            panic!("this test needs Landlock ABI 6+ (the machines verbgate is tested on have it)");
        }
        let mut target = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        let pid = target.id().to_string();
        let dir = tempfile::tempdir().unwrap();
        // A pathname socket outside the profile: the user's ssh-agent.
        let agent = dir.path().join("agent.sock");
        let _listener = std::os::unix::net::UnixListener::bind(&agent).unwrap();
        let agent = agent.display().to_string();
        let syscall = "import ctypes, os, sys\nl = ctypes.CDLL(None, use_errno=True)\n";
        let keyctl = format!(
            "{syscall}sys.exit(0 if l.syscall({}, 0, -4, 1) >= 0 else 1)",
            libc::SYS_keyctl
        );
        let add_key = format!(
            "{syscall}sys.exit(0 if l.syscall({}, b'user', b'verbgate-test', b'x', 1, -4) >= 0 else 1)",
            libc::SYS_add_key
        );
        // A datagram socket outside the profile: journald's, `/dev/log`.
        let log = dir.path().join("log.sock");
        let _log = std::os::unix::net::UnixDatagram::bind(&log).unwrap();
        let dgram = format!(
            "import socket; a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM); a.sendto(b'x', {:?})",
            log.display().to_string()
        );
        let watched = dir.path().display().to_string();
        let inotify = format!(
            "{syscall}fd = l.inotify_init1(0)\nsys.exit(0 if fd >= 0 and l.inotify_add_watch(fd, {watched:?}.encode(), 0xfff) >= 0 else 1)"
        );
        let unix =
            format!("import socket; s = socket.socket(socket.AF_UNIX); s.connect({agent:?})");
        let prlimit = "import resource, sys; resource.prlimit(int(sys.argv[1]), resource.RLIMIT_CORE, (0, 0))";
        let renice = "import os, sys; os.setpriority(os.PRIO_PROCESS, int(sys.argv[1]), 19)";
        let renice_user = "import os; os.setpriority(os.PRIO_USER, os.getuid(), 0)";
        let affinity = "import os, sys; os.sched_setaffinity(int(sys.argv[1]), {0})";
        let environ = "import sys; open('/proc/%s/environ' % sys.argv[1], 'rb').read()";
        let mut breaches = Vec::new();
        for (what, code) in [
            ("a connection to a UNIX socket outside the root", unix.as_str()),
            ("a datagram socketpair sending to a socket outside", dgram.as_str()),
            ("reading the user's keyring", keyctl.as_str()),
            ("adding a key to the user's keyring", add_key.as_str()),
            ("an inotify watch on a directory outside the profile", inotify.as_str()),
            ("prlimit on a process outside", prlimit),
            ("setpriority on a process outside", renice),
            ("setpriority on every process of the user", renice_user),
            ("sched_setaffinity on a process outside", affinity),
            ("reading another process's environment", environ),
        ] {
            assert_eq!(
                python(code, &pid, false),
                Some(0),
                "unconfined, {what} works (the attack is real)"
            );
            if python(code, &pid, true) == Some(0) {
                breaches.push(what);
            }
        }
        assert!(breaches.is_empty(), "confined, these must be refused: {breaches:?}");
        // x32 system calls (the number's bit 30) are refused before the
        // kernel looks at them: EPERM confined, whatever the kernel does
        // with them unconfined (ENOSYS where x32 is off, as here).
        if std::env::consts::ARCH == "x86_64" {
            let x32 = format!(
                "{syscall}r = l.syscall(0x40000000 + {}); sys.exit(0 if r < 0 and ctypes.get_errno() == 1 else 3)",
                libc::SYS_getpid
            );
            assert_eq!(python(&x32, &pid, false), Some(3), "unconfined, x32 is not refused");
            assert_eq!(python(&x32, &pid, true), Some(0), "confined, x32 calls are refused");
        }
        for (what, code) in [
            ("a socketpair", "import socket; socket.socketpair()"),
            (
                "a seqpacket socketpair",
                "import socket; socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)",
            ),
            (
                "its own limits",
                "import resource; s, h = resource.getrlimit(resource.RLIMIT_NOFILE); resource.setrlimit(resource.RLIMIT_NOFILE, (min(s, 256), h))",
            ),
            ("its own priority", "import os; os.setpriority(os.PRIO_PROCESS, 0, 5)"),
            ("its own affinity", "import os; os.sched_setaffinity(0, os.sched_getaffinity(0))"),
        ] {
            assert_eq!(python(code, &pid, true), Some(0), "confined, {what} still works");
        }
        let _ = target.kill();
        let _ = target.wait();
    }

    /// As root a confined program would keep every capability: Landlock
    /// confines files, not the host name, the clock or kernel modules.
    /// Confined, it has none, and cannot regain them by `exec`.
    #[test]
    fn a_confined_program_holds_no_capability() {
        if kernel_abi().is_none() {
            panic!("this test needs Landlock (the machines verbgate is tested on have it)");
        }
        // The effective and bounding sets from /proc/self/status: both 0.
        let caps = "import sys\nf = dict(l.split(':\\t') for l in open('/proc/self/status').read().splitlines() if ':\\t' in l)\nsys.exit(0 if int(f['CapEff'], 16) == 0 and int(f['CapBnd'], 16) == 0 else 1)";
        assert_eq!(python(caps, "", true), Some(0), "confined, no capability is left");
        // SAFETY: geteuid has no arguments.
        if unsafe { libc::geteuid() } == 0 {
            // Setting the host name to what it is changes nothing, and needs
            // CAP_SYS_ADMIN.
            let hostname = "import ctypes, socket, sys\nn = socket.gethostname().encode()\nsys.exit(0 if ctypes.CDLL(None).sethostname(n, len(n)) == 0 else 1)";
            assert_eq!(python(hostname, "", false), Some(0), "unconfined root sets the host name");
            assert_ne!(python(hostname, "", true), Some(0), "confined root must not");
            assert_ne!(python(caps, "", false), Some(0), "unconfined root holds capabilities");
            // Root needs no capability to open a disk it owns: only the
            // profile keeps the raw device (every file beneath) closed.
            let disk = std::fs::read_dir("/sys/block")
                .into_iter()
                .flatten()
                .filter_map(|e| e.ok())
                .map(|e| Path::new("/dev").join(e.file_name()))
                .find(|d| d.exists() && !d.to_string_lossy().contains("loop"));
            if let Some(disk) = disk {
                let read = "import sys; open(sys.argv[1], 'rb').read(512)";
                let disk = disk.to_str().unwrap();
                assert_eq!(python(read, disk, false), Some(0), "unconfined root reads {disk}");
                assert_ne!(python(read, disk, true), Some(0), "confined root must not read {disk}");
            }
        }
    }

    #[test]
    fn the_program_is_confined_and_the_thread_that_started_it_is_not() {
        if kernel_abi().is_none() {
            panic!("this test needs Landlock (the machines verbgate is tested on have it)");
        }
        let outside = tempfile::tempdir().unwrap();
        let secret = outside.path().join("secret");
        std::fs::write(&secret, "x").unwrap();
        let read = "import sys; open(sys.argv[1]).read()";
        let secret = secret.to_str().unwrap();
        assert_eq!(python(read, secret, false), Some(0), "unconfined, the file is readable");
        assert_ne!(
            python(read, secret, true),
            Some(0),
            "confined, a file outside the profile must not be readable"
        );
        // The confinement stayed on the thread that started the program:
        // this thread (and the process) still reads, writes and opens any
        // socket, and a program it starts unconfined is unconfined.
        std::fs::read(secret).unwrap();
        std::fs::write(outside.path().join("written"), "y").unwrap();
        std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        assert_eq!(python(read, secret, false), Some(0));
    }
}
