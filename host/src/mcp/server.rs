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
use crate::dispatch::consent::Grants;
use crate::dispatch::{Caller, Dispatcher, Observer, Response, Transport};
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// The MCP server: the dispatcher behind one tool. One per MCP session
/// (stdio: the process; HTTP: each client session), so the verbs a person
/// allowed "for this session" stay with that session.
#[derive(Clone)]
pub struct VerbgateServer {
    dispatcher: Arc<Dispatcher>,
    tool: Tool,
    transport: Transport,
    grants: Arc<Grants>,
}

impl VerbgateServer {
    /// A server for one session over a dispatcher.
    pub fn new(dispatcher: Arc<Dispatcher>, transport: Transport) -> Self {
        let tool = tool(dispatcher.batch_cap());
        VerbgateServer { dispatcher, tool, transport, grants: Arc::new(Grants::default()) }
    }

    /// The caller of one request: over HTTP the identity the token gate put
    /// on the HTTP request (rmcp hands its parts to the handler), on stdio
    /// the local user; with this session's client, grants and a way to ask
    /// its person.
    fn caller(&self, context: &RequestContext<RoleServer>) -> Arc<Caller> {
        let token = context.extensions.get::<http::request::Parts>().and_then(|parts| parts.extensions.get::<Arc<Caller>>()).cloned();
        let mut caller = match token {
            Some(t) => {
                let mut c = Caller::new(&t.name, t.allow.clone(), self.transport);
                (c.owner, c.all_jobs) = (t.owner.clone(), t.all_jobs);
                c
            }
            None => Caller::new("local", None, self.transport),
        };
        caller.client = context.peer.peer_info().map(|info| client_label(&info.client_info));
        caller.asker = Some(Arc::new(super::consent::Elicit::new(context.peer.clone(), context.ct.clone())));
        caller.grants = self.grants.clone();
        Arc::new(caller)
    }
}

/// Longest part of an MCP client's `clientInfo` name, and of its version,
/// that verbgate keeps (bytes, after escaping). The client chooses both,
/// and they are recorded in every audit row of the session and quoted in
/// messages: a 3 MB name once grew the audit trail by 44 MB for one
/// request.
pub const CLIENT_TEXT_BYTES: usize = 256;

/// How a client is named in the audit trail: `name/version` from
/// `initialize`, each cut at [`CLIENT_TEXT_BYTES`] (the cut says how much
/// is missing) with control, bidi and invisible characters escaped (see
/// [`crate::text`]), so what the client sent cannot bloat the trail or
/// rewrite a terminal that shows it. Bounded here, where it enters, for
/// stdio and HTTP sessions alike.
pub(crate) fn client_label(info: &Implementation) -> String {
    format!("{}/{}", client_text(&info.name), client_text(&info.version))
}

/// One client-chosen text, bounded and escaped (see [`client_label`]).
pub(crate) fn client_text(text: &str) -> String {
    crate::text::escape(text, CLIENT_TEXT_BYTES)
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
        let work = self.dispatcher.handle_as(&args, observer.clone(), self.caller(&context));
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
    let server = VerbgateServer::new(dispatcher, Transport::Stdio);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_name_is_bounded_and_escaped_where_it_enters() {
        let info = Implementation::new(format!("\u{1b}[2J{}", "n".repeat(3 << 20)), "1\u{202e}0");
        let label = client_label(&info);
        assert!(label.len() < 2 * CLIENT_TEXT_BYTES + 64, "{} bytes", label.len());
        assert!(label.starts_with("\\u{1b}[2Jnnn") && label.contains("bytes not shown)/") && label.ends_with("/1\\u{202e}0"), "{label}");
        assert_eq!(client_label(&Implementation::new("claude-code", "2.0.1")), "claude-code/2.0.1");
    }
}
