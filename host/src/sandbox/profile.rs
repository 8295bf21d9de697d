//! A sandbox profile: what one program may read, write and whether it may
//! use the network — derived from its verb's declared effects, the root,
//! the program's own toolchain and the operator's `[[sandbox.allow]]`
//! entries. Plain data: it is shown by `verbgate doctor`, compared when a
//! plan is checked again, and handed to a job's supervisor as JSON.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::runtime::model::{Effect, Effects};

/// System directories every profile reads (those that exist): programs,
/// libraries, `/etc` (the loader's cache, users, certificates), `/proc` and
/// `/sys` (a process's own facts, CPU counts), and of `/dev` only the
/// character devices programs use — not all of it: a program run as root
/// opened `/dev/vda` and read the raw disk, every file Landlock guards.
/// `/dev/fd` and `/dev/std*` are links into `/proc`.
pub const SYSTEM_READ: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
    "/opt",
    "/nix/store",
    "/proc",
    "/sys",
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
    "/dev/shm",
];

/// Device files every profile may write (programs send output there).
pub const SYSTEM_WRITE: &[&str] = &["/dev/null"];

/// What a confined program may do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Profile {
    /// Paths it may read (and execute) beneath.
    pub read: Vec<PathBuf>,
    /// Paths it may also write beneath (create, remove, truncate).
    pub write: Vec<PathBuf>,
    /// Whether it may open network sockets.
    pub network: bool,
    /// Whether it may signal processes outside its own sandbox: only a kill
    /// plan, whose CLI stops a run that was started in another one.
    #[serde(default)]
    pub signals: bool,
    /// Whether it may open UNIX sockets without the network: only where
    /// an operator allowed it (`unix_sockets = true` in
    /// `[[sandbox.allow]]`, for a test suite that talks to a socket of its
    /// own). A UNIX socket reaches every pathname socket the program can
    /// name, outside the root too (ssh-agent, D-Bus, docker).
    #[serde(default)]
    pub unix_sockets: bool,
    /// `Some(n)`: the program runs in PID, user and mount namespaces of its
    /// own (its tree ends with it, it names no process outside it, and it
    /// sees a fresh `/proc`) with at most `n` processes, threads included
    /// ([`super::namespace`], Linux). `None`: the operator turned them off
    /// (`[sandbox] namespaces = false`), or the program must signal a run
    /// of another sandbox (a kill plan).
    #[serde(default)]
    pub processes: Option<u64>,
    /// `Some(n)`: with its own namespaces, the program's whole tree may use
    /// at most `n` MiB of memory (`limits.max_memory_mib`), in a memory
    /// cgroup of its own ([`super::cgroup`], Linux). `None`: no bound (the
    /// operator set it to 0, or there are no namespaces).
    #[serde(default)]
    pub memory_mib: Option<u64>,
}

/// An operator's widening of some verbs' profiles (`[[sandbox.allow]]`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Widening {
    /// Verb patterns (`cargo.*`, a verb name, `*`).
    pub verbs: Vec<String>,
    /// Extra paths to read (absolute).
    #[serde(default)]
    pub read: Vec<PathBuf>,
    /// Extra paths to write (absolute).
    #[serde(default)]
    pub write: Vec<PathBuf>,
    /// Allow the network.
    #[serde(default)]
    pub network: bool,
    /// Allow UNIX sockets (without the network).
    #[serde(default)]
    pub unix_sockets: bool,
}

/// What a profile is derived from.
pub struct Inputs<'a> {
    /// The verb's canonical name (for `[[sandbox.allow]]`).
    pub verb: &'a str,
    /// Its declared effects.
    pub effects: &'a Effects,
    /// The root.
    pub root: &'a Path,
    /// The resolved program.
    pub program: &'a Path,
    /// The environment the program gets (where its toolchain lives:
    /// `HOME`, `CARGO_HOME`, `RUSTUP_HOME`).
    pub env: &'a BTreeMap<String, String>,
    /// The operator's widenings.
    pub widen: &'a [Widening],
    /// verbgate's own home (canonical): never readable through what a
    /// program's location or toolchain would grant.
    pub verbgate_home: &'a Path,
    /// Files outside the root the program reads by convention and the
    /// guards have vouched for (cargo's configuration above the root).
    pub also_read: Vec<PathBuf>,
}

