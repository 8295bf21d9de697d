//! Parsing `git status --porcelain=v2 --branch -z`.
//!
//! Records are NUL-terminated. Headers start with `# branch.`; entries are
//! `1` (ordinary), `2` (rename/copy: the *next* record is the origin path),
//! `u` (unmerged), `?` (untracked) and `!` (ignored). Paths come last on a
//! line and may contain spaces, so fields are split with a fixed count.

use schemars::JsonSchema;
use serde::Serialize;
use verbgate_plugin_sdk::{errors, OpError};

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
    pub kind: Kind,
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
    let records: Vec<String> =
        bytes.split(|b| *b == 0).map(|r| String::from_utf8_lossy(r).into_owned()).collect();
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
                    st.entries.push(Entry {
                        path: f[8].to_string(),
                        orig_path: None,
                        index: x,
                        worktree: y,
                        kind: Kind::Changed,
                    });
                }
            }
            Some('2') => {
                let f: Vec<&str> = rec.splitn(10, ' ').collect();
                let orig = records.get(i).cloned();
                i += 1;
                if f.len() == 10 {
                    let (x, y) = xy(f[1]);
                    st.entries.push(Entry {
                        path: f[9].to_string(),
                        orig_path: orig,
                        index: x,
                        worktree: y,
                        kind: Kind::Renamed,
                    });
                }
            }
            Some('u') => {
                let f: Vec<&str> = rec.splitn(11, ' ').collect();
                if f.len() == 11 {
                    let (x, y) = xy(f[1]);
                    st.entries.push(Entry {
                        path: f[10].to_string(),
                        orig_path: None,
                        index: x,
                        worktree: y,
                        kind: Kind::Unmerged,
                    });
                }
            }
            Some('?') => st.entries.push(Entry {
                path: rec[2..].to_string(),
                orig_path: None,
                index: '?',
                worktree: '?',
                kind: Kind::Untracked,
            }),
            Some('!') => st.entries.push(Entry {
                path: rec[2..].to_string(),
                orig_path: None,
                index: '!',
                worktree: '!',
                kind: Kind::Ignored,
            }),
            _ => {}
        }
    }
    st
}

impl Status {
    /// The verb's result; `invalid_output` for a state letter git does not
    /// document (the schema could not describe it).
    pub fn to_result(&self) -> Result<StatusResult, OpError> {
        let entries = self
            .entries
            .iter()
            .map(|e| {
                let tracked = matches!(e.kind, Kind::Changed | Kind::Renamed | Kind::Unmerged);
                Ok(EntryState {
                    path: e.path.clone(),
                    orig_path: e.orig_path.clone(),
                    index: State::of(e.index)?,
                    worktree: State::of(e.worktree)?,
                    kind: e.kind,
                    staged: tracked && e.index != '.',
                    unstaged: tracked && e.worktree != '.',
                })
            })
            .collect::<Result<Vec<_>, OpError>>()?;
        Ok(StatusResult {
            branch: BranchState {
                head: self.head.clone(),
                oid: self.oid.clone(),
                upstream: self.upstream.clone(),
                ahead: self.ahead,
                behind: self.behind,
            },
            entries,
            clean: self.entries.iter().all(|e| e.kind == Kind::Ignored),
        })
    }
}

// `git.status`'s result (and the status a write verb reads back).
#[derive(Debug, Serialize, JsonSchema)]
pub struct StatusResult {
    pub branch: BranchState,
    pub entries: Vec<EntryState>,
    /// no changed or untracked paths
    pub clean: bool,
}

// The branch HEAD is on, and its upstream.
#[derive(Debug, Serialize, JsonSchema)]
pub struct BranchState {
    /// branch name; null when HEAD is detached
    pub head: Option<String>,
    /// HEAD commit; null before the first commit
    pub oid: Option<String>,
    pub upstream: Option<String>,
    pub ahead: Option<i64>,
    pub behind: Option<i64>,
}

// One changed path, as callers see it.
#[derive(Debug, Serialize, JsonSchema)]
pub struct EntryState {
    pub path: String,
    /// origin of a rename or copy
    pub orig_path: Option<String>,
    pub index: State,
    pub worktree: State,
    pub kind: Kind,
    pub staged: bool,
    pub unstaged: bool,
}

// What kind of entry a path is (a plain comment, as on every result
// type: a type's doc comment would become its schema's description).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    // Plain comments: documented variants would become a `oneOf`.
    Changed,
    Renamed,
    Unmerged,
    Untracked,
    Ignored,
}

// A state letter of porcelain v2 (`git status --help`, "Short Format").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
pub enum State {
    // Modified, added, deleted, renamed, copied, type changed, unmerged.
    M,
    A,
    D,
    R,
    C,
    T,
    U,
    // Unchanged.
    #[serde(rename = ".")]
    Unchanged,
    // Untracked.
    #[serde(rename = "?")]
    Untracked,
    // Ignored.
    #[serde(rename = "!")]
    Ignored,
}

impl State {
    /// The state a letter names.
    fn of(c: char) -> Result<State, OpError> {
        Ok(match c {
            'M' => State::M,
            'A' => State::A,
            'D' => State::D,
            'R' => State::R,
            'C' => State::C,
            'T' => State::T,
            'U' => State::U,
            '.' => State::Unchanged,
            '?' => State::Untracked,
            '!' => State::Ignored,
            other => {
                return Err(errors::invalid_output(&format!(
                    "git status printed the state letter {other:?}, which verbgate does not know"
                )))
            }
        })
    }
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
        assert_eq!(
            paths,
            [
                "staged file.txt",
                "dir/with space.txt",
                "new name.txt",
                "conflict.txt",
                "untracked file",
                "ignored.log"
            ]
        );
        assert_eq!(st.entries[2].orig_path.as_deref(), Some("old name.txt"));
        let r = st.to_result().unwrap();
        assert!(r.entries[0].staged && !r.entries[0].unstaged);
        assert!(r.entries[1].unstaged);
        assert!(!r.clean);
        assert_eq!(verbgate_plugin_sdk::serde_json::to_value(&r.entries[2]).unwrap()["index"], "R");
        assert_eq!(
            verbgate_plugin_sdk::serde_json::to_value(&r.entries[4]).unwrap()["worktree"],
            "?"
        );
    }

    #[test]
    fn initial_and_detached() {
        let st = parse(b"# branch.oid (initial)\0# branch.head (detached)\0");
        assert_eq!((st.oid.as_deref(), st.head.as_deref()), (None, None));
        assert!(st.to_result().unwrap().clean);
    }
}
