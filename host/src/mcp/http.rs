//! The MCP transport over Streamable HTTP (`verbgate serve --http ADDR`),
//! beside stdio. rmcp's own server transport does the protocol: sessions
//! (one [`VerbgateServer`] per client over the shared dispatcher), SSE
//! streams, `Host`/`Origin` validation against DNS rebinding and idle-session
//! expiry. This module adds what rmcp leaves to the application: the
//! listener, bearer-token authentication (401 with `WWW-Authenticate:
//! Bearer`), the caller identity each request carries into dispatch, and
//! the bounds on what a client can make the server hold:
//!
//! - connections: at most `--max-connections` (and half the open-file
//!   limit); past it a new connection pushes out the oldest one that is
//!   not serving a request, preferring one that never showed a valid
//!   token, so sockets that say nothing cannot keep a token holder out;
//!   a connection has [`HEADER_READ_TIMEOUT`] to send each request head;
//! - request bodies: at most `--max-body-bytes`, within
//!   `--body-timeout-secs`, read before anything else happens;
//! - sessions: at most `--max-sessions` in all and
//!   `--max-sessions-per-token` for one token (429/503 past them);
//! - revocation: a session belongs to the token that opened it — the
//!   token's identity (its digest), not its name — and when that token
//!   is no longer in the token file its sessions are closed and its open
//!   responses (event streams, in-flight calls) end, within
//!   [`REVOCATION_SWEEP`].
//!
//! Like stdio, it only speaks the protocol: every call goes to
//! [`crate::dispatch`].

