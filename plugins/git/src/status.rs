//! Parsing `git status --porcelain=v2 --branch -z`.
//!
//! Records are NUL-terminated. Headers start with `# branch.`; entries are
//! `1` (ordinary), `2` (rename/copy: the *next* record is the origin path),
//! `u` (unmerged), `?` (untracked) and `!` (ignored). Paths come last on a
//! line and may contain spaces, so fields are split with a fixed count.

use verbgate_plugin_sdk::{json, Value};

/// One changed path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Path (relative to the repository root).
    pub path: String,
    /// Origin of a rename/copy.
    pub orig_path: Option<String>,
    /// Index (staged) state letter, `.` for unchanged.
    pub index: char,
    /// Worktree state letter, `.` for unchanged.
    pub worktree: char,
    /// changed / renamed / unmerged / untracked / ignored.
    pub kind: &'static str,
}

/// The parsed status.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Status {
    /// Current commit; `None` before the first commit.
    pub oid: Option<String>,
    /// Branch name; `None` when detached.
    pub head: Option<String>,
    /// Upstream branch.
    pub upstream: Option<String>,
    /// Commits ahead of upstream.
    pub ahead: Option<i64>,
    /// Commits behind upstream.
    pub behind: Option<i64>,
    /// Changed paths, in git's order.
    pub entries: Vec<Entry>,
}

/// Parse porcelain v2 output (lossy on non-UTF-8 paths).
pub fn parse(bytes: &[u8]) -> Status {
    let records: Vec<String> = bytes.split(|b| *b == 0).map(|r| String::from_utf8_lossy(r).into_owned()).collect();
    let mut st = Status::default();
    let mut i = 0;
    while i < records.len() {
        let rec = &records[i];
        i += 1;
        if let Some(h) = rec.strip_prefix("# ") {
            let (key, val) = h.split_once(' ').unwrap_or((h, ""));
            match key {
                "branch.oid" => st.oid = (val != "(initial)").then(|| val.to_string()),
                "branch.head" => st.head = (val != "(detached)").then(|| val.to_string()),
                "branch.upstream" => st.upstream = Some(val.to_string()),
                "branch.ab" => {
                    let mut parts = val.split(' ');
                    st.ahead = parts.next().and_then(|a| a.trim_start_matches('+').parse().ok());
                    st.behind = parts.next().and_then(|b| b.trim_start_matches('-').parse().ok());
                }
                _ => {}
            }
            continue;
        }
        let xy = |s: &str| {
            let mut c = s.chars();
            (c.next().unwrap_or('.'), c.next().unwrap_or('.'))
        };
        match rec.chars().next() {
            Some('1') => {
                let f: Vec<&str> = rec.splitn(9, ' ').collect();
                if f.len() == 9 {
                    let (x, y) = xy(f[1]);
                    st.entries.push(Entry { path: f[8].to_string(), orig_path: None, index: x, worktree: y, kind: "changed" });
                }
            }
            Some('2') => {
                let f: Vec<&str> = rec.splitn(10, ' ').collect();
                let orig = records.get(i).cloned();
                i += 1;
                if f.len() == 10 {
                    let (x, y) = xy(f[1]);
                    st.entries.push(Entry { path: f[9].to_string(), orig_path: orig, index: x, worktree: y, kind: "renamed" });
                }
            }
            Some('u') => {
                let f: Vec<&str> = rec.splitn(11, ' ').collect();
                if f.len() == 11 {
                    let (x, y) = xy(f[1]);
                    st.entries.push(Entry { path: f[10].to_string(), orig_path: None, index: x, worktree: y, kind: "unmerged" });
                }
            }
            Some('?') => st.entries.push(Entry { path: rec[2..].to_string(), orig_path: None, index: '?', worktree: '?', kind: "untracked" }),
            Some('!') => st.entries.push(Entry { path: rec[2..].to_string(), orig_path: None, index: '!', worktree: '!', kind: "ignored" }),
            _ => {}
        }
    }
    st
}

