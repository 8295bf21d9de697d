//! The one advertised tool. Its size is fixed by design — it never lists
//! verbs — and a test keeps the whole definition under 1,500 bytes however
//! many verbs are loaded. Discovery is a call (`help`), never a payload.

use serde_json::{json, Map, Value};

/// The tool's name.
pub const TOOL_NAME: &str = "request";

/// What the tool says about itself: the call shape in a few lines.
pub fn description(batch_cap: usize) -> String {
    format!(
        "Run namespaced command-line verbs (git.status, cargo.test, job.wait, ...). \
First call {{\"help\":true}} for the catalog of verbs with signatures; {{\"help\":\"<verb>\"}} gives one verb's \
schema and schema_fingerprint. Then {{\"ops\":[{{\"op\":\"git.log\",\"args\":{{\"limit\":5}}}}]}}: up to {batch_cap} ops \
run concurrently and come back in order as {{ok, op, result|error}}. Spawn verbs start background jobs and \
need schema_fingerprint; follow them with job.wait. dry_run:true shows the plan without running it."
    )
}

/// The input schema: `{ops?, help?}`, with `maxItems` = the batch cap.
pub fn input_schema(batch_cap: usize) -> Map<String, Value> {
    let schema = json!({
        "type": "object",
        "properties": {
            "ops": {
                "type": "array",
                "minItems": 1,
                "maxItems": batch_cap,
                "items": {
                    "type": "object",
                    "properties": {
                        "op": { "type": "string", "description": "verb name" },
                        "args": { "type": "object" },
                        "schema_fingerprint": { "type": "string" },
                        "dry_run": { "type": "boolean" }
                    },
                    "required": ["op"],
                    "additionalProperties": false
                }
            },
            "help": {
                "type": ["boolean", "string"],
                "description": "true: the verb catalog; \"<verb>\": that verb's schema"
            }
        },
        "additionalProperties": false
    });
    match schema {
        Value::Object(m) => m,
        _ => unreachable!("the schema literal is an object"),
    }
}

/// The tool definition.
pub fn tool(batch_cap: usize) -> rmcp::model::Tool {
    rmcp::model::Tool::new(TOOL_NAME, description(batch_cap), input_schema(batch_cap))
}
