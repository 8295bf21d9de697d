//! The just guard's check of what a justfile pulls in: just reads every
//! file a justfile `import`s or `mod`ules in, wherever it is, and quotes a
//! line of any file it cannot parse in its error. So a justfile with
//! `import '/home/you/.env'` would make even `help: "just.run"` (which only
//! lists recipes, without asking anyone) answer with a line of a file
//! outside the root. Before just runs, the justfile and everything it
//! imports must lie inside the root (after following links); an import
//! whose path verbgate cannot judge without just's own evaluation
//! (a shell-expanded `x'~/…'` path, an interpolation) is refused.

use std::path::{Path, PathBuf};

use crate::error::{ErrorCode, OpError};

/// Most justfiles one check reads (imports of imports included).
const FILES: usize = 256;
/// Largest justfile read, bytes (just reads the whole file too).
const FILE_BYTES: u64 = 4 << 20;

/// Refuse `justfile` (the one just is pinned to) unless it and every file
/// it imports, transitively, resolve inside `root`.
pub fn check(justfile: &Path, root: &Path) -> Result<(), OpError> {
    let mut queue = vec![justfile.to_path_buf()];
    let mut seen: Vec<PathBuf> = Vec::new();
    while let Some(file) = queue.pop() {
        let real = inside(&file, root)?;
        if seen.contains(&real) {
            continue;
        }
        if seen.len() >= FILES {
            return Err(refuse(&file, root, &format!("pulls in more than {FILES} files")));
        }
        let meta = std::fs::metadata(&real)
            .map_err(|e| refuse(&file, root, &format!("cannot be read ({e})")))?;
        if !meta.is_file() || meta.len() > FILE_BYTES {
            return Err(refuse(
                &file,
                root,
                &format!("is not a regular file of at most {FILE_BYTES} bytes"),
            ));
        }
        let text = std::fs::read(&real)
            .map_err(|e| refuse(&file, root, &format!("cannot be read ({e})")))?;
        let dir = real.parent().unwrap_or(root).to_path_buf();
        for item in imports(&String::from_utf8_lossy(&text)) {
            match item {
                Import::Path(p) => queue.push(dir.join(p)),
                Import::Module(name) => {
                    // just's search for a module without a path.
                    for candidate in [
                        format!("{name}.just"),
                        format!("{name}/mod.just"),
                        format!("{name}/justfile"),
                        format!("{name}/.justfile"),
                    ] {
                        let c = dir.join(&candidate);
                        if std::fs::symlink_metadata(&c).is_ok() {
                            queue.push(c);
                        }
                    }
                }
                Import::Unjudgeable(line) => {
                    return Err(refuse(&file, root, &format!("imports a path verbgate cannot resolve without running just ({line:?})")));
                }
            }
        }
        seen.push(real);
    }
    Ok(())
}

/// What one top-level `import`/`mod` line names.
#[derive(Debug, PartialEq)]
enum Import {
    /// A literal path, relative to the importing file's directory or
    /// absolute.
    Path(String),
    /// `mod name` without a path: just looks for `name.just` and others.
    Module(String),
    /// A path just would expand (`x'…'`, interpolation) or cannot be read.
    Unjudgeable(String),
}

/// The `import` and `mod` items of a justfile: lines at column 0 (items
/// never start indented; indented lines are recipe bodies).
fn imports(text: &str) -> Vec<Import> {
    let mut out = Vec::new();
    for line in text.lines() {
        let rest = if let Some(r) = keyword(line, "import") {
            Some((r, false))
        } else {
            keyword(line, "mod").map(|r| (r, true))
        };
        let Some((rest, is_mod)) = rest else { continue };
        let rest = rest.trim_start();
        if is_mod {
            let name_end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
                .unwrap_or(rest.len());
            let (name, after) = rest.split_at(name_end);
            let after = after.trim();
            if after.is_empty() || after.starts_with('#') {
                out.push(Import::Module(name.to_string()));
                continue;
            }
            out.push(
                string_literal(after)
                    .map_or_else(|| Import::Unjudgeable(line.to_string()), Import::Path),
            );
        } else {
            out.push(
                string_literal(rest)
                    .map_or_else(|| Import::Unjudgeable(line.to_string()), Import::Path),
            );
        }
    }
    out
}

