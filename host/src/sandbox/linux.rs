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

/// The seccomp programs, compiled once: with and without the network.
fn filter(network: bool) -> Result<Arc<BpfProgram>, String> {
    static WITH: std::sync::OnceLock<Result<Arc<BpfProgram>, String>> = std::sync::OnceLock::new();
    static WITHOUT: std::sync::OnceLock<Result<Arc<BpfProgram>, String>> =
        std::sync::OnceLock::new();
    let cell = if network { &WITH } else { &WITHOUT };
    cell.get_or_init(|| compile(network)).clone()
}

fn compile(network: bool) -> Result<Arc<BpfProgram>, String> {
    let arch = TargetArch::try_from(std::env::consts::ARCH)
        .map_err(|e| format!("seccomp cannot filter on {}: {e}", std::env::consts::ARCH))?;
    let mut rules: std::collections::BTreeMap<i64, Vec<SeccompRule>> =
        std::collections::BTreeMap::new();
    // Always refused: no debugging of other processes, and no io_uring,
    // whose requests the socket rule below cannot see.
    for call in [
        libc::SYS_ptrace,
        libc::SYS_process_vm_readv,
        libc::SYS_process_vm_writev,
        libc::SYS_io_uring_setup,
    ] {
        rules.insert(call, vec![]);
    }
    if !network {
        let not_unix = SeccompCondition::new(
            0,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::Ne,
            libc::AF_UNIX as u64,
        )
        .map_err(|e| e.to_string())?;
        rules.insert(
            libc::SYS_socket,
            vec![SeccompRule::new(vec![not_unix]).map_err(|e| e.to_string())?],
        );
    }
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(|e| e.to_string())?;
    let program: BpfProgram =
        filter.try_into().map_err(|e: seccompiler::BackendError| e.to_string())?;
    Ok(Arc::new(program))
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
        Ok(Confinement { ruleset, filter: filter(profile.network)? })
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
}

/// Confine the calling thread (only it: none of these calls is given a
/// flag that would reach the process's other threads).
fn confine_this_thread(
    ruleset: Option<std::os::fd::RawFd>,
    filter: &BpfProgram,
) -> std::io::Result<()> {
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
