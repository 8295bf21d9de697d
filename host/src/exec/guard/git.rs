//! The git guard: no repository-controlled setting makes git start a
//! program, and git never reads a repository outside the root.
//!
//! Three layers, because each closes a different door:
//! 1. **Command-scope config the host sets** (`GIT_CONFIG_COUNT`, which wins
//!    over every config file and reaches the git processes git itself
//!    starts): `safe.bareRepository=explicit` (an embedded bare repository
//!    with its own config and `core.worktree` is never used),
//!    `log.showSignature=false` (no `gpg.program` on a signed commit),
//!    `core.fsmonitor=false`, `diff.ignoreSubmodules=dirty` (no `git status`
//!    inside a submodule, whose own config could name a filter); and
//!    `GIT_CEILING_DIRECTORIES` at the root's parent, so discovery never
//!    walks above the root.
//! 2. **A repository check** before git runs: the repository's own config
//!    (`local` and `worktree` scope, includes followed, as git itself reports
//!    it) and `.gitmodules` may not name a program (filter, diff and merge
//!    drivers, signature programs, pagers, editors, ssh and credential
//!    commands, shell aliases) nor re-enable submodule recursion; its git
//!    directory and work tree must be inside the root. Refusals name every
//!    key and the `trusted_repos` line that lets an operator vouch for the
//!    repository. Verdicts are cached by the identity (inode, size, times) of
//!    every file they depend on, so a normal op pays a few `stat`s.
//! 3. **The plan's own global options**: a plugin may pass only inert `-c`
//!    settings and pathspec flags before the subcommand (`-c
//!    core.fsmonitor=<program>`, `--exec-path`, `--git-dir`, `-C` are
//!    refused), because command-scope config from a plan is as strong as
//!    ours.

use std::collections::{BTreeMap, HashMap};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use serde_json::{json, Value};

use crate::error::{ErrorCode, OpError};
use crate::exec::run::{run_command, Prepared};

/// Config the host sets in command scope for every git it starts.
pub const HOST_CONFIG: &[(&str, &str)] = &[
    ("safe.bareRepository", "explicit"),
    ("core.fsmonitor", "false"),
    ("log.showSignature", "false"),
    ("diff.ignoreSubmodules", "dirty"),
    ("status.submoduleSummary", "false"),
    ("submodule.recurse", "false"),
];

/// Global options a plan may put before git's subcommand.
const SAFE_FLAGS: &[&str] =
    &["--no-pager", "--no-optional-locks", "--literal-pathspecs", "--glob-pathspecs", "--noglob-pathspecs", "--icase-pathspecs", "--no-replace-objects", "--no-advice"];

/// `-c` settings a plan may pass (lower-case key, and the only values
/// allowed, or `None` for any value): none of them names a program.
const SAFE_C: &[(&str, Option<&[&str]>)] = &[
    ("core.fsmonitor", Some(&["false"])),
    ("log.showsignature", Some(&["false"])),
    ("status.submodulesummary", Some(&["false"])),
    ("diff.ignoresubmodules", Some(&["dirty", "all"])),
    ("core.quotepath", None),
    ("core.abbrev", None),
    ("color.ui", None),
    ("log.decorate", None),
    ("log.date", None),
    ("i18n.logoutputencoding", None),
    ("diff.renames", None),
    ("diff.noprefix", None),
    ("status.renames", None),
    ("gc.auto", Some(&["0"])),
    ("maintenance.auto", Some(&["false"])),
];

/// How long the repository check may take (it runs `git config` and `git
/// rev-parse`, never a program the repository names).
const CHECK_TIMEOUT: Duration = Duration::from_secs(10);
/// Capture bound for the check's own git output.
const CHECK_CAPTURE: usize = 4 << 20;
/// Verdicts kept; the cache is cleared when it fills (it is per root, so it
/// stays tiny in practice).
const CACHE_ENTRIES: usize = 256;

/// Host-side hardening of a git plan: the plan's global options, the
/// ceiling, and the command-scope config.
pub fn harden(p: &mut Prepared, root: &Path) -> Result<(), OpError> {
    check_global_options(&p.argv)?;
    if let Some(parent) = root.parent() {
        p.env.insert("GIT_CEILING_DIRECTORIES".into(), parent.display().to_string());
    }
    p.env.extend(host_config_env());
    Ok(())
}

