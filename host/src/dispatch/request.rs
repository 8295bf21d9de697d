//! Decoding a request `{ops?, help?}` into typed parts, with request-level
//! errors that name what is wrong (and where) before anything runs.

use serde_json::{Map, Value};

use crate::error::{ErrorCode, OpError};
use crate::json::clip;
use crate::runtime::bounds::NAME_BYTES;

/// Longest two-stage target name (`help: "<verb>:<target>"`), bytes.
pub const TARGET_BYTES: usize = 256;
/// A fingerprint's length: `sha256:` and 64 hex digits.
pub const FINGERPRINT_BYTES: usize = 71;
/// How much of an unknown field name or a wrong value is quoted back.
const QUOTE_BYTES: usize = 64;

/// One op as the caller wrote it.
#[derive(Debug, Clone, PartialEq)]
pub struct OpRequest {
    /// Verb name or alias, as given.
    pub op: String,
    /// The args object (`{}` when absent).
    pub args: Value,
    /// `schema_fingerprint`, if given.
    pub fingerprint: Option<String>,
    /// `dry_run`.
    pub dry_run: bool,
}

/// What the caller asked for.
#[derive(Debug, Clone, PartialEq)]
pub enum Request {
    /// `help: true`.
    Catalog,
    /// `help: "<verb>"`.
    HelpVerb(String),
    /// `ops: [...]`.
    Ops(Vec<OpRequest>),
}

const OP_KEYS: &[&str] = &["op", "args", "schema_fingerprint", "dry_run"];

/// Decode a request, enforcing the batch cap and the bounds on names (no
/// verb name is longer than [`NAME_BYTES`], so a longer one is refused
/// before any lookup or suggestion) and on fingerprints. Whatever the
/// caller sent is quoted back clipped, so an answer is never a multiple of
/// a request's megabytes.
pub fn decode(value: &Value, batch_cap: usize) -> Result<Request, OpError> {
    let obj = value.as_object().ok_or_else(|| {
        bad("the request must be a JSON object like {\"ops\": [...]} or {\"help\": true}")
    })?;
    if let Some(k) = obj.keys().find(|k| *k != "ops" && *k != "help") {
        let k = clip(k, QUOTE_BYTES);
        return Err(bad(format!("unknown request field `{k}`; a request has `ops` or `help`"))
            .with("field", k));
    }
    let ops = obj.get("ops").filter(|v| !v.is_null());
    let help = obj.get("help").filter(|v| !v.is_null());
    match (ops, help) {
        (Some(_), Some(_)) => Err(bad("give either `ops` or `help`, not both: help is answered alone so its size never surprises a batch")),
        (None, None) => Err(bad("the request is empty: give `ops` (a list of {op, args}) or `help: true` for the catalog")),
        (None, Some(Value::Bool(true))) => Ok(Request::Catalog),
        (None, Some(Value::String(s))) if !s.trim().is_empty() => help_name(s.trim()).map(Request::HelpVerb),
        (None, Some(other)) => Err(bad(format!("`help` must be true or a verb name, got {}", clip(&other.to_string(), QUOTE_BYTES))).with("field", "help")),
        (Some(ops), None) => decode_ops(ops, batch_cap).map(Request::Ops),
    }
}

/// `help: "<verb>"` or `help: "<verb>:<target>"`, each part within its bound.
fn help_name(name: &str) -> Result<String, OpError> {
    let (verb, target) = match name.split_once(':') {
        Some((v, t)) => (v, t),
        None => (name, ""),
    };
    if verb.len() > NAME_BYTES || target.len() > TARGET_BYTES {
        let (what, limit, actual) = if verb.len() > NAME_BYTES {
            ("verb name", NAME_BYTES, verb.len())
        } else {
            ("target name", TARGET_BYTES, target.len())
        };
        return Err(bad(format!("`help` names a {what} of {actual} bytes; no {what} is longer than {limit} bytes. Ask {{\"help\": true}} for the catalog"))
            .with("field", "help")
            .with("limit", limit)
            .with("actual", actual));
    }
    Ok(name.to_string())
}

fn decode_ops(ops: &Value, batch_cap: usize) -> Result<Vec<OpRequest>, OpError> {
    let list = ops.as_array().ok_or_else(|| {
        bad("`ops` must be a list of {\"op\": \"<verb>\", \"args\": {...}}").with("field", "ops")
    })?;
    if list.is_empty() {
        return Err(bad("`ops` is empty: give at least one {\"op\", \"args\"}, or ask {\"help\": true} for the verbs").with("field", "ops"));
    }
    if list.len() > batch_cap {
        return Err(OpError::new(
            ErrorCode::BatchTooLarge,
            format!("{} ops is more than the batch cap of {batch_cap}; nothing ran. Split them into requests of at most {batch_cap}", list.len()),
        )
        .with("cap", batch_cap)
        .with("got", list.len()));
    }
    list.iter().enumerate().map(|(i, v)| decode_op(i, v)).collect()
}

