//! Stage 3 of an op: its args against the verb's closed schema — or, for
//! a two-stage verb, against its target as resolved now — and, for a verb
//! that starts a job, the schema fingerprint the caller read.

use serde_json::{json, Value};

use super::request::{OpRequest, TARGET_BYTES};
use super::target::ResolvedTarget;
use crate::error::{ErrorCode, OpError};
use crate::registry::schema;
use crate::registry::Verb;
use crate::runtime::model::VerbKind;

/// Check a one-stage verb's args (and a spawn verb's fingerprint).
pub fn check(verb: &Verb, req: &OpRequest) -> Result<(), OpError> {
    verb.validate_args(&req.args)?;
    if verb.kind == VerbKind::Spawn {
        check_fingerprint(verb, req.fingerprint.as_deref())?;
    }
    Ok(())
}

/// A two-stage verb's `target` arg, bounded like `help: "<verb>:<target>"`
/// (no target name is longer, and the name is quoted back in messages and
/// handed to the plugin).
pub fn target_name<'a>(verb: &Verb, req: &'a OpRequest) -> Result<&'a str, OpError> {
    let name = req.args.get("target").and_then(Value::as_str).ok_or_else(|| {
        OpError::new(
            ErrorCode::InvalidArgs,
            format!(
                "`{}` needs `target`; list them with {{\"help\": \"{}\"}}",
                verb.name, verb.name
            ),
        )
        .with("param", "target")
    })?;
    if name.len() > TARGET_BYTES {
        return Err(OpError::new(
            ErrorCode::InvalidArgs,
            format!(
                "`target` is {} bytes; no target name is longer than {TARGET_BYTES} bytes",
                name.len()
            ),
        )
        .with("param", "target")
        .with("limit", TARGET_BYTES)
        .with("actual", name.len()));
    }
    Ok(name)
}

/// A two-stage verb's args against its target `resolved` now: the args
/// must validate against the target as it is, and the answer says whether
/// it changed since the caller read its fingerprint (reported, not
/// refused). Returns that report and the args in the target's order.
pub fn check_against_target(
    verb: &Verb,
    req: &OpRequest,
    name: &str,
    resolved: &ResolvedTarget,
) -> Result<(Value, Value), OpError> {
    let help_call = json!({ "help": format!("{}:{name}", verb.name) });
    schema::validate_args(&resolved.validator, &resolved.schema, &verb.name, &req.args).map_err(
        |e| {
            e.with("target_schema", resolved.schema.clone())
                .with("target_fingerprint", resolved.fingerprint.as_str())
                .with("target_help", help_call.clone())
        },
    )?;
    let given = req.fingerprint.as_deref();
    if verb.kind == VerbKind::Spawn && given.is_none() {
        return Err(OpError::new(
            ErrorCode::FingerprintRequired,
            format!("`{}` starts a job, so the op must carry the target's `schema_fingerprint` (from {help_call}, also included here)", verb.name),
        )
        .with("target_schema", resolved.schema.clone())
        .with("target_fingerprint", resolved.fingerprint.as_str())
        .with("target_help", help_call));
    }
    let changed = given.is_some_and(|g| g != resolved.fingerprint);
    let info = json!({ "name": name, "fingerprint": resolved.fingerprint, "fingerprint_given": given, "changed": changed });
    Ok((info, in_schema_order(&resolved.schema, &req.args, &verb.name)?))
}

/// The args in the order the schema declares its properties — the order a
/// target's positional parameters take (`just r a b c`). A parameter left
/// out before one that was given would shift every later value one place
/// left (`{a, c}` of `r a b=(expr) c="z"` ran `just r 1 3`, giving `b` the
/// value of `c`), so it is filled with its literal default, and refused
/// when it has none (an expression default only the program could compute).
fn in_schema_order(schema: &Value, args: &Value, verb: &str) -> Result<Value, OpError> {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return Ok(args.clone());
    };
    let last_given = props.keys().rposition(|k| args.get(k).is_some());
    let mut out = serde_json::Map::new();
    for (i, (name, prop)) in props.iter().enumerate() {
        match args.get(name) {
            Some(v) => {
                out.insert(name.clone(), v.clone());
            }
            None if last_given.is_some_and(|last| i < last) => match prop.get("default") {
                Some(d) => {
                    out.insert(name.clone(), d.clone());
                }
                None => {
                    let later = props
                        .keys()
                        .skip(i + 1)
                        .find(|k| args.get(*k).is_some())
                        .cloned()
                        .unwrap_or_default();
                    return Err(OpError::new(
                        ErrorCode::InvalidArgs,
                        format!("`{name}` is left out but `{later}` after it is given; parameters are passed by position and `{name}` has no literal default, so pass `{name}` explicitly (its default is computed by the program and cannot be filled in here)"),
                    )
                    .with("param", name.as_str())
                    .with("verb", verb));
                }
            },
            None => {}
        }
    }
    Ok(Value::Object(out))
}

/// Spawn verbs must carry the fingerprint of the schema the caller read.
fn check_fingerprint(verb: &Verb, given: Option<&str>) -> Result<(), OpError> {
    match given {
        Some(fp) if fp == verb.fingerprint => Ok(()),
        Some(fp) => Err(OpError::new(
            ErrorCode::FingerprintStale,
            format!(
                "`{}`'s schema changed since it was read (you sent {fp}); re-read it with {{\"help\": \"{}\"}} or use the schema and fingerprint included here",
                verb.name, verb.name
            ),
        )
        .with("given", fp)),
        None => Err(OpError::new(
            ErrorCode::FingerprintRequired,
            format!("`{}` starts a job, so the op must carry `schema_fingerprint` (from {{\"help\": \"{}\"}}, also included here)", verb.name, verb.name),
        )),
    }
}
