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

/// Names from `candidates` close to `name` (edit distance ≤ 2, or sharing a
/// prefix/suffix), best first, at most 3. Used to answer a typo with a fix.
pub fn near_matches<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut scored: Vec<(usize, &str)> = candidates
        .into_iter()
        .filter_map(|c| {
            let d = edit_distance(name, c);
            let related = c.starts_with(name) || name.starts_with(c) || c.ends_with(name);
            (d <= 2 || (related && !name.is_empty())).then_some((d, c))
        })
        .collect();
    scored.sort();
    scored.into_iter().take(3).map(|(_, c)| c.to_string()).collect()
}

/// Levenshtein distance over chars.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
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
    }
}
