//! A verb's params schema, derived from its `Args` struct, and its result
//! schema, derived from its `Output` struct.
//!
//! The struct a verb reads its arguments from is the schema the host checks
//! them against: `#[derive(Deserialize, JsonSchema)]` plus
//! `#[serde(deny_unknown_fields)]` gives a closed schema, doc comments give
//! the descriptions, `#[serde(default = …)]` the defaults and
//! `#[schemars(range(…), length(…), regex(pattern = …))]` the bounds. A field
//! therefore cannot be read under a name the schema does not have.
//!
//! [`params_schema`] turns schemars' output into the shape verbgate's
//! schemas have always had (and the host's fingerprints hash):
//!
//! - everything inline (no `$defs`/`$ref`), no `$schema`, no root `title`
//!   or `description` (the verb's summary says what it does);
//! - `Option<T>` means "may be left out", not "may be null": the `null`
//!   schemars adds to `type`/`enum` (or as an `anyOf` arm) is removed, so a
//!   caller leaves a parameter out instead of sending `null`;
//! - integer/number `format`s (`uint64`, `double`) are dropped: they are
//!   annotations no validator enforces, and the bounds say the real range;
//! - a default that is an integral float (`25.0`) is written as an integer
//!   (`25`), and an empty-list default (`#[serde(default)] Vec<_>`) is left
//!   out: leaving the list out already means "none";
//! - keys come in one fixed order ([`KEY_ORDER`]), so the pretty-printed
//!   schema reads the same whatever order the attributes were written in.
//!
//! The host refuses a schema that is not closed at every depth, so a
//! forgotten `deny_unknown_fields` fails loudly at load (and in the golden
//! test), never silently.
//!
//! The result side is the same idea turned around: a verb's `map` returns
//! its `Output` struct (`#[derive(Serialize, JsonSchema)]`), the SDK
//! serializes it, and [`result_schema`] derives the schema the host checks
//! the result against from that same struct — so the declared result and
//! the JSON produced cannot disagree. Result schemas describe what is
//! *written* (schemars' serialize contract):
//!
//! - a field is `required` unless it has `skip_serializing_if`; an
//!   `Option<T>` that is always written may be `null` (`["string",
//!   "null"]`); one that is left out when empty is written
//!   `#[serde(skip_serializing_if = "Option::is_none")]
//!   #[schemars(with = "T")]`, so its schema does not admit `null`;
//! - results stay open (no `additionalProperties: false`), so a result
//!   that gains a field does not break a caller's validator;
//! - a part that is genuinely any JSON is a `Value` field (schema `true`);
//!   a `#[serde(flatten)] Map<String, Value>` keeps "and other keys" (the
//!   `items: true` / `additionalProperties: true` these give are left out:
//!   they are what an open schema says anyway);
//! - formats, and the `minimum: 0` schemars implies for unsigned integers,
//!   are dropped; a type's own doc comment becomes the `description` where
//!   it is used (unless the field has one), so result types that are used
//!   as fields keep theirs as plain `//` comments;
//! - everything inline, as for params; keys in [`RESULT_KEY_ORDER`].

use schemars::generate::{Contract, SchemaSettings};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::{Map, Value};

/// What a verb's `Args` type must be: readable from the call's JSON and
/// describable as a JSON Schema. Implemented for every such type.
pub trait Params: DeserializeOwned + JsonSchema {}
impl<T: DeserializeOwned + JsonSchema> Params for T {}

/// What a verb's `Output` type must be: serializable as the verb's result
/// and describable as a JSON Schema (its result schema). Implemented for
/// every such type.
pub trait Output: Serialize + JsonSchema {}
impl<T: Serialize + JsonSchema> Output for T {}

/// The order keys appear in within one schema object; others follow.
pub const KEY_ORDER: &[&str] = &[
    "type",
    "const",
    "description",
    "properties",
    "items",
    "enum",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "pattern",
    "required",
    "additionalProperties",
    "default",
];

