//! `verbgate serve`: the MCP server over stdio. Stdout is the protocol
//! channel, so everything else (logs) goes to stderr.

use anyhow::Result;
use std::process::ExitCode;

use super::context::Context;
use crate::registry::LoadMode;
use super::GlobalArgs;

/// Arguments of `serve`.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {}

/// Serve until the client disconnects.
pub async fn run(g: &GlobalArgs, _a: ServeArgs) -> Result<ExitCode> {
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
    // A server lives long: give back what compiling at start freed. (A
    // one-shot command exits instead, which is cheaper still.)
    crate::runtime::release_freed_memory();
    tracing::info!(
        verbs = ctx.registry().verbs().count(),
        unavailable = ctx.registry().unavailable().len(),
        compiling = ctx.registry().deferred().len(),
        "serving MCP on stdio"
    );
    crate::mcp::serve_stdio(ctx.dispatcher()).await?;
    Ok(ExitCode::SUCCESS)
}
