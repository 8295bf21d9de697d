//! The git guard's repository check, before git runs: the repository git
//! will use must lie inside the root — its git directory, common directory
//! and work tree, every symlink inside its git directories, and every object
//! store it borrows through `objects/info/alternates` — and its own config
//! (`local` and `worktree` scope, includes followed, exactly as git itself
//! lists it) may not name a program. Refusals name every offending key or
//! path and the `trusted_repos` line that lets an operator vouch for the
//! repository.
//!
//! Verdicts are cached per (directory, program) and hold while every file
//! they depend on keeps its identity (`lstat` and `stat`: inode, size,
//! times): the configs and their origins, `commondir`, `gitdir`, the
//! alternates files, every `.git` between the directory and the work tree,
//! and every directory of the git directories except the loose-object
//! fan-out (`objects/ab/`), whose times change when an entry is added. The
//! fixed files are stamped *before* the check, so a write during the check
//! invalidates the verdict. A config that includes another file is never
//! cached (the included file could change unseen).

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use serde_json::{json, Value};

use super::git::{parse_listing, runs_program};
use crate::error::{ErrorCode, OpError};
use crate::exec::run::{run_command, Prepared};

/// How long each of the check's own git calls may take (`git rev-parse`,
/// `git config --list`: they never run a program the repository names).
const CHECK_TIMEOUT: Duration = Duration::from_secs(10);
/// Capture bound for the check's own git output.
const CHECK_CAPTURE: usize = 4 << 20;
/// Verdicts kept; the cache is cleared when it fills (it is per directory
/// of one root, so it stays tiny in practice).
const CACHE_ENTRIES: usize = 256;
/// The most entries of a git directory the symlink walk visits. A repository
/// with more (millions of loose objects) is refused with advice to pack it:
/// an unbounded walk would let a repository stall every op.
const WALK_LIMIT: usize = 500_000;
/// How deep `objects/info/alternates` chains are followed.
const ALTERNATES_DEPTH: usize = 5;

/// Device, inode, size, modification and change times (seconds, nanoseconds).
type FileId = (u64, u64, u64, i64, i64, i64, i64);

/// A file's identity, through the link and at its target.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp([Option<FileId>; 2]);

impl Stamp {
    fn of(path: &Path) -> Stamp {
        let id = |m: std::fs::Metadata| {
            (m.dev(), m.ino(), m.size(), m.mtime(), m.mtime_nsec(), m.ctime(), m.ctime_nsec())
        };
        let link = std::fs::symlink_metadata(path).ok();
        // Only a link has a target of its own to stat: for anything else
        // the second answer is the first (one `stat` a file, not two).
        let target = match &link {
            Some(m) if !m.file_type().is_symlink() => Some(m.clone()),
            _ => std::fs::metadata(path).ok(),
        };
        Stamp([link.map(id), target.map(id)])
    }
}

/// A clean verdict for one (directory, program): the files it read and
/// their identity then.
type Verdict = Vec<(PathBuf, Stamp)>;

/// Each file of a verdict once, and whether its stamps agreed: a file is
/// named twice (the config as the git dir's and the common dir's) or
/// stamped before the check and again after it. A file that changed
/// while git read it (swapped back and forth by a repository's own
/// program) leaves nothing to cache (`false`).
fn settle(stamps: &mut Verdict) -> bool {
    stamps.sort_by(|a, b| a.0.cmp(&b.0));
    let changed = stamps.windows(2).any(|w| w[0].0 == w[1].0 && w[0].1 != w[1].1);
    stamps.dedup_by(|a, b| a.0 == b.0);
    !changed
}

/// Where git found the repository (canonical paths).
struct Layout {
    git_dir: PathBuf,
    common_dir: PathBuf,
    top: Option<PathBuf>,
}

impl Layout {
    /// The repository as a person names it.
    fn name(&self) -> PathBuf {
        self.top.clone().unwrap_or_else(|| self.git_dir.clone())
    }
}

/// The repository check and its verdict cache.
#[derive(Debug, Default)]
pub struct GitGuard {
    trusted: Vec<PathBuf>,
    cache: Mutex<HashMap<(PathBuf, PathBuf), Verdict>>,
}

fn trust_line(repo: &Path) -> String {
    format!("trusted_repos = [{:?}]", repo.display().to_string())
}

