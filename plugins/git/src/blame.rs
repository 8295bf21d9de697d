//! `git.blame`: who last changed each line of a file, from `git blame
//! --porcelain` — never from blame's human columns.
//!
//! The porcelain format: a header `<hash> <orig-line> <final-line>
//! [<lines-in-group>]` for every line, followed the first time a commit
//! appears by its `author`, `author-mail`, `author-time`, `summary`,
//! `previous`, `boundary` and `filename` lines, then the line's content
//! after a TAB. A header with a group count opens a run of lines from one
//! commit; each run becomes one range of the result. The commit of lines
//! not committed yet is all zeros (`committed: false`).

use std::collections::HashMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use verbgate_plugin_sdk::{
    errors, json, Effect, ErrorCode, OpError, Outcome, OutcomeExt, Plan, Verb, VerbKind,
};

use crate::time::rfc3339_utc;
use crate::{git, not_a_repository, Repo};

/// Ranges listed; a file with more is cut (`truncated`).
pub const RANGES: usize = 5000;

/// `git.blame` args.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BlameArgs {
    /// the file, relative to the repository directory
    #[schemars(length(min = 1))]
    path: String,
    /// first line (1-based; default 1)
    #[schemars(range(min = 1))]
    start: Option<u64>,
    /// last line (default: the end of the file)
    #[schemars(range(min = 1))]
    end: Option<u64>,
    /// blame the file as of this revision (default: the working tree)
    #[schemars(length(min = 1))]
    rev: Option<String>,
    /// include each line's text
    #[serde(default)]
    content: bool,
    #[serde(flatten)]
    repo: Repo,
}

/// What the porcelain says about one commit.
#[derive(Debug, Default, Clone)]
struct CommitInfo {
    author: String,
    author_email: String,
    time: Option<i64>,
    summary: String,
    filename: String,
    boundary: bool,
}

// `git.blame`'s result.
#[derive(Debug, Serialize, JsonSchema)]
pub struct BlameResult {
    /// runs of lines from one commit, in file order
    pub ranges: Vec<Range>,
    /// each line's text (with content: true)
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Vec<String>")]
    pub lines: Option<Vec<String>>,
    /// more than 5000 ranges
    pub truncated: bool,
}

// A run of lines from one commit.
#[derive(Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Range {
    /// first line (1-based) in the file as blamed
    pub start: u64,
    /// last line, inclusive
    pub end: u64,
    pub commit: String,
    /// false for lines not committed yet
    pub committed: bool,
    /// the first line's number in the commit that introduced it
    pub orig_start: u64,
    /// the file's name in that commit
    pub orig_file: String,
    pub author: String,
    pub author_email: String,
    /// author time, RFC 3339 UTC
    pub time: Option<String>,
    pub summary: String,
    /// the commit is a boundary of the blame (the history's first commit)
    pub boundary: bool,
}

/// Parse `git blame --porcelain` output into ranges (and line texts).
pub fn parse(stdout: &str, content: bool) -> Result<BlameResult, OpError> {
    let bad = |line: &str| {
        errors::invalid_output(&format!(
            "git blame --porcelain printed a line verbgate cannot read: {line:?}"
        ))
    };
    let mut commits: HashMap<String, CommitInfo> = HashMap::new();
    let mut ranges: Vec<Range> = Vec::new();
    let mut lines: Vec<String> = Vec::new();
    let mut total = 0usize;
    let mut current: Option<String> = None;
    let mut pending: Option<(String, u64, u64, u64)> = None;
    for line in stdout.split('\n') {
        if let Some(text) = line.strip_prefix('\t') {
            // The content line closes a header: a new group becomes a range
            // once the commit's details (given before it) are known.
            current.as_deref().ok_or_else(|| bad(line))?;
            if let Some((h, orig, fin, count)) = pending.take() {
                total += 1;
                if ranges.len() < RANGES {
                    let c = commits.get(&h).cloned().unwrap_or_default();
                    ranges.push(Range {
                        start: fin,
                        end: fin + count - 1,
                        committed: h.bytes().any(|b| b != b'0'),
                        commit: h,
                        orig_start: orig,
                        orig_file: c.filename,
                        author: c.author,
                        author_email: c.author_email,
                        time: c.time.map(rfc3339_utc),
                        summary: c.summary,
                        boundary: c.boundary,
                    });
                }
            }
            if content && ranges.len() < RANGES {
                lines.push(text.to_string());
            }
            continue;
        }
        if line.is_empty() {
            continue;
        }
        let words: Vec<&str> = line.split(' ').collect();
        let is_header = words[0].len() >= 40
            && words[0].bytes().all(|b| b.is_ascii_hexdigit())
            && (words.len() == 3 || words.len() == 4);
        if is_header && words[1..].iter().all(|w| w.parse::<u64>().is_ok()) {
            let hash = words[0].to_string();
            let n = |i: usize| words[i].parse::<u64>().unwrap_or(0);
            if words.len() == 4 {
                pending = Some((hash.clone(), n(1), n(2), n(3).max(1)));
            }
            commits.entry(hash.clone()).or_default();
            current = Some(hash);
            continue;
        }
        let c = commits
            .get_mut(current.as_deref().ok_or_else(|| bad(line))?)
            .ok_or_else(|| bad(line))?;
        let (key, value) = line.split_once(' ').unwrap_or((line, ""));
        match key {
            "author" => c.author = value.to_string(),
            "author-mail" => {
                c.author_email = value.trim_start_matches('<').trim_end_matches('>').to_string()
            }
            "author-time" => c.time = value.parse().ok(),
            "summary" => c.summary = value.to_string(),
            "filename" => c.filename = value.to_string(),
            "boundary" => c.boundary = true,
            // committer-*, author-tz, previous: not part of the result.
            _ => {}
        }
    }
    Ok(BlameResult { ranges, lines: content.then_some(lines), truncated: total > RANGES })
}

