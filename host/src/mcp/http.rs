//! The MCP transport over Streamable HTTP (`verbgate serve --http ADDR`),
//! beside stdio. rmcp's own server transport does the protocol: sessions
//! (one [`VerbgateServer`] per client over the shared dispatcher), SSE
//! streams, `Host`/`Origin` validation against DNS rebinding, the request
//! body bound (413) and idle-session expiry. This module adds what rmcp
//! leaves to the application: the listener, bearer-token authentication
//! (401 with `WWW-Authenticate: Bearer`), and the caller identity each
//! request carries into dispatch.
//!
//! Like stdio, it only speaks the protocol: every call goes to
//! [`crate::dispatch`].

use anyhow::{bail, Context, Result};
use bytes::Bytes;
use http::{header, Request, Response, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use super::VerbgateServer;
use crate::dispatch::{Caller, Dispatcher, Transport};
use crate::tokens::TokenStore;

/// The one path the server answers on.
pub const MCP_PATH: &str = "/mcp";

/// Default bound on a request body (rmcp answers 413 past it).
pub const DEFAULT_MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// Default time a session may stay idle before it is closed.
pub const DEFAULT_SESSION_IDLE: Duration = Duration::from_secs(30 * 60);

/// How long a client may take to send its request headers (a slow-loris
/// client holds a connection, nothing more).
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// Host names a loopback server answers to by default.
const LOOPBACK_HOSTS: &[&str] = &["localhost", "127.0.0.1", "::1"];

/// Browser origins a loopback server accepts by default (any port).
const LOOPBACK_ORIGINS: &[&str] =
    &["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*", "https://localhost:*", "https://127.0.0.1:*", "https://[::1]:*"];

/// How the HTTP transport runs.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Extra `Host` values (name or `name:port`) besides the loopback names.
    pub allowed_hosts: Vec<String>,
    /// Extra `Origin` values (`scheme://host[:port|:*]`) besides loopback.
    pub allowed_origins: Vec<String>,
    /// Largest request body, in bytes.
    pub max_body_bytes: usize,
    /// Idle time after which a session is closed.
    pub session_idle: Duration,
    /// The token store; `None` serves without authentication (loopback
    /// only, and only while no token exists: see [`check_exposure`]).
    pub tokens: Option<TokenStore>,
}

/// Refuse to expose an unauthenticated server beyond this machine.
pub fn check_exposure(addr: &SocketAddr, tokens_configured: bool, token_file: &std::path::Path) -> Result<()> {
    if !addr.ip().is_loopback() && !tokens_configured {
        bail!(
            "refusing to serve on {addr} without authentication: anyone who can reach that address could run verbs. \
Create a token first (`verbgate token add NAME`, stored in {}), or bind a loopback address such as 127.0.0.1:8765",
            token_file.display()
        );
    }
    Ok(())
}

type Body = BoxBody<Bytes, Infallible>;

/// The header carrying a session id (MCP's Streamable HTTP transport).
const SESSION_HEADER: &str = "mcp-session-id";

/// Past this many remembered session owners, forget those of sessions that
/// have ended (expired or deleted).
const OWNERS_PRUNE_AT: usize = 1024;

/// The front of the server: path and token checks, then rmcp.
#[derive(Clone)]
struct Gate {
    mcp: StreamableHttpService<VerbgateServer, LocalSessionManager>,
    sessions: Arc<LocalSessionManager>,
    tokens: Option<TokenStore>,
    /// Which token opened each session: a session answers only to it, so
    /// another token that learns a session id can neither read its
    /// stream nor delete it.
    owners: Arc<std::sync::Mutex<std::collections::HashMap<String, String>>>,
}

impl Gate {
    async fn handle(&self, mut req: Request<Incoming>) -> Response<Body> {
        if req.uri().path() != MCP_PATH {
            return plain(StatusCode::NOT_FOUND, format!("not found; the MCP endpoint is {MCP_PATH}"));
        }
        let caller = match &self.tokens {
            None => Caller::new("local", None, Transport::Http),
            Some(store) => match self.authenticate(store, &req) {
                Ok(caller) => caller,
                Err(refusal) => return refusal.response(),
            },
        };
        let session = req.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok()).map(str::to_string);
        if let (Some(id), Some(_)) = (&session, &self.tokens) {
            let owner = self.owners.lock().unwrap_or_else(|e| e.into_inner()).get(id).cloned();
            if owner.is_some_and(|o| o != caller.name) {
                // The same answer as for a session that does not exist.
                return plain(StatusCode::NOT_FOUND, "Not Found: Session not found".into());
            }
        }
        let name = caller.name.clone();
        req.extensions_mut().insert(Arc::new(caller));
        let resp = self.mcp.handle(req).await;
        if let (None, Some(_), Some(new)) = (&session, &self.tokens, resp.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok())) {
            self.remember(new.to_string(), name).await;
        }
        resp
    }

    async fn remember(&self, session: String, token: String) {
        let prune = {
            let mut owners = self.owners.lock().unwrap_or_else(|e| e.into_inner());
            owners.insert(session, token);
            owners.len() > OWNERS_PRUNE_AT
        };
        if prune {
            let live: std::collections::HashSet<String> = self.sessions.sessions.read().await.keys().map(|k| k.to_string()).collect();
            self.owners.lock().unwrap_or_else(|e| e.into_inner()).retain(|id, _| live.contains(id));
        }
    }

    /// The caller named by the request's bearer token, re-reading the
    /// token file so a revocation takes effect on the next request.
    fn authenticate(&self, store: &TokenStore, req: &Request<Incoming>) -> Result<Caller, Refusal> {
        let presented = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
            .map(str::trim);
        let presented = presented.ok_or(Refusal::Missing)?;
        match store.authenticate(presented) {
            Ok(Some(caller)) => Ok(caller),
            Ok(None) => Err(Refusal::Invalid),
            Err(e) => {
                tracing::error!(error = %format!("{e:#}"), "cannot use the token file; refusing every request until it is fixed");
                Err(Refusal::Unreadable(unusable_token_file(&e)))
            }
        }
    }
}