impl Profile {
    /// The profile for one program of a verb.
    pub fn derive(i: &Inputs<'_>) -> Profile {
        let mut read: Vec<PathBuf> = SYSTEM_READ.iter().map(PathBuf::from).collect();
        let mut write: Vec<PathBuf> = SYSTEM_WRITE.iter().map(PathBuf::from).collect();
        let changes = [Effect::WritesRepo, Effect::RunsRepoCode, Effect::Destructive]
            .into_iter()
            .any(|e| i.effects.may(e));
        if changes {
            write.push(i.root.to_path_buf());
        } else if i.effects.may(Effect::ReadsRepo) {
            read.push(i.root.to_path_buf());
        }
        let mut network = i.effects.may(Effect::Network);
        let mut unix_sockets = false;
        let never = Never::new(i.env, i.verbgate_home);
        read.extend(toolchain(i.program, i.env, &never));
        write.extend(toolchain_state(i.program, i.env, &never));
        if network {
            read.extend(credentials(i.program, i.env, &never));
        }
        read.extend(i.also_read.iter().cloned());
        for w in i.widen.iter().filter(|w| crate::registry::fence::allowed(i.verb, Some(&w.verbs)))
        {
            read.extend(w.read.iter().cloned());
            write.extend(w.write.iter().cloned());
            network |= w.network;
            unix_sockets |= w.unix_sockets;
        }
        if network {
            // Name resolution reads /run on systemd machines
            // (/etc/resolv.conf links there).
            read.push(PathBuf::from("/run"));
        }
        Profile {
            read: tidy(read),
            write: tidy(write),
            network,
            signals: false,
            unix_sockets,
            processes: None,
            memory_mib: None,
        }
    }

    /// This profile with nothing written but the system's devices: for a
    /// two-stage verb's target resolution, which only reads.
    pub fn read_only(&self) -> Profile {
        let (system, other): (Vec<PathBuf>, Vec<PathBuf>) = self
            .write
            .iter()
            .cloned()
            .partition(|p| SYSTEM_WRITE.iter().any(|s| Path::new(s) == p));
        Profile {
            read: tidy(self.read.iter().cloned().chain(other).collect()),
            write: system,
            network: false,
            signals: false,
            unix_sockets: false,
            processes: self.processes,
            memory_mib: self.memory_mib,
        }
    }

    /// As JSON for `verbgate doctor` and `help`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "read": self.read.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
            "write": self.write.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
            "network": self.network,
            "signals_outside": self.signals,
            "unix_sockets": self.unix_sockets || self.network,
            "own_namespaces": self.processes.is_some(),
            "max_processes": self.processes,
            "max_memory_mib": self.memory_mib,
        })
    }
}

/// Where a program was installed, as named and after links: the prefix
/// above its `bin/` (`sbin/`, `libexec/`) — its libraries and data live
/// there — or, for a program elsewhere, only its own directory; never `/`.
fn prefixes(program: &Path, links: &Links) -> Vec<PathBuf> {
    let real = links.real(program);
    [program, real.as_path()]
        .into_iter()
        .filter_map(|p| {
            let dir = p.parent()?;
            let in_bin =
                dir.file_name().is_some_and(|n| n == "bin" || n == "sbin" || n == "libexec");
            // A version manager's shim (pyenv, rbenv, asdf: `<root>/shims/x`)
            // runs the manager, which runs the tool from its own root.
            let shim = dir.file_name().is_some_and(|n| n == "shims");
            if in_bin || shim {
                dir.parent()
            } else {
                Some(dir)
            }
        })
        .filter(|prefix| prefix.components().count() > 1)
        .map(Path::to_path_buf)
        .collect()
}