/// `line` minus a leading `keyword` or `keyword?` followed by blank space.
fn keyword<'a>(line: &'a str, keyword: &str) -> Option<&'a str> {
    let rest = line.strip_prefix(keyword)?;
    let rest = rest.strip_prefix('?').unwrap_or(rest);
    rest.starts_with([' ', '\t']).then_some(rest)
}

/// A plain quoted path (`'…'`, `"…"` without escapes or interpolation),
/// followed by nothing but a comment.
fn string_literal(s: &str) -> Option<String> {
    let quote = s.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    let body = &s[1..];
    let end = body.find(quote)?;
    let (path, after) = (&body[..end], body[end + 1..].trim());
    if !(after.is_empty() || after.starts_with('#'))
        || path.contains('\\')
        || path.contains("{{")
        || path.starts_with('~')
        || path.is_empty()
    {
        return None;
    }
    Some(path.to_string())
}

/// `file` resolved (links followed) and inside `root`.
fn inside(file: &Path, root: &Path) -> Result<PathBuf, OpError> {
    let real = file
        .canonicalize()
        .map_err(|e| refuse(file, root, &format!("cannot be resolved ({e})")))?;
    if !real.starts_with(root) {
        return Err(refuse(file, root, &format!("leads outside the root (to {})", real.display())));
    }
    Ok(real)
}

fn refuse(file: &Path, root: &Path, why: &str) -> OpError {
    OpError::new(
        ErrorCode::PlanRefused,
        format!(
            "the justfile file {} {why}; just reads every file a justfile imports (and quotes lines of them in its errors), so verbgate runs just only when all of them are inside the root {}",
            file.display(),
            root.display()
        ),
    )
    .with("path", file.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn imports_and_modules_are_read_from_top_level_lines_only() {
        let text =
            "import 'a.just'\nimport? \"b/c.just\" # maybe\nmod tools\nmod? other 'o.just'\nrecipe:\n    import 'not/an/item'\nimport x'~/y'\nimport '{{x}}'\n";
        assert_eq!(
            imports(text),
            vec![
                Import::Path("a.just".into()),
                Import::Path("b/c.just".into()),
                Import::Module("tools".into()),
                Import::Path("o.just".into()),
                Import::Unjudgeable("import x'~/y'".into()),
                Import::Unjudgeable("import '{{x}}'".into()),
            ]
        );
    }

    #[test]
    fn a_justfile_or_an_import_leading_outside_the_root_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
        let root = base.join("root");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(base.join("secret.txt"), "SECRET=1\n").unwrap();
        std::fs::write(root.join("sub/inner.just"), "inner:\n    echo\n").unwrap();
        let jf = root.join("justfile");
        std::fs::write(&jf, "import 'sub/inner.just'\n\ngreet:\n    echo hi\n").unwrap();
        check(&jf, &root).unwrap();
        for evil in [
            format!("import '{}'\n", base.join("secret.txt").display()),
            "import '../secret.txt'\n".to_string(),
            "import x'~/.env'\n".to_string(),
            "mod s '../secret.txt'\n".to_string(),
        ] {
            std::fs::write(&jf, &evil).unwrap();
            assert_eq!(check(&jf, &root).unwrap_err().code, ErrorCode::PlanRefused, "{evil}");
        }
        // Through a link, at any depth, and the justfile itself.
        std::os::unix::fs::symlink(base.join("secret.txt"), root.join("sub/link.just")).unwrap();
        std::fs::write(root.join("sub/inner.just"), "import 'link.just'\n").unwrap();
        std::fs::write(&jf, "import 'sub/inner.just'\n").unwrap();
        assert!(check(&jf, &root).is_err());
        std::fs::remove_file(&jf).unwrap();
        std::os::unix::fs::symlink(base.join("secret.txt"), &jf).unwrap();
        assert!(check(&jf, &root).is_err());
    }

    #[test]
    fn import_cycles_end() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        std::fs::write(root.join("justfile"), "import 'b.just'\n").unwrap();
        std::fs::write(root.join("b.just"), "import 'justfile'\n").unwrap();
        check(&root.join("justfile"), &root).unwrap();
    }
}
