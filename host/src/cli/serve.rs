//! `verbgate serve`: the MCP server over stdio (default; stdout is the
//! protocol channel, so everything else goes to stderr) or over Streamable
//! HTTP with `--http ADDR`.

use anyhow::{Context as _, Result};
use std::net::SocketAddr;
use std::process::ExitCode;

use super::context::Context;
use super::global::GlobalArgs;
use crate::mcp::http::{
    Auth, HttpOptions, DEFAULT_BODY_TIMEOUT, DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_SESSIONS, DEFAULT_MAX_SESSIONS_PER_TOKEN, DEFAULT_SESSION_IDLE, MCP_PATH,
};
use crate::registry::LoadMode;
use crate::tokens::TokenStore;

/// How long a stdio server whose client has gone waits for its background
/// compiles to finish (and be cached) before it exits.
const SETTLE_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

/// Arguments of `serve`.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Also serve the MCP conformance suite's fixture tools (test_*):
    /// for `just conformance` only, never a real server.
    #[arg(long = "conformance-fixtures", hide = true, requires = "http")]
    conformance_fixtures: bool,
    /// Serve Streamable HTTP on this address (path /mcp) instead of stdio.
    /// Port 0 picks a free port; the bound address is printed on stderr.
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,
    /// Also accept this `Host` header value (`name` or `name:port`;
    /// repeatable). Default: loopback names only.
    #[arg(long = "allow-host", value_name = "HOST", requires = "http")]
    allow_host: Vec<String>,
    /// Also accept requests from this browser `Origin`
    /// (`scheme://host:port`, `:*` for any port; repeatable). Default:
    /// loopback origins only; requests without `Origin` are not browsers.
    #[arg(long = "allow-origin", value_name = "ORIGIN", requires = "http")]
    allow_origin: Vec<String>,
    /// Close a session after this many seconds without a request.
    #[arg(long = "session-idle-secs", value_name = "SECS", default_value_t = DEFAULT_SESSION_IDLE.as_secs(), requires = "http",
          value_parser = clap::value_parser!(u64).range(1..))]
    session_idle_secs: u64,
    /// Largest request body in bytes (413 past it).
    #[arg(long = "max-body-bytes", value_name = "BYTES", default_value_t = DEFAULT_MAX_BODY_BYTES as u64, requires = "http",
          value_parser = clap::value_parser!(u64).range(1024..=(64 << 20)))]
    max_body_bytes: u64,
    /// Seconds a client has to send a request's body once its head arrived
    /// (408 past it).
    #[arg(long = "body-timeout-secs", value_name = "SECS", default_value_t = DEFAULT_BODY_TIMEOUT.as_secs(), requires = "http",
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    body_timeout_secs: u64,
    /// Most connections open at once (also at most half the open-file
    /// limit); past it a new connection closes the oldest idle one.
    #[arg(long = "max-connections", value_name = "N", default_value_t = DEFAULT_MAX_CONNECTIONS as u64, requires = "http",
          value_parser = clap::value_parser!(u64).range(1..=65536))]
    max_connections: u64,
    /// Most sessions open at once, all tokens together (503 past it).
    #[arg(long = "max-sessions", value_name = "N", default_value_t = DEFAULT_MAX_SESSIONS as u64, requires = "http",
          value_parser = clap::value_parser!(u64).range(1..=100_000))]
    max_sessions: u64,
    /// Most sessions one token may hold open (429 past it).
    #[arg(long = "max-sessions-per-token", value_name = "N", default_value_t = DEFAULT_MAX_SESSIONS_PER_TOKEN as u64, requires = "http",
          value_parser = clap::value_parser!(u64).range(1..=100_000))]
    max_sessions_per_token: u64,
    /// Serve a loopback address without any token. Without it, a server
    /// whose token file holds no token makes one for its own lifetime and
    /// prints it on stderr.
    #[arg(long = "no-auth", requires = "http")]
    no_auth: bool,
}

