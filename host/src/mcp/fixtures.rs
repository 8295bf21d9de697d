//! The official conformance suite's fixture tools (`test_simple_text`,
//! `test_image_content`, `test_tool_with_progress`, …), which its server
//! scenarios call by name. verbgate's catalog is one tool, `request`, so a
//! real server never has them: they are served only by
//! `verbgate serve --http … --conformance-fixtures` (a hidden flag, for
//! `just conformance`), which says so on stderr at start. They touch no
//! verb, program or file: each answers the fixed content the suite checks.
//!
//! Content, progress, and (on 2025-11-25, whose server may send requests)
//! the sampling and elicitation fixtures, which ask the client and report
//! its answer; the 2026-07-28 input-required ones are in
//! [`super::fixtures_mrtr`].

#![allow(deprecated)] // sampling requests: the suite still calls them (SEP-2577 deprecates)

use rmcp::model::{
    CallToolResult, ClientResult, ContentBlock, CreateMessageRequest, ElicitRequest,
    ProgressNotificationParam, ResourceContents, ServerRequest, Tool,
};
use rmcp::service::RequestContext;
use rmcp::RoleServer;
use serde_json::{json, Map, Value};
use std::sync::Arc;
use std::time::Duration;

/// A 1×1 PNG (what the suite's reference server sends).
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

/// A silent WAV header.
const WAV: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

fn object(v: Value) -> Arc<Map<String, Value>> {
    match v {
        Value::Object(m) => Arc::new(m),
        _ => Arc::default(),
    }
}

