//! The fence: which verb names a component may declare, and which verbs the
//! operator lets callers reach.
//!
//! - Names are `namespace.verb` in lower case.
//! - `trust.`, `plugin.`, `state.` and `hooks.` are reserved: those
//!   operations are terminal-only, because an agent that could call them
//!   could grant itself privileges.
//! - `job.` belongs to the bundled core component.
//! - The allow list (`allow = ["git.*"]`) only ever narrows the surface: a
//!   newly installed component widens nothing it excludes.

/// Namespaces no component may declare.
pub const RESERVED_NAMESPACES: &[&str] = &["trust", "plugin", "state", "hooks"];

/// The namespace only the bundled core may declare.
pub const CORE_NAMESPACE: &str = "job";

/// Why a name is refused.
pub fn name_problem(name: &str) -> Option<String> {
    let mut parts = name.split('.');
    let valid = name.split('.').count() >= 2
        && parts.all(|p| {
            let mut c = p.chars();
            matches!(c.next(), Some(f) if f.is_ascii_lowercase())
                && c.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
        });
    (!valid).then(|| format!("`{name}` is not a valid verb name (use `namespace.verb`: lower-case letters, digits, `_`, `-`)"))
}

/// The namespace of a verb name.
pub fn namespace(name: &str) -> &str {
    name.split('.').next().unwrap_or(name)
}

/// Why a namespace is closed to this component, if it is.
pub fn namespace_problem(name: &str, is_bundled_core: bool) -> Option<String> {
    let ns = namespace(name);
    if RESERVED_NAMESPACES.contains(&ns) {
        return Some(format!("`{name}` is in the reserved namespace `{ns}.`: trust, plugin, state and hooks operations are terminal-only, never verbs"));
    }
    if ns == CORE_NAMESPACE && !is_bundled_core {
        return Some(format!(
            "`{name}` is in the `job.` namespace, which belongs to the bundled core component"
        ));
    }
    None
}

/// Whether `p` is a verb pattern as allow lists, policy rules and OAuth
/// scope maps write them: `*`, `ns.*` (a namespace, which may itself be
/// dotted) or an exact verb name.
pub fn is_pattern(p: &str) -> bool {
    match p.strip_suffix(".*") {
        _ if p == "*" => true,
        Some(ns) => name_problem(&format!("{ns}.x")).is_none(),
        None => name_problem(p).is_none(),
    }
}

/// Whether `verb` matches an allow-list pattern: `*`, `ns.*`, or an exact name.
pub fn allowed(verb: &str, allow: Option<&[String]>) -> bool {
    let Some(patterns) = allow else { return true };
    patterns.iter().any(|p| {
        p == "*"
            || p == verb
            || p.strip_suffix(".*").is_some_and(|prefix| {
                namespace(verb) == prefix || verb.starts_with(&format!("{prefix}."))
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_are_star_namespace_star_or_names() {
        for ok in ["*", "git.*", "git.status", "a.b.*"] {
            assert!(is_pattern(ok), "{ok}");
        }
        for bad in ["", "Git.*", "git", ".*", "git.**", "git status"] {
            assert!(!is_pattern(bad), "{bad}");
        }
    }

    #[test]
    fn reserved_and_core_namespaces_are_fenced() {
        for n in ["trust.add", "plugin.install", "state.migrate", "hooks.trust"] {
            assert!(namespace_problem(n, true).is_some(), "{n}");
        }
        assert!(namespace_problem("job.wait", false).is_some());
        assert!(namespace_problem("job.wait", true).is_none());
        assert!(namespace_problem("git.status", false).is_none());
        // A look-alike is not the reserved namespace.
        assert!(namespace_problem("trusty.add", false).is_none());
    }

    #[test]
    fn names_must_be_namespaced_lower_case() {
        assert!(name_problem("git.status").is_none());
        assert!(name_problem("cargo.test-all").is_none());
        for bad in ["status", "Git.status", "git.", ".x", "git..x", "git.st atus", "1git.x", ""] {
            assert!(name_problem(bad).is_some(), "{bad}");
        }
    }

    #[test]
    fn allow_list_narrows() {
        let allow = vec!["git.*".to_string(), "job.status".to_string()];
        assert!(allowed("git.log", Some(&allow)));
        assert!(allowed("job.status", Some(&allow)));
        assert!(!allowed("job.kill", Some(&allow)));
        assert!(!allowed("gitx.log", Some(&allow)));
        assert!(allowed("anything.x", None));
    }
}
