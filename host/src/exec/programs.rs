//! Program resolution. A verb declares program *names*; the host resolves
//! each to an absolute path once, when verbs are loaded (config `[programs]`
//! first, then the `PATH` verbgate started with). A plan can only run a
//! program its verb declared, at the path resolved here — never a path a
//! plugin or caller supplies.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Resolved programs.
#[derive(Debug, Clone, Default)]
pub struct Programs {
    overrides: BTreeMap<String, PathBuf>,
    search: Vec<PathBuf>,
}

impl Programs {
    /// Resolve with config overrides and the search path `path_var`.
    pub fn new(overrides: BTreeMap<String, PathBuf>, path_var: Option<&std::ffi::OsStr>) -> Self {
        let search = path_var
            .map(|p| std::env::split_paths(p).filter(|d| d.is_absolute()).collect())
            .unwrap_or_default();
        Programs { overrides, search }
    }

    /// The absolute path of program `name`, or why it cannot be used.
    pub fn resolve(&self, name: &str) -> Result<PathBuf, Unresolved> {
        if name.is_empty() || name.contains('/') || name.contains('\0') {
            return Err(Unresolved::NotAName(name.to_string()));
        }
        if let Some(p) = self.overrides.get(name) {
            return if is_executable(p) {
                Ok(p.clone())
            } else {
                Err(Unresolved::NotExecutable { name: name.to_string(), path: p.clone() })
            };
        }
        self.search
            .iter()
            .map(|d| d.join(name))
            .find(|p| is_executable(p))
            .ok_or_else(|| Unresolved::NotOnPath(name.to_string()))
    }
}

/// Why a program name does not resolve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unresolved {
    /// The verb declared a path or an empty name, not a bare name.
    NotAName(String),
    /// `[programs]` names a file that is not an executable (an operator's
    /// mistake: worth a warning).
    NotExecutable {
        /// The program's name.
        name: String,
        /// The configured path.
        path: PathBuf,
    },
    /// Not configured and not on `PATH`: not installed here (expected on
    /// most machines for some verbs).
    NotOnPath(String),
}

impl std::fmt::Display for Unresolved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unresolved::NotAName(name) => write!(f, "`{name}` is not a program name (declare a bare name; paths are configured by the operator)"),
            Unresolved::NotExecutable { name, path } => {
                write!(f, "programs.{name} = {} is not an executable file", path.display())
            }
            Unresolved::NotOnPath(name) => write!(
                f,
                "program `{name}` was not found on PATH (set programs.{name} in verbgate.toml)"
            ),
        }
    }
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_with_slashes_are_refused_and_path_is_searched() {
        let p = Programs::new(BTreeMap::new(), Some(std::ffi::OsStr::new("/usr/bin:/bin")));
        assert!(p.resolve("/bin/sh").is_err());
        assert!(p.resolve("../sh").is_err());
        assert!(p.resolve("sh").unwrap().is_absolute());
        assert!(p.resolve("definitely-not-a-program-xyz").is_err());
    }
}