fn outside(repo: &Path, what: &str, path: &Path, root: &Path) -> OpError {
    OpError::new(
        ErrorCode::RepoOutsideRoot,
        format!(
            "the repository's {what} {} is outside the root {}; verbgate never lets git read a repository outside the root. If you \
             trust this repository, add it to verbgate.toml: {}",
            path.display(),
            root.display(),
            trust_line(repo)
        ),
    )
    .with("repository", repo.display().to_string())
    .with("path", path.display().to_string())
    .with("config_line", trust_line(repo))
}

/// `not_a_repository`: git finds no repository for `dir` (below the
/// ceiling at the root's parent); `said` is git's own word on it.
fn not_a_repository(dir: &Path, root: &Path, said: &str) -> OpError {
    let said: String = said.chars().take(300).collect();
    OpError::new(
        ErrorCode::NotARepository,
        format!(
            "{} is not inside a git repository within the root {} (git: {}); git verbs run only in a repository. Give `repo` a directory of one, or serve a root that is (or contains) one",
            dir.display(),
            root.display(),
            if said.is_empty() { "no answer" } else { &said }
        ),
    )
    .with("path", dir.display().to_string())
}

impl GitGuard {
    /// A guard trusting the listed repositories (work trees or git dirs).
    pub fn new(trusted: Vec<PathBuf>) -> GitGuard {
        GitGuard {
            trusted: trusted.into_iter().map(|p| p.canonicalize().unwrap_or(p)).collect(),
            cache: Mutex::default(),
        }
    }

    /// Refuse the plan if the repository git will use lies (in any part)
    /// outside the root or names programs in its own config.
    pub async fn check(&self, p: &Prepared, root: &Path) -> Result<(), OpError> {
        let cwd_text = p.cwd.as_os_str().to_string_lossy();
        if cwd_text.chars().any(char::is_control) {
            return Err(OpError::new(
                ErrorCode::PlanRefused,
                format!("the working directory {cwd_text:?} contains control characters; git's answers about it could not be read unambiguously"),
            )
            .with("path", cwd_text.as_ref()));
        }
        let key = (p.cwd.clone(), p.program.clone());
        if let Some(stamps) = self.cache.lock().unwrap().get(&key) {
            if stamps.iter().all(|(path, s)| Stamp::of(path) == *s) {
                return Ok(());
            }
        }
        let layout = match self.layout(p).await? {
            Ok(layout) => layout,
            // Not a repository: refused, not left to git, which would fall
            // back to `--no-index` and compare any two files it is given
            // (`git diff /outside/file x`), inside the root or not.
            Err(said) => return Err(not_a_repository(&p.cwd, root, &said)),
        };
        let mut files = vec![
            layout.git_dir.join("config"),
            layout.git_dir.join("config.worktree"),
            layout.git_dir.join("commondir"),
            layout.git_dir.join("gitdir"),
            layout.common_dir.join("config"),
            layout.common_dir.join("config.worktree"),
            layout.common_dir.join("objects/info/alternates"),
        ];
        // Every `.git` from the directory git starts in up to the work
        // tree: a new one there would change which repository git sees.
        let mut d = Some(p.cwd.as_path());
        while let Some(dir) = d.filter(|d| d.starts_with(root)) {
            files.push(dir.join(".git"));
            if layout.top.as_deref().is_none_or(|t| dir == t) {
                break;
            }
            d = dir.parent();
        }
        let mut stamps: Vec<(PathBuf, Stamp)> =
            files.into_iter().map(|f| (f.clone(), Stamp::of(&f))).collect();
        let cacheable = if self.trusted.iter().any(|t| {
            layout.top.as_ref() == Some(t) || &layout.common_dir == t || &layout.git_dir == t
        }) {
            true
        } else {
            let dirs = self.contained(&layout, root)?;
            let (origins, cacheable) = self.config(p, &layout).await?;
            stamps.extend(origins.into_iter().chain(dirs).map(|f| (f.clone(), Stamp::of(&f))));
            cacheable
        };
        let settled = settle(&mut stamps);
        if cacheable && settled {
            let mut cache = self.cache.lock().unwrap();
            if cache.len() >= CACHE_ENTRIES {
                cache.clear();
            }
            cache.insert(key, stamps);
        }
        Ok(())
    }