/// What a client is told when the token file cannot be trusted or read:
/// the problem (its mode or owner) and the fix, naming the file by its
/// name in the server's home — the full path goes to the server's log
/// only, since whoever is told may not be anyone the server knows.
fn unusable_token_file(e: &anyhow::Error) -> String {
    match e.downcast_ref::<crate::private_files::InsecureFile>() {
        Some(f) => format!(
            "the server's token file ({} in its VERBGATE_HOME) {}: verbgate lets no one in while another user could have written it. \
The server's owner must fix it: `chmod 600 $VERBGATE_HOME/{0}` (and `chown` it to themselves if another user owns it), then look for tokens they did not make with `verbgate token list` and revoke them",
            crate::tokens::TOKENS_FILE,
            f.problem
        ),
        None => format!("the server cannot read its token file ({} in its VERBGATE_HOME); its log says why", crate::tokens::TOKENS_FILE),
    }
}

/// Why a request was not let through.
enum Refusal {
    Missing,
    Invalid,
    /// The token file cannot be used; the text says why and what to do.
    Unreadable(String),
}

impl Refusal {
    fn response(self) -> Response<Body> {
        match self {
            Refusal::Missing => unauthorized("missing bearer token: send `Authorization: Bearer <token>` (make one with `verbgate token add NAME`)"),
            Refusal::Invalid => unauthorized("invalid or revoked token"),
            Refusal::Unreadable(why) => plain(StatusCode::INTERNAL_SERVER_ERROR, why),
        }
    }
}

fn plain(status: StatusCode, text: String) -> Response<Body> {
    let mut resp = Response::new(Full::new(Bytes::from(text)).boxed());
    *resp.status_mut() = status;
    resp.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static("text/plain; charset=utf-8"));
    resp
}

fn unauthorized(text: &str) -> Response<Body> {
    let mut resp = plain(StatusCode::UNAUTHORIZED, text.to_string());
    resp.headers_mut().insert(header::WWW_AUTHENTICATE, header::HeaderValue::from_static("Bearer realm=\"verbgate\""));
    resp
}

/// Serve MCP over Streamable HTTP on `listener` until the process ends.
/// Each client session gets its own handler over the shared dispatcher.
pub async fn serve_http(dispatcher: Arc<Dispatcher>, listener: tokio::net::TcpListener, opts: HttpOptions) -> Result<()> {
    let hosts: Vec<String> = LOOPBACK_HOSTS.iter().map(|h| h.to_string()).chain(opts.allowed_hosts.iter().cloned()).collect();
    let origins: Vec<String> = LOOPBACK_ORIGINS.iter().map(|o| o.to_string()).chain(opts.allowed_origins.iter().cloned()).collect();
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts)
        .with_allowed_origins(origins)
        .enforce_origin_validation()
        .with_max_request_body_bytes(opts.max_body_bytes);
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = Some(opts.session_idle);
    let sessions = Arc::new(sessions);
    let mcp = StreamableHttpService::new(move || Ok(VerbgateServer::new(dispatcher.clone(), Transport::Http)), sessions.clone(), config);
    let gate = Gate { mcp, sessions, tokens: opts.tokens, owners: Default::default() };
    loop {
        let (stream, _peer) = match listener.accept().await {
            Ok(s) => s,
            Err(e) => {
                // Out of descriptors and the like: wait, never die.
                tracing::warn!(error = %e, "cannot accept a connection");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let gate = gate.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| {
                let gate = gate.clone();
                async move { Ok::<_, Infallible>(gate.handle(req).await) }
            });
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_READ_TIMEOUT)
                .serve_connection(TokioIo::new(stream), service);
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "HTTP connection ended with an error");
            }
        });
    }
}

/// Bind `addr` (port 0 picks a free one).
pub async fn bind(addr: SocketAddr) -> Result<tokio::net::TcpListener> {
    tokio::net::TcpListener::bind(addr).await.with_context(|| format!("cannot listen on {addr}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exposure_needs_tokens_beyond_loopback() {
        let file = std::path::Path::new("/home/x/tokens.json");
        assert!(check_exposure(&"127.0.0.1:8765".parse().unwrap(), false, file).is_ok());
        assert!(check_exposure(&"[::1]:8765".parse().unwrap(), false, file).is_ok());
        let err = check_exposure(&"0.0.0.0:8765".parse().unwrap(), false, file).unwrap_err().to_string();
        assert!(err.contains("verbgate token add"), "{err}");
        assert!(check_exposure(&"0.0.0.0:8765".parse().unwrap(), true, file).is_ok());
    }
}
