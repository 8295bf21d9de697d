//! The rmcp `ServerHandler`, written by hand because the tool list is
//! fixed at one tool whose behaviour is data-driven (rmcp's `#[tool]`
//! macros are for compile-time tools).
//!
//! Both protocol eras are served by one handler over one dispatcher (same
//! envelope, codes and audit rows); they differ in how a person is asked:
//! a 2025-11-25 client (`initialize`) gets server-sent elicitation
//! ([`super::consent`]), a 2026-07-28 client (per-request `_meta`, no
//! session) gets the question in an `InputRequiredResult` and answers on
//! its retry ([`super::mrtr`]).

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, GetTaskParams,
    GetTaskResult, Implementation, ListToolsResult, PaginatedRequestParams, ProtocolVersion,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;
use std::sync::Arc;

use super::mrtr::{Rounds, Step};
use super::scope::GrantBook;
use super::tasks::Tasks;
use super::tool::{tool, TOOL_NAME};
use crate::dispatch::ask::Grants;
use crate::dispatch::{Caller, Dispatcher, Observer, Response, Transport};
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// What every handler of one server shares across protocol eras: the
/// batches held between 2026-07-28 consent rounds, and (over HTTP) the
/// grants of 2026-07-28 callers, who have no session (see
/// [`super::scope`]).
#[derive(Debug)]
pub struct Eras {
    /// Batches waiting for a retry's answers.
    pub rounds: Rounds,
    /// 2026-07-28 HTTP callers' grants; `None` on stdio, where the
    /// connection is the session in both eras.
    pub book: Option<GrantBook>,
    /// Durable SEP-2663 tasks; `None` without a job store.
    pub tasks: Option<Tasks>,
    /// Whether the conformance suite's fixture tools are served beside
    /// `request` (`serve --conformance-fixtures`, see [`super::fixtures`]).
    pub fixtures: bool,
}

impl Eras {
    /// What `dispatcher`'s server shares: a fresh consent-round key, the
    /// grant book (HTTP), and the task records beside the job store.
    pub fn new(dispatcher: &Dispatcher, book: Option<GrantBook>) -> anyhow::Result<Eras> {
        let config = dispatcher.config();
        let retention = Duration::from_secs(config.limits.job_retain_days.saturating_mul(86_400));
        let tasks = match Tasks::open(&config.state_dir(), retention) {
            Ok(t) => Some(t),
            Err(e) => {
                tracing::warn!(error = %format!("{e:#}"), "no task records: spawn verbs answer job ids to clients that declare tasks");
                None
            }
        };
        Ok(Eras { rounds: Rounds::new()?, book, tasks, fixtures: false })
    }
}

/// The token identity the HTTP gate puts on a request (the digest of the
/// token, empty without authentication), so a 2026-07-28 caller's grants
/// and held batches belong to the token itself, not its name.
#[derive(Debug, Clone)]
pub struct TokenIdentity(pub Arc<str>);

/// The MCP server: the dispatcher behind one tool. One per MCP session
/// (stdio: the process; HTTP: each 2025-11-25 client session, and each
/// 2026-07-28 request), so the verbs a person allowed "for this session"
/// stay with that session ([`super::scope`] says what that is per era).
#[derive(Clone)]
pub struct VerbgateServer {
    dispatcher: Arc<Dispatcher>,
    tool: Tool,
    transport: Transport,
    grants: Arc<Grants>,
    eras: Arc<Eras>,
}

impl VerbgateServer {
    /// A server for one session over a dispatcher, sharing `eras` with
    /// the other sessions of the same server.
    pub fn new(dispatcher: Arc<Dispatcher>, transport: Transport, eras: Arc<Eras>) -> Self {
        let tool = tool(dispatcher.batch_cap());
        VerbgateServer { dispatcher, tool, transport, grants: Arc::new(Grants::default()), eras }
    }

