//! Verb schemas: the closed-schema rule, compiling validators, validating a
//! caller's args (naming the offending parameter), and the one-line
//! signature the catalog shows.

use jsonschema::error::ValidationErrorKind;
use jsonschema::Validator;
use serde_json::{json, Value};

use crate::error::{ErrorCode, OpError};
use crate::json::{clip, near_matches};
use crate::runtime::bounds::NAME_BYTES;

/// JSON pointers of object schemas in `schema` that do not forbid unknown
/// properties. A closed schema is what lets the host reject a misspelt
/// parameter instead of silently ignoring it, so it must be closed all the
/// way down: every subschema that can accept an object (`type: "object"`,
/// `type: [..., "object"]`, `properties`, `patternProperties`, an
/// `additionalProperties` schema) needs `additionalProperties: false` or
/// `unevaluatedProperties: false`, wherever it sits — properties, items,
/// `prefixItems`, `$defs`/`definitions`, `anyOf`/`oneOf`/`allOf`/`not`,
/// `if`/`then`/`else`, `additionalProperties`, `dependentSchemas`. A value
/// schema that accepts anything (`{}`, `true`, a description alone) is open
/// too: it takes an object with any keys.
pub fn open_objects(schema: &Value) -> Vec<String> {
    let mut found = Vec::new();
    walk(schema, String::new(), &mut found);
    found
}

/// Keywords that restrict what a typeless schema accepts.
const RESTRICTING: &[&str] =
    &["type", "enum", "const", "$ref", "$dynamicRef", "anyOf", "oneOf", "allOf"];

fn admits_objects(map: &serde_json::Map<String, Value>) -> bool {
    let typed_object = match map.get("type") {
        Some(Value::String(t)) => t == "object",
        Some(Value::Array(types)) => types.iter().any(|t| t == "object"),
        _ => false,
    };
    let extra_schema = map.get("additionalProperties").is_some_and(|a| *a != json!(false));
    typed_object
        || map.contains_key("properties")
        || map.contains_key("patternProperties")
        || extra_schema
}