fn check_global_options(argv: &[String]) -> Result<(), OpError> {
    let refuse = |opt: &str, why: &str| {
        OpError::new(ErrorCode::PlanRefused, format!("the plan passes git the global option {opt:?}, which {why}"))
            .with("program", "git")
            .with("option", opt)
    };
    let mut i = 0;
    while let Some(a) = argv.get(i) {
        if !a.starts_with('-') {
            return Ok(());
        }
        if a == "-c" {
            let kv = argv.get(i + 1).map(String::as_str).unwrap_or_default();
            let (key, value) = kv.split_once('=').unwrap_or((kv, "true"));
            let lower = key.to_ascii_lowercase();
            let ok = SAFE_C.iter().any(|(k, vals)| *k == lower && vals.is_none_or(|vals| vals.contains(&value)));
            if !ok {
                return Err(refuse(&format!("-c {kv}"), "is not one of the inert settings a plan may pass (command-scope config can name programs)"));
            }
            i += 2;
            continue;
        }
        if !SAFE_FLAGS.contains(&a.as_str()) {
            return Err(refuse(a, "plans may not use (it changes which repository or programs git uses)"));
        }
        i += 1;
    }
    Ok(())
}

/// A file's identity: a verdict holds while every file it read is unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp(Option<(u64, u64, u64, i64, i64, i64, i64)>);

impl Stamp {
    fn of(path: &Path) -> Stamp {
        Stamp(std::fs::symlink_metadata(path).ok().map(|m| (m.dev(), m.ino(), m.size(), m.mtime(), m.mtime_nsec(), m.ctime(), m.ctime_nsec())))
    }
}

/// The repository check and its cache.
#[derive(Debug, Default)]
pub struct GitGuard {
    trusted: Vec<PathBuf>,
    cache: Mutex<HashMap<(PathBuf, PathBuf), Vec<(PathBuf, Stamp)>>>,
}

/// Where git found the repository.
struct Layout {
    git_dir: PathBuf,
    common_dir: PathBuf,
    top: Option<PathBuf>,
}

impl GitGuard {
    /// A guard trusting the listed repositories (work trees or git dirs).
    pub fn new(trusted: Vec<PathBuf>) -> GitGuard {
        GitGuard { trusted: trusted.into_iter().map(|p| p.canonicalize().unwrap_or(p)).collect(), cache: Mutex::default() }
    }

    /// Refuse the plan if the repository git will see names programs in its
    /// own config or lies outside the root.
    pub async fn check(&self, p: &Prepared, root: &Path) -> Result<(), OpError> {
        let key = (p.cwd.clone(), p.program.clone());
        if let Some(stamps) = self.cache.lock().unwrap().get(&key) {
            if stamps.iter().all(|(path, s)| Stamp::of(path) == *s) {
                return Ok(());
            }
        }
        let Some(layout) = self.layout(p).await? else {
            // Not a repository: the plan's git will say so itself.
            return Ok(());
        };
        let repo = layout.top.clone().unwrap_or_else(|| layout.git_dir.clone());
        if self.trusted(&layout) {
            return Ok(());
        }
        for (what, dir) in [("git directory", Some(&layout.git_dir)), ("git common directory", Some(&layout.common_dir)), ("work tree", layout.top.as_ref())] {
            let Some(dir) = dir else { continue };
            if !dir.starts_with(root) {
                return Err(OpError::new(
                    ErrorCode::RepoOutsideRoot,
                    format!(
                        "the repository's {what} is {}, outside the root {}; verbgate never lets git read a repository outside the root. \
                         If you trust it, add it to `trusted_repos` in verbgate.toml: trusted_repos = [{:?}]",
                        dir.display(),
                        root.display(),
                        repo.display().to_string()
                    ),
                )
                .with("repository", repo.display().to_string())
                .with("path", dir.display().to_string()));
            }
        }
        let (findings, mut stamped, cacheable) = self.config_findings(p, &layout).await?;
        if !findings.is_empty() {
            let keys: Vec<String> = findings.iter().map(|f| f["key"].as_str().unwrap_or_default().to_string()).collect();
            return Err(OpError::new(
                ErrorCode::RepoConfigRunsPrograms,
                format!(
                    "the repository {}'s own config names programs git could run ({}); verbgate refuses it so that a read never starts a \
                     program the repository chose. Remove the settings, or if you trust this repository add it to `trusted_repos` in \
                     verbgate.toml: trusted_repos = [{:?}]",
                    repo.display(),
                    keys.join(", "),
                    repo.display().to_string()
                ),
            )
            .with("repository", repo.display().to_string())
            .with("keys", Value::Array(findings))
            .with("config_line", format!("trusted_repos = [{:?}]", repo.display().to_string())));
        }
        if cacheable {
            // Every `.git` from the directory git starts in up to the work
            // tree: a new one there would change which repository git sees.
            let mut d = Some(p.cwd.as_path());
            while let Some(dir) = d {
                stamped.push(dir.join(".git"));
                if layout.top.as_deref().is_none_or(|t| dir == t) || !dir.starts_with(root) {
                    break;
                }
                d = dir.parent();
            }
            let stamps = stamped.into_iter().map(|path| {
                let s = Stamp::of(&path);
                (path, s)
            });
            let mut cache = self.cache.lock().unwrap();
            if cache.len() >= CACHE_ENTRIES {
                cache.clear();
            }
            cache.insert(key, stamps.collect());
        }
        Ok(())
    }

