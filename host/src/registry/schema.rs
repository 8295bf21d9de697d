//! Verb schemas: the closed-schema rule, compiling validators, validating a
//! caller's args (naming the offending parameter), and the one-line
//! signature the catalog shows.

use jsonschema::error::ValidationErrorKind;
use jsonschema::Validator;
use serde_json::{json, Value};

use crate::error::{ErrorCode, OpError};
use crate::json::near_matches;

/// JSON pointers of object schemas in `schema` that do not forbid unknown
/// properties. A closed schema is what lets the host reject a misspelt
/// parameter instead of silently ignoring it.
pub fn open_objects(schema: &Value) -> Vec<String> {
    let mut found = Vec::new();
    walk(schema, String::new(), &mut found);
    found
}

fn walk(node: &Value, pointer: String, found: &mut Vec<String>) {
    let Value::Object(map) = node else { return };
    let is_object = map.get("type") == Some(&json!("object")) || map.contains_key("properties");
    let closed = map.get("additionalProperties") == Some(&json!(false)) || map.get("unevaluatedProperties") == Some(&json!(false));
    if is_object && !closed {
        found.push(if pointer.is_empty() { "/".to_string() } else { pointer.clone() });
    }
    for key in ["properties", "$defs", "definitions", "patternProperties"] {
        if let Some(Value::Object(children)) = map.get(key) {
            for (name, child) in children {
                walk(child, format!("{pointer}/{key}/{}", escape(name)), found);
            }
        }
    }
    for key in ["items", "additionalItems", "not", "if", "then", "else", "contains"] {
        if let Some(child) = map.get(key) {
            walk(child, format!("{pointer}/{key}"), found);
        }
    }
    for key in ["anyOf", "oneOf", "allOf", "prefixItems"] {
        if let Some(Value::Array(items)) = map.get(key) {
            for (i, child) in items.iter().enumerate() {
                walk(child, format!("{pointer}/{key}/{i}"), found);
            }
        }
    }
}

fn escape(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

/// A small args object that satisfies `schema`'s required parameters, made
/// from each one's `default`, first `examples` or `enum` entry, or a plain
/// value of its type. `verbgate check` plans it to see which program a verb
/// really runs; the caller validates it first, because a pattern or a
/// length bound may make the guess wrong.
pub fn sample_args(schema: &Value) -> Value {
    let required = schema.get("required").and_then(Value::as_array).cloned().unwrap_or_default();
    let props = schema.get("properties").and_then(Value::as_object);
    let mut out = serde_json::Map::new();
    for name in required.iter().filter_map(Value::as_str) {
        let p = props.and_then(|p| p.get(name)).cloned().unwrap_or(Value::Null);
        out.insert(name.to_string(), sample_value(&p));
    }
    Value::Object(out)
}

fn sample_value(p: &Value) -> Value {
    if let Some(v) = p.get("default").or_else(|| p.get("examples").and_then(|e| e.get(0))).or_else(|| p.get("enum").and_then(|e| e.get(0))) {
        return v.clone();
    }
    if let Some(c) = p.get("const") {
        return c.clone();
    }
    match p.get("type").and_then(Value::as_str) {
        Some("integer") | Some("number") => p.get("minimum").cloned().unwrap_or(json!(1)),
        Some("boolean") => json!(false),
        Some("array") => json!([]),
        Some("object") => sample_args(p),
        Some("null") => Value::Null,
        _ => json!("example"),
    }
}

/// Compile a schema as JSON Schema 2020-12. Remote `$ref`s are not
/// resolvable (verbgate never fetches anything), so they fail here.
pub fn compile(schema: &Value) -> Result<Validator, String> {
    jsonschema::draft202012::options().build(schema).map_err(|e| e.to_string())
}

/// Validate a caller's args. The first problem decides the code:
/// an undeclared parameter is `unknown_param` (with near matches), anything
/// else `invalid_args`; both name the parameter, and every problem found is
/// listed in `problems`.
pub fn validate_args(validator: &Validator, schema: &Value, verb: &str, args: &Value) -> Result<(), OpError> {
    let mut problems = Vec::new();
    let mut first: Option<OpError> = None;
    for err in validator.iter_errors(args) {
        let path = err.instance_path().as_str().to_string();
        let top_param = path.trim_start_matches('/').split('/').next().unwrap_or("").to_string();
        let (code, param, message) = match err.kind() {
            ValidationErrorKind::AdditionalProperties { unexpected } => {
                let name = unexpected.first().cloned().unwrap_or_default();
                let param = if top_param.is_empty() { name.clone() } else { format!("{top_param}/{name}") };
                (ErrorCode::UnknownParam, param, format!("`{verb}` has no parameter `{name}`"))
            }
            ValidationErrorKind::Required { property } => {
                let name = property.as_str().unwrap_or_default().to_string();
                (ErrorCode::InvalidArgs, name.clone(), format!("parameter `{name}` is required"))
            }
            _ => (ErrorCode::InvalidArgs, top_param.clone(), format!("parameter `{top_param}`: {err}")),
        };
        problems.push(json!({ "param": param, "message": message }));
        // A misspelt name usually also leaves a required one missing; the
        // misspelling is the thing to fix, so it wins.
        let replaces = first.as_ref().is_some_and(|f| f.code != ErrorCode::UnknownParam && code == ErrorCode::UnknownParam);
        if first.is_none() || replaces {
            let mut e = OpError::new(code, message).with("param", param.as_str());
            if code == ErrorCode::UnknownParam {
                let known = declared_params(schema);
                let leaf = param.rsplit('/').next().unwrap_or(&param);
                let hints = near_matches(leaf, known.iter().map(String::as_str));
                e.message = match hints.first() {
                    Some(h) => format!("{}; did you mean `{h}`? (see the schema below)", e.message),
                    None => format!("{}; known parameters: {}", e.message, known.join(", ")),
                };
                e = e.with("did_you_mean", hints);
            }
            first = Some(e);
        }
    }
    match first {
        None => Ok(()),
        Some(e) => Err(e.with("problems", problems)),
    }
}

/// Top-level parameter names, in declaration order.
pub fn declared_params(schema: &Value) -> Vec<String> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default()
}

