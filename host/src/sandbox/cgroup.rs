//! Linux: a memory bound for each confined program's whole tree, through a
//! memory cgroup of its own.
//!
//! A per-process limit cannot bound a tree (a forker multiplies it), and
//! `RLIMIT_AS` breaks node and go, which reserve address space they never
//! touch. A memory cgroup counts what the tree really uses (pages, the
//! kernel's memory for it, and swap where the kernel accounts it) and, past
//! its limit, the kernel's OOM killer ends processes of that cgroup only.
//!
//! Where trees' cgroups are made (the [`Base`]) is found once per process:
//!
//! - **cgroup v1** (a `memory` hierarchy): children of this process's own
//!   memory cgroup, which must be writable — as root, or where an operator
//!   delegated it.
//! - **cgroup v2**: a cgroup may hold processes or enable controllers for
//!   its children, not both, so verbgate first moves itself into a leaf
//!   `verbgate-server` of its own cgroup and then enables `memory` there —
//!   which works only when its cgroup was delegated to it and holds nothing
//!   else (`systemd-run --user --scope -p Delegate=yes verbgate serve`). A
//!   process already in a `verbgate-server` leaf (a job's supervisor, a
//!   later start) uses the parent the leaf's maker set up.
//!
//! Each tree's cgroup, `verbgate-tree-<pid>` (the pid of the wrapper that
//! made it), is made and given its limit by the wrapper before anything of
//! the program runs, joined by the namespace's first process (so the
//! program and all it starts are in it), and removed by the wrapper once
//! that process and with it the whole namespace has ended. A wrapper killed
//! outright leaves its empty cgroup behind: the next wrapper removes those
//! of dead wrappers.

use std::path::{Path, PathBuf};

/// Which cgroup interface the base speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    /// The `memory` hierarchy of cgroup v1.
    V1,
    /// The unified hierarchy.
    V2,
}

/// Where the trees' cgroups are made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Base {
    /// The directory (in the cgroup file system).
    pub dir: PathBuf,
    /// Its interface.
    pub version: Version,
}

/// The name prefix of a tree's cgroup.
const TREE_PREFIX: &str = "verbgate-tree-";

/// The name prefix of the cgroup a process's probe makes and removes.
const PROBE_PREFIX: &str = "verbgate-probe-";

/// The leaf a v2 verbgate moves itself into.
const SERVER_LEAF: &str = "verbgate-server";

/// Whether this process may reorganise a v2 cgroup (move itself into the
/// `verbgate-server` leaf). Only the process the user started does: a job's
/// supervisor sits beside its server and would find the cgroup busy, and
/// `verbgate doctor` only looks.
static SETUP: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

/// Let this process use a v2 base only if another one set it up.
pub fn forbid_setup() {
    SETUP.store(false, std::sync::atomic::Ordering::Relaxed);
}

/// Write `value` into the existing cgroup file `path` (cgroupfs answers a
/// create of a missing file with EACCES, not ENOENT, so never create).
fn write_existing(path: &Path, value: &str) -> std::io::Result<()> {
    use std::io::Write;
    std::fs::OpenOptions::new().write(true).open(path)?.write_all(value.as_bytes())
}

/// The base for this process (found, and on v2 set up, once).
pub fn base() -> Result<Base, String> {
    static BASE: std::sync::OnceLock<Result<Base, String>> = std::sync::OnceLock::new();
    BASE.get_or_init(find_base).clone()
}

/// Find the base from `/proc/self/cgroup` and `/proc/self/mountinfo`, and
/// prove it works by making, limiting and removing one cgroup there.
fn find_base() -> Result<Base, String> {
    let cgroups = std::fs::read_to_string("/proc/self/cgroup")
        .map_err(|e| format!("cannot read /proc/self/cgroup: {e}"))?;
    let mounts = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| format!("cannot read /proc/self/mountinfo: {e}"))?;
    let base = match locate(&cgroups, &mounts)? {
        Base { dir, version: Version::V2 } => v2_base(&dir)?,
        v1 => v1,
    };
    let probe = base.dir.join(format!("{PROBE_PREFIX}{}", std::process::id()));
    let made = make(&probe, base.version, 64 << 20);
    let _ = std::fs::remove_dir(&probe);
    made.map_err(|e| format!("cannot make a memory cgroup in {}: {e}", base.dir.display()))?;
    Ok(base)
}