/// A script's interpreter (`#!/path/python`, `#!/usr/bin/env python3`
/// found on `PATH`), if `program` is a script. The line may be repository
/// content, so it is not followed when it is `env` with options or
/// assignments (`env -S '…'` splits a command line of its own), and what
/// it names widens a profile only as far as [`installed`] allows — never
/// to `$HOME`, verbgate's home or a credential file.
fn interpreter(program: &Path, env: &BTreeMap<String, String>) -> Option<PathBuf> {
    use std::io::Read;
    let mut head = [0u8; 256];
    let n = std::fs::File::open(program).and_then(|mut f| f.read(&mut head)).ok()?;
    let line = head[..n].strip_prefix(b"#!")?;
    let line = String::from_utf8_lossy(line.split(|b| *b == b'\n').next()?).into_owned();
    let mut words = line.split_whitespace();
    let first = PathBuf::from(words.next()?);
    if first.file_name().is_some_and(|f| f == "env") {
        let name = words.next()?;
        if name.starts_with('-') || name.contains('=') {
            return None;
        }
        return env.get("PATH")?.split(':').map(|d| Path::new(d).join(name)).find(|p| p.is_file());
    }
    Some(first)
}

/// The program's own toolchain: the prefix it was installed in (the parent
/// of its `bin/`, after links) and, for a script, its interpreter's (a
/// virtualenv's `pytest` runs the Python it was made from); for cargo and
/// rustup their homes; git's and the user's own git configuration (the
/// user's global settings keep working). Only what exists.
fn toolchain(program: &Path, env: &BTreeMap<String, String>, never: &Never) -> Vec<PathBuf> {
    let real = never.links.real(program);
    let mut out = installed(program, never);
    if let Some(interp) = interpreter(&real, env) {
        out.extend(installed(&interp, never));
    }
    let home = env.get("HOME").map(PathBuf::from);
    let name = real.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    let declared = program.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    let is = |names: &[&str]| names.contains(&name) || names.contains(&declared);
    if is(&["cargo", "rustc", "rustup", "cargo-clippy", "clippy-driver"]) {
        let cargo_home = env
            .get("CARGO_HOME")
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|h| h.join(".cargo")));
        let rustup_home = env
            .get("RUSTUP_HOME")
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|h| h.join(".rustup")));
        // Its entries but the registry tokens (`credentials.toml`).
        out.extend(cargo_home.iter().flat_map(|h| entries_but(h, CARGO_CREDENTIALS)));
        out.extend(rustup_home);
    }
    if is(&["git"]) {
        if let Some(h) = &home {
            // Not `~/.config/git` itself: it holds `credentials` too.
            out.push(h.join(".gitconfig"));
            for f in ["config", "ignore", "attributes"] {
                out.push(h.join(".config/git").join(f));
            }
        }
    }
    if is(&["go"]) {
        // The module cache (`GOMODCACHE`, else `$GOPATH/pkg/mod`, else
        // `~/go/pkg/mod`): the dependencies the user downloaded; and the
        // user's `go env -w` settings.
        let gopath =
            env.get("GOPATH").map(PathBuf::from).or_else(|| home.as_ref().map(|h| h.join("go")));
        out.extend(
            env.get("GOMODCACHE").map(PathBuf::from).or_else(|| gopath.map(|g| g.join("pkg/mod"))),
        );
        out.extend(home.as_ref().map(|h| h.join(".config/go")));
    }
    out.retain(|p| never.allows(p));
    out
}

/// The caches a program must write to work at all, outside the root:
/// the private ones verbgate gives it ([`PRIVATE_CACHES`], set in its
/// environment by dispatch), never the user's — a cache a confined
/// program writes holds code the user's next unconfined build would run
/// (a test binary in `~/.cache/go-build`).
fn toolchain_state(program: &Path, env: &BTreeMap<String, String>, never: &Never) -> Vec<PathBuf> {
    caches_of(program, &never.links)
        .filter_map(|(var, _)| env.get(var).map(PathBuf::from))
        .collect()
}

