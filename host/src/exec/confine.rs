//! Keeping a plan's working directory inside the configured root. A plugin
//! (or a caller value it passes through) may name a directory *relative* to
//! the root; `..` escapes, absolute paths and symlinks that lead outside are
//! refused. `cap-std` does the resolution, so symlinks are followed only
//! within the root.

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
        OpError::new(ErrorCode::PlanRefused, format!("working directory {rel:?} {why}; it must be a directory inside the root {}", root.display()))
            .with("path", rel)
    };
    let path = Path::new(rel);
    if path.is_absolute() || path.components().any(|c| matches!(c, Component::ParentDir)) {
        return Err(refuse("escapes the root"));
    }
    let dir = Dir::open_ambient_dir(root, ambient_authority()).map_err(|e| refuse(&format!("cannot be checked ({e})")))?;
    // cap-std refuses any resolution (including through symlinks) that
    // would leave `root`.
    match dir.open_dir(path) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(refuse("does not exist")),
        Err(_) => return Err(refuse("escapes the root or is not a directory")),
    }
    let full = root.join(path).canonicalize().map_err(|e| refuse(&format!("cannot be resolved ({e})")))?;
    if !full.starts_with(root) {
        return Err(refuse("escapes the root"));
    }
    Ok(full)
}

/// Check a caller-derived path argument as the program will read it:
/// relative to `cwd` (the directory the program runs in, already confined
/// under `root`), with no `..`, and not leading outside `root` through a
/// symlink (checked on the deepest part of it that exists; the rest cannot
/// be a symlink yet).
pub fn confine_path(root: &Path, cwd: &Path, rel: &str) -> Result<(), OpError> {
    let refuse = |why: &str| {
        OpError::new(ErrorCode::PlanRefused, format!("path {rel:?} {why}; paths must stay inside the root {}", root.display()))
            .with("path", rel)
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
    let dir = Dir::open_ambient_dir(root, ambient_authority()).map_err(|e| refuse(&format!("cannot be checked ({e})")))?;
    // cap-std resolves symlinks but refuses any resolution that leaves `root`.
    match dir.metadata(&deepest) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // A dangling symlink: where would it lead?
            let target = std::fs::read_link(root.join(&deepest)).unwrap_or_default();
            if target.is_absolute() || target.components().any(|c| matches!(c, Component::ParentDir)) {
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
        assert!(confine_path(&root, &root, "link").is_ok(), "root/link does not exist: nothing to follow");
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