impl Status {
    /// The verb's result.
    pub fn to_json(&self) -> Value {
        let entries: Vec<Value> = self
            .entries
            .iter()
            .map(|e| {
                let tracked = matches!(e.kind, "changed" | "renamed" | "unmerged");
                json!({
                    "path": e.path,
                    "orig_path": e.orig_path,
                    "index": e.index.to_string(),
                    "worktree": e.worktree.to_string(),
                    "kind": e.kind,
                    "staged": tracked && e.index != '.',
                    "unstaged": tracked && e.worktree != '.',
                })
            })
            .collect();
        let clean = self.entries.iter().all(|e| e.kind == "ignored");
        json!({
            "branch": { "head": self.head, "oid": self.oid, "upstream": self.upstream, "ahead": self.ahead, "behind": self.behind },
            "entries": entries,
            "clean": clean,
        })
    }
}

/// The result schema of `git.status`.
pub fn result_schema() -> Value {
    let state = json!({ "type": "string", "enum": ["M", "A", "D", "R", "C", "T", "U", ".", "?", "!"] });
    let opt_str = json!({ "type": ["string", "null"] });
    let opt_int = json!({ "type": ["integer", "null"] });
    json!({
        "type": "object",
        "required": ["branch", "entries", "clean"],
        "properties": {
            "branch": {
                "type": "object",
                "required": ["head", "oid", "upstream", "ahead", "behind"],
                "properties": {
                    "head": { "type": ["string", "null"], "description": "branch name; null when HEAD is detached" },
                    "oid": { "type": ["string", "null"], "description": "HEAD commit; null before the first commit" },
                    "upstream": opt_str, "ahead": opt_int, "behind": opt_int
                }
            },
            "entries": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["path", "orig_path", "index", "worktree", "kind", "staged", "unstaged"],
                    "properties": {
                        "path": { "type": "string" },
                        "orig_path": { "type": ["string", "null"], "description": "origin of a rename or copy" },
                        "index": state, "worktree": state,
                        "kind": { "type": "string", "enum": ["changed", "renamed", "unmerged", "untracked", "ignored"] },
                        "staged": { "type": "boolean" }, "unstaged": { "type": "boolean" }
                    }
                }
            },
            "clean": { "type": "boolean", "description": "no changed or untracked paths" }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_headers_entries_renames_and_spaces() {
        let raw = b"# branch.oid 1234abcd\0# branch.head main\0# branch.upstream origin/main\0# branch.ab +2 -1\0\
1 M. N... 100644 100644 100644 aaaa bbbb staged file.txt\0\
1 .M N... 100644 100644 100644 aaaa bbbb dir/with space.txt\0\
2 R. N... 100644 100644 100644 aaaa bbbb R100 new name.txt\0old name.txt\0\
u UU N... 100644 100644 100644 100644 aaaa bbbb cccc conflict.txt\0\
? untracked file\0! ignored.log\0";
        let st = parse(raw);
        assert_eq!(st.head.as_deref(), Some("main"));
        assert_eq!(st.oid.as_deref(), Some("1234abcd"));
        assert_eq!((st.ahead, st.behind), (Some(2), Some(1)));
        let paths: Vec<&str> = st.entries.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(paths, ["staged file.txt", "dir/with space.txt", "new name.txt", "conflict.txt", "untracked file", "ignored.log"]);
        assert_eq!(st.entries[2].orig_path.as_deref(), Some("old name.txt"));
        let j = st.to_json();
        assert_eq!(j["entries"][0]["staged"], true);
        assert_eq!(j["entries"][0]["unstaged"], false);
        assert_eq!(j["entries"][1]["unstaged"], true);
        assert_eq!(j["clean"], false);
    }

    #[test]
    fn initial_and_detached() {
        let st = parse(b"# branch.oid (initial)\0# branch.head (detached)\0");
        assert_eq!((st.oid.as_deref(), st.head.as_deref()), (None, None));
        assert_eq!(st.to_json()["clean"], true);
    }
}