    /// The caller of one request: over HTTP the identity the token gate put
    /// on the HTTP request (rmcp hands its parts to the handler), on stdio
    /// the local user; with the request's client and the grants of its
    /// session. Nobody can be asked yet: the era decides how.
    fn caller(&self, context: &RequestContext<RoleServer>, modern: bool) -> Caller {
        let parts = context.extensions.get::<http::request::Parts>();
        let token = parts.and_then(|parts| parts.extensions.get::<Arc<Caller>>()).cloned();
        // The gate's caller whole (name, allow list, job owner), so what
        // the token grants reaches dispatch unchanged.
        let mut caller = match token {
            Some(t) => Caller { transport: self.transport, ..(*t).clone() },
            None => Caller::new("local", None, self.transport),
        };
        // From `_meta` on 2026-07-28, from `initialize` before.
        caller.client = context.client_info().map(|info| crate::mcp::client::label(&info));
        caller.trace = context.extensions.get::<opentelemetry::Context>().cloned();
        caller.grants = match (&self.eras.book, modern) {
            (Some(book), true) => {
                book.grants(&identity(context), caller.client.as_deref().unwrap_or(""))
            }
            _ => self.grants.clone(),
        };
        caller
    }
}

/// The token identity of an HTTP request (empty on stdio and without
/// authentication).
fn identity(context: &RequestContext<RoleServer>) -> String {
    let parts = context.extensions.get::<http::request::Parts>();
    parts
        .and_then(|p| p.extensions.get::<TokenIdentity>())
        .map(|t| t.0.to_string())
        .unwrap_or_default()
}

/// Whether the request speaks protocol 2026-07-28 or later (no session,
/// no server-sent requests).
fn is_modern(context: &RequestContext<RoleServer>) -> bool {
    context.protocol_version().is_some_and(|v| v >= ProtocolVersion::V_2026_07_28)
}

/// Why a 2026-07-28 client cannot be asked: its requests declare no form
/// elicitation, so a question in an `InputRequiredResult` would reach no
/// one. `None` when it can be asked.
fn modern_unavailable(context: &RequestContext<RoleServer>) -> Option<String> {
    let elicitation = context.client_capabilities().and_then(|c| c.elicitation);
    // As in the legacy handshake: neither mode named means form.
    let form = elicitation.is_some_and(|e| e.form.is_some() || e.url.is_none());
    if form {
        return None;
    }
    Some(format!(
        "{} declares no `elicitation` (form mode) in its client capabilities (the `io.modelcontextprotocol/clientCapabilities` entry of each request's `_meta`, protocol 2026-07-28), so verbgate cannot send it the question in an InputRequiredResult",
        super::client::phrase(context.client_info().as_ref())
    ))
}

impl ServerHandler for VerbgateServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_tasks().build())
            .with_server_info(Implementation::new("verbgate", env!("CARGO_PKG_VERSION")))
            .with_instructions("One tool, `request`. Start with {\"help\": true}.")
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let span = self.request_span("tools/list", None, &context);
        if let Some(span) = span {
            span.end(None);
        }
        let mut tools = vec![self.tool.clone()];
        if self.eras.fixtures {
            tools.extend(super::fixtures::tools());
        }
        Ok(ListToolsResult::with_all_items(tools))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        if name == TOOL_NAME {
            return Some(self.tool.clone());
        }
        self.eras
            .fixtures
            .then(|| super::fixtures::tools().into_iter().find(|t| t.name == name))
            .flatten()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        mut context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let Some(span) = self.request_span("tools/call", Some(&request.name), &context) else {
            return self.call(request, context).await;
        };
        // The ops' spans are children of this one: the caller made from
        // `context` carries it to dispatch.
        context.extensions.insert(span.context());
        let answer = self.call(request, context).await;
        span.end(error_type(&answer).as_deref());
        answer
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        let span = self.request_span("tasks/get", None, &context);
        let caller = self.caller(&context, is_modern(&context));
        let answer = match self.tasks() {
            Ok(tasks) => tasks.get(&self.dispatcher, &request.task_id, caller).await,
            Err(e) => Err(e),
        };
        ended(span, answer)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let span = self.request_span("tasks/cancel", None, &context);
        let caller = self.caller(&context, is_modern(&context));
        let answer = match self.tasks() {
            Ok(tasks) => tasks.cancel(&self.dispatcher, &request.task_id, caller).await,
            Err(e) => Err(e),
        };
        ended(span, answer)
    }
}

