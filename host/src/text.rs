//! Text shown to a person — a terminal table, a consent question in an MCP
//! client's UI, a name recorded in the audit trail — when that text came
//! from a caller, a plugin or a repository.
//!
//! Two dangers, one module:
//! - **characters a terminal acts on or a UI hides**: control characters
//!   (an `ESC [` sequence moves the cursor and rewrites earlier lines),
//!   bidi overrides and isolates (U+202A–202E, U+2066–2069: `exe.png`
//!   shown as `gnp.exe`), zero-width and other invisible characters
//!   (U+200B–200F, U+FEFF, tag characters), spaces that are not U+0020.
//!   [`hidden`] names them; [`escape`] shows each as a visible escape
//!   (`\u{202e}`, `\n`), so what a person reads is every character there is;
//! - **one value pushing the rest out of view**: every shown value is cut at
//!   a bound, and the cut says how much is missing
//!   (`…(+19744 bytes not shown)`).
//!
//! The escapes follow Rust's `{:?}` for strings (what the consent
//! question's `runs:` line always used): `\\`, `\n`, `\r`, `\t`, `\u{hex}`.
//! [`escape_json`] writes the same characters as JSON escapes (`\u202e`),
//! so a JSON text stays JSON.

use serde_json::Value;
use std::fmt::Write as _;

/// Whether `c` must not reach a person raw: it moves or rewrites what a
/// terminal shows, reorders text, or is invisible.
///
/// Besides the ASCII controls, these are the characters Rust's `{:?}`
/// escapes (its tables: non-printable — control, format, separator,
/// private use, unassigned — and combining marks), plus letters that
/// render as nothing (the Hangul fillers, the braille blank).
pub fn hidden(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_control();
    }
    matches!(c, '\u{115f}' | '\u{1160}' | '\u{2800}' | '\u{3164}' | '\u{ffa0}')
        || c.escape_debug().next() != Some(c)
}

/// The marker after a cut value: how many bytes of it are not shown.
fn cut_marker(out: &mut String, not_shown: usize) {
    let _ = write!(out, "…(+{not_shown} bytes not shown)");
}

/// Append `c` to `out` as it is shown: itself, or its visible escape.
/// `quote` also escapes `"` (for a quoted word).
fn push_shown(out: &mut String, c: char, quote: bool) {
    match c {
        '\\' => out.push_str("\\\\"),
        '"' if quote => out.push_str("\\\""),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c if hidden(c) => {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
        c => out.push(c),
    }
}

/// Append `text` escaped, at most `max` bytes of it shown (never cutting an
/// escape in two), then the cut marker if something was left out.
fn push_escaped(out: &mut String, text: &str, max: usize, quote: bool) {
    let start = out.len();
    let mut piece = String::new();
    for (i, c) in text.char_indices() {
        piece.clear();
        push_shown(&mut piece, c, quote);
        if out.len() - start + piece.len() > max {
            cut_marker(out, text.len() - i);
            return;
        }
        out.push_str(&piece);
    }
}

/// `text` with every [`hidden`] character (and `\`) visibly escaped, at
/// most `max` bytes of it shown, a cut saying how much is missing.
pub fn escape(text: &str, max: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max) + 32);
    push_escaped(&mut out, text, max, false);
    out
}

/// Like [`escape`], as one word a person can tell apart from its
/// neighbours: left bare when it is plain (letters, digits, `-_./=:,@+%`),
/// else in double quotes with `"` escaped too. For display only: nothing is
/// ever run through a shell.
pub fn word(text: &str, max: usize) -> String {
    let plain = !text.is_empty()
        && text.len() <= max
        && text.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,@+%".contains(c));
    if plain {
        return text.to_string();
    }
    let mut out = String::from("\"");
    push_escaped(&mut out, text, max, true);
    out.push('"');
    out
}

