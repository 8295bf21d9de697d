//! `rg --files --null` → the `rg.files` result: NUL-separated paths (so a
//! newline in a file name cannot split it), non-UTF-8 bytes replaced with
//! U+FFFD as the git verbs do. This module does not depend on the guest SDK.

use schemars::JsonSchema;
use serde::Serialize;

// `rg.files`' result (a plain comment: a type's doc comment would become
// its schema's description).
#[derive(Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct FilesResult {
    pub files: Vec<String>,
    pub count: usize,
    /// more files exist than `limit` (or than the output bound)
    pub truncated: bool,
    /// paths rg could not read
    pub errors: Vec<String>,
}

/// The file list, at most `limit` entries; `truncated` when more were listed
/// or the host cut the output at its capture bound (`cut`). The verb adds
/// `errors` (rg's stderr lines).
pub fn parse(stdout: &[u8], limit: usize, cut: bool) -> FilesResult {
    let mut records: Vec<&[u8]> = stdout.split(|b| *b == 0).collect();
    // The last record is empty after a final NUL, or partial when cut.
    records.pop();
    let more = records.len() > limit;
    let files: Vec<String> =
        records.into_iter().take(limit).map(|r| String::from_utf8_lossy(r).into_owned()).collect();
    FilesResult { count: files.len(), files, truncated: more || cut, errors: Vec::new() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nul_separated_paths_with_newlines_and_bad_bytes() {
        let r = parse(b"a.rs\0dir/new\nline.txt\0bad-\xff\0", 10, false);
        assert_eq!(r.files, ["a.rs", "dir/new\nline.txt", "bad-\u{fffd}"]);
        assert_eq!((r.count, r.truncated), (3, false));
    }

    #[test]
    fn limit_and_cut_truncate() {
        let r = parse(b"a\0b\0c\0", 2, false);
        assert_eq!(r.files, ["a", "b"]);
        assert!(r.truncated);
        let r = parse(b"a\0b\0partial-na", 10, true);
        assert_eq!(r.files, ["a", "b"], "a partial last name is dropped");
        assert!(r.truncated);
        assert_eq!(parse(b"", 10, false).count, 0);
    }
}