/// The private caches `program` gets ([`PRIVATE_CACHES`]): each one's
/// variable and directory name. Dispatch sets the variables, and the
/// profile grants what they name, by this one test of the program.
pub fn private_caches(program: &Path) -> impl Iterator<Item = (&'static str, &'static str)> {
    caches_of(program, &Links::default()).collect::<Vec<_>>().into_iter()
}

/// [`private_caches`] with links resolved through `links`.
fn caches_of<'a>(
    program: &'a Path,
    links: &'a Links,
) -> impl Iterator<Item = (&'static str, &'static str)> + 'a {
    PRIVATE_CACHES
        .iter()
        .filter(move |(programs, _, _)| links.is_program(program, programs))
        .map(|(_, var, dir)| (*var, *dir))
}

/// The toolchain caches verbgate keeps private: the programs, the variable
/// that moves the cache, and the directory's name under
/// `$VERBGATE_HOME/toolcache/<root>/`.
const PRIVATE_CACHES: &[(&[&str], &str, &str)] =
    &[(&["go"], "GOCACHE", "go-build"), (&["npm", "npx"], "npm_config_cache", "npm")];

/// cargo's registry tokens, in `CARGO_HOME`.
const CARGO_CREDENTIALS: &[&str] = &["credentials", "credentials.toml"];

/// Files under `$HOME` that hold the user's secrets: a path granted for a
/// program's location or toolchain never covers one (an operator's
/// `[[sandbox.allow]]` may; network git reads its own, see
/// [`credentials`]).
pub const CREDENTIAL_FILES: &[&str] = &[
    ".ssh",
    ".gnupg",
    ".git-credentials",
    ".config/git/credentials",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".netrc",
    ".npmrc",
    ".pypirc",
    ".docker",
    ".aws",
    ".kube",
    ".config/gh",
    ".config/gcloud",
    ".password-store",
    ".local/share/keyrings",
    ".azure",
    ".terraform.d",
    ".vault-token",
    ".mozilla",
    ".config/google-chrome",
    ".config/chromium",
];

/// What a program's location and toolchain never grant: `$HOME` itself or
/// a directory above it, verbgate's home (its keys, tokens, cache MAC key
/// and config) or anything holding or inside it — the default ones under
/// `$XDG_DATA_HOME` and `~/.local/share` included — and any directory holding a credential file.
struct Never {
    /// The user's home: the program's `HOME` and verbgate's own (a program
    /// run without `HOME`, or with another, still never reads the user's).
    users: Vec<PathBuf>,
    homes: Vec<PathBuf>,
    /// Each credential file as named and after links (`~/.ssh` may be a
    /// link into `~/dotfiles`, whose `bin/` would otherwise grant it).
    secrets: Vec<PathBuf>,
    /// The links resolved for this profile.
    links: Links,
}

impl Never {
    fn new(env: &BTreeMap<String, String>, verbgate_home: &Path) -> Never {
        let links = Links::default();
        let real = |p: &Path| links.real(p);
        let mut users: Vec<PathBuf> = env.get("HOME").map(PathBuf::from).into_iter().collect();
        users.extend(std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from));
        let mut users: Vec<PathBuf> = users.iter().map(|h| clean(&real(h))).collect();
        users.dedup();
        let mut homes = vec![clean(&real(verbgate_home))];
        homes.extend(users.iter().map(|h| h.join(".local/share/verbgate")));
        homes.extend(env.get("XDG_DATA_HOME").map(|x| clean(&real(Path::new(x))).join("verbgate")));
        let secrets = users
            .iter()
            .flat_map(|h| CREDENTIAL_FILES.iter().map(move |f| h.join(f)))
            .flat_map(|s| {
                // Resolved only when it exists (one `lstat`; most do not):
                // this runs for every program started.
                let resolved = std::fs::symlink_metadata(&s).is_ok().then(|| clean(&real(&s)));
                std::iter::once(s).chain(resolved)
            })
            .collect();
        Never { users, homes, secrets, links }
    }

    /// Whether `path` (as named, and after links) may be granted.
    fn allows(&self, path: &Path) -> bool {
        [clean(path), clean(&self.links.real(path))].iter().all(|p| {
            let p = p.as_os_str().as_bytes();
            let holds = |inner: &PathBuf| under(inner.as_os_str().as_bytes(), p);
            !self.users.iter().any(holds)
                && !self.homes.iter().any(|v| holds(v) || under(p, v.as_os_str().as_bytes()))
                && !self.secrets.iter().any(holds)
        })
    }
}