/// Serve until the client disconnects (stdio) or the process ends (HTTP).
pub async fn run(g: &GlobalArgs, a: ServeArgs) -> Result<ExitCode> {
    // Check what can be checked before loading anything: an exposed
    // server without tokens must not start at all.
    let exposure = match a.http {
        None => None,
        Some(addr) => {
            let config = crate::config::Config::load(&g.overrides())?;
            let store = TokenStore::at_home(&config.home);
            let oauth = match config.oauth.clone() {
                Some(s) => Some(std::sync::Arc::new(crate::oauth::ResourceServer::new(s)?)),
                None => None,
            };
            let configured = !store.list()?.is_empty() || oauth.is_some();
            crate::mcp::http::check_exposure(&addr, configured, a.no_auth, store.path())?;
            // Authentication is on for the server's life unless --no-auth
            // asked otherwise: revoking the last token locks everyone out
            // rather than opening the server. With no token in the file, the
            // server makes one of its own: every local user can reach a
            // loopback port, and only the one who started the server reads
            // its stderr.
            let auth = if a.no_auth {
                Auth::Nobody
            } else if configured {
                Auth::Tokens { store, generated: None, oauth }
            } else {
                let text = crate::tokens::generate()?;
                let digest = crate::json::sha256_hex(text.as_bytes());
                eprintln!(
                    "verbgate: {} holds no token, so this server made one that lasts until it stops (shown only here): {text}
verbgate: clients send `Authorization: Bearer <token>`; `verbgate token add NAME` makes lasting ones, `--no-auth` serves loopback without any",
                    store.path().display()
                );
                Auth::Tokens { store, generated: Some(digest), oauth }
            };
            Some((addr, auth))
        }
    };
    // Uncached plugin components compile in the background: the server
    // answers at once, and their verbs join when ready.
    let ctx = Context::load_with(g, LoadMode::Background).await?;
    // Retention is applied once per server start (and by `verbgate jobs
    // prune`); a failure is logged, never fatal to serving.
    let jobs = ctx.jobs.clone();
    match tokio::task::spawn_blocking(move || jobs.prune()).await {
        Ok(Ok(r)) => tracing::info!(pruned = r.pruned.len(), kept = r.kept, "pruned ended jobs"),
        Ok(Err(e)) => tracing::warn!(error = %format!("{e:#}"), "cannot prune ended jobs"),
        Err(e) => tracing::warn!(error = %e, "cannot prune ended jobs"),
    }
    if let Some(audit) = &ctx.audit {
        let (days, rows) = (ctx.config.audit.retain_days, ctx.config.audit.retain_rows);
        match audit.prune(days, rows, crate::jobs::process::now_ms()) {
            Ok(r) => tracing::info!(
                expired = r.expired,
                over_count = r.over_count,
                "pruned the audit trail"
            ),
            Err(e) => tracing::warn!(error = %e, "cannot prune the audit trail"),
        }
    }
    // OTLP export, when OTEL_EXPORTER_OTLP_* asks for it (a protocol other
    // than http/protobuf stops the start, saying so).
    let telemetry = crate::telemetry::start_from_env()?;
    // A server lives long: give back what compiling at start freed. (A
    // one-shot command exits instead, which is cheaper still.)
    crate::runtime::release_freed_memory();
    let Some((addr, auth)) = exposure else {
        tracing::info!(
            verbs = ctx.registry().verbs().count(),
            unavailable = ctx.registry().unavailable().len(),
            compiling = ctx.registry().deferred().len(),
            "serving MCP on stdio"
        );
        crate::mcp::serve_stdio(ctx.dispatcher()).await?;
        if telemetry {
            flush_telemetry().await;
        }
        // A client that left at once (initialize, tools/list, gone) would
        // otherwise leave every component uncompiled and each later start
        // as cold as this one: the compiles running finish and are cached.
        let compiling = ctx.registry().deferred().len();
        if compiling > 0 {
            tracing::info!(
                compiling,
                "client gone; finishing the background compiles for the cache"
            );
            if !ctx.live.settle(SETTLE_WAIT).await {
                tracing::info!(
                    "background compiles still running after {SETTLE_WAIT:?}; leaving them"
                );
            }
        }
        return Ok(ExitCode::SUCCESS);
    };
    // The fixture tools are test scaffolding that asks the client for
    // input and echoes it: never on an address others can reach.
    if a.conformance_fixtures && !addr.ip().is_loopback() {
        anyhow::bail!(
            "--conformance-fixtures serves test tools and is refused on {addr}: bind a loopback address (127.0.0.1 or [::1]) to run the conformance suite"
        );
    }
    let listener = crate::mcp::http::bind(addr).await?;
    let bound = listener.local_addr().context("cannot read the bound address")?;
    // Tests and scripts read this line to find a port-0 server.
    eprintln!(
        "verbgate: serving MCP on http://{bound}{MCP_PATH} ({})",
        match auth {
            Auth::Tokens { oauth: Some(_), .. } => "bearer tokens or OAuth access tokens required",
            Auth::Tokens { .. } => "bearer tokens required",
            Auth::Nobody => "loopback, no authentication: --no-auth",
        }
    );
    let max_connections = crate::mcp::http::connection_cap(a.max_connections as usize);
    if max_connections < a.max_connections as usize {
        eprintln!(
            "verbgate: at most {max_connections} connections, not {}: that is half the open-file limit (`ulimit -n`), the rest kept for what verbs run; raise the limit for more",
            a.max_connections
        );
    }
    let opts = HttpOptions {
        allowed_hosts: a.allow_host,
        allowed_origins: a.allow_origin,
        max_body_bytes: a.max_body_bytes as usize,
        body_timeout: std::time::Duration::from_secs(a.body_timeout_secs),
        session_idle: std::time::Duration::from_secs(a.session_idle_secs),
        max_connections,
        max_sessions: a.max_sessions as usize,
        max_sessions_per_token: a.max_sessions_per_token as usize,
        auth,
        conformance_fixtures: a.conformance_fixtures,
    };
    if a.conformance_fixtures {
        eprintln!("verbgate: --conformance-fixtures: serving the MCP conformance suite's fixture tools beside `request` (for testing only)");
    }
    let serving = crate::mcp::http::serve_http(ctx.dispatcher(), listener, opts);
    if !telemetry {
        serving.await?;
        return Ok(ExitCode::SUCCESS);
    }
    // Exporting: SIGTERM and Ctrl-C end the server after the buffered
    // spans and metrics are sent (a kill would lose the last batch).
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("cannot watch for SIGTERM")?;
    tokio::select! {
        served = serving => served?,
        _ = term.recv() => tracing::info!("SIGTERM: flushing telemetry, then stopping"),
        _ = tokio::signal::ctrl_c() => tracing::info!("interrupted: flushing telemetry, then stopping"),
    }
    flush_telemetry().await;
    Ok(ExitCode::SUCCESS)
}

/// Send what telemetry holds and stop it (the exports run on this
/// runtime, so the blocking shutdown runs beside it).
async fn flush_telemetry() {
    // A collector that accepts and never answers must not hold the exit.
    let flush = tokio::task::spawn_blocking(crate::telemetry::shutdown);
    match tokio::time::timeout(std::time::Duration::from_secs(15), flush).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::warn!(error = %e, "cannot flush telemetry"),
        Err(_) => tracing::warn!("telemetry still flushing after 15 s; stopping without it"),
    }
}
