//! `git branches` from `git for-each-ref` with unit-separated fields, one
//! ref per line (a subject is a single line, so newlines cannot occur
//! inside a record).

use crate::time::to_utc;
use verbgate_plugin_sdk::{json, Value};

/// The `--format` argument.
pub const FORMAT: &str = "--format=%(refname)%1f%(upstream:short)%1f%(objectname)%1f%(committerdate:iso-strict)%1f%(subject)%1f%(HEAD)";

/// Parse for-each-ref output.
pub fn parse(bytes: &[u8]) -> Vec<Value> {
    let text = String::from_utf8_lossy(bytes);
    text.lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.splitn(6, '\u{1f}').collect();
            if f.len() != 6 {
                return None;
            }
            let (kind, name) = if let Some(n) = f[0].strip_prefix("refs/heads/") {
                ("local", n)
            } else if let Some(n) = f[0].strip_prefix("refs/remotes/") {
                ("remote", n)
            } else {
                return None;
            };
            // `origin/HEAD` is a symbolic pointer, not a branch.
            if kind == "remote" && name.ends_with("/HEAD") {
                return None;
            }
            Some(json!({
                "name": name,
                "kind": kind,
                "upstream": if f[1].is_empty() { Value::Null } else { json!(f[1]) },
                "commit": f[2],
                "time": to_utc(f[3]),
                "subject": f[4],
                "current": f[5] == "*",
            }))
        })
        .collect()
}

/// The result schema of `git.branches`.
pub fn result_schema() -> Value {
    json!({
        "type": "object",
        "required": ["branches"],
        "properties": { "branches": { "type": "array", "items": {
            "type": "object",
            "required": ["name", "kind", "upstream", "commit", "time", "subject", "current"],
            "properties": {
                "name": { "type": "string" }, "kind": { "enum": ["local", "remote"] },
                "upstream": { "type": ["string", "null"] }, "commit": { "type": "string" },
                "time": { "type": "string" }, "subject": { "type": "string" }, "current": { "type": "boolean" }
            }
        } } }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_local_and_remote_refs() {
        let raw = "refs/heads/main\u{1f}origin/main\u{1f}abc\u{1f}2024-01-02T03:04:05+02:00\u{1f}first\u{1f}*\nrefs/remotes/origin/HEAD\u{1f}\u{1f}abc\u{1f}2024-01-02T03:04:05+02:00\u{1f}first\u{1f} \nrefs/remotes/origin/main\u{1f}\u{1f}abc\u{1f}2024-01-02T03:04:05+02:00\u{1f}first\u{1f} \n";
        let b = parse(raw.as_bytes());
        assert_eq!(b.len(), 2);
        assert_eq!(b[0]["current"], true);
        assert_eq!(b[0]["upstream"], "origin/main");
        assert_eq!(b[0]["time"], "2024-01-02T01:04:05Z");
        assert_eq!(b[1]["kind"], "remote");
        assert_eq!(b[1]["upstream"], Value::Null);
    }
}
