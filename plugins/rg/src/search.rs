//! `rg --json` → the `rg.search` result.
//!
//! ripgrep's JSON Lines output is a stream of messages per searched file —
//! `begin`, then `match` and `context` lines in file order, then `end` with
//! that file's statistics — and one `summary` with the totals. Nothing else
//! is read: rg's human output is never parsed.
//!
//! Context lines are attached to the match they surround: a context line
//! within `after` lines below a match is in that match's `after`, one within
//! `before` lines above the next match is in its `before` (a line between two
//! close matches can be in both; rg prints it once).
//!
//! Caps: rg has no cap on the total number of matches, so `limit` is
//! applied here (rg's per-file and summary statistics still count every
//! match it found); `per_file` is `--max-count`, capping matching lines per file in rg itself;
//! and the host may cut the output at its capture bound. Whichever was
//! reached is listed in `caps_reached`, and `truncated` is true.
//!
//! This module does not depend on the guest SDK: its types are the
//! result (serde writes them, schemars describes them), and their doc
//! comments are the result schema's descriptions.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use crate::text::{decode, strip_eol};

/// The caps and context sizes the search ran with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Context lines before a match (`--before-context`).
    pub before: u64,
    /// Context lines after a match (`--after-context`).
    pub after: u64,
    /// Most matches returned in all (applied here).
    pub max_total: usize,
    /// Most matching lines per file (`--max-count`), if capped.
    pub max_per_file: Option<u64>,
}

// One line of context (plain comments on the types: a type's doc comment
// would become its schema's description).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct ContextLine {
    // 1-based line number.
    pub line: u64,
    // The line without its terminator.
    pub text: String,
}

/// start/end: byte offsets in the line, 0-based, end exclusive
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Submatch {
    // Byte offset of the start in the line (0-based).
    pub start: u64,
    // Byte offset just past the end.
    pub end: u64,
    // The matched text.
    pub text: String,
}

// One matching line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Match {
    // The file, as rg names it (relative to the directory rg runs in).
    pub path: String,
    /// 1-based
    pub line: u64,
    /// 1-based byte column of the first submatch
    pub column: u64,
    /// the line; bytes that are not UTF-8 are U+FFFD
    pub text: String,
    // Every match in the line.
    pub submatches: Vec<Submatch>,
    // Context lines above and below.
    pub before: Vec<ContextLine>,
    pub after: Vec<ContextLine>,
}

// A file with matches and rg's counts for it: matches (submatches) and
// matching lines.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct FileCount {
    pub path: String,
    pub matches: u64,
    pub lines: u64,
}

// rg's totals (its `summary` message).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Stats {
    // Files searched, files with at least one match, bytes searched,
    // matching lines, matches.
    pub searches: u64,
    pub searches_with_match: u64,
    pub bytes_searched: u64,
    pub matched_lines: u64,
    pub matches: u64,
    // Wall time of the whole search, in milliseconds.
    pub elapsed_ms: u64,
}

// A cap a search reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Cap {
    // `limit` (max_total).
    Limit,
    // `per_file` (max_per_file).
    PerFile,
    // The host's capture bound.
    Output,
}

/// The whole search.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Search {
    /// Matches, in rg's order (by path: the plan asks for `--sort=path`).
    pub matches: Vec<Match>,
    /// Files with matches.
    pub files: Vec<FileCount>,
    /// Which caps were reached.
    pub caps_reached: Vec<Cap>,
    /// rg's totals; `None` when the output was cut before rg printed them.
    pub stats: Option<Stats>,
}

// `rg.search`'s result.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SearchResult {
    pub matches: Vec<Match>,
    pub files: Vec<FileCount>,
    /// a cap was reached: see caps_reached
    pub truncated: bool,
    pub caps_reached: Vec<Cap>,
    /// rg's totals; null when the output was cut
    pub stats: Option<Stats>,
    /// files rg could not search
    pub errors: Vec<String>,
}

