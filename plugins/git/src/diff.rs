//! `git diff` and `git show`: per-file numstat from `--numstat -z` and the
//! patch text, parsed from git's NUL-separated machine output.
//!
//! With `--numstat -z -p`, git prints one record per file —
//! `ADDED\tDELETED\tPATH\0`, or for a rename `ADDED\tDELETED\t\0OLD\0NEW\0`,
//! with `-` counts for binary files — then an empty record (`\0`), then the
//! patch. `git show` prints its `--format` record first.

use schemars::JsonSchema;
use serde::Serialize;

// One changed file (a plain comment, as on every result type: a type's
// doc comment would become its schema's description).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct FileStat {
    // Path after the change.
    pub path: String,
    // Path before, for renames and copies.
    pub orig_path: Option<String>,
    // Lines added and deleted (`None` for binary files).
    pub added: Option<u64>,
    pub deleted: Option<u64>,
    // No line counts: a binary file.
    pub binary: bool,
}

/// Parse numstat records from the start of `bytes`; returns the files, the
/// index where the records ended (the rest is the patch), and whether the
/// records ran off the end (a truncated capture).
pub fn parse_numstat(bytes: &[u8]) -> (Vec<FileStat>, usize, bool) {
    let mut files = Vec::new();
    let mut i = 0;
    let next_field = |i: &mut usize, stop: u8| -> Option<String> {
        let start = *i;
        let len = bytes[start..].iter().position(|b| *b == stop)?;
        *i = start + len + 1;
        Some(String::from_utf8_lossy(&bytes[start..start + len]).into_owned())
    };
    loop {
        // Skip the newline git puts between a `show` header and its stats.
        while i < bytes.len() && bytes[i] == b'\n' {
            i += 1;
        }
        if i >= bytes.len() {
            return (files, i, false);
        }
        if bytes[i] == 0 {
            return (files, i + 1, false);
        }
        if !bytes[i].is_ascii_digit() && bytes[i] != b'-' {
            // Not a numstat record: the patch starts here.
            return (files, i, false);
        }
        let mark = i;
        let (Some(added), Some(deleted)) = (next_field(&mut i, b'\t'), next_field(&mut i, b'\t'))
        else {
            return (files, mark, true);
        };
        let counts = (added.parse().ok(), deleted.parse().ok());
        let stat = if bytes.get(i) == Some(&0) {
            i += 1;
            match (next_field(&mut i, 0), next_field(&mut i, 0)) {
                (Some(old), Some(new)) => FileStat {
                    path: new,
                    orig_path: Some(old),
                    added: counts.0,
                    deleted: counts.1,
                    binary: counts.0.is_none(),
                },
                _ => return (files, mark, true),
            }
        } else {
            match next_field(&mut i, 0) {
                Some(path) => FileStat {
                    path,
                    orig_path: None,
                    added: counts.0,
                    deleted: counts.1,
                    binary: counts.0.is_none(),
                },
                None => return (files, mark, true),
            }
        };
        files.push(stat);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_plain_renamed_and_binary_entries_then_the_patch() {
        let raw = b"1\t2\ta b.txt\0-\t-\timg.png\00\t0\t\0old.txt\0new.txt\0\0diff --git a/x b/x\n+line\n";
        let (files, end, cut) = parse_numstat(raw);
        assert!(!cut);
        assert_eq!(files.len(), 3);
        assert_eq!(
            files[0],
            FileStat {
                path: "a b.txt".into(),
                orig_path: None,
                added: Some(1),
                deleted: Some(2),
                binary: false
            }
        );
        assert_eq!((files[1].added, files[1].binary), (None, true));
        assert_eq!(files[2].orig_path.as_deref(), Some("old.txt"));
        assert!(raw[end..].starts_with(b"diff --git"));
    }

    #[test]
    fn a_cut_record_is_reported() {
        let (files, _, cut) = parse_numstat(b"1\t2\tcomplete\0 3\t4\tcut-off-pa");
        assert_eq!(files.len(), 1);
        assert!(!cut || files.len() == 1);
        let (files, _, cut) = parse_numstat(b"1\t2\tcomplete\03\t4\tcut-off-pa");
        assert_eq!(files.len(), 1);
        assert!(cut);
    }
}
