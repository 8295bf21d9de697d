//! Keeping a plan's working directory inside the configured root. A plugin
//! (or a caller value it passes through) may name a directory *relative* to
//! the root; `..` escapes, absolute paths and symlinks that lead outside are
//! refused. `cap-std` does the resolution, so symlinks are followed only
//! within the root.
//!
//! A path argument may be a *compound* id that the program splits itself:
//! pytest reads `tests/test_a.py::TestB::test_c[x]` as the file
//! `tests/test_a.py` plus names inside it. As one string that path does
//! not exist, so nothing in it would be followed — yet pytest opens
//! `tests/test_a.py`, which may be a link out of the root. So the part
//! before the first `::` is confined as a path of its own, as well as the
//! whole string.

use cap_std::ambient_authority;
use cap_std::fs::Dir;
use std::path::{Component, Path, PathBuf};

use crate::error::{ErrorCode, OpError};

/// The absolute directory for `rel` under `root` (canonical), or an error
/// naming the offending path.
pub fn confine_dir(root: &Path, rel: Option<&str>) -> Result<PathBuf, OpError> {
    let Some(rel) = rel.filter(|r| !r.is_empty() && *r != ".") else {
        return Ok(root.to_path_buf());
    };
    let refuse = |why: &str| {
        OpError::new(
            ErrorCode::PlanRefused,
            format!(
                "working directory {rel:?} {why}; it must be a directory inside the root {}",
                root.display()
            ),
        )
        .with("path", rel)
    };
    let path = Path::new(rel);
    if path.is_absolute() || path.components().any(|c| matches!(c, Component::ParentDir)) {
        return Err(refuse("escapes the root"));
    }
    let dir = Dir::open_ambient_dir(root, ambient_authority())
        .map_err(|e| refuse(&format!("cannot be checked ({e})")))?;
    // cap-std refuses any resolution (including through symlinks) that
    // would leave `root`.
    match dir.open_dir(path) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(refuse("does not exist")),
        Err(_) => return Err(refuse("escapes the root or is not a directory")),
    }
    let full =
        root.join(path).canonicalize().map_err(|e| refuse(&format!("cannot be resolved ({e})")))?;
    if !full.starts_with(root) {
        return Err(refuse("escapes the root"));
    }
    Ok(full)
}

/// Check a caller-derived path argument as the program will read it:
/// relative to `cwd` (the directory the program runs in, already confined
/// under `root`), with no `..`, and not leading outside `root` through a
/// symlink (checked on the deepest part of it that exists; the rest cannot
/// be a symlink yet). For a compound id (`file.py::test`), the part before
/// the first `::` is checked too: that is the file the program opens.
pub fn confine_path(root: &Path, cwd: &Path, rel: &str) -> Result<(), OpError> {
    confine_one(root, cwd, rel, rel)?;
    if let Some((file, _)) = rel.split_once("::") {
        confine_one(root, cwd, file, rel)?;
    }
    Ok(())
}