/// The one-line signature: `git.log(limit?=20, rev?, path?) — List commits`,
/// with `-> job` for spawn verbs. Required parameters come first and carry
/// no `?`; defaults are shown as JSON.
pub fn signature(name: &str, schema: &Value, returns_job: bool, summary: &str) -> String {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut params: Vec<String> = Vec::new();
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for want_required in [true, false] {
            for (p, s) in props {
                if required.contains(&p.as_str()) != want_required {
                    continue;
                }
                let mut text = p.clone();
                if !want_required {
                    text.push('?');
                }
                // `false` is what an absent flag means anyway; leaving it out
                // keeps the catalog short.
                if let Some(d) = s.get("default").filter(|d| **d != Value::Bool(false)) {
                    text.push('=');
                    text.push_str(&d.to_string());
                }
                params.push(text);
            }
        }
    }
    let ret = if returns_job { " -> job" } else { "" };
    format!("{name}({}){ret} — {summary}", params.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_args_satisfy_required_params() {
        let schema = json!({
            "type": "object",
            "properties": {
                "n": {"type": "integer", "minimum": 3},
                "mode": {"type": "string", "enum": ["a", "b"]},
                "flag": {"type": "boolean", "default": true},
                "name": {"type": "string"},
                "skip": {"type": "string"}
            },
            "required": ["n", "mode", "flag", "name"],
            "additionalProperties": false
        });
        let args = sample_args(&schema);
        assert_eq!(args, json!({"n": 3, "mode": "a", "flag": true, "name": "example"}));
        assert!(compile(&schema).unwrap().is_valid(&args));
    }

    fn closed(props: Value) -> Value {
        json!({"type": "object", "properties": props, "additionalProperties": false})
    }

    #[test]
    fn open_objects_are_found_at_any_depth() {
        assert!(open_objects(&closed(json!({"a": {"type": "string"}}))).is_empty());
        assert_eq!(open_objects(&json!({"type": "object"})), vec!["/"]);
        let nested = closed(json!({"opts": {"type": "object", "properties": {}}}));
        assert_eq!(open_objects(&nested), vec!["/properties/opts"]);
        let in_items = closed(json!({"l": {"type": "array", "items": {"properties": {}}}}));
        assert_eq!(open_objects(&in_items), vec!["/properties/l/items"]);
    }

    #[test]
    fn unknown_params_are_named_with_a_suggestion() {
        let schema = closed(json!({"limit": {"type": "integer", "maximum": 10}, "rev": {"type": "string"}}));
        let v = compile(&schema).unwrap();
        let e = validate_args(&v, &schema, "git.log", &json!({"limt": 3})).unwrap_err();
        assert_eq!(e.code, ErrorCode::UnknownParam);
        assert_eq!(e.details["param"], "limt");
        assert_eq!(e.details["did_you_mean"], json!(["limit"]));
        let e = validate_args(&v, &schema, "git.log", &json!({"limit": "x"})).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArgs);
        assert_eq!(e.details["param"], "limit");
        let e = validate_args(&v, &schema, "git.log", &json!({"limit": 11})).unwrap_err();
        assert_eq!(e.details["param"], "limit");
        assert!(validate_args(&v, &schema, "git.log", &json!({"limit": 3})).is_ok());
    }

    #[test]
    fn missing_required_names_the_param() {
        let schema = json!({"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"], "additionalProperties": false});
        let v = compile(&schema).unwrap();
        let e = validate_args(&v, &schema, "job.status", &json!({})).unwrap_err();
        assert_eq!(e.details["param"], "id");
    }

    #[test]
    fn signature_lists_required_first_with_defaults() {
        let schema = json!({"type": "object", "properties": {
            "release": {"type": "boolean", "default": false},
            "package": {"type": "string"}},
            "required": ["package"], "additionalProperties": false});
        assert_eq!(signature("cargo.test", &schema, true, "run tests"), "cargo.test(package, release?) -> job — run tests");
    }
}