/// The order keys appear in within one result schema object; others
/// follow. It is the order verbgate's hand-written result schemas had
/// (what is required before what each property is, a description last),
/// so the derived ones read as they did.
pub const RESULT_KEY_ORDER: &[&str] =
    &["type", "required", "properties", "items", "enum", "description"];

/// The params schema of `T`, in verbgate's shape (see the module docs).
pub fn params_schema<T: JsonSchema>() -> Value {
    let mut schema = root_schema::<T>(Contract::Deserialize);
    normalize(&mut schema, Side::Params);
    schema
}

/// The result schema of `T`, in verbgate's shape (see the module docs);
/// `None` for a type whose schema admits any JSON (`Value`): a verb that
/// declares no shape.
pub fn result_schema<T: JsonSchema>() -> Option<Value> {
    let mut schema = root_schema::<T>(Contract::Serialize);
    if schema == Value::Bool(true) || schema.as_object().is_some_and(Map::is_empty) {
        return None;
    }
    normalize(&mut schema, Side::Result);
    Some(schema)
}

/// schemars' schema for `T`: inline, without `$schema`, `$defs` or the
/// root's own title and description.
fn root_schema<T: JsonSchema>(contract: Contract) -> Value {
    let generator = SchemaSettings::draft2020_12()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
            s.contract = contract;
        })
        .into_generator();
    let mut schema = generator.into_root_schema_for::<T>().to_value();
    if let Value::Object(root) = &mut schema {
        for key in ["$schema", "$defs", "title", "description"] {
            root.remove(key);
        }
    }
    schema
}

/// Which schema [`normalize`] shapes: params (`null` is never sent: leave
/// the parameter out) or a result (`null` is a value a field may have).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Params,
    Result,
}

/// Apply the module's rules to one schema and everything inside it.
fn normalize(schema: &mut Value, side: Side) {
    let Value::Object(obj) = schema else { return };
    if side == Side::Params {
        collapse_null_arm(obj);
        if let Some(Value::Array(types)) = obj.get_mut("type") {
            types.retain(|t| t != "null");
            if types.len() == 1 {
                let only = types.remove(0);
                obj.insert("type".into(), only);
            }
        }
        if let Some(Value::Array(values)) = obj.get_mut("enum") {
            values.retain(|v| !v.is_null());
        }
    }
    let numeric = |t: &Value| matches!(t.as_str(), Some("integer" | "number"));
    let is_numeric = match obj.get("type") {
        Some(Value::Array(types)) => types.iter().any(numeric),
        Some(t) => numeric(t),
        None => false,
    };
    if is_numeric {
        let format = obj.remove("format");
        // The bound schemars implies for an unsigned integer says what
        // the type already does; a result is written by that type.
        let unsigned =
            format.as_ref().and_then(Value::as_str).is_some_and(|f| f.starts_with("uint"));
        if side == Side::Result && unsigned && obj.get("minimum") == Some(&Value::from(0)) {
            obj.remove("minimum");
        }
    }
    if side == Side::Result {
        // Any item, any other key: what a schema says by saying nothing
        // (a `Value` list, a flattened map of "other keys").
        for key in ["items", "additionalProperties"] {
            if obj.get(key) == Some(&Value::Bool(true)) {
                obj.remove(key);
            }
        }
    }
    match obj.get("default") {
        Some(Value::Array(items)) if items.is_empty() => {
            obj.remove("default");
        }
        Some(Value::Number(n)) if n.is_f64() => {
            let f = n.as_f64().unwrap_or(f64::NAN);
            if f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0 {
                obj.insert("default".into(), Value::from(f as i64));
            }
        }
        _ => {}
    }
    if let Some(Value::Object(props)) = obj.get_mut("properties") {
        props.values_mut().for_each(|p| normalize(p, side));
    }
    for key in ["items", "additionalProperties"] {
        if let Some(sub) = obj.get_mut(key) {
            normalize(sub, side);
        }
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(arms)) = obj.get_mut(key) {
            arms.iter_mut().for_each(|a| normalize(a, side));
        }
    }
    let mut ordered = Map::new();
    let order = if side == Side::Params { KEY_ORDER } else { RESULT_KEY_ORDER };
    for key in order {
        if let Some(v) = obj.remove(*key) {
            ordered.insert((*key).to_string(), v);
        }
    }
    let default = ordered.remove("default");
    ordered.extend(std::mem::take(obj));
    if let Some(d) = default {
        ordered.insert("default".into(), d);
    }
    *obj = ordered;
}