    /// Run git with the plan's hardened environment and directory: success,
    /// stdout, and the start of stderr.
    async fn git(&self, p: &Prepared, args: &[&str]) -> Result<(bool, Vec<u8>, String), OpError> {
        let q = Prepared {
            argv: args.iter().map(|s| s.to_string()).collect(),
            stdin: None,
            timeout: CHECK_TIMEOUT,
            truncate_stdout: false,
            ..p.clone()
        };
        let out = run_command(&q, CHECK_CAPTURE).await.map_err(|e| {
            let msg =
                format!("cannot check the repository with `git {}`: {}", args.join(" "), e.message);
            OpError::new(e.code, msg)
        })?;
        Ok((
            out.exit_code == Some(0),
            out.stdout,
            String::from_utf8_lossy(&out.stderr).trim().chars().take(2000).collect(),
        ))
    }

    /// Where the repository of `p`'s directory is, or (inner `Err`) what
    /// git said when it found none.
    async fn layout(&self, p: &Prepared) -> Result<Result<Layout, String>, OpError> {
        // rev-parse prints as it goes: inside a git directory (`repo:
        // ".git"`) or a bare repository `--show-toplevel` fails after the
        // first two lines, which still say which repository git uses.
        let (_, out, said) = self
            .git(
                p,
                &[
                    "rev-parse",
                    "--path-format=absolute",
                    "--git-dir",
                    "--git-common-dir",
                    "--show-toplevel",
                ],
            )
            .await?;
        let text = String::from_utf8_lossy(&out);
        let lines: Vec<&str> = text.lines().collect();
        let odd = || {
            OpError::new(
                ErrorCode::PlanRefused,
                format!("git described the repository in a way verbgate cannot read unambiguously ({} lines: {text:?}); nothing ran", lines.len()),
            )
            .with("git_output", text.as_ref())
        };
        if lines.len() < 2 {
            return Ok(Err(said));
        }
        if lines.len() > 3 {
            // A path with a newline in it: refuse rather than guess.
            return Err(odd());
        }
        let canon = |s: &str| Path::new(s).canonicalize().map_err(|_| odd());
        Ok(Ok(Layout {
            git_dir: canon(lines[0])?,
            common_dir: canon(lines[1])?,
            top: lines.get(2).map(|s| canon(s)).transpose()?,
        }))
    }

    /// The git directory, common directory, work tree, every symlink in the
    /// git directories and every alternate object store lie inside `root`;
    /// the directories whose identity the verdict depends on.
    fn contained(&self, l: &Layout, root: &Path) -> Result<Vec<PathBuf>, OpError> {
        let repo = l.name();
        for (what, dir) in [
            ("git directory", Some(&l.git_dir)),
            ("git common directory", Some(&l.common_dir)),
            ("work tree", l.top.as_ref()),
        ] {
            if let Some(dir) = dir.filter(|d| !d.starts_with(root)) {
                return Err(outside(&repo, what, dir, root));
            }
        }
        let mut dirs = vec![l.git_dir.clone()];
        if l.common_dir != l.git_dir {
            dirs.push(l.common_dir.clone());
        }
        let mut visited = 0usize;
        let mut seen = Vec::new();
        for dir in &dirs {
            walk_symlinks(dir, root, &repo, &mut visited, &mut seen)?;
        }
        let mut stores = vec![(l.common_dir.join("objects"), 0usize)];
        while let Some((objects, depth)) = stores.pop() {
            if std::fs::symlink_metadata(objects.join("info/http-alternates")).is_ok() {
                return Err(outside(
                    &repo,
                    "http alternates file",
                    &objects.join("info/http-alternates"),
                    root,
                ));
            }
            let Ok(text) = std::fs::read_to_string(objects.join("info/alternates")) else {
                continue;
            };
            for line in text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#'))
            {
                let alt = objects.join(line.trim_matches('"'));
                let resolved = alt.canonicalize().unwrap_or_else(|_| lexical(&alt));
                if !resolved.starts_with(root) {
                    return Err(outside(&repo, "alternate object store", &resolved, root));
                }
                if depth + 1 >= ALTERNATES_DEPTH {
                    return Err(outside(
                        &repo,
                        "alternates chain (too deep to check)",
                        &resolved,
                        root,
                    ));
                }
                walk_symlinks(&resolved, root, &repo, &mut visited, &mut seen)?;
                stores.push((resolved, depth + 1));
            }
        }
        Ok(seen)
    }

