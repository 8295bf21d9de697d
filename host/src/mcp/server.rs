//! The rmcp `ServerHandler`, written by hand because the tool list is
//! fixed at one tool whose behaviour is data-driven (rmcp's `#[tool]`
//! macros are for compile-time tools).

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;
use std::sync::Arc;

use super::tool::{tool, TOOL_NAME};
use crate::dispatch::Dispatcher;

/// The MCP server: the dispatcher behind one tool.
#[derive(Clone)]
pub struct VerbgateServer {
    dispatcher: Arc<Dispatcher>,
    tool: Tool,
}

impl VerbgateServer {
    /// A server over a dispatcher.
    pub fn new(dispatcher: Arc<Dispatcher>) -> Self {
        let tool = tool(dispatcher.batch_cap());
        VerbgateServer { dispatcher, tool }
    }
}

impl ServerHandler for VerbgateServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("verbgate", env!("CARGO_PKG_VERSION")))
            .with_instructions("One tool, `request`. Start with {\"help\": true}.")
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(vec![self.tool.clone()]))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        (name == TOOL_NAME).then(|| self.tool.clone())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        if request.name != TOOL_NAME {
            return Err(McpError::invalid_params(format!("unknown tool `{}`; the only tool is `{TOOL_NAME}`", request.name), None));
        }
        let args = Value::Object(request.arguments.unwrap_or_default());
        let response = self.dispatcher.handle(&args).await;
        let result = if response.is_error {
            CallToolResult::structured_error(response.body)
        } else {
            CallToolResult::structured(response.body)
        };
        Ok(result.into())
    }
}

/// Serve MCP over stdin/stdout until the client disconnects.
pub async fn serve_stdio(dispatcher: Arc<Dispatcher>) -> anyhow::Result<()> {
    let server = VerbgateServer::new(dispatcher);
    match server.serve(rmcp::transport::stdio()).await {
        Ok(running) => {
            running.waiting().await?;
            Ok(())
        }
        Err(e) => {
            // A client that closes stdin before `initialize` is not a crash.
            tracing::info!(error = %e, "the MCP client went away before the session started");
            Ok(())
        }
    }
}
