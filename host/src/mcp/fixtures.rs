//! The official conformance suite's fixture tools (`test_simple_text`,
//! `test_image_content`, `test_tool_with_progress`, …), which its server
//! scenarios call by name. verbgate's catalog is one tool, `request`, so a
//! real server never has them: they are served only by
//! `verbgate serve --http … --conformance-fixtures` (a hidden flag, for
//! `just conformance`), which says so on stderr at start. They touch no
//! verb, program or file: each answers the fixed content the suite checks.
//!
//! Only the scenarios whose checks need nothing but content and progress
//! are served; those needing a server-to-client request (sampling,
//! elicitation forms the suite defines) or the 2026-07-28 input-required
//! fixtures are listed as not done in tests/conformance/.

use rmcp::model::{
    CallToolResult, ContentBlock, ProgressNotificationParam, ResourceContents, Tool,
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
    vec![
        tool("test_simple_text", "Conformance fixture: one text item"),
        tool("test_image_content", "Conformance fixture: one PNG image"),
        tool("test_audio_content", "Conformance fixture: one WAV audio item"),
        tool("test_embedded_resource", "Conformance fixture: one embedded text resource"),
        tool("test_multiple_content_types", "Conformance fixture: text, image and a resource"),
        tool("test_error_handling", "Conformance fixture: a result with isError"),
        tool("test_tool_with_progress", "Conformance fixture: three progress notifications"),
        tool("test_logging_tool", "Conformance fixture: a plain result, no log messages"),
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
    ]
}

/// Call fixture `name`; `None` when it is not one.
pub async fn call(name: &str, context: &RequestContext<RoleServer>) -> Option<CallToolResult> {
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
        "test_logging_tool" | "json_schema_2020_12_tool" => {
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
        _ => return None,
    })
}
