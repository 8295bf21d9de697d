//! JSON helpers shared across the flow: canonical form and fingerprints,
//! and "did you mean" suggestions for misspelt names.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// Canonical JSON text: object keys sorted (by UTF-16 code units, as RFC 8785
/// asks), no insignificant whitespace. Our schemas hold only strings,
/// booleans and integers (or floats serde prints shortest-form), so serde's
/// number formatting already matches RFC 8785 for them.
pub fn canonical(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
            out.push('{');
            for (i, key) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String((*key).clone()).to_string());
                out.push(':');
                write_canonical(&map[key.as_str()], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// `sha256:<hex>` of the canonical JSON of `value`.
pub fn fingerprint(value: &Value) -> String {
    format!("sha256:{}", sha256_hex(canonical(value).as_bytes()))
}

/// Lower-case hex SHA-256 of some bytes.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Longest name (bytes) that gets "did you mean" suggestions. No verb or
/// parameter name is longer; a longer one is not a typo, and comparing it
/// would only cost time.
pub const HINT_NAME_BYTES: usize = 128;

/// Names from `candidates` close to `name` (edit distance ≤ 2, or sharing a
/// prefix/suffix), best first, at most 3. Used to answer a typo with a fix.
/// Linear in the input: names (and candidates) past [`HINT_NAME_BYTES`]
/// are skipped, and the distance is only computed for names of nearly the
/// same length.
pub fn near_matches<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    if name.len() > HINT_NAME_BYTES {
        return Vec::new();
    }
    let mut scored: Vec<(usize, &str)> = candidates
        .into_iter()
        .filter(|c| c.len() <= HINT_NAME_BYTES)
        .filter_map(|c| {
            // A prefix or suffix relation is an edit distance of exactly
            // the length difference.
            let related = !name.is_empty()
                && (c.starts_with(name) || name.starts_with(c) || c.ends_with(name));
            let d = if related {
                Some(c.chars().count().abs_diff(name.chars().count()))
            } else {
                edit_distance_within(name, c, 2)
            };
            d.map(|d| (d, c))
        })
        .collect();
    scored.sort();
    scored.into_iter().take(3).map(|(_, c)| c.to_string()).collect()
}

/// Levenshtein distance over chars, if it is at most `max` (the length
/// difference alone rules most candidates out without any table).
fn edit_distance_within(a: &str, b: &str, max: usize) -> Option<usize> {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    if a.len().abs_diff(b.len()) > max {
        return None;
    }
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    Some(prev[b.len()]).filter(|d| *d <= max)
}

/// At most `max` bytes of `text` (cut at a character boundary), with `…`
/// and the full length when cut: how a caller's or a plugin's text is named
/// in a message without repeating all of it.
pub fn clip(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…({} bytes)", &text[..end], text.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn canonical_sorts_keys_at_every_depth_and_drops_whitespace() {
        let v = json!({"b": 1, "a": {"z": [true, null, "x"], "y": 2}});
        assert_eq!(canonical(&v), r#"{"a":{"y":2,"z":[true,null,"x"]},"b":1}"#);
    }

    #[test]
    fn fingerprint_ignores_key_order_but_not_content() {
        let a = json!({"type": "object", "properties": {"x": {"type": "string"}}});
        let b = json!({"properties": {"x": {"type": "string"}}, "type": "object"});
        let c = json!({"properties": {"x": {"type": "integer"}}, "type": "object"});
        assert_eq!(fingerprint(&a), fingerprint(&b));
        assert_ne!(fingerprint(&a), fingerprint(&c));
        assert!(fingerprint(&a).starts_with("sha256:"));
        assert_eq!(fingerprint(&a).len(), "sha256:".len() + 64);
    }

    #[test]
    fn near_matches_finds_typos() {
        let names = ["limit", "rev", "path", "body"];
        assert_eq!(near_matches("limt", names), vec!["limit"]);
        assert!(near_matches("zzzzzz", names).is_empty());
        assert_eq!(near_matches("git.stat", ["git.status", "git.log"]), vec!["git.status"]);
        assert_eq!(near_matches("git.lgo", ["git.status", "git.log"]), vec!["git.log"]);
    }

    #[test]
    fn near_matches_skips_names_no_verb_could_have() {
        let long = "g".repeat(1 << 20);
        let started = std::time::Instant::now();
        assert!(near_matches(&long, ["git.log", "g"]).is_empty());
        assert!(near_matches("g", [long.as_str()]).is_empty());
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
    }

    #[test]
    fn clip_cuts_at_a_character_boundary_and_says_so() {
        assert_eq!(clip("short", 10), "short");
        assert_eq!(clip("ééé", 3), "é…(6 bytes)");
    }
}