    /// Refuse program-naming keys in the repository's own config; the files
    /// the listing came from, and whether the verdict may be cached.
    async fn config(&self, p: &Prepared, l: &Layout) -> Result<(Vec<PathBuf>, bool), OpError> {
        let (ok, out, err) =
            self.git(p, &["config", "--list", "--show-scope", "--show-origin", "-z"]).await?;
        if !ok {
            // Nothing is cached and nothing runs: config git cannot read is
            // config nobody checked.
            return Err(OpError::new(
                ErrorCode::ExitNonzero,
                format!(
                    "git cannot read the repository's config, so verbgate cannot check it: {err}"
                ),
            )
            .with("stderr", err));
        }
        let mut findings = Vec::new();
        let mut origins = Vec::new();
        let mut cacheable = true;
        for entry in parse_listing(&out, true) {
            if entry.scope != "local" && entry.scope != "worktree" {
                continue;
            }
            if let Some(file) = entry.origin.strip_prefix("file:") {
                origins.push(p.cwd.join(file));
            }
            let lower = entry.key.to_ascii_lowercase();
            if lower.starts_with("include.") || lower.starts_with("includeif.") {
                cacheable = false;
            }
            if let Some(why) = runs_program(&entry.key, &entry.value) {
                findings.push(json!({ "key": entry.key, "origin": entry.origin, "why": why }));
            }
        }
        if findings.is_empty() {
            return Ok((origins, cacheable));
        }
        let repo = l.name();
        let keys: Vec<&str> = findings.iter().filter_map(|f| f["key"].as_str()).collect();
        Err(OpError::new(
            ErrorCode::RepoConfigRunsPrograms,
            format!(
                "the repository {}'s own config names programs git could run ({}); verbgate refuses it so that a read never starts a \
                 program the repository chose. Remove the settings, or if you trust this repository add it to verbgate.toml: {}",
                repo.display(),
                keys.join(", "),
                trust_line(&repo)
            ),
        )
        .with("repository", repo.display().to_string())
        .with("keys", Value::Array(findings))
        .with("config_line", trust_line(&repo)))
    }
}

/// Refuse a symlink under `dir` (not following any) that leads outside
/// `root`: git follows symlinked refs, object files and packs. Collects the
/// directories walked (but the loose-object fan-out) into `seen`.
fn walk_symlinks(
    dir: &Path,
    root: &Path,
    repo: &Path,
    visited: &mut usize,
    seen: &mut Vec<PathBuf>,
) -> Result<(), OpError> {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let fan_out = d.parent().is_some_and(|p| p.ends_with("objects"))
            && d.file_name().is_some_and(|n| n.len() == 2);
        if !fan_out {
            seen.push(d.clone());
        }
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for entry in entries.flatten() {
            *visited += 1;
            if *visited > WALK_LIMIT {
                return Err(OpError::new(
                    ErrorCode::PlanRefused,
                    format!("the repository {} has more than {WALK_LIMIT} files in its git directory, too many to check; pack it (`git gc`)", repo.display()),
                )
                .with("repository", repo.display().to_string()));
            }
            let Ok(ft) = entry.file_type() else { continue };
            let path = entry.path();
            if ft.is_dir() {
                stack.push(path);
            } else if ft.is_symlink() {
                let target = path.canonicalize().unwrap_or_else(|_| {
                    let link = std::fs::read_link(&path).unwrap_or_default();
                    lexical(&path.parent().unwrap_or(Path::new("/")).join(link))
                });
                if !target.starts_with(root) {
                    return Err(outside(repo, "symlink", &path, root)
                        .with("target", target.display().to_string()));
                }
            }
        }
    }
    Ok(())
}

