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

#[cfg(test)]
mod tests {
    use super::*;

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