/// End a request's span (if any) with its answer's JSON-RPC error code.
fn ended<T>(
    span: Option<crate::telemetry::span::RequestSpan>,
    answer: Result<T, McpError>,
) -> Result<T, McpError> {
    if let Some(span) = span {
        span.end(answer.as_ref().err().map(|e| e.code.0.to_string()).as_deref());
    }
    answer
}

/// A request's `error.type`: the JSON-RPC error code, or `tool_error` for a
/// result with `isError` (MCP semantic conventions); `None` when it did
/// not fail.
fn error_type(answer: &Result<CallToolResponse, McpError>) -> Option<String> {
    match answer {
        Err(e) => Some(e.code.0.to_string()),
        Ok(CallToolResponse::Complete(r)) if r.is_error == Some(true) => {
            Some("tool_error".to_string())
        }
        Ok(_) => None,
    }
}

impl VerbgateServer {
    /// The telemetry span of one request, `None` when telemetry is off.
    fn request_span(
        &self,
        method: &'static str,
        tool: Option<&str>,
        context: &RequestContext<RoleServer>,
    ) -> Option<crate::telemetry::span::RequestSpan> {
        crate::telemetry::active()?;
        let parts = context.extensions.get::<http::request::Parts>();
        let session =
            parts.and_then(|p| p.headers.get("mcp-session-id")).and_then(|v| v.to_str().ok());
        crate::telemetry::span::RequestSpan::start(crate::telemetry::span::RequestInfo {
            method,
            tool,
            meta: Some(&context.meta.0 .0),
            request_id: Some(context.id.to_string()),
            session,
            protocol: context.protocol_version().map(|v| v.to_string()),
            tool_known: tool == Some(TOOL_NAME),
            protocol_known: context
                .protocol_version()
                .is_some_and(|v| ProtocolVersion::KNOWN_VERSIONS.contains(&v)),
            network: if self.transport == Transport::Http { "tcp" } else { "pipe" },
        })
    }

    /// A `tools/call`, its span aside.
    async fn call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        if self.eras.fixtures && request.name != TOOL_NAME {
            if request.name == "test_missing_capability" {
                return super::fixtures_mrtr::missing_capability(&context);
            }
            let (state, responses) =
                (request.request_state.as_deref(), request.input_responses.as_ref());
            if let Some(answer) =
                super::fixtures_mrtr::call(&request.name, state, responses, &context)
            {
                return answer;
            }
            let args = request.arguments.clone().unwrap_or_default();
            if let Some(result) = super::fixtures::call(&request.name, &args, &context).await {
                return Ok(result.into());
            }
        }
        if request.name != TOOL_NAME {
            return Err(McpError::invalid_params(
                format!("unknown tool `{}`; the only tool is `{TOOL_NAME}`", request.name),
                None,
            ));
        }
        let args = Value::Object(request.arguments.unwrap_or_default());
        if is_modern(&context) {
            return self
                .call_modern(args, request.request_state, request.input_responses, context)
                .await;
        }
        let mut caller = self.caller(&context, false);
        caller.asker =
            Some(Arc::new(super::consent::Elicit::new(context.peer.clone(), context.ct.clone())));
        let owner = caller.owner.clone();
        let observer = Arc::new(Observer::default());
        let work = self.dispatcher.handle_as(&args, observer.clone(), Arc::new(caller));
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
            _ = context.ct.cancelled() => return Err(cancelled()),
        };
        Ok(self.finish(response, &context, &owner))
    }
}

