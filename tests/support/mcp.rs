//! A real MCP client session (rmcp's client) against `verbgate serve`.

use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;

/// What a `tools/call` returned.
#[derive(Debug, Clone)]
pub struct ToolReply {
    /// `structuredContent`.
    pub structured: Value,
    /// The text content block.
    pub text: String,
    /// `isError`.
    pub is_error: bool,
}

/// A live session.
pub struct Session {
    client: RunningService<RoleClient, ()>,
}

impl Session {
    /// Start the server command and complete the MCP handshake.
    pub async fn start(cmd: tokio::process::Command) -> anyhow::Result<Session> {
        let transport = TokioChildProcess::new(cmd)?;
        let client = ().serve(transport).await?;
        Ok(Session { client })
    }

    /// The negotiated protocol version.
    pub fn protocol_version(&self) -> String {
        self.client.peer_info().map(|i| i.protocol_version.to_string()).unwrap_or_default()
    }

    /// `tools/list`, as JSON.
    pub async fn tools(&self) -> anyhow::Result<Vec<Value>> {
        let tools = self.client.list_all_tools().await?;
        Ok(tools.into_iter().map(|t| serde_json::to_value(t).unwrap()).collect())
    }

    /// `tools/call` of `request` with these arguments.
    pub async fn request(&self, args: Value) -> anyhow::Result<ToolReply> {
        self.call("request", args).await
    }

    /// `tools/call` of any tool.
    pub async fn call(&self, tool: &str, args: Value) -> anyhow::Result<ToolReply> {
        let Value::Object(map) = args else { anyhow::bail!("arguments must be an object") };
        let result = self.client.call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(map)).await?;
        let json = serde_json::to_value(&result)?;
        let text = json["content"][0]["text"].as_str().unwrap_or_default().to_string();
        Ok(ToolReply { structured: json["structuredContent"].clone(), text, is_error: json["isError"] == Value::Bool(true) })
    }

    /// End the session.
    pub async fn close(self) -> anyhow::Result<()> {
        self.client.cancel().await?;
        Ok(())
    }
}