/// This process's memory cgroup directory: v1's `memory` hierarchy when
/// there is one (the controller is then not on v2), else the v2 one.
pub fn locate(cgroups: &str, mountinfo: &str) -> Result<Base, String> {
    let mut v2_path = None;
    for line in cgroups.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(id), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        if id == "0" && controllers.is_empty() {
            v2_path = Some(path);
        } else if controllers.split(',').any(|c| c == "memory") {
            let dir = mounted(mountinfo, path, |fs, opts| {
                fs == "cgroup" && opts.split(',').any(|o| o == "memory")
            })
            .map_err(|e| {
                e.unwrap_or_else(|| "the cgroup v1 memory hierarchy is not mounted".into())
            })?;
            return Ok(Base { dir, version: Version::V1 });
        }
    }
    let path = v2_path.ok_or(
        "this process is in no memory cgroup (no cgroup v1 memory hierarchy, no cgroup v2)",
    )?;
    let dir = mounted(mountinfo, path, |fs, _| fs == "cgroup2")
        .map_err(|e| e.unwrap_or_else(|| "the cgroup v2 hierarchy is not mounted".into()))?;
    Ok(Base { dir, version: Version::V2 })
}

/// The directory of cgroup `path` under the first mount whose file system
/// type and super options `matches` and which holds it; `Err(None)` when
/// no mount matches, else why none holds it.
fn mounted(
    mountinfo: &str,
    path: &str,
    matches: impl Fn(&str, &str) -> bool,
) -> Result<PathBuf, Option<String>> {
    let mut why = None;
    for line in mountinfo.lines() {
        let Some((left, right)) = line.split_once(" - ") else { continue };
        let left: Vec<&str> = left.split(' ').collect();
        let mut right = right.split(' ');
        let (Some(fs), Some(_source)) = (right.next(), right.next()) else { continue };
        if left.len() < 5 || !matches(fs, right.next().unwrap_or("")) {
            continue;
        }
        match join_under(&unescape(left[4]), &unescape(left[3]), path) {
            Ok(dir) => return Ok(dir),
            Err(e) => why = Some(e),
        }
    }
    Err(why)
}

