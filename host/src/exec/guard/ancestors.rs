//! Configuration from *above* the root. cargo reads `.cargo/config.toml` in
//! the directory it runs in and in every ancestor (runners, wrappers,
//! linkers: programs), and rustup reads `rust-toolchain.toml` the same way
//! (a toolchain `path` is a directory of programs). Inside the root that is
//! repository code, which `cargo.*` verbs run by design and say so; above
//! the root it is whoever could write there — `/tmp` is shared with every
//! local user. Such a file is used only if it belongs to the user (or root)
//! and nobody else can write it; otherwise the op is refused with
//! `untrusted_config`, naming the file. The same holds for a workspace
//! `Cargo.toml` above the root (cargo looks upward for the workspace root
//! and uses its `[patch]` entries and `target/`).
//!
//! pytest does the same with its configuration files (`pytest.ini`,
//! `pyproject.toml`, `tox.ini`, `setup.cfg`, …: `addopts` can load a plugin
//! module, `pythonpath` extends `sys.path`) and `conftest.py`: the same rule
//! applies.
//!
//! just searches parent directories for a justfile (and, with `set
//! fallback`, for recipes): verbgate pins the justfile of the directory just
//! runs in (`JUST_JUSTFILE`, `JUST_WORKING_DIRECTORY`), so no other is
//! read.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::error::{ErrorCode, OpError};
use crate::exec::run::Prepared;

/// Files cargo and rustup read from every ancestor directory.
/// (`Cargo.toml` too: cargo looks upward for a workspace root, whose
/// `[patch]` entries and `target/` directory it then uses.)
const CARGO_ANCESTOR_FILES: &[&str] = &[
    ".cargo",
    ".cargo/config.toml",
    ".cargo/config",
    "rust-toolchain.toml",
    "rust-toolchain",
    "Cargo.toml",
    "Cargo.lock",
    "target",
];

/// Why `path` (which exists) may not be trusted, if it may not: owned by
/// someone other than the user or root, or writable by group or others.
/// Both the link and what it points to are checked.
pub fn untrusted_because(path: &Path) -> Option<String> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    let metas = [std::fs::symlink_metadata(path).ok(), std::fs::metadata(path).ok()];
    for m in metas.into_iter().flatten() {
        if m.uid() != me && m.uid() != 0 {
            return Some(format!("owned by uid {}, not by you (uid {me}) or root", m.uid()));
        }
        if !m.file_type().is_symlink() && m.mode() & 0o022 != 0 {
            return Some(format!("writable by others (mode {:o})", m.mode() & 0o7777));
        }
    }
    None
}

/// Files pytest reads from the directories above the one it runs in: the
/// first configuration file it finds upwards is *the* configuration when the
/// directory has none (`addopts = -p <module>` loads a plugin, `pythonpath`
/// puts a directory on `sys.path`), and `conftest.py` files above are
/// loaded unless `--confcutdir` stops them (the bundled plugin sets it; a
/// third-party plan might not).
const PYTEST_ANCESTOR_FILES: &[&str] = &[
    "pytest.toml",
    ".pytest.toml",
    "pytest.ini",
    ".pytest.ini",
    "pyproject.toml",
    "tox.ini",
    "setup.cfg",
    "conftest.py",
];

/// Refuse a cargo plan if an ancestor of the root holds cargo or rustup
/// configuration that someone else controls.
/// The files above `root` that `p`'s program reads by convention (cargo's
/// and rustup's configuration, pytest's), as they exist now: its sandbox
/// lets it read them — they passed this guard's ownership check — and
/// nothing else above the root.
pub fn read_above_root(name: &str, program: &Path, root: &Path) -> Vec<PathBuf> {
    let names = match super::guarded::Guarded::of_program(name, program) {
        Some(super::guarded::Guarded::Cargo) => CARGO_ANCESTOR_FILES,
        Some(super::guarded::Guarded::Pytest) => PYTEST_ANCESTOR_FILES,
        _ => return Vec::new(),
    };
    root.ancestors()
        .skip(1)
        .flat_map(|dir| names.iter().map(move |n| dir.join(n)))
        .filter(|p| p.is_file())
        .collect()
}

pub fn check_cargo(root: &Path) -> Result<(), OpError> {
    check_ancestors(
        root,
        CARGO_ANCESTOR_FILES,
        "cargo and rustup read it from every directory above the one they run in",
    )
}

/// Refuse a pytest plan if an ancestor of the root holds pytest
/// configuration or a `conftest.py` that someone else controls.
pub fn check_pytest(root: &Path) -> Result<(), OpError> {
    check_ancestors(
        root,
        PYTEST_ANCESTOR_FILES,
        "pytest reads configuration and conftest.py from the directories above the one it runs in",
    )
}

fn check_ancestors(root: &Path, names: &[&str], reads: &str) -> Result<(), OpError> {
    for dir in root.ancestors().skip(1) {
        for name in names {
            let path = dir.join(name);
            if std::fs::symlink_metadata(&path).is_err() {
                continue;
            }
            if let Some(why) = untrusted_because(&path) {
                return Err(untrusted(&path, &why, reads));
            }
        }
    }
    Ok(())
}

fn untrusted(path: &Path, why: &str, reads: &str) -> OpError {
    OpError::new(
        ErrorCode::UntrustedConfig,
        format!(
            "{} is {why}, and {reads}, so another user could make this op run their program; remove it, or make it yours and \
             not writable by others (chown, chmod go-w)",
            path.display()
        ),
    )
    .with("path", path.display().to_string())
    .with("reason", why)
}

