//! The ignore files rg reads. No parameter names them and `--no-follow`
//! does not apply to them: in every directory it searches, and in every
//! directory *above* the paths it searches, rg opens `.ignore`, `.rgignore`
//! and `.gitignore`, the `.git/info/exclude` of a repository (through a
//! `.git` file, the `commondir` of the git directory it names), and quotes
//! in its errors each line that is not a valid glob. A `.gitignore` that is
//! a link to a file outside the root is read; one linked to `/dev/zero` is
//! one line that never ends, which rg reads into memory without bound; a
//! FIFO blocks rg until its timeout. `--no-ignore-parent` only stops rg from
//! *applying* the files above; it still reads them.
//!
//! So before rg runs, unless the plan turns ignore files off (`--no-ignore`,
//! the `ignored` parameter of the bundled verbs), this guard looks at every
//! file rg would read as an ignore file and refuses the op (`plan_refused`,
//! naming the file and what to do):
//!
//! - inside the root — in the directories searched (the working directory,
//!   or the paths after `--`), every directory below them (hidden ones too:
//!   an ignore file can make rg enter one), and the directories between
//!   them and the root — an ignore file, `.git` or `.git/info` that is a
//!   symbolic link, an ignore file that is not a regular file, or one larger
//!   than [`IGNORE_FILE_BYTES`];
//! - above the root, and where a `.git` file points (a linked worktree's
//!   git directory usually lies outside the root): links are followed, as
//!   they are there by your choice (a `~/.gitignore` kept in a dotfiles
//!   repository), but what rg would read must be a regular file no larger
//!   than [`IGNORE_FILE_BYTES`].
//!
//! The walk does not follow symlinks (nor does rg with `--no-follow`; a plan
//! with `--follow` has its links inside the root walked too) and stops with
//! a refusal past [`WALK_ENTRIES`] entries, so its cost is bounded: about
//! half a second for 930,000 entries (11,000 directories) on a warm cache,
//! what `rg --files` itself takes over the same tree. The rg plugin
//! withholds the lines rg quotes from ignore files anyway; this guard keeps
//! rg from reading what it should not at all.

use std::collections::HashSet;
use std::fs::Metadata;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use crate::error::{ErrorCode, OpError};
use crate::exec::run::Prepared;

/// The largest ignore file (and `.git` or `commondir` file) rg may read:
/// 1 MiB, far more than any hand-written ignore file, far less than what
/// would hurt.
pub const IGNORE_FILE_BYTES: u64 = 1 << 20;

/// The most directory entries the walk looks at before it refuses the op.
pub const WALK_ENTRIES: usize = 1_000_000;

/// The names rg reads ignore rules from in each directory.
const IGNORE_NAMES: &[&str] = &[".ignore", ".rgignore", ".gitignore"];

/// Refuse the plan if rg would read an ignore file it should not.
pub fn check(p: &Prepared, root: &Path) -> Result<(), OpError> {
    let options = options(&p.argv);
    if options.no_ignore {
        return Ok(());
    }
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let mut walk = Walk {
        root: &root,
        cwd: &p.cwd,
        follow: options.follow,
        entries: 0,
        checked: HashSet::new(),
        walked: HashSet::new(),
    };
    let mut starts: Vec<PathBuf> = searched(p, &options)
        .into_iter()
        .filter_map(|s| s.canonicalize().ok())
        .filter(|s| s.starts_with(&root))
        .collect();
    starts.sort();
    starts.dedup();
    for start in &starts {
        for dir in start.ancestors().skip(1) {
            walk.check_dir(dir)?;
        }
        if start.is_dir() && !starts.iter().any(|s| s != start && start.starts_with(s)) {
            walk.walk(start)?;
        }
    }
    Ok(())
}

/// What the plan's options say about ignore files and links.
#[derive(Debug, Default, PartialEq, Eq)]
struct Options {
    /// `--no-ignore` (not undone by a later `--ignore`): rg reads no
    /// ignore file.
    no_ignore: bool,
    /// `--follow`/`-L` (not undone by a later `--no-follow`).
    follow: bool,
    /// Whether the plan has a `--` marker, and the words after it.
    after_marker: Option<Vec<String>>,
}

fn options(argv: &[String]) -> Options {
    let mut o = Options::default();
    for (i, word) in argv.iter().enumerate() {
        match word.as_str() {
            "--no-ignore" => o.no_ignore = true,
            "--ignore" => o.no_ignore = false,
            "--follow" | "-L" => o.follow = true,
            "--no-follow" => o.follow = false,
            "--" => {
                o.after_marker = Some(argv[i + 1..].to_vec());
                break;
            }
            _ => {}
        }
    }
    o
}