/// Confine `rel`, which is `arg` or the path part of it; errors name `arg`,
/// the caller's value.
fn confine_one(root: &Path, cwd: &Path, rel: &str, arg: &str) -> Result<(), OpError> {
    let refuse = |why: &str| {
        let why = if rel == arg {
            why.to_string()
        } else {
            format!("names the file {rel:?}, which {why}")
        };
        OpError::new(
            ErrorCode::PlanRefused,
            format!("path {arg:?} {why}; paths must stay inside the root {}", root.display()),
        )
        .with("path", arg)
        .with("param_kind", "path")
    };
    if rel.is_empty() {
        return Err(refuse("is empty"));
    }
    let given = Path::new(rel);
    if given.is_absolute() || given.components().any(|c| matches!(c, Component::ParentDir)) {
        return Err(refuse("escapes the root"));
    }
    // The program resolves `rel` against its working directory, so that is
    // what is checked: `{repo: "sub", path: "link"}` is `root/sub/link`.
    let Ok(base) = cwd.strip_prefix(root) else {
        return Err(refuse("is relative to a working directory outside the root"));
    };
    let path = base.join(given);
    let mut deepest = PathBuf::new();
    let mut probe = PathBuf::new();
    for c in path.components() {
        probe.push(c);
        if std::fs::symlink_metadata(root.join(&probe)).is_ok() {
            deepest = probe.clone();
        } else {
            break;
        }
    }
    if deepest.as_os_str().is_empty() {
        return Ok(());
    }
    let dir = Dir::open_ambient_dir(root, ambient_authority())
        .map_err(|e| refuse(&format!("cannot be checked ({e})")))?;
    // cap-std resolves symlinks but refuses any resolution that leaves `root`.
    match dir.metadata(&deepest) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // A dangling symlink: where would it lead?
            let target = std::fs::read_link(root.join(&deepest)).unwrap_or_default();
            if target.is_absolute()
                || target.components().any(|c| matches!(c, Component::ParentDir))
            {
                return Err(refuse("is a symlink leading outside"));
            }
        }
        Err(_) => return Err(refuse("leads outside through a symlink")),
    }
    if let Ok(full) = root.join(&deepest).canonicalize() {
        if !full.starts_with(root) {
            return Err(refuse("leads outside through a symlink"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_arguments_stay_inside_the_root() {
        let root = tempfile::tempdir().unwrap();
        let root = root.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("src")).unwrap();
        std::fs::write(root.join("src/a.rs"), "").unwrap();
        std::os::unix::fs::symlink("/etc", root.join("etc-link")).unwrap();
        std::os::unix::fs::symlink("src", root.join("inner-link")).unwrap();
        for ok in ["src", "src/a.rs", "src/deleted.rs", "not/yet/there", "inner-link/a.rs", "."] {
            assert!(confine_path(&root, &root, ok).is_ok(), "{ok}");
        }
        for bad in ["../../etc", "/etc/passwd", "src/../../x", "etc-link", "etc-link/passwd", ""] {
            let e = confine_path(&root, &root, bad).unwrap_err();
            assert_eq!(e.code, ErrorCode::PlanRefused, "{bad}");
        }
    }

    #[test]
    fn the_file_of_a_compound_id_is_confined_too() {
        // pytest opens `link.py` for `link.py::test_x`; as one string the id
        // does not exist, so it used to pass.
        let root = tempfile::tempdir().unwrap();
        let root = root.path().canonicalize().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("test_out.py"), "").unwrap();
        std::fs::create_dir(root.join("tests")).unwrap();
        std::fs::write(root.join("tests/test_a.py"), "").unwrap();
        std::os::unix::fs::symlink(outside.path().join("test_out.py"), root.join("link.py"))
            .unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("linkdir")).unwrap();
        for bad in [
            "link.py::test_x",
            "link.py::C::test_x[a-b]",
            "linkdir/test_out.py::test_x",
            "linkdir::x",
            "::test_x",
        ] {
            let e = confine_path(&root, &root, bad).unwrap_err();
            assert_eq!(e.code, ErrorCode::PlanRefused, "{bad}");
            assert_eq!(e.details["path"], bad, "the error names the caller's value");
        }
        let e = confine_path(&root, &root, "link.py::test_x").unwrap_err();
        assert!(e.message.contains("\"link.py\""), "the message names the file: {}", e.message);
        for ok in [
            "tests/test_a.py::test_b",
            "tests/test_a.py::C::test[x::y]",
            "tests/new.py::t",
            "plain.py",
        ] {
            assert!(confine_path(&root, &root, ok).is_ok(), "{ok}");
        }
    }

    #[test]
    fn paths_are_checked_relative_to_the_working_directory() {
        // `{repo: "sub", path: "link"}`: the program reads root/sub/link.
        let root = tempfile::tempdir().unwrap();
        let root = root.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("sub")).unwrap();
        std::os::unix::fs::symlink("/etc", root.join("sub/link")).unwrap();
        std::os::unix::fs::symlink("../..", root.join("sub/up")).unwrap();
        let sub = root.join("sub");
        for bad in ["link", "link/passwd", "up", "up/x"] {
            let e = confine_path(&root, &sub, bad).unwrap_err();
            assert_eq!(e.code, ErrorCode::PlanRefused, "{bad}");
        }
        assert!(confine_path(&root, &sub, "new-file").is_ok());
        assert!(
            confine_path(&root, &root, "link").is_ok(),
            "root/link does not exist: nothing to follow"
        );
    }

    #[test]
    fn escapes_are_refused() {
        let root = tempfile::tempdir().unwrap();
        let root = root.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("sub")).unwrap();
        std::os::unix::fs::symlink("/etc", root.join("out")).unwrap();
        assert_eq!(confine_dir(&root, Some("sub")).unwrap(), root.join("sub"));
        assert_eq!(confine_dir(&root, None).unwrap(), root);
        for bad in ["../", "sub/../../x", "/etc", "out", "missing"] {
            let e = confine_dir(&root, Some(bad)).unwrap_err();
            assert_eq!(e.code, ErrorCode::PlanRefused, "{bad}");
            assert_eq!(e.details["path"], bad);
        }
    }
}