/// Pin just to the justfile of the directory it runs in.
pub fn pin_justfile(p: &mut Prepared) -> Result<(), OpError> {
    let found = justfile_in(&p.cwd);
    let path = match found.as_slice() {
        [one] => one.clone(),
        [] => {
            return Err(OpError::new(
                ErrorCode::NotFound,
                format!(
                    "there is no justfile in {}; verbgate runs just only with the justfile of the directory it runs in, never one \
                     from a parent directory",
                    p.cwd.display()
                ),
            )
            .with("path", p.cwd.display().to_string()))
        }
        many => {
            let names: Vec<String> = many.iter().map(|p| p.display().to_string()).collect();
            return Err(OpError::new(ErrorCode::PlanRefused, format!("{} holds more than one justfile ({}); keep one", p.cwd.display(), names.join(", ")))
                .with("paths", names));
        }
    };
    p.env.insert("JUST_JUSTFILE".into(), path.display().to_string());
    p.env.insert("JUST_WORKING_DIRECTORY".into(), p.cwd.display().to_string());
    Ok(())
}

/// The justfile candidates just itself accepts in `dir` (`justfile` and
/// `.justfile`, any case), sorted.
fn justfile_in(dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            let name = e.file_name().to_string_lossy().to_ascii_lowercase();
            (name == "justfile" || name == ".justfile") && e.path().is_file()
        })
        .map(|e| e.path())
        .collect();
    found.sort();
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn ancestor_pytest_configuration_others_can_write_is_refused() {
        // `/tmp/pytest.ini` with `addopts = -p evil` and `pythonpath = /tmp/x`
        // would load another user's module into a pytest run below it.
        let tmp = tempfile::tempdir().unwrap();
        let top = tmp.path().canonicalize().unwrap();
        let root = top.join("proj");
        std::fs::create_dir(&root).unwrap();
        for name in ["pytest.ini", "pyproject.toml", "setup.cfg", "tox.ini", "conftest.py"] {
            let planted = top.join(name);
            std::fs::write(&planted, "[pytest]\naddopts = -p evil\npythonpath = /tmp/evil\n")
                .unwrap();
            std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o666)).unwrap();
            let e = check_pytest(&root).unwrap_err();
            assert_eq!(
                (e.code, e.details["path"].as_str()),
                (ErrorCode::UntrustedConfig, planted.to_str()),
                "{name}"
            );
            assert!(e.message.contains("pytest"), "{}", e.message);
            std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o644)).unwrap();
            assert!(check_pytest(&root).is_ok(), "{name}: a file of yours is used as pytest would");
            std::fs::remove_file(&planted).unwrap();
        }
        // A file inside the root is the repository's own (pytest runs its
        // code by design).
        let inner = root.join("pytest.ini");
        std::fs::write(&inner, "[pytest]\n").unwrap();
        std::fs::set_permissions(&inner, std::fs::Permissions::from_mode(0o666)).unwrap();
        assert!(check_pytest(&root).is_ok());
    }

    #[test]
    fn an_ancestor_workspace_manifest_or_target_others_can_write_is_refused() {
        // cargo looks upward for a workspace root and uses its `[patch]`
        // entries and its `target/`: another user's copy of either, above the
        // root, would run their code as ours.
        let tmp = tempfile::tempdir().unwrap();
        let top = tmp.path().canonicalize().unwrap();
        let root = top.join("proj");
        std::fs::create_dir(&root).unwrap();
        for name in ["Cargo.toml", "target"] {
            let planted = top.join(name);
            if name == "target" {
                std::fs::create_dir(&planted).unwrap();
            } else {
                std::fs::write(&planted, "[workspace]\nmembers = [\"proj\"]\n[patch.crates-io]\nserde = { path = \"/tmp/evil\" }\n").unwrap();
            }
            std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o777)).unwrap();
            let e = check_cargo(&root).unwrap_err();
            assert_eq!(
                (e.code, e.details["path"].as_str()),
                (ErrorCode::UntrustedConfig, planted.to_str()),
                "{name}"
            );
            std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o755)).unwrap();
            assert!(
                check_cargo(&root).is_ok(),
                "{name}: a manifest of yours is used as cargo would"
            );
        }
    }

    #[test]
    fn ancestor_cargo_config_of_another_user_or_writable_by_others_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let top = tmp.path().canonicalize().unwrap();
        let root = top.join("repo");
        std::fs::create_dir_all(root.join(".cargo")).unwrap();
        // Inside the root: repository code, allowed (and marked).
        std::fs::write(root.join(".cargo/config.toml"), "").unwrap();
        assert!(check_cargo(&root).is_ok());
        std::fs::create_dir(top.join(".cargo")).unwrap();
        let planted = top.join(".cargo/config.toml");
        std::fs::write(&planted, "[target.x86_64-unknown-linux-gnu]\nrunner = \"/tmp/evil\"\n")
            .unwrap();
        std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o666)).unwrap();
        let e = check_cargo(&root).unwrap_err();
        assert_eq!(e.code, ErrorCode::UntrustedConfig);
        assert_eq!(e.details["path"], planted.display().to_string());
        std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(check_cargo(&root).is_ok());
        // Another user's file (only root can make one here).
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            let toolchain = top.join("rust-toolchain.toml");
            std::fs::write(&toolchain, "[toolchain]\npath = \"/tmp/evil\"\n").unwrap();
            std::os::unix::fs::chown(&toolchain, Some(65534), None).unwrap();
            assert_eq!(
                check_cargo(&root).unwrap_err().details["path"],
                toolchain.display().to_string()
            );
        }
    }
}
