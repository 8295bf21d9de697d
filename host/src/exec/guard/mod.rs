//! Program-specific defences against hostile *repository content*.
//!
//! A plugin's plan is checked generically (declared program, typed argv,
//! environment allow list, confined paths). Some programs, though, read
//! configuration from the directory they run in and its ancestors, and that
//! configuration can name programs to run: git's filter and diff drivers,
//! signature programs, embedded repositories; cargo's and rustup's
//! configuration in ancestor directories; just's search for a justfile in
//! parent directories. The guards close those doors for the programs
//! verbgate fronts:
//!
//! - [`git`] and [`git_repo`]: git never walks above the root, never uses
//!   an embedded bare repository, shows no signatures, runs no hooks, no
//!   transports and nothing inside submodules; a repository whose own config
//!   names a program is refused (`repo_config_runs_programs`), and so is one
//!   that lies, in any part, outside the root (`repo_outside_root`), unless
//!   the operator trusts it;
//! - [`ancestors`]: configuration that cargo/rustup or pytest would read
//!   from a directory *above* the root must belong to the user (or root) and
//!   not be writable by others (`untrusted_config`); just uses exactly the
//!   justfile of the directory it runs in;
//! - [`rg`]: the ignore files rg reads (through links, whatever
//!   `--no-follow` says, and from the directories above the root) must not
//!   be links inside the root, and must be small regular files
//!   (`plan_refused`).
//!
//! [`Guards::harden`] runs at prepare time (so `dry_run` shows the hardened
//! plan); [`Guards::check`] may start `git` itself (never a program the
//! repository names) and caches its verdicts by file identity, and walks
//! the tree rg will search (on a blocking thread; bounded by
//! [`rg::WALK_ENTRIES`]).

pub mod ancestors;
pub mod git;
pub mod git_repo;
mod guarded;
pub mod just;
pub mod rg;

pub use guarded::Guarded;

use std::path::{Path, PathBuf};

use super::run::Prepared;
use crate::error::{ErrorCode, OpError};

/// Programs that run code from the repository they work in by design
/// (build scripts, proc macros, recipes, test files, hooks): a verb that
/// declares one is marked `runs_repository_code` in `help` and the catalog.
pub const RUNS_REPOSITORY_CODE: &[&str] = &[
    "cargo", "just", "make", "npm", "npx", "pnpm", "yarn", "node", "pytest", "python", "python3",
    "tox", "nox", "sh", "bash", "gradle", "mvn",
];

/// Whether a verb declaring `programs` runs repository code.
pub fn runs_repository_code<'a>(mut programs: impl Iterator<Item = &'a str>) -> bool {
    programs.any(|p| RUNS_REPOSITORY_CODE.contains(&p))
}

/// The guards of one verbgate process (the git guard keeps a verdict cache).
#[derive(Debug, Default)]
pub struct Guards {
    git: git_repo::GitGuard,
    git_transports: Vec<crate::config::GitTransport>,
}

impl Guards {
    /// Guards that trust the config of the repositories listed (canonical
    /// paths of a work tree or git directory), as `trusted_repos` in the
    /// config says.
    /// `git_transports` are the transports `git fetch` and `git push` may
    /// use (`[git] transports`); every other git command gets none.
    pub fn new(
        trusted_repos: Vec<PathBuf>,
        git_transports: Vec<crate::config::GitTransport>,
    ) -> Guards {
        Guards { git: git_repo::GitGuard::new(trusted_repos), git_transports }
    }

    /// Host-set environment and argv checks that need no subprocess.
    pub fn harden(&self, p: &mut Prepared, root: &Path) -> Result<(), OpError> {
        match Guarded::of(p) {
            Some(Guarded::Git) => git::harden_with(p, root, &self.git_transports),
            Some(Guarded::Cargo) => ancestors::check_cargo(root),
            Some(Guarded::Just) => {
                ancestors::pin_justfile(p)?;
                let justfile = p.env.get("JUST_JUSTFILE").map(PathBuf::from).unwrap_or_default();
                just::check(&justfile, root)
            }
            Some(Guarded::Pytest) => ancestors::check_pytest(root),
            Some(Guarded::Rg) | None => Ok(()),
        }
    }

    /// Checks that look at the repository the program will see.
    pub async fn check(&self, p: &Prepared, root: &Path) -> Result<(), OpError> {
        match Guarded::of(p) {
            Some(Guarded::Git) => self.git.check(p, root).await,
            Some(Guarded::Rg) => {
                // A walk of the searched tree: blocking I/O, off the
                // runtime's threads.
                let (p, root) = (p.clone(), root.to_path_buf());
                tokio::task::spawn_blocking(move || rg::check(&p, &root)).await.unwrap_or_else(
                    |e| {
                        Err(OpError::new(
                            ErrorCode::Internal,
                            format!("the rg ignore-file check failed: {e}"),
                        ))
                    },
                )
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::time::Duration;

    fn prepared(name: &str, program: &Path) -> Prepared {
        Prepared {
            name: name.into(),
            program: program.into(),
            argv: vec![],
            cwd: "/".into(),
            env: BTreeMap::new(),
            stdin: None,
            timeout: Duration::from_secs(1),
            truncate_stdout: false,
            caller_words: vec![],
            sandbox: None,
        }
    }

    #[test]
    fn a_guarded_program_is_recognised_under_another_name() {
        let tmp = tempfile::tempdir().unwrap();
        let real = tmp.path().join("git");
        std::fs::write(&real, "").unwrap();
        let alias = tmp.path().join("vcs");
        std::os::unix::fs::symlink(&real, &alias).unwrap();
        assert_eq!(
            Guarded::of(&prepared("vcs", &alias)),
            Some(Guarded::Git),
            "a link to git is git"
        );
        assert_eq!(
            Guarded::of(&prepared("git", Path::new("/nonexistent/x"))),
            Some(Guarded::Git),
            "the declared name counts"
        );
        assert_eq!(
            Guarded::of(&prepared("tool", &tmp.path().join("cargo"))),
            Some(Guarded::Cargo),
            "the file name counts"
        );
        assert_eq!(Guarded::of(&prepared("search", &tmp.path().join("rg"))), Some(Guarded::Rg));
        assert_eq!(Guarded::of(&prepared("tool", &real.with_file_name("tool"))), None);
    }
}