use anyhow::{bail, Context, Result};
use bytes::Bytes;
use http::{header, Request, Response, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::body::{Frame, Incoming, SizeHint};
use hyper_util::rt::{TokioIo, TokioTimer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::SessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

use super::scope::GrantBook;
use super::{Eras, TokenIdentity, VerbgateServer};
use crate::dispatch::{Caller, Dispatcher, Transport};
use crate::json::sha256_hex;
use crate::tokens::{constant_time_eq, TokenStore};

/// The one path the server answers on.
pub const MCP_PATH: &str = "/mcp";

/// Default bound on a request body (413 past it).
pub const DEFAULT_MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// Default time a session may stay idle before it is closed.
pub const DEFAULT_SESSION_IDLE: Duration = Duration::from_secs(30 * 60);

/// Default bound on open connections (also at most half the open-file
/// limit, see [`connection_cap`]).
pub const DEFAULT_MAX_CONNECTIONS: usize = 512;

/// Default bound on live sessions, all tokens together (a session costs
/// about 130 KiB, BENCHMARKS.md: 512 of them about 65 MiB).
pub const DEFAULT_MAX_SESSIONS: usize = 512;

/// Default bound on live sessions one token may hold.
pub const DEFAULT_MAX_SESSIONS_PER_TOKEN: usize = 128;

/// Default time a client has to send a request's whole body once its
/// head has arrived.
pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a client may take to send a request head — the first one and
/// each one after on a kept-alive connection (a slow-loris client holds a
/// connection this long, nothing more).
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// How often the server looks for sessions and responses of tokens no
/// longer in the token file (a request with such a token is refused at
/// once; this bounds how long its open streams outlive it).
pub const REVOCATION_SWEEP: Duration = Duration::from_secs(1);

/// The caller name of the token a server makes for itself.
pub const GENERATED_TOKEN_NAME: &str = "generated";

/// Host names a loopback server answers to by default.
const LOOPBACK_HOSTS: &[&str] = &["localhost", "127.0.0.1", "::1"];

/// Browser origins a loopback server accepts by default (any port).
const LOOPBACK_ORIGINS: &[&str] = &[
    "http://localhost:*",
    "http://127.0.0.1:*",
    "http://[::1]:*",
    "https://localhost:*",
    "https://127.0.0.1:*",
    "https://[::1]:*",
];

/// How the HTTP transport runs.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Extra `Host` values (name or `name:port`) besides the loopback names.
    pub allowed_hosts: Vec<String>,
    /// Extra `Origin` values (`scheme://host[:port|:*]`) besides loopback.
    pub allowed_origins: Vec<String>,
    /// Largest request body, in bytes.
    pub max_body_bytes: usize,
    /// Time a client has to send a request's body.
    pub body_timeout: Duration,
    /// Idle time after which a session is closed.
    pub session_idle: Duration,
    /// Most connections open at once (before [`connection_cap`]).
    pub max_connections: usize,
    /// Most live sessions, all tokens together.
    pub max_sessions: usize,
    /// Most live sessions of one token.
    pub max_sessions_per_token: usize,
    /// Who is let in.
    pub auth: Auth,
    /// Serve the conformance suite's fixture tools too (testing only).
    pub conformance_fixtures: bool,
}

/// Who the HTTP transport lets in.
#[derive(Debug, Clone)]
pub enum Auth {
    /// `--no-auth`: everyone who can reach the port (loopback only, see
    /// [`check_exposure`]).
    Nobody,
    /// Bearer tokens: those in the token file (re-read at every request),
    /// when the file had none at start (and no `[oauth]`), one the server
    /// made for its own lifetime, and with `[oauth]`, JWT access tokens of
    /// the authorization servers it names.
    Tokens {
        /// The token file.
        store: TokenStore,
        /// The hex SHA-256 of the token the server made, if it made one.
        generated: Option<String>,
        /// The OAuth resource server, with `[oauth]`.
        oauth: Option<Arc<crate::oauth::ResourceServer>>,
    },
}

/// Refuse to serve without authentication where that is not safe: beyond
/// loopback at all, and `--no-auth` beside configured tokens (which would
/// silently stop asking for them).
pub fn check_exposure(
    addr: &SocketAddr,
    tokens_configured: bool,
    no_auth: bool,
    token_file: &std::path::Path,
) -> Result<()> {
    if no_auth && !addr.ip().is_loopback() {
        bail!(
            "refusing --no-auth on {addr}: only a loopback address (such as 127.0.0.1:8765) may be served without authentication. \
Drop --no-auth and create a token (`verbgate token add NAME`, stored in {}), or bind loopback",
            token_file.display()
        );
    }
    if no_auth && tokens_configured {
        bail!(
            "refusing --no-auth: {} holds tokens (or verbgate.toml has [oauth]), and --no-auth would let in everyone without them. \
Drop --no-auth to require those tokens, or remove them (`verbgate token list`, then `verbgate token revoke NAME`, and [oauth]) to serve loopback without any",
            token_file.display()
        );
    }
    if !addr.ip().is_loopback() && !tokens_configured {
        bail!(
            "refusing to serve on {addr} without authentication: anyone who can reach that address could run verbs. \
Create a token first (`verbgate token add NAME`, stored in {}), or bind a loopback address such as 127.0.0.1:8765",
            token_file.display()
        );
    }
    Ok(())
}

/// The connection bound actually used: `requested`, but at most half the
/// process's open-file limit (the other half stays for what verbs run:
/// pipes, files, the audit database) — but never below 8 for that.
pub fn connection_cap(requested: usize) -> usize {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes into the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0
        || lim.rlim_cur == libc::RLIM_INFINITY
    {
        return requested;
    }
    let half = usize::try_from(lim.rlim_cur / 2).unwrap_or(usize::MAX);
    requested.min(half.max(8))
}

type Body = BoxBody<Bytes, Infallible>;

/// A token's identity: the hex digest of its text (`""` when nobody is
/// asked for a token).
type Identity = Arc<str>;

/// What an OAuth caller's identity starts with: it is the digest of its
/// issuer and subject, not of a token in the token file, so the
/// revocation sweep leaves it alone (an expired or revoked access token
/// is refused at its next request by its own checks).
const OAUTH_IDENTITY: &str = "oauth:";

/// The header carrying a session id (MCP's Streamable HTTP transport).
const SESSION_HEADER: &str = "mcp-session-id";

/// What the gate remembers about sessions and tokens.
#[derive(Default)]
struct Owners {
    /// Which token opened each session: a session answers only to it, so
    /// another token that learns a session id (or a new token given an old
    /// one's name) can neither use its stream nor delete it.
    sessions: HashMap<String, Identity>,
    /// Sessions being opened right now, per token: counted against the
    /// caps until they are open or refused.
    opening: HashMap<Identity, usize>,
    /// One token per identity that has had a response: cancelled, ending
    /// every response of that token still streaming, when it is revoked.
    revoked: HashMap<Identity, CancellationToken>,
}

/// What every connection's handler shares.
struct Shared {
    /// Where refused credentials are recorded (the audit trail).
    dispatcher: Arc<Dispatcher>,
    /// Refused credentials this minute: when it began, how many.
    refusals: Mutex<(std::time::Instant, u32)>,
    /// Held consent rounds and 2026-07-28 grants (revoked with the token).
    eras: Arc<Eras>,
    sessions: Arc<LocalSessionManager>,
    auth: Auth,
    max_body_bytes: usize,
    body_timeout: Duration,
    session_idle: Duration,
    max_sessions: usize,
    max_sessions_per_token: usize,
    owners: Mutex<Owners>,
}

impl Shared {
    fn owners(&self) -> std::sync::MutexGuard<'_, Owners> {
        self.owners.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Close the sessions and end the responses of tokens that are no
    /// longer in the token file. A token file that cannot be used lets
    /// nobody in (as at every request), so then every token's sessions and
    /// responses end.
    async fn close_revoked(&self) {
        let Auth::Tokens { store, generated, .. } = &self.auth else { return };
        // Only tokens seen before the file is read: one added since (and
        // already used) is valid though this reading may not show it. A
        // revoked token never comes back: a new one has a new digest.
        let seen: HashSet<Identity> = {
            let o = self.owners();
            o.sessions
                .values()
                .cloned()
                .chain(o.revoked.keys().cloned())
                .filter(|who| !who.starts_with(OAUTH_IDENTITY))
                .collect()
        };
        if seen.is_empty() {
            return;
        }
        let mut valid: HashSet<String> = match store.list() {
            Ok(tokens) => tokens.into_iter().map(|t| t.sha256).collect(),
            Err(e) => {
                tracing::warn!(error = %format!("{e:#}"), "cannot use the token file; closing every session");
                return self.close_where(|_| true).await;
            }
        };
        valid.extend(generated.iter().cloned());
        self.close_where(|who| seen.contains(who) && !valid.contains(who)).await;
    }

    async fn close_where(&self, revoked: impl Fn(&str) -> bool) {
        if let Some(book) = &self.eras.book {
            book.forget(&revoked);
        }
        let dead: Vec<String> = {
            let mut o = self.owners();
            o.revoked.retain(|who, ending| {
                if revoked(who) {
                    ending.cancel();
                    false
                } else {
                    true
                }
            });
            let dead: Vec<String> = o
                .sessions
                .iter()
                .filter(|(_, who)| revoked(who))
                .map(|(id, _)| id.clone())
                .collect();
            for id in &dead {
                o.sessions.remove(id);
            }
            dead
        };
        for id in dead {
            tracing::info!(session = %id, "closing a session whose token was revoked");
            if let Err(e) = self.sessions.close_session(&Arc::from(id.as_str())).await {
                tracing::warn!(session = %id, error = %e, "cannot close a revoked token's session");
            }
        }
    }
}

/// A session being opened, counted against the caps until
/// [`Opening::opened`] records it (or it is dropped: refused or abandoned).
struct Opening {
    shared: Arc<Shared>,
    who: Identity,
    done: bool,
}

impl Opening {
    fn opened(mut self, session: Option<String>) {
        let mut o = self.shared.owners();
        release(&mut o, &self.who);
        if let Some(id) = session {
            o.sessions.insert(id, self.who.clone());
        }
        self.done = true;
    }
}

impl Drop for Opening {
    fn drop(&mut self) {
        if !self.done {
            release(&mut self.shared.owners(), &self.who);
        }
    }
}

fn release(o: &mut Owners, who: &Identity) {
    if let Some(n) = o.opening.get_mut(who) {
        *n -= 1;
        if *n == 0 {
            o.opening.remove(who);
        }
    }
}

/// The front of the server: path, token, ownership and body checks, then
/// rmcp.
#[derive(Clone)]
struct Gate {
    mcp: StreamableHttpService<VerbgateServer, LocalSessionManager>,
    shared: Arc<Shared>,
}

impl Gate {
    /// Answer one request; the token's cancellation, when it has one, ends
    /// the response's body should the token be revoked.
    async fn handle(
        &self,
        req: Request<Incoming>,
        conn: &ConnState,
    ) -> (Response<Body>, Option<Ending>) {
        if let Some(doc) = self.resource_metadata(&req) {
            return (doc, None);
        }
        if req.uri().path() != MCP_PATH {
            return (
                plain(StatusCode::NOT_FOUND, format!("not found; the MCP endpoint is {MCP_PATH}")),
                None,
            );
        }
        let (caller, who, expires) = match self.authenticate(&req).await {
            Ok(found) => found,
            Err(refusal) => {
                self.record_refusal(&refusal);
                return (closing(refusal.response(self.oauth())), None);
            }
        };
        conn.authenticated.store(true, Ordering::Relaxed);
        let session =
            req.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok()).map(str::to_string);
        // A static token's responses end when it is revoked; an access
        // token's when it expires (nothing revokes it here).
        let ending: Option<Ending> = match expires {
            Some(exp) => Some(Box::pin(tokio::time::sleep(until(exp)))),
            None => who.as_ref().map(|who| {
                let t = self.shared.owners().revoked.entry(who.clone()).or_default().clone();
                Box::pin(t.cancelled_owned()) as Ending
            }),
        };
        if let (Some(id), Some(who)) = (&session, &who) {
            if self.shared.owners().sessions.get(id) != Some(who) {
                // The same answer as for a session that does not exist.
                return (plain(StatusCode::NOT_FOUND, "Not Found: Session not found".into()), None);
            }
        }
        let is_post = req.method() == http::Method::POST;
        let (parts, body) = req.into_parts();
        let body = match self.read_body(body).await {
            Ok(b) => b,
            Err(refusal) => return (closing(refusal), None),
        };
        let mut opening = None;
        if session.is_none() && is_post {
            if let Some(id) = initialize_id(&body) {
                match self
                    .admit(who.clone().unwrap_or_else(|| Arc::from("")), &caller.name, id)
                    .await
                {
                    Ok(o) => opening = Some(o),
                    Err(refusal) => return (refusal, None),
                }
            }
        }
        let is_delete = parts.method == http::Method::DELETE;
        let mut req = Request::from_parts(parts, Full::new(body));
        req.extensions_mut().insert(Arc::new(caller));
        req.extensions_mut().insert(TokenIdentity(who.clone().unwrap_or_else(|| Arc::from(""))));
        let mut resp = self.mcp.handle(req).await;
        if let Some(o) = opening {
            o.opened(
                resp.headers()
                    .get(SESSION_HEADER)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_string),
            );
        }
        if is_delete && resp.status() == StatusCode::ACCEPTED {
            // rmcp answers a closed session with 202, which clients read as
            // a failure (the Python SDK logs "Session termination failed:
            // 202"): the session is gone, and nothing follows.
            *resp.status_mut() = StatusCode::NO_CONTENT;
            resp.headers_mut().remove(header::CONTENT_TYPE);
            resp.headers_mut().remove(header::CONTENT_LENGTH);
            *resp.body_mut() = Full::new(Bytes::new()).boxed();
        }
        (resp, ending)
    }

    /// The whole request body, bounded in size and in time: a client that
    /// sends its head and then its body slowly holds a connection and a
    /// task for `--body-timeout-secs`, no longer.
    async fn read_body(&self, body: Incoming) -> Result<Bytes, Response<Body>> {
        let s = &self.shared;
        match tokio::time::timeout(s.body_timeout, Limited::new(body, s.max_body_bytes).collect()).await {
            Err(_) => Err(plain(
                StatusCode::REQUEST_TIMEOUT,
                format!(
                    "the request body did not arrive within {} s (--body-timeout-secs): send the whole body at once, or ask the operator to raise --body-timeout-secs",
                    s.body_timeout.as_secs()
                ),
            )),
            Ok(Err(e)) if e.downcast_ref::<LengthLimitError>().is_some() => Err(plain(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("Payload Too Large: request body exceeds {} bytes (--max-body-bytes)", s.max_body_bytes),
            )),
            Ok(Err(e)) => Err(plain(StatusCode::BAD_REQUEST, format!("cannot read the request body: {e}"))),
            Ok(Ok(collected)) => Ok(collected.to_bytes()),
        }
    }

    /// Count a new session against the caps, or refuse it: 429 when this
    /// token holds its share, 503 when the server holds its most.
    async fn admit(
        &self,
        who: Identity,
        name: &str,
        request_id: Value,
    ) -> Result<Opening, Response<Body>> {
        let s = &self.shared;
        // Forget the owners of sessions that have ended. Only of sessions
        // recorded before rmcp's list is read: one opened meanwhile is
        // live though the list does not show it yet.
        let recorded: Vec<String> = s.owners().sessions.keys().cloned().collect();
        let live: HashSet<String> =
            s.sessions.sessions.read().await.keys().map(|k| k.to_string()).collect();
        let mut o = s.owners();
        for id in recorded.iter().filter(|id| !live.contains(*id)) {
            o.sessions.remove(id);
        }
        // rmcp's own count: a session opened but not yet recorded here
        // (or abandoned while opening) still costs its memory.
        let open = live.len() + o.opening.values().sum::<usize>();
        let idle = s.session_idle.as_secs();
        if open >= s.max_sessions {
            return Err(too_many(
                StatusCode::SERVICE_UNAVAILABLE,
                request_id,
                format!(
                    "the server has {open} sessions open, the most it keeps (--max-sessions {}): close one you no longer use (HTTP DELETE with its Mcp-Session-Id), \
wait until one has been idle for --session-idle-secs ({idle} s), or ask the operator to raise --max-sessions",
                    s.max_sessions
                ),
                json!({"cap": s.max_sessions, "open": open, "flag": "--max-sessions"}),
            ));
        }
        if matches!(s.auth, Auth::Tokens { .. }) {
            let mine = o.sessions.values().filter(|w| **w == who).count()
                + o.opening.get(&who).copied().unwrap_or(0);
            if mine >= s.max_sessions_per_token {
                return Err(too_many(
                    StatusCode::TOO_MANY_REQUESTS,
                    request_id,
                    format!(
                        "the token `{name}` has {mine} sessions open, the most one token may hold (--max-sessions-per-token {}): \
close one you no longer use (HTTP DELETE with its Mcp-Session-Id) or wait until one has been idle for --session-idle-secs ({idle} s)",
                        s.max_sessions_per_token
                    ),
                    json!({"cap": s.max_sessions_per_token, "open": mine, "flag": "--max-sessions-per-token"}),
                ));
            }
        }
        *o.opening.entry(who.clone()).or_default() += 1;
        Ok(Opening { shared: s.clone(), who, done: false })
    }

    /// The OAuth resource server, if the server is one.
    fn oauth(&self) -> Option<&crate::oauth::ResourceServer> {
        match &self.shared.auth {
            Auth::Tokens { oauth: Some(rs), .. } => Some(rs),
            _ => None,
        }
    }

    /// The protected-resource metadata (RFC 9728), for a GET of one of its
    /// well-known paths on a server with `[oauth]`: public, as discovery
    /// needs it before any token.
    fn resource_metadata(&self, req: &Request<Incoming>) -> Option<Response<Body>> {
        use crate::oauth::metadata;
        let rs = self.oauth()?;
        let path = req.uri().path();
        if !metadata::paths(rs.settings()).iter().any(|p| p == path) {
            return None;
        }
        if req.method() != http::Method::GET && req.method() != http::Method::HEAD {
            return Some(plain(StatusCode::METHOD_NOT_ALLOWED, format!("{path} answers GET")));
        }
        let body = metadata::document(rs.settings()).to_string();
        let mut resp = Response::new(Full::new(Bytes::from(body)).boxed());
        let h = resp.headers_mut();
        h.insert(header::CONTENT_TYPE, header::HeaderValue::from_static("application/json"));
        // Browser-based clients read it from another origin; it is public.
        h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, header::HeaderValue::from_static("*"));
        Some(resp)
    }

    /// Put a refused presented credential in the audit trail: who it
    /// claimed to be and why it was refused, never the token.
    ///
    /// The caller column is always `unauthenticated` (what a refused token
    /// claims is in the details, so no one can write rows under a real
    /// caller's name), and at most [`REFUSALS_RECORDED`] a minute are
    /// written: past it they are counted in the log, so a flood of bad
    /// tokens cannot push the real history out of the trail's retention.
    fn record_refusal(&self, refusal: &Refusal) {
        let (details, code) = match refusal {
            Refusal::Invalid => (
                json!({"credential": "static_token", "reason": "unknown_or_revoked"}),
                crate::error::ErrorCode::Unauthenticated,
            ),
            Refusal::OAuth { rejection, subject, issuer } => (
                json!({"credential": "oauth", "reason": rejection.reason(), "claimed_issuer": issuer, "claimed_subject": subject}),
                match rejection {
                    crate::oauth::Rejection::InsufficientScope => {
                        crate::error::ErrorCode::InsufficientScope
                    }
                    _ => crate::error::ErrorCode::Unauthenticated,
                },
            ),
            Refusal::Missing | Refusal::Unreadable(_) => return,
        };
        {
            let mut window = self.shared.refusals.lock().unwrap_or_else(|e| e.into_inner());
            if window.0.elapsed() >= Duration::from_secs(60) {
                if window.1 > REFUSALS_RECORDED {
                    tracing::warn!(
                        unrecorded = window.1 - REFUSALS_RECORDED,
                        "refused credentials past the audit trail's {REFUSALS_RECORDED} a minute were not recorded"
                    );
                }
                *window = (std::time::Instant::now(), 0);
            }
            window.1 += 1;
            if window.1 > REFUSALS_RECORDED {
                return;
            }
        }
        let resource = self.oauth().map_or("", |rs| rs.settings().resource.as_str());
        let message = match refusal {
            Refusal::OAuth { rejection, .. } => rejection.describe(resource),
            _ => "invalid or revoked token".to_string(),
        };
        let caller = Caller::new("unauthenticated", None, Transport::Http);
        self.shared.dispatcher.record_refused_credentials(
            &caller,
            &details,
            &crate::error::OpError::new(code, message),
        );
    }

    /// The caller named by the request's bearer token and the token's
    /// identity, re-reading the token file so a revocation takes effect on
    /// the next request; with `[oauth]`, a JWT is checked as an access
    /// token instead.
    async fn authenticate(&self, req: &Request<Incoming>) -> Result<Authenticated, Refusal> {
        let Auth::Tokens { store, generated, oauth } = &self.shared.auth else {
            return Ok((Caller::new("local", None, Transport::Http), None, None));
        };
        let presented = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
            .map(str::trim);
        let presented = presented.ok_or(Refusal::Missing)?;
        // A static token is `vgt_` and hex; a JWT has three dotted parts.
        if let (Some(rs), false) = (oauth, presented.starts_with("vgt_")) {
            if presented.contains('.') {
                return oauth_caller(rs, presented).await;
            }
        }
        // The file first, even for the server's own token: one that others
        // could have written lets nobody in.
        match store.find(presented) {
            Ok(Some(t)) => {
                let who = Identity::from(t.sha256.as_str());
                Ok((token_caller(&t), Some(who), None))
            }
            Ok(None) => match generated {
                Some(digest)
                    if constant_time_eq(
                        sha256_hex(presented.as_bytes()).as_bytes(),
                        digest.as_bytes(),
                    ) =>
                {
                    Ok((
                        Caller::new(GENERATED_TOKEN_NAME, None, Transport::Http),
                        Some(Identity::from(digest.as_str())),
                        None,
                    ))
                }
                _ => Err(Refusal::Invalid),
            },
            Err(e) => {
                tracing::error!(error = %format!("{e:#}"), "cannot use the token file; refusing every request until it is fixed");
                Err(Refusal::Unreadable(unusable_token_file(&e)))
            }
        }
    }
}