/// `git.blame`.
pub struct Blame;

impl Verb for Blame {
    const NAME: &'static str = "git.blame";
    const SUMMARY: &'static str = "Last commit, author, time of each line";
    const KIND: VerbKind = VerbKind::Exec;
    const EFFECTS: &'static [Effect] = &[Effect::ReadsRepo];
    const PROGRAMS: &'static [&'static str] = &["git"];
    type Args = BlameArgs;
    type Output = BlameResult;

    fn plan(args: &BlameArgs) -> Result<Plan, OpError> {
        let mut c = git(&args.repo).lit("blame").lit("--porcelain");
        match (args.start, args.end) {
            (Some(s), Some(e)) if e < s => {
                return Err(errors::invalid_args(&format!("`end` ({e}) is before `start` ({s})")))
            }
            (None, None) => {}
            (s, e) => {
                c = c.lit("-L").lit_owned(format!(
                    "{},{}",
                    s.unwrap_or(1),
                    e.map(|e| e.to_string()).unwrap_or_default()
                ))
            }
        }
        if let Some(rev) = &args.rev {
            c = c.value(rev);
        }
        Ok(Plan::Exec(c.end_of_options().path(&args.path).into()))
    }

    fn map(args: &BlameArgs, outcome: &Outcome) -> Result<BlameResult, OpError> {
        not_a_repository(outcome)?;
        let stderr = outcome.stderr_text();
        if outcome.exit_code != Some(0)
            && (stderr.contains("no such path") || stderr.contains("no such file"))
        {
            return Err(errors::op_error(
                ErrorCode::NotFound,
                &format!("git has no file {:?} to blame ({})", args.path, stderr.trim()),
                Some(json!({ "path": args.path })),
            ));
        }
        if outcome.exit_code != Some(0) && stderr.contains("has only") && stderr.contains("lines") {
            return Err(errors::op_error(
                ErrorCode::InvalidArgs,
                &format!("the line range is past the end of the file: {}", stderr.trim()),
                None,
            ));
        }
        outcome.success()?;
        parse(&outcome.stdout_text(), args.content)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OUT: &str = "a028564e2db2b3057613afaf05a77d49de721be9 1 1 1\nauthor A\nauthor-mail <a@x>\nauthor-time 1234567890\nauthor-tz +0100\n\
committer A\ncommitter-mail <a@x>\ncommitter-time 1234567890\ncommitter-tz +0100\nsummary first\nboundary\nfilename old.txt\n\ta\n\
607618d6de4ae6c6b17e648b10ae2c4df503af0b 2 2 2\nauthor B\nauthor-mail <b@x>\nauthor-time 1234567900\nauthor-tz +0000\nsummary second\n\
previous a028564e2db2b3057613afaf05a77d49de721be9 f.txt\nfilename f.txt\n\tB\n607618d6de4ae6c6b17e648b10ae2c4df503af0b 3 3\n\tC\n\
a028564e2db2b3057613afaf05a77d49de721be9 2 4 1\n\tc\n\
0000000000000000000000000000000000000000 5 5 1\nauthor Not Committed Yet\nauthor-mail <not.committed.yet>\nauthor-time 1234567999\nsummary Version of f.txt from f.txt\nfilename f.txt\n\te\n";

    #[test]
    fn groups_become_ranges_with_their_commits_details() {
        let v = verbgate_plugin_sdk::serde_json::to_value(parse(OUT, true).unwrap()).unwrap();
        let r = v["ranges"].as_array().unwrap();
        assert_eq!(r.len(), 4, "{v}");
        assert_eq!(
            r[0],
            json!({ "start": 1, "end": 1, "commit": "a028564e2db2b3057613afaf05a77d49de721be9", "committed": true, "orig_start": 1, "orig_file": "old.txt",
                    "author": "A", "author_email": "a@x", "time": "2009-02-13T23:31:30Z", "summary": "first", "boundary": true })
        );
        assert_eq!(
            (r[1]["start"].as_u64(), r[1]["end"].as_u64(), r[1]["author"].as_str()),
            (Some(2), Some(3), Some("B"))
        );
        assert_eq!(
            (r[2]["start"].as_u64(), r[2]["orig_start"].as_u64(), r[2]["summary"].as_str()),
            (Some(4), Some(2), Some("first")),
            "a known commit keeps its details"
        );
        assert_eq!(r[3]["committed"], false);
        assert_eq!(v["lines"], json!(["a", "B", "C", "c", "e"]));
        assert!(parse(OUT, false).unwrap().lines.is_none());
    }

    #[test]
    fn a_line_range_is_built_from_numbers_and_the_path_follows_the_marker() {
        use verbgate_plugin_sdk::Arg;
        let Plan::Exec(c) =
            crate::Git::plan("git.blame", r#"{"path":"-f.txt","start":3}"#).unwrap()
        else {
            panic!("not exec")
        };
        let l = c.args.iter().position(|a| matches!(a, Arg::Literal(l) if l == "-L")).unwrap();
        assert!(matches!(&c.args[l + 1], Arg::Literal(v) if v == "3,"));
        assert!(matches!(c.args.last(), Some(Arg::Path(p)) if p == "-f.txt"));
        assert!(matches!(&c.args[c.args.len() - 2], Arg::EndOfOptions));
        assert_eq!(
            crate::Git::plan("git.blame", r#"{"path":"f","start":5,"end":2}"#).unwrap_err().code,
            "invalid_args"
        );
    }
}