/// `path` as its components: no doubled or trailing `/`, no `.`, so that
/// [`under`] can compare bytes.
fn clean(path: &Path) -> PathBuf {
    path.components().collect()
}

/// Whether `path` is `dir` or beneath it, both [`clean`]: what
/// `Path::starts_with` answers, without parsing both into components on
/// every call (a profile asks some two thousand times).
fn under(path: &[u8], dir: &[u8]) -> bool {
    path.starts_with(dir)
        && (path.len() == dir.len() || dir.ends_with(b"/") || path[dir.len()] == b'/')
}

/// Paths with their links resolved, each once per profile: the program,
/// its prefixes and the homes are asked about several times, and each
/// resolution is a `readlink` per component (about 100 system calls a
/// profile before, for git). Never kept past one profile: links change.
#[derive(Default)]
struct Links(std::cell::RefCell<std::collections::HashMap<PathBuf, PathBuf>>);

impl Links {
    /// `path` with its links resolved, as far as it exists.
    fn real(&self, path: &Path) -> PathBuf {
        if let Some(r) = self.0.borrow().get(path) {
            return r.clone();
        }
        let r = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
        self.0.borrow_mut().insert(path.to_path_buf(), r.clone());
        r
    }

    /// Whether `program` (as named, or after links) is one of `names`.
    fn is_program(&self, program: &Path, names: &[&str]) -> bool {
        [program.to_path_buf(), self.real(program)]
            .iter()
            .any(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| names.contains(&n)))
    }
}

/// Where `program` was installed ([`prefixes`]) — or, when a prefix may
/// not be granted (`~/.local` holds verbgate's default home, `~` the
/// user's secrets), only the program file itself, as named and after
/// links: it still runs, and reads nothing of its neighbours.
fn installed(program: &Path, never: &Never) -> Vec<PathBuf> {
    let prefixes = prefixes(program, &never.links);
    if prefixes.iter().all(|p| never.allows(p)) {
        return prefixes;
    }
    [program.to_path_buf(), never.links.real(program)]
        .into_iter()
        .filter(|p| never.allows(p))
        .collect()
}

/// The entries of directory `dir` except those named in `but` (each entry
/// granted beneath, so the withheld ones stay closed).
fn entries_but(dir: &Path, but: &[&str]) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    entries
        .filter_map(|e| e.ok())
        .filter(|e| !but.iter().any(|b| e.file_name() == *b))
        .map(|e| e.path())
        .collect()
}

/// What a program that talks to the network reads to authenticate: git's
/// credential store and the user's ssh configuration and keys (a
/// `git.fetch` over ssh needs them); nothing for other programs.
fn credentials(program: &Path, env: &BTreeMap<String, String>, never: &Never) -> Vec<PathBuf> {
    let Some(home) = env.get("HOME").map(PathBuf::from) else { return Vec::new() };
    if never.links.is_program(program, &["git"]) {
        return vec![
            home.join(".ssh"),
            home.join(".git-credentials"),
            home.join(".config/git/credentials"),
        ];
    }
    Vec::new()
}

/// Absolute, existing paths, each once, none beneath another of the list.
fn tidy(paths: Vec<PathBuf>) -> Vec<PathBuf> {
    let mut kept: Vec<PathBuf> =
        paths.into_iter().filter(|p| p.is_absolute() && exists(p)).collect();
    // Sorted by components, everything beneath a path follows it at once
    // (`/usr`, `/usr/lib`, `/usr/local`, then `/usr2`): one pass against the
    // last path kept drops duplicates and descendants alike.
    kept.sort();
    let mut out: Vec<PathBuf> = Vec::with_capacity(kept.len());
    for p in kept {
        if !out.last().is_some_and(|q| p.starts_with(q)) {
            out.push(p);
        }
    }
    out
}