    fn trusted(&self, l: &Layout) -> bool {
        self.trusted.iter().any(|t| l.top.as_ref() == Some(t) || &l.common_dir == t || &l.git_dir == t)
    }

    /// Run git with the plan's hardened environment and directory; its exit
    /// status and stdout.
    async fn git(&self, p: &Prepared, args: &[&str]) -> Result<(bool, Vec<u8>, String), OpError> {
        let q = Prepared { argv: args.iter().map(|s| s.to_string()).collect(), stdin: None, timeout: CHECK_TIMEOUT, truncate_stdout: false, ..p.clone() };
        let out = run_command(&q, CHECK_CAPTURE).await.map_err(|e| {
            let msg = format!("cannot check the repository's config with `git {}`: {}", args.join(" "), e.message);
            OpError::new(e.code, msg)
        })?;
        Ok((out.exit_code == Some(0), out.stdout, String::from_utf8_lossy(&out.stderr).trim().chars().take(2000).collect()))
    }

    async fn layout(&self, p: &Prepared) -> Result<Option<Layout>, OpError> {
        // rev-parse prints as it goes: inside a git directory (`repo:
        // ".git"`) or a bare repository `--show-toplevel` fails after the
        // first two lines, which still say which repository git uses.
        let (_, out, _) = self.git(p, &["rev-parse", "--path-format=absolute", "--git-dir", "--git-common-dir", "--show-toplevel"]).await?;
        let text = String::from_utf8_lossy(&out);
        let mut lines = text.lines();
        let canon = |s: Option<&str>| s.map(|s| Path::new(s).canonicalize().unwrap_or_else(|_| PathBuf::from(s)));
        let (Some(git_dir), Some(common_dir)) = (canon(lines.next()), canon(lines.next())) else { return Ok(None) };
        let top = canon(lines.next());
        Ok(Some(Layout { git_dir, common_dir, top }))
    }

    /// What in the repository's own config names a program, the files the
    /// verdict depends on, and whether it can be cached (it cannot when the
    /// config includes other files, which could change unseen).
    async fn config_findings(&self, p: &Prepared, l: &Layout) -> Result<(Vec<Value>, Vec<PathBuf>, bool), OpError> {
        let mut findings = Vec::new();
        let mut files = vec![l.git_dir.join("config"), l.git_dir.join("config.worktree"), l.common_dir.join("config"), l.common_dir.join("config.worktree")];
        let mut cacheable = true;
        let (ok, out, err) = self.git(p, &["config", "--list", "--show-scope", "--show-origin", "-z"]).await?;
        if !ok {
            // Nothing is cached and nothing runs: config git cannot read is
            // config nobody checked.
            return Err(OpError::new(ErrorCode::ExitNonzero, format!("git cannot read the repository's config, so verbgate cannot check it: {err}")).with("stderr", err));
        }
        for entry in parse_listing(&out, true) {
            if entry.scope != "local" && entry.scope != "worktree" {
                continue;
            }
            if let Some(file) = entry.origin.strip_prefix("file:") {
                files.push(p.cwd.join(file));
            }
            let lower = entry.key.to_ascii_lowercase();
            if lower.starts_with("include.") || lower.starts_with("includeif.") {
                cacheable = false;
            }
            if let Some(why) = runs_program(&entry.key, &entry.value) {
                findings.push(json!({ "key": entry.key, "value": entry.value, "origin": entry.origin, "why": why }));
            }
        }
        if let Some(top) = &l.top {
            let gitmodules = top.join(".gitmodules");
            files.push(gitmodules.clone());
            if std::fs::symlink_metadata(&gitmodules).is_ok_and(|m| m.is_file()) {
                let path = gitmodules.display().to_string();
                let (ok, out, err) = self.git(p, &["config", "--file", &path, "--list", "-z"]).await?;
                if !ok {
                    return Err(OpError::new(ErrorCode::ExitNonzero, format!("git cannot read {path}, so verbgate cannot check it: {err}")).with("stderr", err));
                }
                for entry in parse_listing(&out, false) {
                    if let Some(why) = runs_program(&entry.key, &entry.value) {
                        findings.push(json!({ "key": entry.key, "value": entry.value, "origin": format!("file:{path}"), "why": why }));
                    }
                }
            }
        }
        Ok((findings, files, cacheable))
    }
}