/// The JSON-RPC id of an `initialize` request (`null` when it has none),
/// or `None` for any other body: only an `initialize` opens a session.
fn initialize_id(body: &[u8]) -> Option<Value> {
    #[derive(serde::Deserialize)]
    struct Head {
        method: Option<String>,
        id: Option<Value>,
    }
    let head: Head = serde_json::from_slice(body).ok()?;
    (head.method.as_deref() == Some("initialize")).then(|| head.id.unwrap_or(Value::Null))
}

/// A refused `initialize`: the status, and a JSON-RPC error naming the
/// cap, its flag and what to do.
fn too_many(status: StatusCode, id: Value, message: String, data: Value) -> Response<Body> {
    let body = json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32000, "message": message, "data": data}});
    let mut resp = Response::new(Full::new(Bytes::from(body.to_string())).boxed());
    *resp.status_mut() = status;
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, header::HeaderValue::from_static("application/json"));
    resp
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

/// Who a request authenticated as: the caller, its identity (sessions,
/// revocation) and, for an access token, when it expires (s since epoch).
type Authenticated = (Caller, Option<Identity>, Option<u64>);

/// Most refused credentials recorded in the audit trail a minute.
const REFUSALS_RECORDED: u32 = 60;

/// What ends a response early: its static token's revocation, or its
/// access token's expiry (polled by the body itself: nothing outlives it).
type Ending = Pin<Box<dyn Future<Output = ()> + Send>>;

