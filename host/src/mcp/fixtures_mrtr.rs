//! The conformance suite's 2026-07-28 input-required fixtures
//! (`test_input_required_result_*`), served beside [`super::fixtures`]
//! only with `serve --conformance-fixtures`: each asks for input in an
//! `InputRequiredResult` and completes once the retry answers, following
//! SEP-2322 as the real consent rounds ([`super::mrtr`]) do — state sealed
//! with HMAC (rmcp's codec, a key made for the process), a tampered or
//! foreign state refused as a JSON-RPC error, a missing or malformed
//! answer asked again, unknown extra answers ignored, and nothing asked
//! that the client's capabilities do not declare.

use rmcp::model::{
    CallToolResponse, CallToolResult, ContentBlock, InputRequest, InputRequests,
    InputRequiredResult, InputResponses, RequestStateCodec,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::{json, Value};
use std::sync::OnceLock;

/// What a fixture's sealed state says: which fixture, which round, and
/// what earlier rounds answered.
#[derive(serde::Serialize, serde::Deserialize)]
struct State {
    fixture: String,
    round: u32,
    name: Option<String>,
}

/// The process's state key.
fn codec() -> Option<&'static RequestStateCodec> {
    static CODEC: OnceLock<Option<RequestStateCodec>> = OnceLock::new();
    CODEC
        .get_or_init(|| {
            let key = crate::private_files::random_bytes(32).ok()?;
            RequestStateCodec::try_new(key).ok()
        })
        .as_ref()
}

/// An input request from its JSON form.
fn request(method: &str, params: Value) -> Option<InputRequest> {
    serde_json::from_value(json!({"method": method, "params": params})).ok()
}

fn ask_name() -> Option<InputRequest> {
    request(
        "elicitation/create",
        json!({"mode": "form", "message": "What is your name?", "requestedSchema": {"type": "object", "properties": {"name": {"type": "string", "description": "Your name"}}, "required": ["name"]}}),
    )
}

fn ask_color() -> Option<InputRequest> {
    request(
        "elicitation/create",
        json!({"mode": "form", "message": "What is your favorite color?", "requestedSchema": {"type": "object", "properties": {"color": {"type": "string"}}, "required": ["color"]}}),
    )
}

fn ask_sample(text: &str, max_tokens: u32) -> Option<InputRequest> {
    request(
        "sampling/createMessage",
        json!({"messages": [{"role": "user", "content": {"type": "text", "text": text}}], "maxTokens": max_tokens}),
    )
}

fn ask_roots() -> Option<InputRequest> {
    request("roots/list", json!({}))
}

/// An accepted elicitation's string field `field`.
fn accepted(responses: Option<&InputResponses>, key: &str, field: &str) -> Option<Value> {
    let r = responses?.get(key)?;
    (r.get("action")?.as_str()? == "accept").then(|| r.get("content")?.get(field).cloned())?
}

/// A sampling answer's text.
fn sampled(responses: Option<&InputResponses>, key: &str) -> Option<String> {
    responses?.get(key)?.get("content")?.get("text")?.as_str().map(str::to_string)
}

/// A roots answer's list.
fn rooted(responses: Option<&InputResponses>, key: &str) -> bool {
    responses.and_then(|r| r.get(key)).and_then(|r| r.get("roots")).is_some_and(Value::is_array)
}

fn done(text: String) -> Result<CallToolResponse, McpError> {
    Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
}

/// Ask for `wanted` (key, request), with `state` sealed when given.
fn asking(
    wanted: Vec<(&str, Option<InputRequest>)>,
    state: Option<State>,
) -> Result<CallToolResponse, McpError> {
    let mut requests = InputRequests::new();
    for (key, r) in wanted {
        let r =
            r.ok_or_else(|| McpError::internal_error("a fixture request does not parse", None))?;
        requests.insert(key.to_string(), r);
    }
    let sealed = match state {
        Some(s) => Some(
            codec()
                .ok_or_else(|| McpError::internal_error("no request-state key", None))?
                .seal_json(&s)
                .map_err(|e| McpError::internal_error(e.to_string(), None))?,
        ),
        None => None,
    };
    Ok(CallToolResponse::InputRequired(InputRequiredResult::new(Some(requests), sealed)))
}

/// The sealed state of a retry, if it has one: refused (invalid params,
/// SEP-2322) when it does not verify or names another fixture.
fn opened(name: &str, state: Option<&str>) -> Result<Option<State>, McpError> {
    let Some(state) = state else { return Ok(None) };
    let refused = || {
        McpError::invalid_params(
            "requestState does not verify: it was altered, is from another server or call",
            None,
        )
    };
    let codec = codec().ok_or_else(refused)?;
    let s: State = codec.open_json(state).map_err(|_| refused())?;
    if s.fixture != name {
        return Err(refused());
    }
    Ok(Some(s))
}