/// Why the output could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadOutput(pub String);

/// Parse rg's `--json` stdout. `cut` says the host stopped rg at its
/// capture bound: the last line may be partial and the summary missing.
pub fn parse(stdout: &[u8], limits: Limits, cut: bool) -> Result<Search, BadOutput> {
    let mut s = Search::default();
    let mut state = FileState::default();
    let mut dropped = false;
    let mut per_file_cap = false;
    let lines: Vec<&[u8]> = stdout.split(|b| *b == b'\n').collect();
    let complete = if stdout.ends_with(b"\n") || !cut { lines.len() } else { lines.len() - 1 };
    for (i, raw) in lines[..complete].iter().enumerate() {
        if raw.is_empty() {
            continue;
        }
        let msg: Value = match serde_json::from_slice(raw) {
            Ok(v) => v,
            Err(e) => {
                return Err(BadOutput(format!(
                    "rg printed a line that is not JSON (line {}): {e}",
                    i + 1
                )))
            }
        };
        let data = &msg["data"];
        match msg["type"].as_str() {
            Some("begin") => state = FileState::default(),
            Some("context") => {
                let c = ContextLine {
                    line: data["line_number"].as_u64().unwrap_or(0),
                    text: line_text(data),
                };
                if let Some(m) = state.last_kept.and_then(|i| s.matches.get_mut(i)) {
                    if c.line > m.line && c.line <= m.line + limits.after {
                        m.after.push(c.clone());
                    }
                }
                state.pending.push(c);
            }
            Some("match") => {
                let m = to_match(data, &mut state.pending, limits.before);
                if s.matches.len() < limits.max_total {
                    s.matches.push(m);
                    state.last_kept = Some(s.matches.len() - 1);
                } else {
                    dropped = true;
                    state.last_kept = None;
                }
            }
            Some("end") => {
                let stats = &data["stats"];
                let matched = stats["matched_lines"].as_u64().unwrap_or(0);
                if matched > 0 {
                    let path = decode(&data["path"]).unwrap_or_default();
                    s.files.push(FileCount {
                        path,
                        matches: stats["matches"].as_u64().unwrap_or(0),
                        lines: matched,
                    });
                }
                if limits.max_per_file.is_some_and(|cap| matched >= cap) {
                    per_file_cap = true;
                }
                state = FileState::default();
            }
            Some("summary") => s.stats = Some(stats(data)),
            // Message types added by a later rg are not ours to guess at.
            _ => {}
        }
    }
    if dropped {
        s.caps_reached.push(Cap::Limit);
    }
    if per_file_cap {
        s.caps_reached.push(Cap::PerFile);
    }
    if cut {
        s.caps_reached.push(Cap::Output);
    }
    Ok(s)
}

/// What is remembered within one file.
#[derive(Debug, Default)]
struct FileState {
    /// Context lines since the last match (candidates for the next match's
    /// `before`).
    pending: Vec<ContextLine>,
    /// The last match of this file that was kept, for its `after`.
    last_kept: Option<usize>,
}

fn line_text(data: &Value) -> String {
    strip_eol(decode(&data["lines"]).unwrap_or_default())
}

fn to_match(data: &Value, pending: &mut Vec<ContextLine>, before: u64) -> Match {
    let line = data["line_number"].as_u64().unwrap_or(0);
    let submatches: Vec<Submatch> = data["submatches"]
        .as_array()
        .map(|subs| {
            subs.iter()
                .map(|sm| Submatch {
                    start: sm["start"].as_u64().unwrap_or(0),
                    end: sm["end"].as_u64().unwrap_or(0),
                    text: decode(&sm["match"]).unwrap_or_default(),
                })
                .collect()
        })
        .unwrap_or_default();
    let before_lines =
        pending.drain(..).filter(|c| c.line < line && c.line + before >= line).collect();
    Match {
        path: decode(&data["path"]).unwrap_or_default(),
        line,
        column: submatches.first().map_or(1, |s| s.start + 1),
        text: line_text(data),
        submatches,
        before: before_lines,
        after: Vec::new(),
    }
}