/// The time left until `exp` (seconds since the epoch).
fn until(exp: u64) -> Duration {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    Duration::from_secs(exp.saturating_sub(now))
}

/// Check an OAuth access token; the caller it speaks for, or why not.
async fn oauth_caller(
    rs: &crate::oauth::ResourceServer,
    token: &str,
) -> Result<Authenticated, Refusal> {
    match rs.verify(token).await {
        Ok(v) => {
            let digest = sha256_hex(format!("{}\0{}", v.issuer, v.subject).as_bytes());
            let claims =
                crate::dispatch::Claims { issuer: v.issuer, subject: v.subject, groups: v.groups };
            let caller = Caller::for_oauth(claims, &digest, v.allow, Transport::Http);
            let who = Identity::from(format!("{OAUTH_IDENTITY}{digest}").as_str());
            Ok((caller, Some(who), Some(v.expires)))
        }
        Err(rejection) => {
            // Who the refused token claimed to be, for the audit trail
            // only (unverified: never used to decide anything).
            let claims: Option<Value> = jsonwebtoken::dangerous::insecure_decode_claims(token).ok();
            let claim =
                |name: &str| {
                    claims.as_ref().and_then(|c| c.get(name)).and_then(Value::as_str).map(|s| {
                        s.chars().filter(|c| !c.is_control()).take(100).collect::<String>()
                    })
                };
            tracing::info!(reason = rejection.reason(), issuer = ?claim("iss"), "refused an OAuth access token");
            Err(Refusal::OAuth { subject: claim("sub"), issuer: claim("iss"), rejection })
        }
    }
}