/// mountinfo's octal escapes (`\040` for a space) undone.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = b
            .get(i + 1..i + 4)
            .and_then(|d| u8::from_str_radix(std::str::from_utf8(d).ok()?, 8).ok());
        match (b[i], octal) {
            (b'\\', Some(v)) => {
                out.push(v);
                i += 4;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The directory of cgroup `path` under a mount of the hierarchy's `root`
/// at `mount`; refused when the cgroup lies outside what is mounted.
fn join_under(mount: &str, root: &str, path: &str) -> Result<PathBuf, String> {
    let rel = if root == "/" {
        path
    } else {
        path.strip_prefix(root).filter(|r| r.is_empty() || r.starts_with('/')).ok_or_else(|| {
            format!("this process's cgroup {path} is outside the one mounted at {mount} ({root})")
        })?
    };
    let rel = rel.trim_start_matches('/');
    if rel.split('/').any(|c| c == "..") {
        return Err(format!("the cgroup path {path} is not plain"));
    }
    Ok(Path::new(mount).join(rel))
}

/// The v2 base for a process in cgroup `own`: the parent a `verbgate-server`
/// leaf's maker set up, or `own` after moving this process into such a
/// leaf and enabling `memory` for `own`'s children.
fn v2_base(own: &Path) -> Result<Base, String> {
    let enabled = |dir: &Path| {
        std::fs::read_to_string(dir.join("cgroup.subtree_control"))
            .is_ok_and(|s| s.split_whitespace().any(|c| c == "memory"))
    };
    if own.file_name().is_some_and(|n| n == SERVER_LEAF) {
        if let Some(parent) = own.parent().filter(|p| enabled(p)) {
            return Ok(Base { dir: parent.to_path_buf(), version: Version::V2 });
        }
    }
    let delegated = std::fs::read_to_string(own.join("cgroup.controllers"))
        .map_err(|e| format!("cannot read {}: {e}", own.join("cgroup.controllers").display()))?;
    if !delegated.split_whitespace().any(|c| c == "memory") {
        return Err(format!(
            "the memory controller is not available in verbgate's cgroup {}",
            own.display()
        ));
    }
    if enabled(own) {
        // Only the root of a hierarchy holds processes and enables
        // controllers at once.
        return Ok(Base { dir: own.to_path_buf(), version: Version::V2 });
    }
    if !SETUP.load(std::sync::atomic::Ordering::Relaxed) {
        return Err(format!(
            "verbgate's cgroup {} is not set up for trees yet (the server or `verbgate request` sets it up before its first program)",
            own.display()
        ));
    }
    // Only a cgroup delegated to this user (its `cgroup.procs` is theirs):
    // never reorganise one a service manager keeps for itself.
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid cannot fail.
    let euid = unsafe { libc::geteuid() };
    let owner = std::fs::metadata(own.join("cgroup.procs")).map(|m| m.uid());
    if owner.as_ref().map_or(true, |&o| o != euid) {
        return Err(format!(
            "verbgate's cgroup {} is not delegated to its user (start it in one of its own: `systemd-run --user --scope -p Delegate=yes verbgate serve`)",
            own.display()
        ));
    }
    let leaf = own.join(SERVER_LEAF);
    let join =
        |dir: &Path| write_existing(&dir.join("cgroup.procs"), &std::process::id().to_string());
    match std::fs::create_dir(&leaf) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => {
            return Err(format!(
                "cannot make {} (is verbgate's cgroup delegated to it?): {e}",
                leaf.display()
            ))
        }
    }
    join(&leaf).map_err(|e| format!("cannot move verbgate into {}: {e}", leaf.display()))?;
    if let Err(e) = write_existing(&own.join("cgroup.subtree_control"), "+memory") {
        // Put things back as they were.
        let _ = join(own);
        let _ = std::fs::remove_dir(&leaf);
        return Err(format!(
            "cannot enable the memory controller for the children of {} ({e}): it must hold verbgate alone",
            own.display()
        ));
    }
    Ok(Base { dir: own.to_path_buf(), version: Version::V2 })
}

/// Make cgroup `dir` with a memory limit of `bytes` (swap included, where
/// the kernel accounts it separately: none beyond the limit).
fn make(dir: &Path, version: Version, bytes: u64) -> std::io::Result<()> {
    std::fs::create_dir(dir)?;
    let set = |file: &str, value: &str| write_existing(&dir.join(file), value);
    let optional = |file: &str, value: &str| match set(file, value) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        r => r,
    };
    let limited = match version {
        Version::V1 => set("memory.limit_in_bytes", &bytes.to_string())
            .and_then(|()| optional("memory.memsw.limit_in_bytes", &bytes.to_string())),
        Version::V2 => set("memory.max", &bytes.to_string())
            .and_then(|()| optional("memory.swap.max", "0"))
            // At the bound the whole tree ends, not one process of it.
            .and_then(|()| optional("memory.oom.group", "1")),
    };
    if limited.is_err() {
        let _ = std::fs::remove_dir(dir);
    }
    limited
}

/// One program tree's cgroup, made by the wrapper.
pub struct Tree {
    dir: PathBuf,
    version: Version,
}

impl Tree {
    /// Make the tree's cgroup under `base`, limited to `bytes`; first
    /// removing what wrappers that died left there.
    pub fn make(base: &Base, bytes: u64) -> Result<Tree, String> {
        sweep(&base.dir);
        let dir = base.dir.join(format!("{TREE_PREFIX}{}", std::process::id()));
        // A leftover of a dead wrapper that had this pid.
        let _ = std::fs::remove_dir(&dir);
        make(&dir, base.version, bytes).map_err(|e| {
            format!("cannot make the program's memory cgroup {}: {e}", dir.display())
        })?;
        Ok(Tree { dir, version: base.version })
    }

    /// Move the calling process into the tree's cgroup (everything it
    /// starts from now on is in it too). The caller must be
    /// single-threaded: on v1 only the calling thread moves.
    pub fn join(&self) -> std::io::Result<()> {
        // Why `tasks` on v1: a write to `cgroup.procs` (or of another pid)
        // takes the kernel's global threadgroup lock for writing, which
        // waits for an RCU grace period — 5–20 ms per started program. A
        // thread moving itself ("0" to `tasks`) skips that lock, ~0.3 ms;
        // for a single-threaded caller it moves the whole process. v2
        // moves threads alone only inside threaded subtrees, so it keeps
        // `cgroup.procs`. "0": the writer, whatever pid namespace it is in.
        let file = match self.version {
            Version::V1 => "tasks",
            Version::V2 => "cgroup.procs",
        };
        write_existing(&self.dir.join(file), "0")
    }