/// The fixture tools, as listed.
pub fn tools() -> Vec<Tool> {
    let empty = || object(json!({"type": "object", "properties": {}}));
    let tool =
        |name: &'static str, description: &'static str| Tool::new(name, description, empty());
    let mut tools = vec![
        tool("test_simple_text", "Conformance fixture: one text item"),
        tool("test_image_content", "Conformance fixture: one PNG image"),
        tool("test_audio_content", "Conformance fixture: one WAV audio item"),
        tool("test_embedded_resource", "Conformance fixture: one embedded text resource"),
        tool("test_multiple_content_types", "Conformance fixture: text, image and a resource"),
        tool("test_error_handling", "Conformance fixture: a result with isError"),
        tool("test_tool_with_progress", "Conformance fixture: three progress notifications"),
        tool("test_logging_tool", "Conformance fixture: a plain result, no log messages"),
        Tool::new(
            "test_sampling",
            "Conformance fixture: asks the client to sample",
            object(
                json!({"type": "object", "properties": {"prompt": {"type": "string"}}, "required": ["prompt"]}),
            ),
        ),
        Tool::new(
            "test_elicitation",
            "Conformance fixture: asks the client's user for a username and email",
            object(
                json!({"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]}),
            ),
        ),
        tool(
            "test_elicitation_sep1034_defaults",
            "Conformance fixture: a form with defaults (SEP-1034)",
        ),
        tool(
            "test_elicitation_sep1330_enums",
            "Conformance fixture: a form with every enum shape (SEP-1330)",
        ),
        tool(
            "test_streaming_elicitation",
            "Conformance fixture: a plain result, no request on the stream",
        ),
        tool(
            "test_missing_capability",
            "Conformance fixture: needs the client's sampling capability",
        ),
        Tool::new(
            "json_schema_2020_12_tool",
            "Tool with JSON Schema 2020-12 features",
            object(json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "$defs": {"address": {"$anchor": "addressDef", "type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
                "properties": {
                    "name": {"type": "string"},
                    "address": {"$ref": "#/$defs/address"},
                    "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                    "phone": {"type": "string"},
                    "email": {"type": "string"}
                },
                "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
                "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
                "then": {"required": ["phone"]},
                "else": {"required": ["email"]},
                "additionalProperties": false
            })),
        ),
    ];
    tools.extend(super::fixtures_mrtr::NAMES.iter().map(|n| {
        tool(n, "Conformance fixture: asks for input in an InputRequiredResult (2026-07-28)")
    }));
    tools
}

/// A request to the client, its answer as JSON, or why not.
async fn ask(
    context: &RequestContext<RoleServer>,
    request: ServerRequest,
) -> Result<Value, String> {
    // Bounded, and given up with the call: a client that never answers
    // must not hold the fixture (and its task) forever.
    let answered = tokio::select! {
        r = context.peer.send_request(request) => r,
        _ = tokio::time::sleep(std::time::Duration::from_secs(60)) => {
            return Err("the client did not answer within 60 s".to_string())
        }
        _ = context.ct.cancelled() => return Err("the call was cancelled".to_string()),
    };
    match answered {
        Ok(ClientResult::CreateMessageResult(r)) => {
            serde_json::to_value(r).map_err(|e| e.to_string())
        }
        Ok(ClientResult::ElicitResult(r)) => serde_json::to_value(r).map_err(|e| e.to_string()),
        Ok(other) => Err(format!("the client answered {other:?}")),
        Err(e) => Err(e.to_string()),
    }
}

/// Elicit with the form `schema`; a text result with the answer.
async fn elicit(
    context: &RequestContext<RoleServer>,
    message: &str,
    schema: Value,
) -> CallToolResult {
    let params = json!({"mode": "form", "message": message, "requestedSchema": schema});
    let answered = match serde_json::from_value(params) {
        Ok(p) => ask(context, ServerRequest::ElicitRequest(ElicitRequest::new(p))).await,
        Err(e) => Err(format!("the fixture form does not parse: {e}")),
    };
    match answered {
        Ok(a) => CallToolResult::success(vec![ContentBlock::text(format!("User response: {a}"))]),
        Err(e) => CallToolResult::error(vec![ContentBlock::text(e)]),
    }
}

/// Call fixture `name` with `args`; `None` when it is not one.
pub async fn call(
    name: &str,
    args: &Map<String, Value>,
    context: &RequestContext<RoleServer>,
) -> Option<CallToolResult> {
    let arg = |k: &str| args.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
    let resource = |uri: &str, mime: &str, text: &str| {
        ContentBlock::resource(ResourceContents::text(text, uri).with_mime_type(mime))
    };
    Some(match name {
        "test_simple_text" => CallToolResult::success(vec![ContentBlock::text(
            "This is a simple text response for testing.",
        )]),
        "test_image_content" => {
            CallToolResult::success(vec![ContentBlock::image(PNG, "image/png")])
        }
        "test_audio_content" => {
            CallToolResult::success(vec![ContentBlock::audio(WAV, "audio/wav")])
        }
        "test_embedded_resource" => CallToolResult::success(vec![resource(
            "test://embedded-resource",
            "text/plain",
            "This is an embedded resource content.",
        )]),
        "test_multiple_content_types" => CallToolResult::success(vec![
            ContentBlock::text("Multiple content types test:"),
            ContentBlock::image(PNG, "image/png"),
            resource(
                "test://mixed-content-resource",
                "application/json",
                r#"{"test":"data","value":123}"#,
            ),
        ]),
        "test_error_handling" => CallToolResult::error(vec![ContentBlock::text(
            "This tool intentionally returns an error for testing",
        )]),
        "test_logging_tool" | "json_schema_2020_12_tool" | "test_streaming_elicitation" => {
            CallToolResult::success(vec![ContentBlock::text(format!("{name} ran"))])
        }
        "test_tool_with_progress" => {
            if let Some(token) = context.meta.get_progress_token() {
                for step in [0.0, 50.0, 100.0] {
                    let p = ProgressNotificationParam::new(token.clone(), step).with_total(100.0);
                    if context.peer.notify_progress(p).await.is_err() {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
            CallToolResult::success(vec![ContentBlock::text("Progress test completed")])
        }
        "test_sampling" => {
            let params = json!({"messages": [{"role": "user", "content": {"type": "text", "text": arg("prompt")}}], "maxTokens": 100});
            let answered = match serde_json::from_value(params) {
                Ok(p) => {
                    ask(context, ServerRequest::CreateMessageRequest(CreateMessageRequest::new(p)))
                        .await
                }
                Err(e) => Err(format!("the fixture request does not parse: {e}")),
            };
            match answered {
                Ok(a) => {
                    let text = a["content"]["text"].as_str().unwrap_or_default().to_string();
                    CallToolResult::success(vec![ContentBlock::text(format!(
                        "LLM response: {text}"
                    ))])
                }
                Err(e) => CallToolResult::error(vec![ContentBlock::text(e)]),
            }
        }
        "test_elicitation" => {
            let schema = json!({"type": "object", "properties": {
                "username": {"type": "string", "description": "Your username"},
                "email": {"type": "string", "description": "Your email address"}
            }, "required": ["username", "email"]});
            elicit(context, &arg("message"), schema).await
        }
        "test_elicitation_sep1034_defaults" => {
            let schema = json!({"type": "object", "properties": {
                "name": {"type": "string", "description": "User name", "default": "John Doe"},
                "age": {"type": "integer", "description": "User age", "default": 30},
                "score": {"type": "number", "description": "User score", "default": 95.5},
                "status": {"type": "string", "description": "User status", "enum": ["active", "inactive", "pending"], "default": "active"},
                "verified": {"type": "boolean", "description": "Verification status", "default": true}
            }});
            elicit(context, "Please review and update the form fields with defaults", schema).await
        }
        "test_elicitation_sep1330_enums" => {
            let schema = json!({"type": "object", "properties": {
                "untitledSingle": {"type": "string", "description": "Choose an option", "enum": ["option1", "option2", "option3"]},
                "titledSingle": {"type": "string", "description": "Choose a titled option", "oneOf": [
                    {"const": "value1", "title": "First Option"},
                    {"const": "value2", "title": "Second Option"},
                    {"const": "value3", "title": "Third Option"}
                ]},
                "legacyEnum": {"type": "string", "description": "Choose a legacy option", "enum": ["opt1", "opt2", "opt3"], "enumNames": ["Option One", "Option Two", "Option Three"]},
                "untitledMulti": {"type": "array", "description": "Choose multiple options", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
                "titledMulti": {"type": "array", "description": "Choose multiple titled options", "items": {"anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                    {"const": "value3", "title": "Third Choice"}
                ]}}
            }});
            elicit(context, "Please select options from the enum fields", schema).await
        }
        _ => return None,
    })
}