/// `path` with `.` and `..` resolved by name (for a link whose target does
/// not exist yet: where it would lead once it does).
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_that_changed_during_the_check_leaves_no_verdict() {
        let tmp = tempfile::tempdir().unwrap();
        let (a, b) = (tmp.path().join("config"), tmp.path().join("gitdir"));
        std::fs::write(&a, "one").unwrap();
        let before = Stamp::of(&a);
        let mut same = vec![
            (a.clone(), before.clone()),
            (b.clone(), Stamp::of(&b)),
            (a.clone(), before.clone()),
        ];
        assert!(settle(&mut same), "agreeing stamps settle");
        assert_eq!(same.len(), 2, "each file once");
        std::fs::write(&a, "other content").unwrap();
        let mut moved = vec![(a.clone(), before), (a.clone(), Stamp::of(&a))];
        assert!(!settle(&mut moved), "a file stamped differently before and after is not cached");
    }
    use crate::exec::guard::git::harden;

    fn git_path() -> PathBuf {
        std::env::split_paths(&std::env::var_os("PATH").unwrap())
            .map(|d| d.join("git"))
            .find(|p| p.is_file())
            .expect("git on PATH")
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

    fn repo() -> (tempfile::TempDir, PathBuf, Prepared) {
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
            env: [
                ("PATH".to_string(), std::env::var("PATH").unwrap()),
                ("HOME".to_string(), root.display().to_string()),
            ]
            .into_iter()
            .collect(),
            stdin: None,
            timeout: Duration::from_secs(10),
            truncate_stdout: false,
            caller_words: vec![],
            sandbox: None,
        };
        harden(&mut p, &root).unwrap();
        (tmp, root, p)
    }

    #[tokio::test]
    async fn a_cached_verdict_is_dropped_when_the_config_changes() {
        let (_tmp, root, p) = repo();
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

    #[tokio::test]
    async fn a_symlinked_config_is_stamped_at_its_target() {
        let (_tmp, root, p) = repo();
        let cfg = root.join(".git/config");
        std::fs::rename(&cfg, root.join("cfg.txt")).unwrap();
        std::os::unix::fs::symlink("../cfg.txt", &cfg).unwrap();
        let guard = GitGuard::default();
        guard.check(&p, &root).await.unwrap();
        let mut text = std::fs::read_to_string(root.join("cfg.txt")).unwrap();
        text.push_str("[filter \"x\"]\n\tclean = touch pwned\n");
        std::fs::write(root.join("cfg.txt"), text).unwrap();
        assert_eq!(
            guard.check(&p, &root).await.unwrap_err().code,
            ErrorCode::RepoConfigRunsPrograms
        );
    }

    #[tokio::test]
    async fn symlinks_and_alternates_leading_outside_are_refused() {
        let (tmp, root, p) = repo();
        let victim = tmp.path().canonicalize().unwrap().join("victim");
        std::fs::create_dir(&victim).unwrap();
        sh(&victim, &["init", "-q"]);
        let guard = GitGuard::default();
        std::os::unix::fs::symlink(victim.join(".git/HEAD"), root.join(".git/refs/heads/stolen"))
            .unwrap();
        let e = guard.check(&p, &root).await.unwrap_err();
        assert_eq!(
            (e.code, e.details["path"].as_str()),
            (
                ErrorCode::RepoOutsideRoot,
                Some(root.join(".git/refs/heads/stolen").to_str().unwrap())
            )
        );
        std::fs::remove_file(root.join(".git/refs/heads/stolen")).unwrap();
        guard.check(&p, &root).await.unwrap();
        // A symlink added after a clean verdict was cached is still seen.
        std::os::unix::fs::symlink(victim.join(".git/HEAD"), root.join(".git/refs/heads/later"))
            .unwrap();
        assert_eq!(guard.check(&p, &root).await.unwrap_err().code, ErrorCode::RepoOutsideRoot);
        std::fs::remove_file(root.join(".git/refs/heads/later")).unwrap();
        std::fs::write(
            root.join(".git/objects/info/alternates"),
            format!("{}\n", victim.join(".git/objects").display()),
        )
        .unwrap();
        let e = guard.check(&p, &root).await.unwrap_err();
        assert_eq!(e.code, ErrorCode::RepoOutsideRoot);
        assert!(e.message.contains("alternate object store"), "{e}");
    }

    #[tokio::test]
    async fn a_working_directory_with_a_newline_is_refused() {
        let (_tmp, root, mut p) = repo();
        let odd = root.join("a\nb");
        std::fs::create_dir(&odd).unwrap();
        p.cwd = odd;
        assert_eq!(
            GitGuard::default().check(&p, &root).await.unwrap_err().code,
            ErrorCode::PlanRefused
        );
    }
}
