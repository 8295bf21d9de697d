//! `rg --files --null` → the `rg.files` result: NUL-separated paths (so a
//! newline in a file name cannot split it), non-UTF-8 bytes replaced with
//! U+FFFD as the git verbs do. This module does not depend on the guest SDK.

use serde_json::{json, Value};

/// The file list, at most `limit` entries; `truncated` when more were listed
/// or the host cut the output at its capture bound (`cut`). The verb adds
/// `errors` (rg's stderr lines).
pub fn parse(stdout: &[u8], limit: usize, cut: bool) -> Value {
    let mut records: Vec<&[u8]> = stdout.split(|b| *b == 0).collect();
    // The last record is empty after a final NUL, or partial when cut.
    records.pop();
    let more = records.len() > limit;
    let files: Vec<String> = records.into_iter().take(limit).map(|r| String::from_utf8_lossy(r).into_owned()).collect();
    json!({ "count": files.len(), "files": files, "truncated": more || cut })
}

/// The result schema of `rg.files`.
pub fn result_schema() -> Value {
    json!({
        "type": "object",
        "required": ["files", "count", "truncated", "errors"],
        "properties": {
            "files": { "type": "array", "items": { "type": "string" } },
            "count": { "type": "integer" },
            "truncated": { "type": "boolean", "description": "more files exist than `limit` (or than the output bound)" },
            "errors": { "type": "array", "items": { "type": "string" }, "description": "paths rg could not read" }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nul_separated_paths_with_newlines_and_bad_bytes() {
        let r = parse(b"a.rs\0dir/new\nline.txt\0bad-\xff\0", 10, false);
        assert_eq!(r["files"], json!(["a.rs", "dir/new\nline.txt", "bad-\u{fffd}"]));
        assert_eq!((r["count"].clone(), r["truncated"].clone()), (json!(3), json!(false)));
    }

    #[test]
    fn limit_and_cut_truncate() {
        let r = parse(b"a\0b\0c\0", 2, false);
        assert_eq!(r["files"], json!(["a", "b"]));
        assert_eq!(r["truncated"], true);
        let r = parse(b"a\0b\0partial-na", 10, true);
        assert_eq!(r["files"], json!(["a", "b"]), "a partial last name is dropped");
        assert_eq!(r["truncated"], true);
        assert_eq!(parse(b"", 10, false)["count"], 0);
    }
}
