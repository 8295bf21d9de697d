//! The OS sandbox: every program verbgate starts (an exec plan, both
//! commands of an exec-read plan, a job and every process it starts, a kill
//! plan, a target resolution) runs confined by a [`Profile`] derived from
//! its verb's declared effects — enforced by the kernel, not trusted to the
//! plugin:
//!
//! | declared | the root | network |
//! |---|---|---|
//! | `reads_repo` | read-only | no |
//! | `writes_repo`, `runs_repo_code`, `destructive` | read-write | no |
//! | `network` | as above | yes |
//! | undeclared (contract 0.1.0) | read-write | yes |
//!
//! Every profile also reads the system directories and the program's own
//! toolchain, writes a private temporary directory (`TMPDIR`, made for the
//! run and removed after it), and nothing else: not the rest of `$HOME`,
//! not `$VERBGATE_HOME`. Operators widen a verb's profile in
//! `[[sandbox.allow]]` (extra paths, network).
//!
//! The confinement is applied before the program's `exec` with nothing but
//! system calls, so a process tree inherits it and cannot undo it: on
//! Linux by default inside PID, user and mount namespaces of the program's
//! own, made by verbgate's binary started as a wrapper ([`namespace`]);
//! without them, made in the parent (Landlock's ruleset, seccomp's BPF
//! program, compiled once per process) and applied by the thread that
//! starts the program ([`Confinement::spawn`]). Linux: [`linux`]; macOS: a Seatbelt
//! profile ([`macos`]). Where the kernel cannot enforce a profile the op
//! answers `sandbox_unavailable`, unless the operator turned the sandbox
//! off (`[sandbox] mode = "off"`): never a silent unconfined run.

pub mod profile;
pub mod self_protect;
mod support;

#[cfg(target_os = "linux")]
pub mod cgroup;
#[cfg(target_os = "linux")]
pub mod linux;
#[cfg(target_os = "macos")]
pub mod macos;
#[cfg(target_os = "linux")]
pub mod namespace;

use std::path::{Path, PathBuf};

pub use profile::Profile;
pub use support::Support;

use crate::error::{ErrorCode, OpError};

/// What this machine enforces (probed once per process).
pub fn support() -> &'static Support {
    static S: std::sync::OnceLock<Support> = std::sync::OnceLock::new();
    S.get_or_init(probe)
}

#[cfg(target_os = "linux")]
fn probe() -> Support {
    linux::probe()
}

#[cfg(target_os = "macos")]
fn probe() -> Support {
    macos::probe()
}

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
fn probe() -> Support {
    Support {
        mechanism: None,
        landlock_abi: None,
        covers: vec![],
        missing: Some("verbgate has no sandbox for this operating system".into()),
    }
}

/// Where program trees' memory cgroups are made (for `verbgate doctor`);
/// `Err` says why there is nowhere.
pub fn memory_cgroups() -> Result<String, String> {
    #[cfg(target_os = "linux")]
    {
        cgroup::base().map(|b| {
            let v = match b.version {
                cgroup::Version::V1 => "v1",
                cgroup::Version::V2 => "v2",
            };
            format!("cgroup {v}: {}", b.dir.display())
        })
    }
    #[cfg(not(target_os = "linux"))]
    {
        Err("verbgate bounds a program tree's memory on Linux only".to_string())
    }
}

/// A confinement ready to install into a child: built in the parent, where
/// allocating and opening files is safe.
pub struct Confinement {
    #[cfg(target_os = "linux")]
    inner: LinuxConfinement,
    #[cfg(target_os = "macos")]
    inner: macos::Confinement,
}

/// How a Linux program is confined.
#[cfg(target_os = "linux")]
enum LinuxConfinement {
    /// Started by a thread that confined itself ([`linux::Confinement::spawn`]).
    Thread(linux::Confinement),
    /// Started through verbgate's own binary, which makes the program's
    /// namespaces and confines it there ([`namespace`]).
    Namespaced {
        profile: Profile,
        tmp: PathBuf,
        processes: u64,
        /// Where the tree's memory cgroup is made, and its bound in bytes.
        memory: Option<(cgroup::Base, u64)>,
    },
}