/// The paths rg searches, as the plan names them: the words after `--`, or
/// the working directory when there are none. Without a marker the guard
/// cannot tell a positional pattern from a path, so it takes the working
/// directory and every word that does not start with `-`.
fn searched(p: &Prepared, options: &Options) -> Vec<PathBuf> {
    match &options.after_marker {
        Some(words) if !words.is_empty() => words.iter().map(|w| p.cwd.join(w)).collect(),
        Some(_) => vec![p.cwd.clone()],
        None => std::iter::once(p.cwd.clone())
            .chain(p.argv.iter().filter(|w| !w.starts_with('-')).map(|w| p.cwd.join(w)))
            .collect(),
    }
}

struct Walk<'a> {
    root: &'a Path,
    /// rg's working directory: a relative `gitdir:` resolves against it.
    cwd: &'a Path,
    follow: bool,
    entries: usize,
    /// Directories whose ignore files were checked.
    checked: HashSet<PathBuf>,
    /// Directories walked into (canonical), for `--follow`'s cycles.
    walked: HashSet<PathBuf>,
}

impl Walk<'_> {
    /// Every directory under `start`, depth first, without following links
    /// (unless the plan follows them, and then only within the root).
    fn walk(&mut self, start: &Path) -> Result<(), OpError> {
        let mut stack = vec![start.to_path_buf()];
        while let Some(dir) = stack.pop() {
            if !self.walked.insert(dir.clone()) {
                continue;
            }
            let Ok(read) = std::fs::read_dir(&dir) else {
                // A directory rg may not list can still have ignore files
                // it opens by name.
                self.check_dir(&dir)?;
                continue;
            };
            self.checked.insert(dir.clone());
            for entry in read.flatten() {
                self.entries += 1;
                if self.entries > WALK_ENTRIES {
                    return Err(too_many(self.root, start));
                }
                let name = entry.file_name();
                let path = entry.path();
                if name == ".git" {
                    self.check_git(&dir)?;
                } else if IGNORE_NAMES.iter().any(|n| name == *n) {
                    check_file(self.root, &path, true)?;
                }
                let Ok(kind) = entry.file_type() else { continue };
                if kind.is_dir() {
                    stack.push(path);
                } else if kind.is_symlink() && self.follow {
                    if let Ok(target) = path.canonicalize() {
                        if target.starts_with(self.root) && target.is_dir() {
                            stack.push(target);
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// The ignore files of one directory that is not walked (an ancestor of
    /// a searched path, or a directory that cannot be listed).
    fn check_dir(&mut self, dir: &Path) -> Result<(), OpError> {
        if !self.checked.insert(dir.to_path_buf()) {
            return Ok(());
        }
        let inside = dir.starts_with(self.root);
        for name in IGNORE_NAMES {
            check_file(self.root, &dir.join(name), inside)?;
        }
        self.check_git(dir)
    }

    /// `dir/.git`: rg reads `info/exclude` under it, or, if it is a file,
    /// follows its `gitdir:` line to a git directory and that directory's
    /// `commondir` file to the `info/exclude` it reads.
    fn check_git(&self, dir: &Path) -> Result<(), OpError> {
        let dot_git = dir.join(".git");
        let inside = dir.starts_with(self.root);
        let Ok(lstat) = std::fs::symlink_metadata(&dot_git) else { return Ok(()) };
        if inside && lstat.file_type().is_symlink() {
            return Err(refuse(self.root, &dot_git, "is a symbolic link, which rg follows to read ignore rules (`info/exclude`) wherever it leads"));
        }
        // Above the root, rg follows the link, and so does this check.
        let Ok(meta) = std::fs::metadata(&dot_git) else { return Ok(()) };
        if meta.is_dir() {
            let info = dot_git.join("info");
            if inside && std::fs::symlink_metadata(&info).is_ok_and(|m| m.file_type().is_symlink())
            {
                return Err(refuse(
                    self.root,
                    &info,
                    "is a symbolic link, which rg follows to read `info/exclude` wherever it leads",
                ));
            }
            return check_file(self.root, &info.join("exclude"), inside);
        }
        if !meta.is_file() {
            // rg then looks for `.git/info/exclude`, which cannot exist.
            return Ok(());
        }
        check_size(self.root, &dot_git, &meta)?;
        let Some(line) = first_line(&dot_git) else { return Ok(()) };
        let Some(gitdir) = line.strip_prefix("gitdir: ") else { return Ok(()) };
        // rg resolves a relative `gitdir:` against its working directory.
        let gitdir = self.cwd.join(gitdir);
        let commondir_file = gitdir.join("commondir");
        check_file(self.root, &commondir_file, false)?;
        let Some(common) = first_line(&commondir_file) else { return Ok(()) };
        let common =
            if common.starts_with('.') { gitdir.join(common) } else { self.cwd.join(common) };
        check_file(self.root, &common.join("info/exclude"), false)
    }
}

/// Check one file rg would read as an ignore file if it exists. `strict`
/// (inside the root): it must not be a link. Either way what rg reads must
/// be a regular file of bounded size.
fn check_file(root: &Path, path: &Path, strict: bool) -> Result<(), OpError> {
    if strict {
        let Ok(lstat) = std::fs::symlink_metadata(path) else { return Ok(()) };
        if lstat.file_type().is_symlink() {
            let target = std::fs::read_link(path)
                .map(|t| format!(" (to {})", t.display()))
                .unwrap_or_default();
            return Err(refuse(
                root,
                path,
                &format!("is a symbolic link{target}; rg reads ignore files through links, even with --no-follow, so it would read what the link leads to"),
            ));
        }
    }
    // rg skips a file it cannot stat (`exists()`), a dangling link too.
    let Ok(meta) = std::fs::metadata(path) else { return Ok(()) };
    if !meta.is_file() {
        return Err(refuse(root, path, "is not a regular file (a FIFO, a device or a directory), which rg would read or wait on without end"));
    }
    check_size(root, path, &meta)
}

fn check_size(root: &Path, path: &Path, meta: &Metadata) -> Result<(), OpError> {
    if meta.len() > IGNORE_FILE_BYTES {
        return Err(refuse(
            root,
            path,
            &format!(
                "is {} bytes, more than the 1 MiB an ignore file rg reads may have",
                meta.len()
            ),
        ));
    }
    Ok(())
}

/// The first line of a (bounded) file, as rg reads it.
fn first_line(path: &Path) -> Option<String> {
    let file = std::fs::File::open(path).ok()?;
    let mut line = String::new();
    BufReader::new(file.take(IGNORE_FILE_BYTES)).read_line(&mut line).ok()?;
    Some(line.trim_end_matches(['\n', '\r']).to_string())
}

/// The path as the caller knows it: relative to the root inside it.
fn shown(root: &Path, path: &Path) -> String {
    match path.strip_prefix(root) {
        Ok(rel) if !rel.as_os_str().is_empty() => rel.display().to_string(),
        _ => path.display().to_string(),
    }
}

fn refuse(root: &Path, path: &Path, why: &str) -> OpError {
    let shown = shown(root, path);
    let fix = if path.starts_with(root) {
        "replace it with a regular file (or remove it)"
    } else {
        "it lies outside the root: replace it with a small regular file, or remove it"
    };
    OpError::new(
        ErrorCode::PlanRefused,
        format!("rg would read {shown} as an ignore file, and it {why}; {fix}, or search with `ignored: true` (rg --no-ignore), which reads no ignore file"),
    )
    .with("path", shown)
}

fn too_many(root: &Path, start: &Path) -> OpError {
    let shown = if start == root { ".".to_string() } else { shown(root, start) };
    OpError::new(
        ErrorCode::PlanRefused,
        format!(
            "the search covers more than {WALK_ENTRIES} files and directories under {shown}; verbgate checks every ignore file rg would read \
             before it runs rg and stops there: search fewer or narrower `paths`, or search with `ignored: true` (rg --no-ignore), which \
             reads no ignore file"
        ),
    )
    .with("path", shown)
    .with("limit", WALK_ENTRIES)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::os::unix::fs::symlink;
    use std::time::Duration;

    fn plan(cwd: &Path, argv: &[&str]) -> Prepared {
        Prepared {
            name: "rg".into(),
            program: "/usr/bin/rg".into(),
            argv: argv.iter().map(|s| s.to_string()).collect(),
            cwd: cwd.into(),
            env: BTreeMap::new(),
            stdin: None,
            timeout: Duration::from_secs(1),
            truncate_stdout: false,
            caller_words: vec![],
            sandbox: None,
        }
    }

    /// A root inside a directory of its own (standing for "above the
    /// root"), both canonical.
    fn tree() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let above = tmp.path().canonicalize().unwrap();
        let root = above.join("root");
        std::fs::create_dir_all(root.join("src/deep")).unwrap();
        std::fs::write(above.join("secret"), "SECRET-{\n").unwrap();
        (tmp, above, root)
    }

    fn code_and_path(r: Result<(), OpError>) -> (ErrorCode, String) {
        let e = r.unwrap_err();
        (e.code, e.details["path"].as_str().unwrap().to_string())
    }

    #[test]
    fn ignore_files_linked_anywhere_inside_the_searched_tree_are_refused() {
        for link in [
            ".gitignore",
            ".ignore",
            ".rgignore",
            "src/deep/.gitignore",
            ".hidden/.ignore",
            ".git/info/exclude",
            "node_modules/x/.gitignore",
        ] {
            let (_tmp, above, root) = tree();
            let path = root.join(link);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            symlink(above.join("secret"), &path).unwrap();
            let (code, shown) = code_and_path(check(&plan(&root, &["--", "."]), &root));
            assert_eq!((code, shown.as_str()), (ErrorCode::PlanRefused, link));
            // Also when only that part is searched, and with no paths.
            assert!(check(&plan(&root, &["--"]), &root).is_err(), "{link}");
            // rg --no-ignore reads none of them.
            assert!(check(&plan(&root, &["--no-ignore", "--"]), &root).is_ok(), "{link}");
            assert!(
                check(&plan(&root, &["--no-ignore", "--ignore", "--"]), &root).is_err(),
                "{link}: --ignore undoes it"
            );
        }
    }

    #[test]
    fn a_link_to_another_file_inside_the_root_is_refused_too_and_plain_files_pass() {
        let (_tmp, _above, root) = tree();
        std::fs::write(root.join("src/.gitignore"), "target/\n").unwrap();
        std::fs::write(root.join(".ignore"), "*.log\n").unwrap();
        std::fs::create_dir_all(root.join(".git/info")).unwrap();
        std::fs::write(root.join(".git/info/exclude"), "x\n").unwrap();
        assert!(check(&plan(&root, &["--"]), &root).is_ok());
        symlink("src/.gitignore", root.join(".gitignore")).unwrap();
        let e = check(&plan(&root, &["--"]), &root).unwrap_err();
        assert!(
            e.message.contains("symbolic link (to src/.gitignore)")
                && e.message.contains("ignored: true"),
            "{}",
            e.message
        );
    }

    #[test]
    fn devices_fifos_directories_and_large_files_are_refused() {
        let (_tmp, _above, root) = tree();
        std::fs::create_dir(root.join("src/.rgignore")).unwrap();
        assert_eq!(code_and_path(check(&plan(&root, &["--"]), &root)).1, "src/.rgignore");
        std::fs::remove_dir(root.join("src/.rgignore")).unwrap();
        std::fs::write(root.join(".gitignore"), vec![b'a'; IGNORE_FILE_BYTES as usize + 1])
            .unwrap();
        let e = check(&plan(&root, &["--"]), &root).unwrap_err();
        assert!(e.message.contains("more than the 1 MiB"), "{}", e.message);
        std::fs::write(root.join(".gitignore"), vec![b'a'; IGNORE_FILE_BYTES as usize]).unwrap();
        assert!(check(&plan(&root, &["--"]), &root).is_ok(), "exactly the bound is fine");
    }

    #[test]
    fn a_symlinked_git_or_info_directory_is_refused_inside_the_root() {
        let (_tmp, above, root) = tree();
        std::fs::create_dir_all(above.join("other/info")).unwrap();
        symlink(above.join("other"), root.join(".git")).unwrap();
        assert_eq!(code_and_path(check(&plan(&root, &["--"]), &root)).1, ".git");
        std::fs::remove_file(root.join(".git")).unwrap();
        std::fs::create_dir(root.join(".git")).unwrap();
        symlink(above.join("other/info"), root.join(".git/info")).unwrap();
        assert_eq!(code_and_path(check(&plan(&root, &["--"]), &root)).1, ".git/info");
    }

    #[test]
    fn a_git_file_is_followed_to_the_exclude_file_rg_reads() {
        // A linked worktree: `.git` names a git directory outside the root
        // whose `commondir` names the main repository's git directory.
        let (_tmp, above, root) = tree();
        let main = above.join("main/.git");
        std::fs::create_dir_all(main.join("info")).unwrap();
        std::fs::create_dir_all(main.join("worktrees/wt")).unwrap();
        std::fs::write(main.join("worktrees/wt/commondir"), "../..\n").unwrap();
        std::fs::write(
            root.join(".git"),
            format!("gitdir: {}\n", main.join("worktrees/wt").display()),
        )
        .unwrap();
        std::fs::write(main.join("info/exclude"), "# the usual\n").unwrap();
        assert!(
            check(&plan(&root, &["--"]), &root).is_ok(),
            "a regular exclude file outside the root is read as rg reads it"
        );
        std::fs::remove_file(main.join("info/exclude")).unwrap();
        symlink("/dev/zero", main.join("info/exclude")).unwrap();
        let (code, shown) = code_and_path(check(&plan(&root, &["--"]), &root));
        assert_eq!(
            (code, shown),
            (
                ErrorCode::PlanRefused,
                main.join("worktrees/wt/../../info/exclude").display().to_string()
            )
        );
        // The `commondir` file itself is read line by line too.
        std::fs::remove_file(main.join("worktrees/wt/commondir")).unwrap();
        symlink("/dev/zero", main.join("worktrees/wt/commondir")).unwrap();
        assert!(check(&plan(&root, &["--"]), &root).unwrap_err().message.contains("commondir"));
        // And so is the `.git` file.
        std::fs::write(root.join(".git"), vec![b'g'; IGNORE_FILE_BYTES as usize + 1]).unwrap();
        assert_eq!(code_and_path(check(&plan(&root, &["--"]), &root)).1, ".git");
    }

    #[test]
    fn above_the_root_links_are_followed_but_must_lead_to_small_regular_files() {
        let (_tmp, above, root) = tree();
        symlink(above.join("secret"), above.join(".gitignore")).unwrap();
        assert!(
            check(&plan(&root, &["--"]), &root).is_ok(),
            "a ~/.gitignore kept elsewhere is yours"
        );
        symlink("/dev/zero", above.join(".ignore")).unwrap();
        let (code, shown) = code_and_path(check(&plan(&root, &["--"]), &root));
        assert_eq!(
            (code, shown),
            (ErrorCode::PlanRefused, above.join(".ignore").display().to_string())
        );
        std::fs::remove_file(above.join(".ignore")).unwrap();
        // The repository the root lies in: its exclude file.
        std::fs::create_dir_all(above.join(".git/info")).unwrap();
        symlink("/dev/zero", above.join(".git/info/exclude")).unwrap();
        assert!(check(&plan(&root.join("src"), &["--"]), &root).is_err());
    }

    #[test]
    fn only_the_searched_paths_and_their_parents_are_looked_at() {
        let (_tmp, above, root) = tree();
        std::fs::create_dir(root.join("docs")).unwrap();
        symlink(above.join("secret"), root.join("docs/.gitignore")).unwrap();
        assert!(check(&plan(&root, &["--", "src"]), &root).is_ok(), "docs is not searched");
        assert!(check(&plan(&root, &["--", "src", "docs"]), &root).is_err());
        // A file in docs: rg reads the ignore files of its directory.
        std::fs::write(root.join("docs/a.md"), "").unwrap();
        assert!(check(&plan(&root, &["--", "docs/a.md"]), &root).is_err());
        // Relative to the working directory.
        assert!(check(&plan(&root.join("docs"), &["--", "."]), &root).is_err());
        // Without a marker, every word is taken for a path.
        assert!(check(&plan(&root, &["--files", "docs"]), &root).is_err());
        assert!(check(&plan(&root.join("src"), &["--files"]), &root).is_ok());
    }

    #[test]
    fn links_are_walked_only_when_the_plan_follows_them() {
        let (_tmp, above, root) = tree();
        std::fs::create_dir(root.join("real")).unwrap();
        symlink(above.join("secret"), root.join("real/.gitignore")).unwrap();
        std::fs::create_dir(root.join("searched")).unwrap();
        symlink(root.join("real"), root.join("searched/link")).unwrap();
        symlink(&root, root.join("searched/loop")).unwrap();
        assert!(check(&plan(&root, &["--no-follow", "--", "searched"]), &root).is_ok());
        assert!(check(&plan(&root, &["--follow", "--", "searched"]), &root).is_err());
        assert!(check(&plan(&root, &["-L", "--no-follow", "--", "searched"]), &root).is_ok());
    }

    #[test]
    fn options_are_read_before_the_marker_only() {
        let argv: Vec<String> = ["--no-ignore", "--follow", "--", "--ignore", "x"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let o = options(&argv);
        assert!(o.no_ignore && o.follow);
        assert_eq!(o.after_marker, Some(vec!["--ignore".to_string(), "x".to_string()]));
    }
}
