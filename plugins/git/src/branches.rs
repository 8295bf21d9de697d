//! `git branches` from `git for-each-ref` with unit-separated fields, one
//! ref per line (a subject is a single line, so newlines cannot occur
//! inside a record).

use crate::time::to_utc;
use schemars::JsonSchema;
use serde::Serialize;

/// The `--format` argument.
pub const FORMAT: &str = "--format=%(refname)%1f%(upstream:short)%1f%(objectname)%1f%(committerdate:iso-strict)%1f%(subject)%1f%(HEAD)";

// `git.branches`' result.
#[derive(Debug, Serialize, JsonSchema)]
pub struct BranchesResult {
    pub branches: Vec<Branch>,
}

// One branch.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Branch {
    pub name: String,
    pub kind: RefKind,
    pub upstream: Option<String>,
    pub commit: String,
    pub time: String,
    pub subject: String,
    pub current: bool,
}

// Where a branch lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RefKind {
    Local,
    Remote,
}

/// Parse for-each-ref output.
pub fn parse(bytes: &[u8]) -> Vec<Branch> {
    let text = String::from_utf8_lossy(bytes);
    text.lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.splitn(6, '\u{1f}').collect();
            if f.len() != 6 {
                return None;
            }
            let (kind, name) = if let Some(n) = f[0].strip_prefix("refs/heads/") {
                (RefKind::Local, n)
            } else if let Some(n) = f[0].strip_prefix("refs/remotes/") {
                (RefKind::Remote, n)
            } else {
                return None;
            };
            // `origin/HEAD` is a symbolic pointer, not a branch.
            if kind == RefKind::Remote && name.ends_with("/HEAD") {
                return None;
            }
            Some(Branch {
                name: name.to_string(),
                kind,
                upstream: (!f[1].is_empty()).then(|| f[1].to_string()),
                commit: f[2].to_string(),
                time: to_utc(f[3]),
                subject: f[4].to_string(),
                current: f[5] == "*",
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_local_and_remote_refs() {
        let raw = "refs/heads/main\u{1f}origin/main\u{1f}abc\u{1f}2024-01-02T03:04:05+02:00\u{1f}first\u{1f}*\nrefs/remotes/origin/HEAD\u{1f}\u{1f}abc\u{1f}2024-01-02T03:04:05+02:00\u{1f}first\u{1f} \nrefs/remotes/origin/main\u{1f}\u{1f}abc\u{1f}2024-01-02T03:04:05+02:00\u{1f}first\u{1f} \n";
        let b = parse(raw.as_bytes());
        assert_eq!(b.len(), 2);
        assert!(b[0].current);
        assert_eq!(b[0].upstream.as_deref(), Some("origin/main"));
        assert_eq!(b[0].time, "2024-01-02T01:04:05Z");
        assert_eq!(b[1].kind, RefKind::Remote);
        assert_eq!(b[1].upstream, None);
    }
}