/// Why a request was not let through.
enum Refusal {
    Missing,
    Invalid,
    /// The token file cannot be used; the text says why and what to do.
    Unreadable(String),
    /// An OAuth access token was refused.
    OAuth {
        rejection: crate::oauth::Rejection,
        /// Its unverified `sub` and `iss` (for the audit trail).
        subject: Option<String>,
        issuer: Option<String>,
    },
}

impl Refusal {
    fn response(self, oauth: Option<&crate::oauth::ResourceServer>) -> Response<Body> {
        use crate::oauth::{metadata, Rejection};
        let settings = oauth.map(|rs| rs.settings());
        let challenge = |error: Option<(&str, &str)>, scope: Option<&str>| match settings {
            Some(s) => metadata::challenge(s, error, scope),
            None => "Bearer realm=\"verbgate\"".to_string(),
        };
        match self {
            Refusal::Missing => unauthorized(
                "missing bearer token: send `Authorization: Bearer <token>` with the token the server printed when it started, or one made with `verbgate token add NAME`",
                &challenge(None, None),
            ),
            Refusal::Invalid => unauthorized(
                "invalid or revoked token",
                &challenge(Some(("invalid_token", "invalid or revoked token")), None),
            ),
            Refusal::Unreadable(why) => plain(StatusCode::INTERNAL_SERVER_ERROR, why),
            Refusal::OAuth { rejection, .. } => {
                let resource = settings.map_or("", |s| s.resource.as_str());
                let text = rejection.describe(resource);
                match &rejection {
                    Rejection::InsufficientScope => {
                        let scopes: Vec<&str> = settings
                            .map(|s| s.scopes.keys().map(String::as_str).collect())
                            .unwrap_or_default();
                        let mut resp = plain(
                            StatusCode::FORBIDDEN,
                            format!("{text}: ask for one of {}", scopes.join(", ")),
                        );
                        set_challenge(
                            &mut resp,
                            &challenge(Some(("insufficient_scope", &text)), Some(&scopes.join(" "))),
                        );
                        resp
                    }
                    Rejection::KeysUnavailable(_) => {
                        let mut resp = plain(StatusCode::SERVICE_UNAVAILABLE, text);
                        resp.headers_mut()
                            .insert(header::RETRY_AFTER, header::HeaderValue::from_static("5"));
                        resp
                    }
                    _ => unauthorized(&text, &challenge(Some(("invalid_token", &text)), None)),
                }
            }
        }
    }
}