/// `{"anyOf": [X, {"type": "null"}], …}` (how schemars makes an optional
/// list or object nullable) becomes X with the outer keys kept.
fn collapse_null_arm(obj: &mut Map<String, Value>) {
    let Some(Value::Array(arms)) = obj.get("anyOf") else { return };
    let is_null = |v: &Value| v.get("type").and_then(Value::as_str) == Some("null");
    if arms.len() != 2 || !arms.iter().any(is_null) {
        return;
    }
    let Some(Value::Array(arms)) = obj.remove("anyOf") else { return };
    if let Some(Value::Object(inner)) = arms.into_iter().find(|a| !is_null(a)) {
        for (k, v) in inner {
            obj.entry(k).or_insert(v);
        }
    }
}

/// `true`, for `#[serde(default = "verbgate_plugin_sdk::yes")]` on a flag
/// that is on unless the caller turns it off.
pub fn yes() -> bool {
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json;
    use serde::Deserialize;

    fn twenty() -> u64 {
        20
    }
    fn three() -> f64 {
        3.0
    }

    #[derive(Deserialize, JsonSchema)]
    #[serde(rename_all = "snake_case")]
    #[allow(dead_code)]
    enum Stream {
        Stdout,
        Stderr,
    }

    /// Struct docs never reach the schema.
    #[derive(Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Example {
        /// the id
        #[schemars(length(min = 1, max = 64), regex(pattern = "^[0-9a-z]+$"))]
        id: String,
        /// most items
        #[serde(default = "twenty")]
        #[schemars(range(min = 1, max = 500))]
        limit: u64,
        /// a flag
        #[serde(default = "yes")]
        flag: bool,
        /// which stream
        stream: Option<Stream>,
        /// names
        #[serde(default)]
        #[schemars(length(max = 8))]
        names: Vec<String>,
        /// seconds
        #[serde(default = "three")]
        #[schemars(range(min = 0.0, max = 60.0))]
        grace: f64,
        /// a path
        #[schemars(length(min = 1))]
        path: Option<String>,
    }

    #[test]
    fn derived_schemas_have_verbgates_shape() {
        let schema = params_schema::<Example>();
        assert_eq!(
            schema,
            json!({
                "type": "object",
                "properties": {
                    "id": { "type": "string", "description": "the id", "minLength": 1, "maxLength": 64, "pattern": "^[0-9a-z]+$" },
                    "limit": { "type": "integer", "description": "most items", "minimum": 1, "maximum": 500, "default": 20 },
                    "flag": { "type": "boolean", "description": "a flag", "default": true },
                    "stream": { "type": "string", "description": "which stream", "enum": ["stdout", "stderr"] },
                    "names": { "type": "array", "description": "names", "items": { "type": "string" }, "maxItems": 8 },
                    "grace": { "type": "number", "description": "seconds", "minimum": 0.0, "maximum": 60.0, "default": 3 },
                    "path": { "type": "string", "description": "a path", "minLength": 1 }
                },
                "required": ["id"],
                "additionalProperties": false
            })
        );
        // Key order is part of the shape (golden files print it).
        let keys: Vec<&String> =
            schema["properties"]["limit"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["type", "description", "minimum", "maximum", "default"]);
        let root: Vec<&String> = schema.as_object().unwrap().keys().collect();
        assert_eq!(root, ["type", "properties", "required", "additionalProperties"]);
    }
}