fn stats(data: &Value) -> Stats {
    let st = &data["stats"];
    let n = |k: &str| st[k].as_u64().unwrap_or(0);
    let elapsed = &data["elapsed_total"];
    let ms = elapsed["secs"].as_u64().unwrap_or(0) * 1000
        + elapsed["nanos"].as_u64().unwrap_or(0) / 1_000_000;
    Stats {
        searches: n("searches"),
        searches_with_match: n("searches_with_match"),
        bytes_searched: n("bytes_searched"),
        matched_lines: n("matched_lines"),
        matches: n("matches"),
        elapsed_ms: ms,
    }
}

impl Search {
    /// The verb's result; `errors` are the messages rg printed on stderr
    /// about files it could not search.
    pub fn into_result(self, errors: Vec<String>) -> SearchResult {
        SearchResult {
            truncated: !self.caps_reached.is_empty(),
            matches: self.matches,
            files: self.files,
            caps_reached: self.caps_reached,
            stats: self.stats,
            errors,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NO_CAPS: Limits = Limits { before: 0, after: 0, max_total: 1000, max_per_file: None };

    /// Real `rg --json -B1 -A1 --sort=path needle` output (ripgrep 15.1):
    /// two close matches sharing a context line, a file with one match, and
    /// a non-UTF-8 file name.
    const OUTPUT: &str = concat!(
        r#"{"type":"begin","data":{"path":{"text":"a.txt"}}}"#,
        "\n",
        r#"{"type":"context","data":{"path":{"text":"a.txt"},"lines":{"text":"zero\n"},"line_number":1,"absolute_offset":0,"submatches":[]}}"#,
        "\n",
        r#"{"type":"match","data":{"path":{"text":"a.txt"},"lines":{"text":"one needle needle\n"},"line_number":2,"absolute_offset":5,"submatches":[{"match":{"text":"needle"},"start":4,"end":10},{"match":{"text":"needle"},"start":11,"end":17}]}}"#,
        "\n",
        r#"{"type":"context","data":{"path":{"text":"a.txt"},"lines":{"text":"two\n"},"line_number":3,"absolute_offset":23,"submatches":[]}}"#,
        "\n",
        r#"{"type":"match","data":{"path":{"text":"a.txt"},"lines":{"text":"needle three\r\n"},"line_number":4,"absolute_offset":27,"submatches":[{"match":{"text":"needle"},"start":0,"end":6}]}}"#,
        "\n",
        r#"{"type":"end","data":{"path":{"text":"a.txt"},"binary_offset":null,"stats":{"elapsed":{"secs":0,"nanos":1,"human":"0s"},"searches":1,"searches_with_match":1,"bytes_searched":40,"bytes_printed":900,"matched_lines":2,"matches":3}}}"#,
        "\n",
        r#"{"type":"begin","data":{"path":{"bytes":"YmFkLf8udHh0"}}}"#,
        "\n",
        r#"{"type":"match","data":{"path":{"bytes":"YmFkLf8udHh0"},"lines":{"bytes":"bmVlZGxlIP4K"},"line_number":1,"absolute_offset":0,"submatches":[{"match":{"text":"needle"},"start":0,"end":6}]}}"#,
        "\n",
        r#"{"type":"end","data":{"path":{"bytes":"YmFkLf8udHh0"},"binary_offset":null,"stats":{"elapsed":{"secs":0,"nanos":1,"human":"0s"},"searches":1,"searches_with_match":1,"bytes_searched":9,"bytes_printed":300,"matched_lines":1,"matches":1}}}"#,
        "\n",
        r#"{"data":{"elapsed_total":{"human":"0.002s","nanos":2500000,"secs":1},"stats":{"bytes_printed":1200,"bytes_searched":49,"elapsed":{"human":"0s","nanos":2,"secs":0},"matched_lines":3,"matches":4,"searches":2,"searches_with_match":2}},"type":"summary"}"#,
        "\n",
    );

    #[test]
    fn matches_carry_submatches_context_and_counts() {
        let s = parse(OUTPUT.as_bytes(), Limits { before: 1, after: 1, ..NO_CAPS }, false).unwrap();
        assert_eq!(s.matches.len(), 3);
        let m = &s.matches[0];
        assert_eq!(
            (m.path.as_str(), m.line, m.column, m.text.as_str()),
            ("a.txt", 2, 5, "one needle needle")
        );
        assert_eq!(m.submatches[1], Submatch { start: 11, end: 17, text: "needle".into() });
        assert_eq!(m.before, [ContextLine { line: 1, text: "zero".into() }]);
        // Line 3 is after the first match and before the second.
        assert_eq!(m.after, [ContextLine { line: 3, text: "two".into() }]);
        assert_eq!(s.matches[1].before, [ContextLine { line: 3, text: "two".into() }]);
        assert_eq!(s.matches[1].text, "needle three", "CRLF is a terminator");
        assert_eq!(s.files[0], FileCount { path: "a.txt".into(), matches: 3, lines: 2 });
        let st = s.stats.clone().unwrap();
        assert_eq!((st.searches, st.matches, st.matched_lines, st.elapsed_ms), (2, 4, 3, 1002));
        assert!(s.caps_reached.is_empty());
    }

    #[test]
    fn non_utf8_paths_and_lines_are_replaced_not_dropped() {
        let s = parse(OUTPUT.as_bytes(), NO_CAPS, false).unwrap();
        let m = &s.matches[2];
        assert_eq!(m.path, "bad-\u{fffd}.txt");
        assert_eq!(m.text, "needle \u{fffd}");
        assert_eq!(s.files[1].path, "bad-\u{fffd}.txt");
    }

    #[test]
    fn context_outside_the_asked_window_is_not_attached() {
        // With before=0, after=1 the line between the matches is only an
        // `after` line.
        let s = parse(OUTPUT.as_bytes(), Limits { before: 0, after: 1, ..NO_CAPS }, false).unwrap();
        assert!(s.matches[1].before.is_empty());
        assert_eq!(s.matches[0].after.len(), 1);
        assert!(s.matches[0].before.is_empty());
    }

    #[test]
    fn caps_are_reported() {
        let s = parse(OUTPUT.as_bytes(), Limits { max_total: 2, ..NO_CAPS }, false).unwrap();
        assert_eq!(s.matches.len(), 2);
        assert_eq!(s.caps_reached, [Cap::Limit]);
        assert_eq!(s.files.len(), 2, "rg's per-file counts still cover every file");
        let s =
            parse(OUTPUT.as_bytes(), Limits { max_per_file: Some(2), ..NO_CAPS }, false).unwrap();
        assert_eq!(s.caps_reached, [Cap::PerFile]);
        let json = serde_json::to_value(s.into_result(Vec::new())).unwrap();
        assert_eq!(
            (json["truncated"].clone(), json["caps_reached"].clone()),
            (Value::Bool(true), serde_json::json!(["per_file"]))
        );
    }

    #[test]
    fn a_cut_output_keeps_complete_lines_and_says_so() {
        let cut_at = OUTPUT.find("YmFkLf8udHh0\"},\"lines").unwrap();
        let s = parse(&OUTPUT.as_bytes()[..cut_at], NO_CAPS, true).unwrap();
        assert_eq!(s.matches.len(), 2);
        assert_eq!(s.stats, None);
        assert_eq!(s.caps_reached, [Cap::Output]);
        // Without the cut, a broken line is rg misbehaving.
        assert!(parse(&OUTPUT.as_bytes()[..cut_at], NO_CAPS, false).is_err());
    }
}