fn set_challenge(resp: &mut Response<Body>, challenge: &str) {
    if let Ok(v) = header::HeaderValue::from_str(challenge) {
        resp.headers_mut().insert(header::WWW_AUTHENTICATE, v);
    }
}

fn plain(status: StatusCode, text: String) -> Response<Body> {
    let mut resp = Response::new(Full::new(Bytes::from(text)).boxed());
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    resp
}

fn unauthorized(text: &str, challenge: &str) -> Response<Body> {
    let mut resp = plain(StatusCode::UNAUTHORIZED, text.to_string());
    set_challenge(&mut resp, challenge);
    resp
}

/// `resp`, closing its connection after it: a client refused before its
/// body was read keeps no connection (and leaves no unread body behind).
fn closing(mut resp: Response<Body>) -> Response<Body> {
    resp.headers_mut().insert(header::CONNECTION, header::HeaderValue::from_static("close"));
    resp
}

/// `busy` past this mark: the connection was chosen to make room.
const EVICTED: usize = 1 << 40;

/// One open connection, as the connection bound sees it.
#[derive(Default)]
struct ConnState {
    /// Requests whose answer is not yet fully sent (an open event stream
    /// counts until it ends), or [`EVICTED`] and more.
    busy: AtomicUsize,
    /// Whether any request on it carried a valid token.
    authenticated: AtomicBool,
    /// Cancelled to close it.
    evict: CancellationToken,
}

impl ConnState {
    /// Count a request in; `None` when the connection is being closed to
    /// make room (the request is then not served).
    fn enter(self: &Arc<Self>) -> Option<Busy> {
        let before = self.busy.fetch_add(1, Ordering::SeqCst);
        let busy = Busy(self.clone());
        (before < EVICTED).then_some(busy)
    }

    /// Mark it for closing, if no request is on it.
    fn try_evict(&self) -> bool {
        let idle =
            self.busy.compare_exchange(0, EVICTED, Ordering::SeqCst, Ordering::SeqCst).is_ok();
        if idle {
            self.evict.cancel();
        }
        idle
    }
}

/// One request in progress on a connection, until its answer is sent.
struct Busy(Arc<ConnState>);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.busy.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The open connections, oldest first.
struct Conns {
    cap: usize,
    next: AtomicU64,
    open: Mutex<BTreeMap<u64, Arc<ConnState>>>,
}

/// A connection's place among [`Conns`], given back when it closes.
struct Slot {
    conns: Arc<Conns>,
    id: u64,
    state: Arc<ConnState>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.conns.open.lock().unwrap_or_else(|e| e.into_inner()).remove(&self.id);
    }
}