/// `value` as compact JSON with each string (keys included) cut at
/// `value_bytes` (the cut marker inside the string), and every [`hidden`]
/// character written as a JSON escape (`\u202e`; a pair of surrogates past
/// U+FFFF): still JSON, and nothing in it hides.
pub fn escape_json(value: &Value, value_bytes: usize) -> String {
    let clipped = clip_strings(value, value_bytes);
    let text = clipped.to_string();
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        // serde_json already escaped `"`, `\` and the C0 controls.
        if hidden(c) {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                let _ = write!(out, "\\u{unit:04x}");
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn clip_strings(value: &Value, max: usize) -> Value {
    match value {
        Value::String(s) => Value::String(clip_raw(s, max)),
        Value::Array(items) => Value::Array(items.iter().map(|v| clip_strings(v, max)).collect()),
        Value::Object(map) => Value::Object(
            map.iter().map(|(k, v)| (clip_raw(k, max), clip_strings(v, max))).collect(),
        ),
        other => other.clone(),
    }
}

/// At most `max` bytes of `text` (at a character boundary), then the cut
/// marker: for text already made visible ([`escape_json`]'s), which must
/// not be escaped twice.
pub fn clip(text: &str, max: usize) -> String {
    clip_raw(text, max)
}

fn clip_raw(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let mut out = text[..end].to_string();
    cut_marker(&mut out, text.len() - end);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The characters issue 25 names, and their neighbours.
    const ATTACKS: &[char] = &[
        '\u{1b}',
        '\u{7}',
        '\u{0}',
        '\u{7f}',
        '\u{9b}',
        '\u{85}',
        '\u{202a}',
        '\u{202b}',
        '\u{202c}',
        '\u{202d}',
        '\u{202e}',
        '\u{2066}',
        '\u{2067}',
        '\u{2068}',
        '\u{2069}',
        '\u{200b}',
        '\u{200c}',
        '\u{200d}',
        '\u{200e}',
        '\u{200f}',
        '\u{feff}',
        '\u{2028}',
        '\u{2029}',
        '\u{2060}',
        '\u{61c}',
        '\u{ad}',
        '\u{a0}',
        '\u{3000}',
        '\u{e0041}',
        '\u{fe0f}',
        '\u{3164}',
        '\u{115f}',
        '\u{2800}',
        '\u{e000}',
    ];

    #[test]
    fn every_character_a_terminal_acts_on_or_a_ui_hides_is_escaped() {
        for &c in ATTACKS {
            assert!(hidden(c), "U+{:04X}", c as u32);
            let shown = escape(&format!("a{c}b"), 64);
            assert_eq!(shown, format!("a\\u{{{:x}}}b", c as u32), "U+{:04X}", c as u32);
            let json = escape_json(&json!({ "k": format!("a{c}b") }), 64);
            assert!(!json.chars().any(hidden), "U+{:04X}: {json:?}", c as u32);
            let back: Value = serde_json::from_str(&json).expect("still JSON");
            assert_eq!(back["k"], format!("a{c}b"), "the JSON escape is exact");
        }
        for plain in ['a', 'é', 'ß', '中', '→', ' ', '😀'] {
            assert!(!hidden(plain), "{plain:?}");
        }
        assert_eq!(
            escape("a\\u{1b}\n\t\r", 64),
            "a\\\\u{1b}\\n\\t\\r",
            "a backslash is escaped, so an escape cannot be faked"
        );
    }

    #[test]
    fn a_cut_never_splits_an_escape_and_says_how_much_is_missing() {
        assert_eq!(escape("abc", 3), "abc");
        assert_eq!(escape("abcdef", 3), "abc…(+3 bytes not shown)");
        // `\u{1b}` is 6 bytes shown: it goes whole or not at all.
        assert_eq!(escape("ab\u{1b}cd", 4), "ab…(+3 bytes not shown)");
        assert_eq!(escape("ééé", 5), "éé…(+2 bytes not shown)");
        let huge = "n".repeat(3 << 20);
        let started = std::time::Instant::now();
        assert_eq!(escape(&huge, 256).len(), 256 + "…(+3145472 bytes not shown)".len());
        assert!(
            started.elapsed() < std::time::Duration::from_millis(200),
            "only what is shown is looked at"
        );
    }

    #[test]
    fn words_are_quoted_when_they_are_not_plain() {
        assert_eq!(word("commit", 64), "commit");
        assert_eq!(word("--format=%H", 64), "--format=%H");
        assert_eq!(word("a b", 64), "\"a b\"");
        assert_eq!(word("", 64), "\"\"");
        assert_eq!(word("say \"hi\"\n", 64), "\"say \\\"hi\\\"\\n\"");
        assert_eq!(word("x\u{202e}y", 64), "\"x\\u{202e}y\"");
        assert_eq!(word(&"a".repeat(10), 4), "\"aaaa…(+6 bytes not shown)\"");
    }

    #[test]
    fn json_strings_are_cut_one_by_one_and_stay_json() {
        let v = json!({ "word": "y".repeat(100), "n": 3, "list": ["short", "z".repeat(50)] });
        let shown = escape_json(&v, 10);
        let back: Value = serde_json::from_str(&shown).expect("still JSON");
        assert_eq!(back["word"], format!("{}…(+90 bytes not shown)", "y".repeat(10)));
        assert_eq!(
            back["list"],
            json!(["short", format!("{}…(+40 bytes not shown)", "z".repeat(10))])
        );
        assert_eq!(back["n"], 3);
    }
}
