//! The rmcp `ServerHandler`, written by hand because the tool list is
//! fixed at one tool whose behaviour is data-driven (rmcp's `#[tool]`
//! macros are for compile-time tools).

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;
use std::sync::Arc;

use super::tool::{tool, TOOL_NAME};
use crate::dispatch::{Caller, Dispatcher, Observer, Response};
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

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

    async fn list_tools(&self, _request: Option<PaginatedRequestParams>, _context: RequestContext<RoleServer>) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(vec![self.tool.clone()]))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        (name == TOOL_NAME).then(|| self.tool.clone())
    }

    async fn call_tool(&self, request: CallToolRequestParams, context: RequestContext<RoleServer>) -> Result<CallToolResponse, McpError> {
        if request.name != TOOL_NAME {
            return Err(McpError::invalid_params(format!("unknown tool `{}`; the only tool is `{TOOL_NAME}`", request.name), None));
        }
        let args = Value::Object(request.arguments.unwrap_or_default());
        let observer = Arc::new(Observer::default());
        let work = self.dispatcher.handle_as(&args, observer.clone(), caller_of(&context));
        let observed = async {
            match context.meta.get_progress_token() {
                None => work.await,
                Some(token) => with_progress(work, &observer, &context, token).await,
            }
        };
        // A cancelled call stops *observing* at once; the ops it started run
        // on in their own tasks (see `dispatch`).
        let response = tokio::select! {
            r = observed => r,
            _ = context.ct.cancelled() => {
                return Err(McpError::internal_error("the request was cancelled by the client; work it started continues", None));
            }
        };
        let result = if response.is_error { CallToolResult::structured_error(response.body) } else { CallToolResult::structured(response.body) };
        Ok(result.into())
    }
}

/// The caller of a request: over HTTP, the identity the token gate put on
/// the HTTP request (rmcp hands its parts to the handler); on stdio, the
/// local user.
fn caller_of(context: &RequestContext<RoleServer>) -> Arc<Caller> {
    context.extensions.get::<http::request::Parts>().and_then(|parts| parts.extensions.get::<Arc<Caller>>()).cloned().unwrap_or_else(Caller::local)
}

/// How often a long request reports progress.
pub const PROGRESS_INTERVAL: Duration = Duration::from_secs(1);

/// Drive `work`, sending `notifications/progress` every
/// [`PROGRESS_INTERVAL`] until it finishes: progress is the number of ops
/// done, total the number of ops. A request that finishes within the first
/// interval sends nothing.
async fn with_progress<F: std::future::Future<Output = Response>>(
    work: F,
    observer: &Observer,
    context: &RequestContext<RoleServer>,
    token: ProgressToken,
) -> Response {
    tokio::pin!(work);
    let started = Instant::now();
    let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + PROGRESS_INTERVAL, PROGRESS_INTERVAL);
    loop {
        tokio::select! {
            response = &mut work => return response,
            _ = ticker.tick() => {
                let done = observer.done.load(Ordering::Relaxed);
                let total = observer.total.load(Ordering::Relaxed);
                let message = format!("{done} of {total} ops done after {} ms", started.elapsed().as_millis());
                let param = ProgressNotificationParam::new(token.clone(), done as f64).with_total(total as f64).with_message(message);
                if let Err(e) = context.peer.notify_progress(param).await {
                    tracing::debug!(error = %e, "cannot send progress");
                }
            }
        }
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
