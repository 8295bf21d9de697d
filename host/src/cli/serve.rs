//! `verbgate serve`: the MCP server over stdio (default; stdout is the
//! protocol channel, so everything else goes to stderr) or over Streamable
//! HTTP with `--http ADDR`.

use anyhow::{Context as _, Result};
use std::net::SocketAddr;
use std::process::ExitCode;

use super::context::Context;
use super::GlobalArgs;
use crate::mcp::http::{HttpOptions, DEFAULT_MAX_BODY_BYTES, DEFAULT_SESSION_IDLE, MCP_PATH};
use crate::registry::LoadMode;
use crate::tokens::TokenStore;

/// Arguments of `serve`.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
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
}

/// Serve until the client disconnects (stdio) or the process ends (HTTP).
pub async fn run(g: &GlobalArgs, a: ServeArgs) -> Result<ExitCode> {
    // Check what can be checked before loading anything: an exposed
    // server without tokens must not start at all.
    let exposure = match a.http {
        None => None,
        Some(addr) => {
            let store = TokenStore::at_home(&crate::config::Config::load(&g.overrides())?.home);
            let configured = !store.list()?.is_empty();
            crate::mcp::http::check_exposure(&addr, configured, store.path())?;
            // Tokens present at start mean authentication is on for the
            // server's life: revoking the last one locks everyone out
            // rather than opening the server.
            Some((addr, configured.then_some(store)))
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
            Ok(r) => tracing::info!(expired = r.expired, over_count = r.over_count, "pruned the audit trail"),
            Err(e) => tracing::warn!(error = %e, "cannot prune the audit trail"),
        }
    }
    // A server lives long: give back what compiling at start freed. (A
    // one-shot command exits instead, which is cheaper still.)
    crate::runtime::release_freed_memory();
    let Some((addr, tokens)) = exposure else {
        tracing::info!(
            verbs = ctx.registry().verbs().count(),
            unavailable = ctx.registry().unavailable().len(),
            compiling = ctx.registry().deferred().len(),
            "serving MCP on stdio"
        );
        crate::mcp::serve_stdio(ctx.dispatcher()).await?;
        return Ok(ExitCode::SUCCESS);
    };
    let listener = crate::mcp::http::bind(addr).await?;
    let bound = listener.local_addr().context("cannot read the bound address")?;
    // Tests and scripts read this line to find a port-0 server.
    eprintln!(
        "verbgate: serving MCP on http://{bound}{MCP_PATH} ({})",
        if tokens.is_some() { "bearer tokens required" } else { "loopback, no tokens configured" }
    );
    let opts = HttpOptions {
        allowed_hosts: a.allow_host,
        allowed_origins: a.allow_origin,
        max_body_bytes: a.max_body_bytes as usize,
        session_idle: std::time::Duration::from_secs(a.session_idle_secs),
        tokens,
    };
    crate::mcp::http::serve_http(ctx.dispatcher(), listener, opts).await?;
    Ok(ExitCode::SUCCESS)
}