/// One entry of `git config --list -z`.
struct Entry {
    scope: String,
    origin: String,
    key: String,
    value: String,
}

/// Parse `git config --list -z` (with `--show-scope --show-origin` when
/// `scoped`): NUL-terminated fields, key and value split at the first
/// newline (a key without a value has none).
fn parse_listing(out: &[u8], scoped: bool) -> Vec<Entry> {
    let text = String::from_utf8_lossy(out);
    let mut fields = text.split('\0');
    let mut entries = Vec::new();
    loop {
        let (scope, origin) = if scoped {
            match (fields.next(), fields.next()) {
                (Some(s), Some(o)) => (s.to_string(), o.to_string()),
                _ => break,
            }
        } else {
            ("local".to_string(), String::new())
        };
        let Some(kv) = fields.next() else { break };
        if kv.is_empty() {
            break;
        }
        let (key, value) = kv.split_once('\n').unwrap_or((kv, ""));
        entries.push(Entry { scope, origin, key: key.to_string(), value: value.to_string() });
    }
    entries
}

/// Why `key = value` in a repository's own config would let it choose a
/// program git runs, or `None` if it cannot.
pub fn runs_program(key: &str, value: &str) -> Option<&'static str> {
    let lower = key.to_ascii_lowercase();
    let (section, rest) = lower.split_once('.')?;
    let (sub, name) = match rest.rsplit_once('.') {
        Some((sub, name)) => (Some(sub), name),
        None => (None, rest),
    };
    let shell_or_path = value.starts_with('!') || value.contains('/') || value.contains(' ');
    Some(match (section, sub.is_some(), name) {
        ("filter", true, "clean" | "smudge" | "process") => "a filter driver runs this program on file contents",
        ("diff", true, "command" | "textconv") => "a diff driver runs this program",
        ("diff", false, "external") => "an external diff program",
        ("merge", true, "driver") => "a merge driver runs this program",
        ("gpg", _, "program") => "a signature program",
        ("gpg", true, "defaultkeycommand") => "a signing-key program",
        ("core", false, "sshcommand" | "askpass" | "editor" | "pager" | "hookspath" | "gitproxy" | "alternaterefscommand") => "names a program git runs",
        ("core", false, "worktree") => "moves the work tree (it must stay inside the root)",
        ("sequence", false, "editor") => "an editor program",
        ("pager", _, _) => "a pager program",
        ("credential", _, "helper") if shell_or_path => "a credential helper program",
        ("remote", true, "uploadpack" | "receivepack") => "a remote helper program",
        ("alias", _, _) if value.starts_with('!') => "a shell alias",
        ("uploadpack", false, "packobjectshook") => "a pack hook program",
        ("difftool" | "mergetool", true, "cmd" | "path") => "a diff or merge tool",
        ("man" | "browser", true, "cmd" | "path") => "a viewer program",
        ("submodule", true, "ignore") if !matches!(value, "dirty" | "all") => {
            "makes git look inside submodules, whose own config could name programs"
        }
        ("submodule", true, "update") if value.starts_with('!') => "a submodule update command",
        _ => return None,
    })
}