fn walk(node: &Value, pointer: String, found: &mut Vec<String>) {
    let here = || if pointer.is_empty() { "/".to_string() } else { pointer.clone() };
    let map = match node {
        Value::Object(map) => map,
        // `true` as a schema accepts anything, objects with any keys included.
        Value::Bool(true) if !pointer.is_empty() => return found.push(here()),
        _ => return,
    };
    let closed = map.get("additionalProperties") == Some(&json!(false))
        || map.get("unevaluatedProperties") == Some(&json!(false));
    if admits_objects(map) && !closed {
        found.push(here());
    } else if !pointer.is_empty()
        && is_value_position(&pointer)
        && !RESTRICTING.iter().any(|k| map.contains_key(*k))
        && !admits_objects(map)
    {
        // A value schema with no type, enum, const or reference accepts
        // any JSON, including an object with a misspelt key.
        found.push(here());
    }
    for key in ["properties", "$defs", "definitions", "patternProperties", "dependentSchemas"] {
        if let Some(Value::Object(children)) = map.get(key) {
            for (name, child) in children {
                walk(child, format!("{pointer}/{key}/{}", escape(name)), found);
            }
        }
    }
    for key in [
        "items",
        "additionalItems",
        "not",
        "if",
        "then",
        "else",
        "contains",
        "additionalProperties",
        "unevaluatedProperties",
        "unevaluatedItems",
    ] {
        match map.get(key) {
            Some(Value::Array(items)) => {
                for (i, child) in items.iter().enumerate() {
                    walk(child, format!("{pointer}/{key}/{i}"), found);
                }
            }
            Some(child @ Value::Object(_)) => walk(child, format!("{pointer}/{key}"), found),
            Some(Value::Bool(true))
                if matches!(key, "items" | "additionalItems" | "unevaluatedItems") =>
            {
                walk(&Value::Bool(true), format!("{pointer}/{key}"), found)
            }
            _ => {}
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

/// Whether a pointer names a schema that describes a value on its own (a
/// property, an item, a definition) rather than one applied beside a
/// sibling schema (`not`, `if`, a combinator branch), which may leave the
/// type to its parent.
fn is_value_position(pointer: &str) -> bool {
    let mut parts = pointer.rsplit('/');
    let last = parts.next().unwrap_or("");
    let parent = parts.next().unwrap_or("");
    matches!(parent, "properties" | "patternProperties" | "$defs" | "definitions" | "prefixItems")
        || matches!(last, "items" | "additionalItems")
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
    if let Some(v) = p
        .get("default")
        .or_else(|| p.get("examples").and_then(|e| e.get(0)))
        .or_else(|| p.get("enum").and_then(|e| e.get(0)))
    {
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

/// Problems listed per op; past it, `problems_total` says how many there
/// were. However many items a caller sends, the answer stays small.
pub const PROBLEMS_LISTED: usize = 10;
/// How much of one validation message is kept: the validator's message
/// quotes the offending value, which may be megabytes of the caller's.
const MESSAGE_BYTES: usize = 300;

/// Validate a caller's args. The first problem decides the code:
/// an undeclared parameter is `unknown_param` (with near matches), anything
/// else `invalid_args`; both name the parameter, and the first
/// [`PROBLEMS_LISTED`] problems are listed in `problems` (with
/// `problems_total` when there were more). Names and values are clipped in
/// messages, so the error is never much bigger than a screenful.
pub fn validate_args(
    validator: &Validator,
    schema: &Value,
    verb: &str,
    args: &Value,
) -> Result<(), OpError> {
    let mut problems = Vec::new();
    let mut total = 0usize;
    let mut first: Option<OpError> = None;
    for err in validator.iter_errors(args) {
        total += 1;
        // Past the listed problems only an unknown parameter can still
        // change the answer (it wins over the others); the rest are counted.
        let unknown = matches!(err.kind(), ValidationErrorKind::AdditionalProperties { .. });
        let decided = first.as_ref().is_some_and(|f| f.code == ErrorCode::UnknownParam);
        if problems.len() >= PROBLEMS_LISTED && (decided || !unknown) {
            continue;
        }
        let path = err.instance_path().as_str().to_string();
        let top_param =
            clip(path.trim_start_matches('/').split('/').next().unwrap_or(""), NAME_BYTES);
        let (code, param, message) = match err.kind() {
            ValidationErrorKind::AdditionalProperties { unexpected } => {
                let name = clip(&unexpected.first().cloned().unwrap_or_default(), NAME_BYTES);
                let param =
                    if top_param.is_empty() { name.clone() } else { format!("{top_param}/{name}") };
                (ErrorCode::UnknownParam, param, format!("`{verb}` has no parameter `{name}`"))
            }
            ValidationErrorKind::Required { property } => {
                let name = clip(property.as_str().unwrap_or_default(), NAME_BYTES);
                (ErrorCode::InvalidArgs, name.clone(), format!("parameter `{name}` is required"))
            }
            _ => (
                ErrorCode::InvalidArgs,
                top_param.clone(),
                format!("parameter `{top_param}`: {}", clip(&err.to_string(), MESSAGE_BYTES)),
            ),
        };
        if problems.len() < PROBLEMS_LISTED {
            problems.push(json!({ "param": param, "message": message }));
        }
        // A misspelt name usually also leaves a required one missing; the
        // misspelling is the thing to fix, so it wins.
        let replaces = first
            .as_ref()
            .is_some_and(|f| f.code != ErrorCode::UnknownParam && code == ErrorCode::UnknownParam);
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
        Some(e) if total > problems.len() => {
            Err(e.with("problems", problems).with("problems_total", total))
        }
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
    fn open_objects_are_found_in_every_position() {
        let open = json!({"type": ["object", "null"]});
        let cases = [
            (closed(json!({"o": open})), "/properties/o"),
            (
                closed(json!({"o": {"type": "array", "prefixItems": [{"type": "string"}, open]}})),
                "/properties/o/prefixItems/1",
            ),
            (
                json!({"type": "object", "additionalProperties": false, "$defs": {"d": open}}),
                "/$defs/d",
            ),
            (closed(json!({"o": {"anyOf": [{"type": "string"}, open]}})), "/properties/o/anyOf/1"),
            (
                closed(
                    json!({"o": {"type": "object", "additionalProperties": {"type": "string"}}}),
                ),
                "/properties/o",
            ),
            (
                closed(
                    json!({"o": {"type": "object", "additionalProperties": false, "patternProperties": {"^x": open}}}),
                ),
                "/properties/o/patternProperties/^x",
            ),
            (closed(json!({"o": {"description": "anything at all"}})), "/properties/o"),
            (closed(json!({"o": true})), "/properties/o"),
            (closed(json!({"o": {"type": "array", "items": {}}})), "/properties/o/items"),
            (
                json!({"type": "object", "additionalProperties": false, "if": {"properties": {}}, "then": {}, "else": open}),
                "/if",
            ),
        ];
        for (schema, pointer) in cases {
            assert!(
                open_objects(&schema).contains(&pointer.to_string()),
                "{pointer} in {schema}: {:?}",
                open_objects(&schema)
            );
        }
        let fine = closed(json!({
            "o": {"type": ["object", "null"], "additionalProperties": false},
            "e": {"enum": ["a", "b"]},
            "c": {"const": 3},
            "u": {"type": "object", "unevaluatedProperties": false},
            "r": {"$ref": "#/$defs/d"},
        }));
        assert!(open_objects(&fine).is_empty(), "{:?}", open_objects(&fine));
    }

    #[test]
    fn problems_are_capped_and_counted_and_values_not_repeated() {
        let schema =
            closed(json!({"ids": {"type": "array", "items": {"type": "string"}, "maxItems": 3}}));
        let v = compile(&schema).unwrap();
        let ids: Vec<Value> = (0..1000).map(|i| json!(i)).collect();
        let e = validate_args(&v, &schema, "x.y", &json!({ "ids": ids })).unwrap_err();
        assert_eq!(e.details["problems"].as_array().unwrap().len(), PROBLEMS_LISTED);
        assert_eq!(e.details["problems_total"], 1001);
        assert!(e.message.len() < 1000, "{}", e.message.len());
        let big = "x".repeat(1 << 20);
        let mut args = serde_json::Map::new();
        args.insert(big.clone(), json!(1));
        let e = validate_args(&v, &schema, "x.y", &Value::Object(args)).unwrap_err();
        assert_eq!(e.code, ErrorCode::UnknownParam);
        assert!(serde_json::to_string(&e.details).unwrap().len() < 4096);
    }

    #[test]
    fn unknown_params_are_named_with_a_suggestion() {
        let schema =
            closed(json!({"limit": {"type": "integer", "maximum": 10}, "rev": {"type": "string"}}));
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
        assert_eq!(
            signature("cargo.test", &schema, true, "run tests"),
            "cargo.test(package, release?) -> job — run tests"
        );
    }
}