fn decode_op(index: usize, v: &Value) -> Result<OpRequest, OpError> {
    let at = |msg: String| bad(format!("ops[{index}]: {msg}")).with("index", index);
    let obj: &Map<String, Value> = v.as_object().ok_or_else(|| {
        at("each op must be an object {\"op\": \"<verb>\", \"args\": {...}}".into())
    })?;
    if let Some(k) = obj.keys().find(|k| !OP_KEYS.contains(&k.as_str())) {
        let k = clip(k, QUOTE_BYTES);
        return Err(at(format!("unknown op field `{k}` (an op has {})", OP_KEYS.join(", ")))
            .with("field", k));
    }
    let op = match obj.get("op") {
        Some(Value::String(s)) if s.len() > NAME_BYTES => {
            return Err(at(format!(
                "`op` is {} bytes; no verb name is longer than {NAME_BYTES} bytes",
                s.len()
            ))
            .with("field", "op")
            .with("limit", NAME_BYTES)
            .with("actual", s.len()))
        }
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        Some(_) => return Err(at("`op` must be a verb name string".into()).with("field", "op")),
        None => return Err(at("`op` is missing".into()).with("field", "op")),
    };
    let args = match obj.get("args") {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(a @ Value::Object(_)) => a.clone(),
        Some(_) => return Err(at("`args` must be an object".into()).with("field", "args")),
    };
    let fingerprint = match obj.get("schema_fingerprint") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.len() > FINGERPRINT_BYTES => {
            return Err(at(format!(
                "`schema_fingerprint` is {} bytes; a fingerprint is `sha256:` and 64 hex digits ({FINGERPRINT_BYTES} bytes), as help gives it",
                s.len()
            ))
            .with("field", "schema_fingerprint")
            .with("limit", FINGERPRINT_BYTES)
            .with("actual", s.len()))
        }
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(at("`schema_fingerprint` must be a string".into()).with("field", "schema_fingerprint")),
    };
    let dry_run = match obj.get("dry_run") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(at("`dry_run` must be a boolean".into()).with("field", "dry_run")),
    };
    Ok(OpRequest { op, args, fingerprint, dry_run })
}

fn bad(message: impl Into<String>) -> OpError {
    OpError::new(ErrorCode::InvalidRequest, message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn decodes_ops_and_help() {
        assert_eq!(decode(&json!({"help": true}), 8).unwrap(), Request::Catalog);
        assert_eq!(
            decode(&json!({"help": "git.log"}), 8).unwrap(),
            Request::HelpVerb("git.log".into())
        );
        let r = decode(&json!({"ops": [{"op": "git.log", "dry_run": true}]}), 8).unwrap();
        assert_eq!(
            r,
            Request::Ops(vec![OpRequest {
                op: "git.log".into(),
                args: json!({}),
                fingerprint: None,
                dry_run: true
            }])
        );
    }

    #[test]
    fn request_level_problems_are_named() {
        let cases = [
            (json!([]), ErrorCode::InvalidRequest),
            (json!({}), ErrorCode::InvalidRequest),
            (json!({"ops": [], }), ErrorCode::InvalidRequest),
            (json!({"ops": "git.log"}), ErrorCode::InvalidRequest),
            (json!({"ops": [{"op": "a.b"}], "help": true}), ErrorCode::InvalidRequest),
            (json!({"opz": []}), ErrorCode::InvalidRequest),
            (json!({"ops": [{"op": "a.b", "args": []}]}), ErrorCode::InvalidRequest),
            (json!({"ops": [{"op": "a.b", "arg": {}}]}), ErrorCode::InvalidRequest),
            (json!({"ops": [{"op": 3}]}), ErrorCode::InvalidRequest),
            (json!({"help": 3}), ErrorCode::InvalidRequest),
        ];
        for (req, code) in cases {
            assert_eq!(decode(&req, 8).unwrap_err().code, code, "{req}");
        }
    }

    #[test]
    fn names_and_fingerprints_are_bounded_before_any_lookup() {
        let long = "g".repeat(NAME_BYTES + 1);
        let e = decode(&json!({"ops": [{"op": long}]}), 8).unwrap_err();
        assert_eq!(
            (e.code, e.details["field"].as_str(), e.details["limit"].as_u64()),
            (ErrorCode::InvalidRequest, Some("op"), Some(NAME_BYTES as u64))
        );
        assert!(e.message.len() < 200);
        let e = decode(&json!({"help": "g".repeat(1 << 20)}), 8).unwrap_err();
        assert_eq!(e.details["field"], "help");
        assert!(decode(&json!({"help": format!("just.run:{}", "t".repeat(TARGET_BYTES + 1))}), 8)
            .is_err());
        assert!(decode(&json!({"help": "just.run:greet"}), 8).is_ok());
        let fp = format!("sha256:{}", "0".repeat(65));
        let e = decode(&json!({"ops": [{"op": "a.b", "schema_fingerprint": fp}]}), 8).unwrap_err();
        assert_eq!(e.details["field"], "schema_fingerprint");
        let ok = format!("sha256:{}", "0".repeat(64));
        assert!(decode(&json!({"ops": [{"op": "a.b", "schema_fingerprint": ok}]}), 8).is_ok());
        let e = decode(&json!({ "x".repeat(1 << 20): 1 }), 8).unwrap_err();
        assert!(e.to_json().to_string().len() < 1000);
    }

    #[test]
    fn batch_cap_is_explicit() {
        let ops: Vec<Value> = (0..9).map(|_| json!({"op": "a.b"})).collect();
        let e = decode(&json!({ "ops": ops }), 8).unwrap_err();
        assert_eq!(e.code, ErrorCode::BatchTooLarge);
        assert_eq!(e.details["cap"], 8);
        assert_eq!(e.details["got"], 9);
    }
}
