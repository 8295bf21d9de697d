//! Which guard a program gets: a leaf, so the guards can name one another's
//! programs without importing the module that runs them all.

use std::path::Path;

use crate::exec::run::Prepared;

/// The programs with a guard, recognised by declared name or by the file
/// name of the resolved path (a plugin cannot dodge a guard by renaming).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Guarded {
    /// `git`.
    Git,
    /// `cargo` (and the `rustup` proxies it goes through).
    Cargo,
    /// `just`.
    Just,
    /// `pytest`.
    Pytest,
    /// `rg` (ripgrep).
    Rg,
}

impl Guarded {
    /// Which guard, if any, applies to `p`.
    pub fn of(p: &Prepared) -> Option<Guarded> {
        Guarded::of_program(&p.name, &p.program)
    }

    /// Which guard, if any, applies to the program declared as `name` and
    /// resolved to `program`.
    pub fn of_program(name: &str, program: &Path) -> Option<Guarded> {
        let by_name = |n: &str| match n {
            "git" => Some(Guarded::Git),
            "cargo" | "rustc" | "rustup" => Some(Guarded::Cargo),
            "just" => Some(Guarded::Just),
            "pytest" | "py.test" => Some(Guarded::Pytest),
            "rg" => Some(Guarded::Rg),
            _ => None,
        };
        let file_name = |p: &Path| p.file_name().and_then(|f| f.to_str()).and_then(by_name);
        // The declared name, the resolved file, and only then (a syscall per
        // op) what that file links to: `programs.vcs = "/usr/local/bin/g"` is
        // still git.
        by_name(name)
            .or_else(|| file_name(program))
            .or_else(|| program.canonicalize().ok().as_deref().and_then(file_name))
    }
}
