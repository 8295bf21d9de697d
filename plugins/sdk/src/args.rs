//! Reading a verb's arguments. The host has already validated them against
//! the verb's closed schema, so these accessors only guard against a schema
//! and a plan disagreeing — which they report as `invalid_args`, naming the
//! parameter, instead of panicking.

use crate::errors::invalid_args;
use crate::{Map, OpError, Value};

/// A verb call's arguments (a JSON object).
#[derive(Debug, Clone, Default)]
pub struct Args(Map<String, Value>);

impl Args {
    /// Parse the JSON text the host passes.
    pub fn parse(text: &str) -> Result<Self, OpError> {
        match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(map)) => Ok(Args(map)),
            Ok(Value::Null) => Ok(Args::default()),
            Ok(_) => Err(invalid_args("args must be a JSON object")),
            Err(e) => Err(invalid_args(&format!("args are not valid JSON: {e}"))),
        }
    }

    /// The raw value of a parameter, if given.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.0.get(name).filter(|v| !v.is_null())
    }

    /// The whole object.
    pub fn as_map(&self) -> &Map<String, Value> {
        &self.0
    }

    /// An optional string parameter.
    pub fn str(&self, name: &str) -> Result<Option<&str>, OpError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(wrong_type(name, "a string")),
        }
    }

    /// A required string parameter.
    pub fn req_str(&self, name: &str) -> Result<&str, OpError> {
        self.str(name)?.ok_or_else(|| missing(name))
    }

    /// An optional non-negative integer parameter.
    pub fn u64(&self, name: &str) -> Result<Option<u64>, OpError> {
        match self.get(name) {
            None => Ok(None),
            Some(v) => {
                v.as_u64().map(Some).ok_or_else(|| wrong_type(name, "a non-negative integer"))
            }
        }
    }

    /// An optional number parameter.
    pub fn f64(&self, name: &str) -> Result<Option<f64>, OpError> {
        match self.get(name) {
            None => Ok(None),
            Some(v) => v.as_f64().map(Some).ok_or_else(|| wrong_type(name, "a number")),
        }
    }

    /// A boolean parameter; absent means `default`.
    pub fn bool_or(&self, name: &str, default: bool) -> Result<bool, OpError> {
        match self.get(name) {
            None => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(wrong_type(name, "a boolean")),
        }
    }

    /// An optional list of strings.
    pub fn strs(&self, name: &str) -> Result<Vec<&str>, OpError> {
        match self.get(name) {
            None => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| v.as_str().ok_or_else(|| wrong_type(name, "a list of strings")))
                .collect(),
            Some(_) => Err(wrong_type(name, "a list of strings")),
        }
    }
}

fn wrong_type(name: &str, what: &str) -> OpError {
    crate::errors::op_error(
        crate::errors::ErrorCode::InvalidArgs,
        &format!("parameter `{name}` must be {what}"),
        Some(serde_json::json!({ "param": name })),
    )
}

fn missing(name: &str) -> OpError {
    crate::errors::op_error(
        crate::errors::ErrorCode::InvalidArgs,
        &format!("parameter `{name}` is required"),
        Some(serde_json::json!({ "param": name })),
    )
}
