//! A real MCP client session (rmcp's client) against `verbgate serve`.

use rmcp::model::{
    CallToolRequestParams, NumberOrString, ProgressNotificationParam, ProgressToken,
    RequestMetaObject,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::Value;
use std::sync::{Arc, Mutex};

/// A client that records the progress notifications it receives.
#[derive(Clone, Default)]
pub struct Recorder {
    progress: Arc<Mutex<Vec<Value>>>,
}

impl ClientHandler for Recorder {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        if let Ok(v) = serde_json::to_value(&params) {
            self.progress.lock().unwrap_or_else(|e| e.into_inner()).push(v);
        }
    }
}

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
    client: RunningService<RoleClient, Recorder>,
    recorder: Recorder,
}

impl Session {
    /// Start the server command and complete the MCP handshake.
    pub async fn start(cmd: tokio::process::Command) -> anyhow::Result<Session> {
        let transport = TokioChildProcess::new(cmd)?;
        let recorder = Recorder::default();
        let client = recorder.clone().serve(transport).await?;
        Ok(Session { client, recorder })
    }

    /// [`Session::start`] with the server's stderr (its log) written to `log`.
    pub async fn start_logging_to(
        cmd: tokio::process::Command,
        log: std::fs::File,
    ) -> anyhow::Result<Session> {
        let (transport, _) = TokioChildProcess::builder(cmd).stderr(log).spawn()?;
        let recorder = Recorder::default();
        let client = recorder.clone().serve(transport).await?;
        Ok(Session { client, recorder })
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

    /// `tools/call` of `request` carrying a progress token.
    pub async fn request_with_progress(
        &self,
        args: Value,
        token: i64,
    ) -> anyhow::Result<ToolReply> {
        let mut meta = RequestMetaObject::default();
        meta.set_progress_token(ProgressToken(NumberOrString::Number(token)));
        self.call_with_meta("request", args, Some(meta)).await
    }

    /// Send a `request` call and cancel it (`notifications/cancelled`) after
    /// `after`; returns once the cancellation is sent.
    pub async fn request_then_cancel(
        &self,
        args: Value,
        after: std::time::Duration,
    ) -> anyhow::Result<()> {
        use rmcp::model::{CallToolRequest, ClientRequest};
        use rmcp::service::PeerRequestOptions;
        let Value::Object(map) = args else { anyhow::bail!("arguments must be an object") };
        let params = CallToolRequestParams::new("request").with_arguments(map);
        let handle = self
            .client
            .peer()
            .send_cancellable_request(
                ClientRequest::CallToolRequest(CallToolRequest::new(params)),
                PeerRequestOptions::no_options(),
            )
            .await?;
        tokio::time::sleep(after).await;
        handle.cancel(Some("test cancels".into())).await?;
        Ok(())
    }

    /// Progress notifications received so far.
    pub fn progress(&self) -> Vec<Value> {
        self.recorder.progress.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// `tools/call` of any tool.
    pub async fn call(&self, tool: &str, args: Value) -> anyhow::Result<ToolReply> {
        self.call_with_meta(tool, args, None).await
    }

    async fn call_with_meta(
        &self,
        tool: &str,
        args: Value,
        meta: Option<RequestMetaObject>,
    ) -> anyhow::Result<ToolReply> {
        let Value::Object(map) = args else { anyhow::bail!("arguments must be an object") };
        let mut params = CallToolRequestParams::new(tool.to_string()).with_arguments(map);
        params.meta = meta;
        let result = self.client.call_tool(params).await?;
        let json = serde_json::to_value(&result)?;
        let text = json["content"][0]["text"].as_str().unwrap_or_default().to_string();
        Ok(ToolReply {
            structured: json["structuredContent"].clone(),
            text,
            is_error: json["isError"] == Value::Bool(true),
        })
    }

    /// End the session.
    pub async fn close(self) -> anyhow::Result<()> {
        self.client.cancel().await?;
        Ok(())
    }
}