/// Whether `path` exists (as itself: a dangling link does). The system's
/// own directories ([`SYSTEM_READ`], [`SYSTEM_WRITE`]) are looked at once
/// per process, not once per started program (two dozen `lstat`s each
/// time): one that appears later is not granted until a restart (it only
/// ever denies more), and one that goes away is skipped when the ruleset
/// is made, as every path that cannot be opened is.
fn exists(path: &Path) -> bool {
    static SYSTEM: std::sync::OnceLock<Vec<(&'static str, bool)>> = std::sync::OnceLock::new();
    let system = SYSTEM.get_or_init(|| {
        SYSTEM_READ
            .iter()
            .chain(SYSTEM_WRITE)
            .map(|p| (*p, std::fs::symlink_metadata(p).is_ok()))
            .collect()
    });
    match system.iter().find(|(p, _)| Path::new(p).as_os_str() == path.as_os_str()) {
        Some((_, there)) => *there,
        None => std::fs::symlink_metadata(path).is_ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn derive(effects: Vec<Effect>, root: &Path, widen: &[Widening]) -> Profile {
        let env = BTreeMap::new();
        Profile::derive(&Inputs {
            verb: "x.y",
            effects: &Effects::declared(effects),
            root,
            program: Path::new("/usr/bin/git"),
            env: &env,
            widen,
            verbgate_home: Path::new("/nonexistent/verbgate-home"),
            also_read: vec![],
        })
    }

    #[test]
    fn effects_decide_the_root_and_the_network() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let read = derive(vec![Effect::ReadsRepo], root, &[]);
        assert!(
            read.read.iter().any(|p| p == root)
                && !read.write.iter().any(|p| p == root)
                && !read.network
        );
        for e in [Effect::WritesRepo, Effect::RunsRepoCode, Effect::Destructive] {
            let p = derive(vec![Effect::ReadsRepo, e], root, &[]);
            assert!(p.write.iter().any(|p| p == root) && !p.network, "{e:?}");
        }
        assert!(derive(vec![Effect::Network], root, &[]).network);
        let none = derive(vec![], root, &[]);
        assert!(
            !none.read.iter().chain(&none.write).any(|p| p == root),
            "a verb that declares no repository effect gets no root"
        );
        let env = BTreeMap::new();
        let undeclared = Profile::derive(&Inputs {
            verb: "x.y",
            effects: &Effects::Undeclared,
            root,
            program: Path::new("/usr/bin/git"),
            env: &env,
            widen: &[],
            verbgate_home: Path::new("/nonexistent/verbgate-home"),
            also_read: vec![],
        });
        assert!(undeclared.network && undeclared.write.iter().any(|p| p == root));
        assert_eq!(read.write, vec![PathBuf::from("/dev/null")]);
    }

    #[test]
    fn an_operator_widens_only_the_verbs_named() {
        let tmp = tempfile::tempdir().unwrap();
        let extra = tmp.path().join("data");
        std::fs::create_dir(&extra).unwrap();
        let w = Widening {
            verbs: vec!["x.*".into()],
            read: vec![extra.clone()],
            write: vec![],
            network: true,
            unix_sockets: false,
        };
        let p = derive(vec![Effect::ReadsRepo], tmp.path(), std::slice::from_ref(&w));
        assert!(p.network);
        let other = Widening { verbs: vec!["z.*".into()], ..w };
        assert!(!derive(vec![Effect::ReadsRepo], tmp.path(), &[other]).network);
    }

    #[test]
    fn go_writes_only_verbgates_cache_and_reads_its_modules_and_git_online_reads_credentials() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        let private = tmp.path().join("vg/toolcache/r/go-build");
        std::fs::create_dir_all(&private).unwrap();
        for d in [".cache/go-build", "go/pkg/mod", ".ssh"] {
            std::fs::create_dir_all(home.join(d)).unwrap();
        }
        let bin = tmp.path().join("goroot/bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::write(bin.join("go"), "").unwrap();
        let env: BTreeMap<String, String> =
            [("HOME".to_string(), home.display().to_string())].into_iter().collect();
        let root = tempfile::tempdir().unwrap();
        let at = |program: &Path, effects: Vec<Effect>| {
            Profile::derive(&Inputs {
                verb: "x.y",
                effects: &Effects::declared(effects),
                root: root.path(),
                program,
                env: &env,
                widen: &[],
                verbgate_home: Path::new("/nonexistent/verbgate-home"),
                also_read: vec![],
            })
        };
        let go = at(&bin.join("go"), vec![Effect::ReadsRepo]);
        assert!(
            !go.write.contains(&home.join(".cache/go-build")),
            "the user's own build cache is never written: {go:?}"
        );
        let mut with_cache = env.clone();
        with_cache.insert("GOCACHE".into(), private.display().to_string());
        let cached = Profile::derive(&Inputs {
            verb: "x.y",
            effects: &Effects::declared(vec![Effect::ReadsRepo]),
            root: root.path(),
            program: &bin.join("go"),
            env: &with_cache,
            widen: &[],
            verbgate_home: &tmp.path().join("vg"),
            also_read: vec![],
        });
        assert!(cached.write.contains(&private), "verbgate's private cache is: {cached:?}");
        assert!(
            go.read.contains(&home.join("go/pkg/mod"))
                && !go.write.contains(&home.join("go/pkg/mod")),
            "{go:?}"
        );
        let git = Path::new("/usr/bin/git");
        let env_home = |p: &Profile| p.read.contains(&home.join(".ssh"));
        assert!(env_home(&at(git, vec![Effect::ReadsRepo, Effect::Network])));
        assert!(!env_home(&at(git, vec![Effect::ReadsRepo])), "offline git reads no keys");
    }

    /// Issue 36's widenings: a program under `~/.local/bin` read all of
    /// `~/.local` (verbgate's default home); one under `~/bin` would read
    /// `~`; git read `~/.config/git/credentials`, cargo
    /// `~/.cargo/credentials.toml`; a script's `env -S` line or an
    /// interpreter inside the root chose what else was read.
    #[test]
    fn a_programs_location_never_grants_the_home_verbgates_home_or_credentials() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home").canonicalize().unwrap_or(tmp.path().join("home"));
        let vg = home.join(".local/share/verbgate");
        for d in [".local/bin", ".local/share/verbgate", "bin", ".config/git", ".cargo/bin"] {
            std::fs::create_dir_all(home.join(d)).unwrap();
        }
        // `~/.ssh` is a link into a dotfiles checkout with programs of its own.
        std::fs::create_dir_all(home.join("dotfiles/ssh")).unwrap();
        std::fs::create_dir_all(home.join("dotfiles/bin")).unwrap();
        std::fs::write(home.join("dotfiles/bin/sync"), "").unwrap();
        std::os::unix::fs::symlink(home.join("dotfiles/ssh"), home.join(".ssh")).unwrap();
        for f in [".local/bin/just", "bin/tool", ".config/git/config", ".config/git/credentials"] {
            std::fs::write(home.join(f), "").unwrap();
        }
        std::fs::write(home.join(".cargo/credentials.toml"), "token").unwrap();
        std::fs::write(home.join(".cargo/bin/cargo"), "").unwrap();
        std::fs::write(home.join(".gitconfig"), "").unwrap();
        let root = tempfile::tempdir().unwrap();
        let root = root.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join(".venv/bin")).unwrap();
        // The repository's own interpreter links into `~/.local`.
        std::os::unix::fs::symlink(home.join(".local/bin/just"), root.join(".venv/bin/python3"))
            .unwrap();
        let env: BTreeMap<String, String> = [
            ("HOME".to_string(), home.display().to_string()),
            ("PATH".to_string(), format!("{}:/usr/bin", root.join(".venv/bin").display())),
        ]
        .into_iter()
        .collect();
        let at = |program: &Path| {
            Profile::derive(&Inputs {
                verb: "x.y",
                effects: &Effects::declared(vec![Effect::ReadsRepo]),
                root: &root,
                program,
                env: &env,
                widen: &[],
                verbgate_home: &vg,
                also_read: vec![],
            })
        };
        let reaches = |p: &Profile, secret: &Path| p.read.iter().any(|r| secret.starts_with(r));
        let secrets = [
            home.join(".local/share/verbgate/keys"),
            home.join(".config/git/credentials"),
            home.join(".cargo/credentials.toml"),
            home.join(".ssh/id_ed25519"),
            home.join("dotfiles/ssh/id_ed25519"),
            home.join("notes.txt"),
        ];
        let dotfiles = at(&home.join("dotfiles/bin/sync"));
        let just = at(&home.join(".local/bin/just"));
        assert!(just.read.contains(&home.join(".local/bin/just")), "it still runs: {just:?}");
        let tool = at(&home.join("bin/tool"));
        let git_bin = tmp.path().join("usr/bin");
        std::fs::create_dir_all(&git_bin).unwrap();
        std::fs::write(git_bin.join("git"), "").unwrap();
        let git = at(&git_bin.join("git"));
        assert!(git.read.contains(&home.join(".config/git/config")), "{git:?}");
        assert!(git.read.contains(&home.join(".gitconfig")), "{git:?}");
        let cargo = at(&home.join(".cargo/bin/cargo"));
        assert!(cargo.read.contains(&home.join(".cargo/bin")), "{cargo:?}");
        // Scripts whose `#!` line would widen the profile.
        let split = tmp.path().join("opt/split/bin");
        std::fs::create_dir_all(&split).unwrap();
        std::fs::write(split.join("s"), format!("#!/usr/bin/env -S {}/x\n", home.display()))
            .unwrap();
        std::fs::write(split.join("r"), "#!/usr/bin/env python3\n").unwrap();
        for p in
            [&just, &tool, &git, &cargo, &dotfiles, &at(&split.join("s")), &at(&split.join("r"))]
        {
            for secret in &secrets {
                assert!(!reaches(p, secret), "{} is readable: {p:?}", secret.display());
            }
        }
    }

    #[test]
    fn a_resolution_only_reads() {
        let tmp = tempfile::tempdir().unwrap();
        let p = derive(vec![Effect::RunsRepoCode, Effect::Network], tmp.path(), &[]).read_only();
        assert!(
            p.read.iter().any(|r| r == tmp.path())
                && p.write == vec![PathBuf::from("/dev/null")]
                && !p.network
        );
    }

    #[test]
    fn tidy_keeps_each_top_path_once_and_only_what_exists() {
        let tmp = tempfile::tempdir().unwrap();
        let t = tmp.path();
        for d in ["a/b/c", "a/d", "a.b", "b"] {
            std::fs::create_dir_all(t.join(d)).unwrap();
        }
        let paths = ["a/b/c", "a.b", "a", "a/d", "a/b", "b", "a", "missing"];
        let got = tidy(paths.iter().map(|p| t.join(p)).chain([PathBuf::from("rel")]).collect());
        // By bytes `a.b` sorts between `a` and `a/b`; by components, as
        // tidy sorts, after all of `a`'s descendants.
        assert_eq!(got, vec![t.join("a"), t.join("a.b"), t.join("b")]);
    }

    #[test]
    fn under_answers_as_path_starts_with_does() {
        let cases = [
            "/",
            "/usr",
            "/usr/",
            "/usr/lib",
            "/usr2",
            "/usr/lib/x",
            "//usr",
            "/usr/./lib",
            "/u",
            "/usr/lib2",
            "/root/.ssh",
            "/root/.ssh2",
            "/root",
        ];
        for p in cases {
            for q in cases {
                let (p, q) = (clean(Path::new(p)), clean(Path::new(q)));
                assert_eq!(
                    under(p.as_os_str().as_bytes(), q.as_os_str().as_bytes()),
                    p.starts_with(&q),
                    "{p:?} under {q:?}"
                );
            }
        }
    }
}