impl Conns {
    /// A place for a new connection. At the cap, the oldest connection not
    /// serving a request is closed to make room — one that never showed a
    /// valid token first — so connections that say nothing cannot keep a
    /// token holder out. `None` when every connection is serving one.
    fn admit(self: &Arc<Self>) -> Option<Slot> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if open.len() >= self.cap {
            let anonymous = open.iter().filter(|(_, c)| !c.authenticated.load(Ordering::Relaxed));
            let any = open.iter();
            let victim = anonymous.chain(any).find(|(_, c)| c.try_evict()).map(|(id, _)| *id);
            open.remove(&victim?);
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let state = Arc::new(ConnState::default());
        open.insert(id, state.clone());
        Some(Slot { conns: self.clone(), id, state })
    }
}

/// A response body that ends early when its token is revoked, and keeps
/// its connection counted busy until it is sent.
struct Guarded {
    inner: Body,
    revoked: Option<Ending>,
    _busy: Option<Busy>,
}

impl hyper::body::Body for Guarded {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        if let Some(revoked) = this.revoked.as_mut() {
            if revoked.as_mut().poll(cx).is_ready() {
                return Poll::Ready(None);
            }
        }
        Pin::new(&mut this.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// What a connection refused at the cap is told before it is closed.
fn full_answer(cap: usize) -> Vec<u8> {
    let text = format!(
        "the server has {cap} connections open, each serving a request (--max-connections {cap}); retry shortly, or ask the operator to raise --max-connections"
    );
    format!("HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{text}", text.len())
        .into_bytes()
}

/// Serve MCP over Streamable HTTP on `listener` until the process ends.
/// Each client session gets its own handler over the shared dispatcher.
pub async fn serve_http(
    dispatcher: Arc<Dispatcher>,
    listener: tokio::net::TcpListener,
    opts: HttpOptions,
) -> Result<()> {
    let hosts: Vec<String> = LOOPBACK_HOSTS
        .iter()
        .map(|h| h.to_string())
        .chain(opts.allowed_hosts.iter().cloned())
        .collect();
    let origins: Vec<String> = LOOPBACK_ORIGINS
        .iter()
        .map(|o| o.to_string())
        .chain(opts.allowed_origins.iter().cloned())
        .collect();
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts)
        .with_allowed_origins(origins)
        .enforce_origin_validation()
        .with_max_request_body_bytes(opts.max_body_bytes);
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = Some(opts.session_idle);
    let sessions = Arc::new(sessions);
    // One table of held consent rounds and one grant book for the whole
    // server: a 2026-07-28 request has no session, so its retry (and its
    // grants) may come on any request of the same token and client.
    let mut eras = Eras::new(
        &dispatcher,
        Some(GrantBook::new(opts.session_idle, opts.max_sessions_per_token)),
    )?;
    eras.fixtures = opts.conformance_fixtures;
    let eras = Arc::new(eras);
    let factory_eras = eras.clone();
    let factory_dispatcher = dispatcher.clone();
    let mcp = StreamableHttpService::new(
        move || {
            Ok(VerbgateServer::new(
                factory_dispatcher.clone(),
                Transport::Http,
                factory_eras.clone(),
            ))
        },
        sessions.clone(),
        config,
    );
    let shared = Arc::new(Shared {
        dispatcher,
        refusals: Mutex::new((std::time::Instant::now(), 0)),
        eras,
        sessions,
        auth: opts.auth,
        max_body_bytes: opts.max_body_bytes,
        body_timeout: opts.body_timeout,
        session_idle: opts.session_idle,
        max_sessions: opts.max_sessions,
        max_sessions_per_token: opts.max_sessions_per_token,
        owners: Default::default(),
    });
    if matches!(shared.auth, Auth::Tokens { .. }) {
        let sweeper = shared.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(REVOCATION_SWEEP);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                sweeper.close_revoked().await;
            }
        });
    }
    let gate = Gate { mcp, shared };
    let conns = Arc::new(Conns {
        cap: opts.max_connections,
        next: AtomicU64::new(0),
        open: Default::default(),
    });
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
        accepted(&stream);
        let Some(slot) = conns.admit() else {
            let answer = full_answer(conns.cap);
            tokio::spawn(async move {
                use tokio::io::AsyncWriteExt;
                let mut stream = stream;
                let _ =
                    tokio::time::timeout(Duration::from_secs(1), stream.write_all(&answer)).await;
            });
            continue;
        };
        let gate = gate.clone();
        tokio::spawn(async move {
            let state = slot.state.clone();
            let service = hyper::service::service_fn(move |req| {
                let gate = gate.clone();
                let state = state.clone();
                async move {
                    let Some(busy) = state.enter() else {
                        let resp = closing(plain(
                            StatusCode::SERVICE_UNAVAILABLE,
                            "the connection was closed to make room for another; reconnect".into(),
                        ));
                        return Ok::<_, Infallible>(resp.map(|inner| Guarded {
                            inner,
                            revoked: None,
                            _busy: None,
                        }));
                    };
                    let (resp, ending) = gate.handle(req, &state).await;
                    let revoked = ending;
                    Ok::<_, Infallible>(resp.map(|inner| Guarded {
                        inner,
                        revoked,
                        _busy: Some(busy),
                    }))
                }
            });
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_READ_TIMEOUT)
                .serve_connection(TokioIo::new(stream), service);
            tokio::select! {
                biased;
                _ = slot.state.evict.cancelled() => tracing::debug!("closed an idle connection to make room for a new one"),
                done = conn => if let Err(e) = done {
                    tracing::debug!(error = %e, "HTTP connection ended with an error");
                },
            }
            drop(slot);
        });
    }
}