/// Whether this kernel gives the program namespaces of its own (probed
/// once per process, by starting the wrapper on `true`).
#[cfg(target_os = "linux")]
pub fn namespaces() -> Result<(), String> {
    static PROBE: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    PROBE.get_or_init(probe_namespaces).clone()
}

#[cfg(target_os = "linux")]
/// Probe whether this kernel gives an unprivileged process the wrapper's
/// namespaces and a fresh `/proc`: run the wrapper on `true`, unconfined
/// by anything else. `Err` says why not.
fn probe_namespaces() -> Result<(), String> {
    let run_tmp = RunTmp::new().map_err(|e| e.message)?;
    let tmp = run_tmp.path();
    let profile = Profile {
        read: ["/usr", "/bin", "/lib", "/lib64", "/etc"].iter().map(PathBuf::from).collect(),
        write: vec![],
        network: false,
        signals: false,
        unix_sockets: false,
        processes: None,
        memory_mib: None,
    };
    let truth = ["/usr/bin/true", "/bin/true"]
        .into_iter()
        .map(Path::new)
        .find(|p| p.exists())
        .ok_or("no `true` program to probe with")?;
    let mut cmd = namespace::command(&profile, tmp, 400, None, truth);
    namespace::hand_over(&mut cmd, tmp).map_err(|e| format!("cannot hand the probe over: {e}"))?;
    let out = cmd
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("cannot start verbgate's own binary: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    let why = String::from_utf8_lossy(&out.stderr);
    let why = why.trim().trim_start_matches("verbgate sandbox: ");
    Err(if why.is_empty() { format!("the probe ended with {}", out.status) } else { why.into() })
}

impl Confinement {
    /// Build the confinement for `profile`, with `tmp` (the run's private
    /// temporary directory) writable.
    pub fn new(profile: &Profile, tmp: &Path) -> Result<Confinement, OpError> {
        #[cfg(target_os = "linux")]
        {
            let inner = match profile.processes {
                Some(processes) => {
                    // The wrapper builds the Landlock ruleset itself; check
                    // here that it can, so a kernel without it refuses
                    // before anything starts.
                    if linux::kernel_abi().is_none() {
                        return Err(unavailable(
                            "this kernel has no Landlock (Linux 5.13+ with landlock in its LSM list)",
                        ));
                    }
                    namespaces().map_err(|why| namespaces_unavailable(&why))?;
                    let memory = match profile.memory_mib {
                        Some(mib) => Some((
                            cgroup::base().map_err(|why| memory_unavailable(&why))?,
                            mib << 20,
                        )),
                        None => None,
                    };
                    LinuxConfinement::Namespaced {
                        profile: profile.clone(),
                        tmp: tmp.to_path_buf(),
                        processes,
                        memory,
                    }
                }
                None => LinuxConfinement::Thread(
                    linux::Confinement::new(profile, tmp).map_err(|why| unavailable(&why))?,
                ),
            };
            Ok(Confinement { inner })
        }
        #[cfg(target_os = "macos")]
        {
            macos::Confinement::new(profile, tmp)
                .map(|inner| Confinement { inner })
                .map_err(|why| unavailable(&why))
        }
        #[cfg(not(any(target_os = "linux", target_os = "macos")))]
        {
            let _ = (profile, tmp);
            Err(unavailable("verbgate has no sandbox for this operating system"))
        }
    }

    /// The command that runs `program` in this confinement: the program
    /// itself, or (namespaced) verbgate's wrapper around it. The caller sets
    /// arguments, environment, directory and streams as for the program.
    pub fn command(&self, program: &Path) -> std::process::Command {
        #[cfg(target_os = "linux")]
        if let LinuxConfinement::Namespaced { profile, tmp, processes, memory } = &self.inner {
            let memory = memory.as_ref().map(|(base, bytes)| (base, *bytes));
            return namespace::command(profile, tmp, *processes, memory, program);
        }
        std::process::Command::new(program)
    }

    /// Start `cmd` (made by [`Self::command`]) confined; a failure to
    /// confine fails the start with the kernel's error, which the caller
    /// reports as the program's launch failure. Linux: from a thread that
    /// confined itself (no `fork`, see [`linux::Confinement::spawn`]), or
    /// the wrapper, which confines the program itself; macOS: installed in
    /// the child right before `exec`.
    pub fn spawn(&self, cmd: &mut std::process::Command) -> std::io::Result<std::process::Child> {
        #[cfg(target_os = "linux")]
        {
            match &self.inner {
                LinuxConfinement::Thread(c) => c.spawn(cmd),
                LinuxConfinement::Namespaced { tmp, .. } => {
                    namespace::hand_over(cmd, tmp)?;
                    cmd.spawn()
                }
            }
        }
        #[cfg(target_os = "macos")]
        {
            self.inner.install(cmd);
            cmd.spawn()
        }
        #[cfg(not(any(target_os = "linux", target_os = "macos")))]
        {
            let _ = cmd;
            Err(std::io::Error::other("verbgate has no sandbox for this operating system"))
        }
    }
}

/// `sandbox_unavailable` for a kernel that will not give a program its
/// own namespaces.
#[cfg(target_os = "linux")]
fn namespaces_unavailable(why: &str) -> OpError {
    OpError::new(
        ErrorCode::SandboxUnavailable,
        format!(
            "the program would run without namespaces of its own ({why}), so its processes could outlive it and reach other processes; it did not run. Allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, user.max_user_namespaces > 0; in a container, one that lets /proc be mounted) — `verbgate doctor` says what this kernel gives — or, knowing that, run without them in verbgate.toml:\n[sandbox]\nnamespaces = false"
        ),
    )
}

/// `sandbox_unavailable` for a machine where verbgate cannot give a
/// program's tree a memory cgroup of its own.
#[cfg(target_os = "linux")]
fn memory_unavailable(why: &str) -> OpError {
    OpError::new(
        ErrorCode::SandboxUnavailable,
        format!(
            "the program's processes would run without a memory bound ({why}), so it did not run. Give verbgate a memory cgroup it may manage — cgroup v1: run it as root or delegate its memory cgroup to its user; cgroup v2: start it in a delegated cgroup of its own, e.g. `systemd-run --user --scope -p Delegate=yes verbgate serve` — `verbgate doctor` says what this machine gives; or, knowing that a tree may then use all the machine's memory, turn the bound off in verbgate.toml:\n[limits]\nmax_memory_mib = 0"
        ),
    )
}

/// `sandbox_unavailable`: the profile cannot be enforced here.
pub fn unavailable(why: &str) -> OpError {
    OpError::new(
        ErrorCode::SandboxUnavailable,
        format!(
            "the program would run unconfined ({why}), so it did not run. Run verbgate on a kernel with Landlock (Linux 5.13+) — `verbgate doctor` says what this one enforces — or, knowing that programs then run with your full rights, turn the sandbox off in verbgate.toml:\n[sandbox]\nmode = \"off\""
        ),
    )
}

/// A private temporary directory for one run (0700, fresh name), removed
/// with everything in it when dropped.
pub struct RunTmp {
    path: PathBuf,
}

impl RunTmp {
    /// Make one under the system's temporary directory.
    pub fn new() -> Result<RunTmp, OpError> {
        use std::os::unix::fs::DirBuilderExt;
        let base = std::env::temp_dir();
        let fail = |e: String| {
            OpError::new(
                ErrorCode::LaunchFailed,
                format!(
                    "cannot make the run's private temporary directory under {}: {e}",
                    base.display()
                ),
            )
        };
        let suffix = crate::private_files::random_bytes(8).map_err(|e| fail(e.to_string()))?;
        let path = base.join(format!("verbgate-run-{}", hex::encode(suffix)));
        std::fs::DirBuilder::new().mode(0o700).create(&path).map_err(|e| fail(e.to_string()))?;
        Ok(RunTmp { path })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for RunTmp {
    fn drop(&mut self) {
        // Most programs leave it empty: one `rmdir`, and the walk of
        // `remove_dir_all` only for what a program left behind.
        if std::fs::remove_dir(&self.path).is_err() {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}