impl VerbgateServer {
    /// A `tools/call` on protocol 2026-07-28: a new batch, or the retry of
    /// a held one (`state`, with the person's `responses`), observed until
    /// it finishes or its ops ask (see [`super::mrtr`]).
    async fn call_modern(
        &self,
        args: Value,
        state: Option<String>,
        responses: Option<rmcp::model::InputResponses>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let rounds = &self.eras.rounds;
        let mut caller = self.caller(&context, true);
        let owner = caller.owner.clone();
        let binding = Rounds::binding(
            self.transport.as_str(),
            &identity(&context),
            caller.client.as_deref().unwrap_or(""),
        );
        let held = match state {
            Some(state) => match rounds.resume(&state, &binding, &args) {
                Ok(held) => {
                    Rounds::deliver(&held, responses.as_ref());
                    held
                }
                Err(e) => {
                    // SEP-2322: a state that does not verify is a JSON-RPC
                    // error (invalid params), not a tool result; nothing ran.
                    self.dispatcher.record_refused_request(&caller, &args, &e);
                    return Err(McpError::invalid_params(e.message.clone(), Some(e.to_json())));
                }
            },
            None => {
                let held = rounds.begin(binding, &args);
                caller.asker = Some(held.asker(modern_unavailable(&context)));
                let (dispatcher, observer, caller) =
                    (self.dispatcher.clone(), held.observer(), Arc::new(caller));
                held.run(async move { dispatcher.handle_as(&args, observer, caller).await });
                held
            }
        };
        let observer = held.observer();
        let observed = rounds.observe(&held, &context.ct);
        let step = match context.meta.get_progress_token() {
            None => observed.await,
            Some(token) => with_progress(observed, &observer, &context, token).await,
        };
        match step {
            None => Err(cancelled()),
            Some(Step::Done(response)) => Ok(self.finish(response, &context, &owner)),
            Some(Step::Ask(input)) => Ok(CallToolResponse::InputRequired(input)),
        }
    }
}

impl VerbgateServer {
    /// The answer to a finished call: a task when the client declared the
    /// tasks extension and ops started jobs (its record durable first),
    /// else the envelope. A task record that cannot be written leaves the
    /// envelope, whose job ids `job.wait` follows.
    fn finish(
        &self,
        response: Response,
        context: &RequestContext<RoleServer>,
        owner: &str,
    ) -> CallToolResponse {
        let wants_tasks = context.client_capabilities().is_some_and(|c| c.supports_tasks());
        if let (false, true, Some(tasks)) = (response.is_error, wants_tasks, &self.eras.tasks) {
            match tasks.create(owner, &response.body) {
                Ok(Some(task)) => return CallToolResponse::Task(task),
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(error = %format!("{e:#}"), "cannot record a task; answering the job ids")
                }
            }
        }
        complete(response).into()
    }

    /// The task records, or why there are none.
    fn tasks(&self) -> Result<&Tasks, McpError> {
        self.eras
            .tasks
            .as_ref()
            .ok_or_else(|| McpError::internal_error("this verbgate keeps no tasks (its job store is unavailable); follow jobs with job.wait", None))
    }
}

/// The error a cancelled call ends with.
fn cancelled() -> McpError {
    McpError::internal_error(
        "the request was cancelled by the client; work it started continues",
        None,
    )
}

/// The tool result for a finished request.
fn complete(response: Response) -> CallToolResult {
    if response.is_tool_error() {
        CallToolResult::structured_error(response.body)
    } else {
        CallToolResult::structured(response.body)
    }
}

/// How often a long request reports progress.
pub const PROGRESS_INTERVAL: Duration = Duration::from_secs(1);

/// Drive `work`, sending `notifications/progress` every
/// [`PROGRESS_INTERVAL`] until it finishes: progress is the number of ops
/// done, total the number of ops. A request that finishes within the first
/// interval sends nothing.
async fn with_progress<T, F: std::future::Future<Output = T>>(
    work: F,
    observer: &Observer,
    context: &RequestContext<RoleServer>,
    token: ProgressToken,
) -> T {
    tokio::pin!(work);
    let started = Instant::now();
    let mut ticker = tokio::time::interval_at(
        tokio::time::Instant::now() + PROGRESS_INTERVAL,
        PROGRESS_INTERVAL,
    );
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
    let eras = Arc::new(Eras::new(&dispatcher, None)?);
    let server = VerbgateServer::new(dispatcher, Transport::Stdio, eras);
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
        let label = crate::mcp::client::label(&info);
        assert!(
            label.len() < 2 * crate::mcp::client::CLIENT_TEXT_BYTES + 64,
            "{} bytes",
            label.len()
        );
        assert!(
            label.starts_with("\\u{1b}[2Jnnn")
                && label.contains("bytes not shown)/")
                && label.ends_with("/1\\u{202e}0"),
            "{label}"
        );
        assert_eq!(
            crate::mcp::client::label(&Implementation::new("claude-code", "2.0.1")),
            "claude-code/2.0.1"
        );
    }
}