    /// How many processes of the tree the kernel killed at the bound.
    pub fn oom_kills(&self) -> u64 {
        let file = match self.version {
            Version::V1 => "memory.oom_control",
            Version::V2 => "memory.events",
        };
        std::fs::read_to_string(self.dir.join(file))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("oom_kill ").and_then(|n| n.trim().parse().ok()))
            })
            .unwrap_or(0)
    }

    /// Remove the cgroup at once (the tree was never started).
    pub fn discard(&self) {
        let _ = std::fs::remove_dir(&self.dir);
    }

    /// Remove the cgroup once the tree has ended (its last exits may still
    /// be leaving it for a moment).
    pub fn remove(self) {
        for _ in 0..100 {
            match std::fs::remove_dir(&self.dir) {
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                    std::thread::sleep(std::time::Duration::from_millis(2));
                }
                _ => return,
            }
        }
    }
}

/// Remove the tree cgroups under `base` whose wrapper is dead (a wrapper
/// killed outright cannot remove its own). A live tree's is never touched:
/// its wrapper's pid is alive, and a cgroup with processes in it cannot be
/// removed anyway.
fn sweep(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(TREE_PREFIX).or_else(|| n.strip_prefix(PROBE_PREFIX)))
        else {
            continue;
        };
        let Ok(pid) = pid.parse::<libc::pid_t>() else { continue };
        // SAFETY: signal 0 only checks that the pid exists.
        let dead = unsafe { libc::kill(pid, 0) } != 0
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
        if dead {
            let _ = std::fs::remove_dir(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const V1_MOUNTS: &str = "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n36 31 0:33 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

    #[test]
    fn the_v1_memory_hierarchy_wins_over_an_empty_v2_one() {
        let cgroups = "9:name=systemd:/\n4:memory:/process_api/abc\n1:cpu,cpuacct:/\n0::/\n";
        let b = locate(cgroups, V1_MOUNTS).unwrap();
        assert_eq!(
            b,
            Base { dir: "/sys/fs/cgroup/memory/process_api/abc".into(), version: Version::V1 }
        );
    }

    #[test]
    fn a_v2_only_machine_uses_the_unified_cgroup_under_its_mount_root() {
        let mounts = "30 25 0:26 /user.slice /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate\n";
        let cgroups = "0::/user.slice/user-1000.slice/app.slice/vg.scope\n";
        let b = locate(cgroups, mounts).unwrap();
        assert_eq!(b.dir, PathBuf::from("/sys/fs/cgroup/user-1000.slice/app.slice/vg.scope"));
        assert_eq!(b.version, Version::V2);
        // A cgroup outside the mounted part, or with `..`, is refused.
        let err = locate("0::/system.slice/x\n", mounts).unwrap_err();
        assert!(err.contains("outside"), "{err}");
        assert!(locate("0::/../etc\n", "1 1 0:1 / /sys/fs/cgroup rw - cgroup2 c rw\n").is_err());
        // A path with a space in its mount point is unescaped.
        let spaced = "1 1 0:1 / /mnt/c\\040g rw - cgroup2 c rw\n";
        assert_eq!(locate("0::/a\n", spaced).unwrap().dir, PathBuf::from("/mnt/c g/a"));
    }

    #[test]
    fn a_bind_mount_of_another_subtree_does_not_hide_the_mount_that_holds_the_cgroup() {
        let mounts = "1 1 0:1 /system.slice /mnt/sys rw - cgroup2 c rw\n2 1 0:1 / /sys/fs/cgroup rw - cgroup2 c rw\n";
        let b = locate("0::/user.slice/vg\n", mounts).unwrap();
        assert_eq!(b.dir, PathBuf::from("/sys/fs/cgroup/user.slice/vg"));
    }

    #[test]
    fn no_memory_cgroup_at_all_says_so() {
        let err = locate("1:cpu:/\n", "").unwrap_err();
        assert!(err.contains("no memory cgroup"), "{err}");
        let err = locate("4:memory:/x\n", "").unwrap_err();
        assert!(err.contains("not mounted"), "{err}");
    }
}
