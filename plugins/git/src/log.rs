//! Parsing `git log -z --format=…`: records are NUL-separated and fields
//! separated by the unit separator (0x1f), which cannot appear in names,
//! emails, hashes or dates and practically never in messages.

use crate::time::{parse_iso8601, to_utc};
use schemars::JsonSchema;
use serde::Serialize;
use verbgate_plugin_sdk::{errors, OpError};

/// The fields of a commit record, for `--format` arguments.
macro_rules! fields {
    () => {
        "%H%x1f%P%x1f%an%x1f%ae%x1f%aI%x1f%cn%x1f%ce%x1f%cI%x1f%s%x1f%b"
    };
}

/// The `--format` argument (a plugin literal).
pub const FORMAT: &str = concat!("--format=", fields!());

/// The same record after the refs pointing at the commit (`%D`), for
/// reading a new commit back.
pub const FORMAT_WITH_REFS: &str = concat!("--format=%D%x1f", fields!());

/// Parse the output; `limit` commits at most, `truncated` when more came
/// back (the plan asks for `limit + 1`).
pub fn parse(bytes: &[u8], limit: usize, body: bool) -> Result<LogResult, OpError> {
    let mut commits = Vec::new();
    let mut truncated = false;
    for rec in bytes.split(|b| *b == 0) {
        let rec = String::from_utf8_lossy(rec);
        // git separates -z records with NUL but may start the next one with
        // a newline; a trailing empty record ends the stream.
        let rec = rec.trim_start_matches('\n');
        if rec.is_empty() {
            continue;
        }
        if commits.len() == limit {
            truncated = true;
            break;
        }
        commits.push(commit(rec, body)?);
    }
    Ok(LogResult { commits, truncated })
}

// `git.log`'s result.
#[derive(Debug, Serialize, JsonSchema)]
pub struct LogResult {
    pub commits: Vec<Commit>,
    /// more commits exist beyond `limit`
    pub truncated: bool,
}

// One commit.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Commit {
    pub hash: String,
    pub parents: Vec<String>,
    pub author: Person,
    pub committer: Person,
    pub subject: String,
    /// present when body=true
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub body: Option<String>,
}

// An author or committer, and when.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Person {
    pub name: String,
    pub email: String,
    /// RFC 3339 UTC
    pub time: String,
}

/// One `FORMAT` record as a commit.
pub fn commit(rec: &str, body: bool) -> Result<Commit, OpError> {
    let f: Vec<&str> = rec.splitn(10, '\u{1f}').collect();
    if f.len() != 10 {
        return Err(errors::invalid_output(&format!(
            "git commit record has {} fields, expected 10",
            f.len()
        )));
    }
    let parents: Vec<&str> = f[1].split(' ').filter(|p| !p.is_empty()).collect();
    // A unit separator inside a name or email (git keeps it; a hostile
    // repository's config can set one) shifts every later field: the
    // hashes and dates, whose shapes are fixed, tell.
    let is_hash = |h: &str| {
        matches!(h.len(), 40 | 64)
            && h.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    if !is_hash(f[0])
        || !parents.iter().all(|p| is_hash(p))
        || parse_iso8601(f[4]).is_none()
        || parse_iso8601(f[7]).is_none()
    {
        return Err(errors::invalid_output(
            "a git commit record does not have the expected shape (an author or committer name or email holds a 0x1f unit separator?)",
        ));
    }
    Ok(Commit {
        hash: f[0].to_string(),
        parents: parents.iter().map(|p| p.to_string()).collect(),
        author: Person { name: f[2].to_string(), email: f[3].to_string(), time: to_utc(f[4]) },
        committer: Person { name: f[5].to_string(), email: f[6].to_string(), time: to_utc(f[7]) },
        subject: f[8].to_string(),
        body: body.then(|| f[9].trim_end_matches('\n').to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use verbgate_plugin_sdk::json;

    fn rec(hash: &str, parents: &str, subject: &str, body: &str) -> String {
        format!("{hash}\u{1f}{parents}\u{1f}Ada\u{1f}ada@x\u{1f}2024-01-02T03:04:05+02:00\u{1f}Bob\u{1f}bob@x\u{1f}2024-01-02T03:04:05+00:00\u{1f}{subject}\u{1f}{body}")
    }

    /// A 40-hex-digit hash made of one repeated digit.
    fn h(d: char) -> String {
        d.to_string().repeat(40)
    }

    #[test]
    fn parses_commits_and_flags_truncation() {
        let (a1, b2, c3, z9) = (h('1'), h('2'), h('3'), h('9'));
        let raw = format!(
            "{}\0\n{}\0\n{}\0",
            rec(&c3, &b2, "third", ""),
            rec(&b2, &format!("{a1} {z9}"), "merge", "line1\nline2\n"),
            rec(&a1, "", "first", "")
        );
        let v = verbgate_plugin_sdk::serde_json::to_value(parse(raw.as_bytes(), 2, true).unwrap())
            .unwrap();
        assert_eq!(v["truncated"], true);
        assert_eq!(v["commits"].as_array().unwrap().len(), 2);
        assert_eq!(v["commits"][1]["parents"], json!([a1, z9]));
        assert_eq!(v["commits"][1]["body"], "line1\nline2");
        assert_eq!(v["commits"][0]["author"]["time"], "2024-01-02T01:04:05Z");
        let v = verbgate_plugin_sdk::serde_json::to_value(parse(raw.as_bytes(), 3, false).unwrap())
            .unwrap();
        assert_eq!(v["truncated"], false);
        assert!(v["commits"][0].get("body").is_none());
        assert_eq!(v["commits"][2]["parents"], json!([]));
    }

    #[test]
    fn a_unit_separator_in_a_name_is_refused_not_misread() {
        let shifted = rec(&h('1'), "", "s", "").replace("Ada", "A\u{1f}da");
        let e = commit(&shifted, true).unwrap_err();
        assert_eq!(e.code, "invalid_output");
        assert!(commit(&rec("not-a-hash", "", "s", ""), true).is_err());
    }
}