/// The command-scope config as environment, for tests and `dry_run` readers.
pub fn host_config_env() -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    env.insert("GIT_CONFIG_COUNT".into(), HOST_CONFIG.len().to_string());
    for (i, (k, v)) in HOST_CONFIG.iter().enumerate() {
        env.insert(format!("GIT_CONFIG_KEY_{i}"), (*k).into());
        env.insert(format!("GIT_CONFIG_VALUE_{i}"), (*v).into());
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn program_naming_keys_are_found() {
        for (k, v) in [
            ("filter.x.clean", "touch pwned"),
            ("filter.lfs.process", "git-lfs filter-process"),
            ("diff.x.textconv", "cat"),
            ("diff.x.command", "sh"),
            ("diff.external", "sh"),
            ("gpg.program", "sh"),
            ("gpg.ssh.program", "sh"),
            ("gpg.ssh.defaultKeyCommand", "sh"),
            ("core.sshCommand", "sh"),
            ("core.pager", "less"),
            ("alias.st", "!sh -c x"),
            ("submodule.sub.ignore", "none"),
            ("credential.helper", "!sh"),
        ] {
            assert!(runs_program(k, v).is_some(), "{k}");
        }
        for (k, v) in [("core.bare", "false"), ("user.name", "x"), ("alias.st", "status"), ("credential.helper", "store"), ("submodule.sub.ignore", "dirty"), ("filter", "x")] {
            assert!(runs_program(k, v).is_none(), "{k}");
        }
    }

    #[test]
    fn plans_may_pass_only_inert_global_options() {
        let ok = |a: &[&str]| check_global_options(&a.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert!(ok(&["-c", "core.fsmonitor=false", "status", "-c", "anything"]).is_ok());
        assert!(ok(&["--no-pager", "log"]).is_ok());
        for bad in [
            &["-c", "core.fsmonitor=/bin/sh", "status"][..],
            &["-c", "filter.x.clean=sh", "status"],
            &["-c", "core.pager=sh", "log"],
            &["-C", "/etc", "log"],
            &["--git-dir=/elsewhere/.git", "log"],
            &["--exec-path=/tmp", "log"],
            &["--config-env=core.pager=X", "log"],
        ] {
            let e = ok(bad).unwrap_err();
            assert_eq!(e.code, ErrorCode::PlanRefused, "{bad:?}");
        }
    }

    #[test]
    fn listings_parse_with_and_without_values() {
        let out = b"local\0file:.git/config\0core.bare\nfalse\0local\0file:.git/config\0novalue\0";
        let e = parse_listing(out, true);
        assert_eq!(e.len(), 2);
        assert_eq!((e[0].key.as_str(), e[0].value.as_str()), ("core.bare", "false"));
        assert_eq!((e[1].key.as_str(), e[1].value.as_str()), ("novalue", ""));
        assert_eq!(host_config_env()["GIT_CONFIG_KEY_0"], "safe.bareRepository");
    }

    fn git_path() -> PathBuf {
        std::env::split_paths(&std::env::var_os("PATH").unwrap()).map(|d| d.join("git")).find(|p| p.is_file()).expect("git on PATH")
    }

    fn sh(dir: &Path, args: &[&str]) {
        let ok = std::process::Command::new("git")
            .args(["-c", "user.name=a", "-c", "user.email=a@example.com"])
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", dir)
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    }

    #[tokio::test]
    async fn a_cached_verdict_is_dropped_when_the_config_changes() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap().join("root");
        std::fs::create_dir(&root).unwrap();
        sh(&root, &["init", "-q"]);
        std::fs::write(root.join("f"), "x").unwrap();
        sh(&root, &["add", "f"]);
        sh(&root, &["commit", "-q", "-m", "c"]);
        let mut p = Prepared {
            name: "git".into(),
            program: git_path(),
            argv: vec!["status".into()],
            cwd: root.clone(),
            env: [("PATH".to_string(), std::env::var("PATH").unwrap()), ("HOME".to_string(), root.display().to_string())].into_iter().collect(),
            stdin: None,
            timeout: Duration::from_secs(10),
            truncate_stdout: false,
        };
        harden(&mut p, &root).unwrap();
        let guard = GitGuard::default();
        guard.check(&p, &root).await.unwrap();
        assert_eq!(guard.cache.lock().unwrap().len(), 1, "a clean verdict is cached");
        guard.check(&p, &root).await.unwrap();
        let mut cfg = std::fs::read_to_string(root.join(".git/config")).unwrap();
        cfg.push_str("[filter \"x\"]\n\tclean = touch pwned\n");
        std::fs::write(root.join(".git/config"), cfg).unwrap();
        let e = guard.check(&p, &root).await.unwrap_err();
        assert_eq!(e.code, ErrorCode::RepoConfigRunsPrograms);
        assert_eq!(e.details["keys"][0]["key"], "filter.x.clean");
        // A config that includes another file is never cached: the included
        // file could change without the config changing.
        sh(&root, &["config", "--unset", "filter.x.clean"]);
        std::fs::write(root.join("inc"), "").unwrap();
        sh(&root, &["config", "include.path", "../inc"]);
        guard.check(&p, &root).await.unwrap();
        std::fs::write(root.join("inc"), "[diff \"y\"]\n\ttextconv = evil\n").unwrap();
        let e = guard.check(&p, &root).await.unwrap_err();
        assert_eq!(e.details["keys"][0]["key"], "diff.y.textconv");
    }
}