/// Set up an accepted connection: `TCP_NODELAY`, since an answer leaves
/// in more than one write (head, then body chunks) and, with Nagle's
/// algorithm holding the second until the first is acknowledged, a client
/// that delays its ACK (Node's does) waited ~40 ms on every other call.
fn accepted(stream: &tokio::net::TcpStream) {
    if let Err(e) = stream.set_nodelay(true) {
        tracing::debug!(error = %e, "cannot set TCP_NODELAY on a connection");
    }
}

/// Bind `addr` (port 0 picks a free one).
pub async fn bind(addr: SocketAddr) -> Result<tokio::net::TcpListener> {
    tokio::net::TcpListener::bind(addr).await.with_context(|| format!("cannot listen on {addr}"))
}

/// The caller requests with the token `t` run as: its jobs are its own
/// (by the token's hash) unless it was granted every job.
fn token_caller(t: &crate::tokens::TokenRecord) -> Caller {
    Caller::for_token(
        &t.name,
        &t.sha256,
        t.allow.clone(),
        t.all_jobs,
        crate::dispatch::Transport::Http,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exposure_needs_tokens_beyond_loopback_and_no_auth_only_alone_on_loopback() {
        let file = std::path::Path::new("/home/x/tokens.json");
        let loopback: SocketAddr = "127.0.0.1:8765".parse().unwrap();
        let all: SocketAddr = "0.0.0.0:8765".parse().unwrap();
        assert!(check_exposure(&loopback, false, false, file).is_ok());
        assert!(check_exposure(&"[::1]:8765".parse().unwrap(), false, true, file).is_ok());
        let err = check_exposure(&all, false, false, file).unwrap_err().to_string();
        assert!(err.contains("verbgate token add"), "{err}");
        assert!(check_exposure(&all, true, false, file).is_ok());
        let err = check_exposure(&all, true, true, file).unwrap_err().to_string();
        assert!(
            err.contains("--no-auth") && err.contains("loopback") && err.contains("0.0.0.0:8765"),
            "{err}"
        );
        let err = check_exposure(&loopback, true, true, file).unwrap_err().to_string();
        assert!(err.contains("--no-auth") && err.contains("token revoke"), "{err}");
    }

    #[tokio::test]
    async fn an_accepted_connection_sends_without_delay() {
        let listener = bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let _client = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (stream, _) = listener.accept().await.unwrap();
        assert!(!stream.nodelay().unwrap(), "the kernel's default is Nagle's algorithm");
        accepted(&stream);
        assert!(stream.nodelay().unwrap());
    }

    #[test]
    fn only_an_initialize_opens_a_session() {
        assert_eq!(
            initialize_id(br#"{"jsonrpc":"2.0","id":4,"method":"initialize","params":{}}"#),
            Some(json!(4))
        );
        assert_eq!(initialize_id(br#"{"jsonrpc":"2.0","method":"initialize"}"#), Some(Value::Null));
        assert_eq!(initialize_id(br#"{"jsonrpc":"2.0","id":4,"method":"ping"}"#), None);
        assert_eq!(initialize_id(br#"[{"method":"initialize"}]"#), None);
        assert_eq!(initialize_id(b"not json"), None);
    }

    #[test]
    fn at_the_cap_the_oldest_idle_anonymous_connection_makes_room() {
        let conns = Arc::new(Conns { cap: 3, next: AtomicU64::new(0), open: Default::default() });
        let a = conns.admit().unwrap();
        let b = conns.admit().unwrap();
        let c = conns.admit().unwrap();
        // a serves a request; b showed a token and is idle; c never did.
        let busy = a.state.enter().unwrap();
        b.state.authenticated.store(true, Ordering::Relaxed);
        let d = conns.admit().unwrap();
        assert!(
            c.state.evict.is_cancelled()
                && !b.state.evict.is_cancelled()
                && !a.state.evict.is_cancelled()
        );
        // c's request after it was chosen is not served.
        assert!(c.state.enter().is_none());
        // With no idle anonymous one left, the oldest idle one goes.
        let _d_busy = d.state.enter().unwrap();
        let e = conns.admit().unwrap();
        assert!(b.state.evict.is_cancelled(), "then the oldest idle one, token or not");
        let _f = conns.admit().unwrap();
        assert!(e.state.evict.is_cancelled());
        assert!(
            !a.state.evict.is_cancelled() && !d.state.evict.is_cancelled(),
            "a connection serving a request is never closed"
        );
        assert_eq!(conns.open.lock().unwrap().len(), 3);
        drop(busy);
    }

    #[test]
    fn every_connection_serving_a_request_refuses_a_new_one() {
        let conns = Arc::new(Conns { cap: 2, next: AtomicU64::new(0), open: Default::default() });
        let a = conns.admit().unwrap();
        let b = conns.admit().unwrap();
        let (_x, _y) = (a.state.enter().unwrap(), b.state.enter().unwrap());
        assert!(conns.admit().is_none());
        assert!(String::from_utf8(full_answer(2)).unwrap().contains("--max-connections 2"));
    }

    #[test]
    fn the_connection_cap_keeps_half_the_open_file_limit() {
        let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        // SAFETY: getrlimit writes into the struct it is given.
        assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) }, 0);
        if lim.rlim_cur != libc::RLIM_INFINITY {
            let half = (lim.rlim_cur / 2) as usize;
            assert_eq!(connection_cap(usize::MAX), half.max(8));
            assert_eq!(connection_cap(1), 1);
        }
    }
}
