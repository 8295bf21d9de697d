//! Closed JSON Schemas for verb parameters. Every object this builder emits
//! carries `"additionalProperties": false`: the host rejects open schemas,
//! and a closed schema is what lets it name a misspelt parameter.

use crate::{json, Map, Value};

/// The parameters of a verb: a closed JSON object schema.
#[derive(Debug, Clone, Default)]
pub struct Schema {
    properties: Map<String, Value>,
    required: Vec<String>,
}

impl Schema {
    /// An object schema with no parameters yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Add a parameter.
    pub fn param(mut self, name: &str, param: Param) -> Self {
        if param.required {
            self.required.push(name.to_string());
        }
        self.properties.insert(name.to_string(), Value::Object(param.schema));
        self
    }

    /// The schema as a JSON value.
    pub fn to_value(&self) -> Value {
        let mut obj = Map::new();
        obj.insert("type".into(), json!("object"));
        obj.insert("properties".into(), Value::Object(self.properties.clone()));
        if !self.required.is_empty() {
            obj.insert("required".into(), json!(self.required));
        }
        obj.insert("additionalProperties".into(), json!(false));
        Value::Object(obj)
    }

    /// The schema as JSON text.
    pub fn to_json(&self) -> String {
        self.to_value().to_string()
    }
}

/// One parameter's schema.
#[derive(Debug, Clone)]
pub struct Param {
    schema: Map<String, Value>,
    required: bool,
}

impl Param {
    fn typed(ty: &str, description: &str) -> Self {
        let mut schema = Map::new();
        schema.insert("type".into(), json!(ty));
        schema.insert("description".into(), json!(description));
        Param { schema, required: false }
    }

    /// A string.
    pub fn string(description: &str) -> Self {
        Self::typed("string", description)
    }
    /// An integer.
    pub fn integer(description: &str) -> Self {
        Self::typed("integer", description)
    }
    /// A number.
    pub fn number(description: &str) -> Self {
        Self::typed("number", description)
    }
    /// A boolean.
    pub fn boolean(description: &str) -> Self {
        Self::typed("boolean", description)
    }
    /// A list of strings.
    pub fn strings(description: &str) -> Self {
        let mut p = Self::typed("array", description);
        p.schema.insert("items".into(), json!({ "type": "string" }));
        p
    }
    /// A nested closed object.
    pub fn object(description: &str, schema: Schema) -> Self {
        let mut p = Param { schema: Map::new(), required: false };
        if let Value::Object(map) = schema.to_value() {
            p.schema = map;
        }
        p.schema.insert("description".into(), json!(description));
        p
    }

    /// The caller must give it.
    pub fn required(mut self) -> Self {
        self.required = true;
        self
    }
    /// The value used when absent (documentation for callers; the plugin
    /// applies it).
    pub fn default(mut self, value: Value) -> Self {
        self.schema.insert("default".into(), value);
        self
    }
    /// Smallest allowed value.
    pub fn min(mut self, n: i64) -> Self {
        self.schema.insert("minimum".into(), json!(n));
        self
    }
    /// Largest allowed value.
    pub fn max(mut self, n: i64) -> Self {
        self.schema.insert("maximum".into(), json!(n));
        self
    }
    /// Smallest allowed number (fractional).
    pub fn min_f(mut self, n: f64) -> Self {
        self.schema.insert("minimum".into(), json!(n));
        self
    }
    /// Largest allowed number (fractional).
    pub fn max_f(mut self, n: f64) -> Self {
        self.schema.insert("maximum".into(), json!(n));
        self
    }
    /// Longest allowed string.
    pub fn max_length(mut self, n: u64) -> Self {
        self.schema.insert("maxLength".into(), json!(n));
        self
    }
    /// Shortest allowed string / smallest list.
    pub fn min_length(mut self, n: u64) -> Self {
        let key =
            if self.schema.get("type") == Some(&json!("array")) { "minItems" } else { "minLength" };
        self.schema.insert(key.into(), json!(n));
        self
    }
    /// Most items in a list.
    pub fn max_items(mut self, n: u64) -> Self {
        self.schema.insert("maxItems".into(), json!(n));
        self
    }
    /// A regular expression the string must match.
    pub fn pattern(mut self, re: &str) -> Self {
        self.schema.insert("pattern".into(), json!(re));
        self
    }
    /// The allowed values.
    pub fn one_of(mut self, values: &[&str]) -> Self {
        self.schema.insert("enum".into(), json!(values));
        self
    }
}
