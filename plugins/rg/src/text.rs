//! ripgrep's JSON text values. rg prints a path, a line or a match as
//! `{"text": "..."}` when it is valid UTF-8 and as `{"bytes": "<base64>"}`
//! when it is not. Both become a string here, with invalid bytes replaced by
//! U+FFFD — the convention of the git verbs (`bad-\u{fffd}-name.txt`):
//! replaced, never dropped. Byte offsets rg reports (submatch `start`/`end`)
//! stay offsets into the original bytes.

use serde_json::Value;

/// The text of a `{"text"}` / `{"bytes"}` value; `None` for anything else.
pub fn decode(v: &Value) -> Option<String> {
    if let Some(t) = v.get("text").and_then(Value::as_str) {
        return Some(t.to_string());
    }
    let raw = base64(v.get("bytes")?.as_str()?)?;
    Some(String::from_utf8_lossy(&raw).into_owned())
}

/// Standard base64 (RFC 4648, `+/`, padded or not), as rg writes it.
pub fn base64(s: &str) -> Option<Vec<u8>> {
    let s = s.trim_end_matches('=');
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let mut acc: u32 = 0;
    let mut bits = 0;
    for c in s.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        };
        acc = (acc << 6) | v as u32;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    // A single leftover sextet cannot encode a byte: not base64.
    (bits < 6).then_some(out)
}

/// A line without its terminator (`\n` or `\r\n`).
pub fn strip_eol(mut line: String) -> String {
    if line.ends_with('\n') {
        line.pop();
        if line.ends_with('\r') {
            line.pop();
        }
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn base64_round_trips_known_vectors() {
        for (enc, dec) in [
            ("", ""),
            ("Zg==", "f"),
            ("Zm8=", "fo"),
            ("Zm9v", "foo"),
            ("Zm9vYg==", "foob"),
            ("Zm9vYmE=", "fooba"),
            ("Zm9vYmFy", "foobar"),
        ] {
            assert_eq!(base64(enc).unwrap(), dec.as_bytes(), "{enc}");
        }
        assert_eq!(base64("/+8=").unwrap(), [0xff, 0xef]);
        assert!(base64("Zm9v!").is_none());
        assert!(base64("Z").is_none());
    }

    #[test]
    fn bytes_values_are_decoded_lossily_and_text_values_kept() {
        assert_eq!(decode(&json!({"text": "a.rs"})).unwrap(), "a.rs");
        // b"bad-\xff.txt"
        assert_eq!(decode(&json!({"bytes": "YmFkLf8udHh0"})).unwrap(), "bad-\u{fffd}.txt");
        assert_eq!(decode(&json!(null)), None);
        assert_eq!(strip_eol("x\r\n".into()), "x");
        assert_eq!(strip_eol("x\n".into()), "x");
        assert_eq!(strip_eol("x".into()), "x");
    }
}