/// Call the 2026-07-28 fixture `name`; `None` when it is not one.
pub fn call(
    name: &str,
    state: Option<&str>,
    responses: Option<&InputResponses>,
    context: &RequestContext<RoleServer>,
) -> Option<Result<CallToolResponse, McpError>> {
    if !name.starts_with("test_input_required_result_") {
        return None;
    }
    let opened = match opened(name, state) {
        Ok(s) => s,
        Err(e) => return Some(Err(e)),
    };
    let state = |round: u32, name_given: Option<String>| {
        Some(State { fixture: name.to_string(), round, name: name_given })
    };
    let answer =
        |key: &str| accepted(responses, key, "name").and_then(|v| v.as_str().map(str::to_string));
    Some(match name {
        "test_input_required_result_elicitation" => match answer("user_name") {
            Some(n) => done(format!("Hello, {n}!")),
            None => asking(vec![("user_name", ask_name())], None),
        },
        "test_input_required_result_sampling" => match sampled(responses, "capital_question") {
            Some(t) => done(format!("The model said: {t}")),
            None => asking(
                vec![("capital_question", ask_sample("What is the capital of France?", 100))],
                None,
            ),
        },
        "test_input_required_result_list_roots" => match rooted(responses, "client_roots") {
            true => done("Roots received".to_string()),
            false => asking(vec![("client_roots", ask_roots())], None),
        },
        "test_input_required_result_request_state"
        | "test_input_required_result_tampered_state" => {
            let ok = accepted(responses, "confirm", "ok").is_some();
            match (opened, ok) {
                (Some(_), true) => done("state-ok".to_string()),
                _ => asking(
                    vec![(
                        "confirm",
                        request(
                            "elicitation/create",
                            json!({"mode": "form", "message": "Please confirm", "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}}),
                        ),
                    )],
                    state(1, None),
                ),
            }
        }
        "test_input_required_result_multiple_inputs" => {
            let all = answer("user_name").is_some()
                && sampled(responses, "greeting").is_some()
                && rooted(responses, "client_roots");
            match (opened, all) {
                (Some(_), true) => done("All three inputs received".to_string()),
                _ => asking(
                    vec![
                        ("user_name", ask_name()),
                        ("greeting", ask_sample("Say hello", 50)),
                        ("client_roots", ask_roots()),
                    ],
                    state(1, None),
                ),
            }
        }
        "test_input_required_result_multi_round" => match opened {
            Some(State { round: 1, .. }) if answer("user_name").is_some() => {
                asking(vec![("favorite_color", ask_color())], state(2, answer("user_name")))
            }
            Some(State { round: 2, name: Some(n), .. }) => {
                match accepted(responses, "favorite_color", "color")
                    .and_then(|c| c.as_str().map(str::to_string))
                {
                    Some(c) => done(format!("{n} likes {c}")),
                    None => asking(vec![("favorite_color", ask_color())], state(2, Some(n))),
                }
            }
            _ => asking(vec![("user_name", ask_name())], state(1, None)),
        },
        "test_input_required_result_capabilities" => {
            // Ask only with what the client declared it can answer.
            let caps = context.client_capabilities();
            let mut wanted = vec![];
            if caps.as_ref().is_some_and(|c| c.sampling.is_some()) {
                wanted
                    .push(("capital_question", ask_sample("What is the capital of France?", 100)));
            }
            if caps.as_ref().is_some_and(|c| c.elicitation.is_some()) {
                wanted.push(("user_name", ask_name()));
            }
            if sampled(responses, "capital_question").is_some() || answer("user_name").is_some() {
                done("Answered within the declared capabilities".to_string())
            } else if wanted.is_empty() {
                done("The client declares nothing to ask with".to_string())
            } else {
                asking(wanted, None)
            }
        }
        _ => return None,
    })
}

/// The fixture tools this module answers, for `tools/list`.
pub const NAMES: [&str; 8] = [
    "test_input_required_result_elicitation",
    "test_input_required_result_sampling",
    "test_input_required_result_list_roots",
    "test_input_required_result_request_state",
    "test_input_required_result_tampered_state",
    "test_input_required_result_multiple_inputs",
    "test_input_required_result_multi_round",
    "test_input_required_result_capabilities",
];

/// `test_missing_capability` (SEP-2575): refused with -32021 naming the
/// capability when the request does not declare sampling.
pub fn missing_capability(
    context: &RequestContext<RoleServer>,
) -> Result<CallToolResponse, McpError> {
    if context.client_capabilities().is_some_and(|c| c.sampling.is_some()) {
        return done("sampling is declared".to_string());
    }
    Err(McpError::new(
        rmcp::model::ErrorCode(-32021),
        "this tool needs the client's `sampling` capability, which the request's _meta does not declare",
        Some(json!({"requiredCapabilities": {"sampling": {}}})),
    ))
}
