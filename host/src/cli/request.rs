//! `verbgate request '<json>'`: one request through the same dispatch the
//! MCP tool uses.

use anyhow::{Context as _, Result};
use std::io::Read;
use std::process::ExitCode;

use super::ask;
use super::context::Context;
use super::global::{print_json, GlobalArgs};
use crate::dispatch::ask::Asker;
use crate::dispatch::{Caller, Observer, Transport};
use std::sync::Arc;

/// Arguments of `request`.
#[derive(Debug, clap::Args)]
pub struct RequestArgs {
    /// The request JSON, or `-` to read it from stdin.
    #[arg(value_name = "JSON")]
    json: String,
    /// Allow every op the policy would ask about, without asking (for
    /// scripts). Recorded in the audit trail as decided by `cli_yes`.
    #[arg(long)]
    yes: bool,
}

/// Run it. Exit 0 when every op succeeded, 1 when some failed, 4 when the
/// request could not run at all.
pub async fn run(g: &GlobalArgs, a: RequestArgs) -> Result<ExitCode> {
    let text = if a.json == "-" {
        let mut s = String::new();
        std::io::stdin().read_to_string(&mut s).context("cannot read the request from stdin")?;
        s
    } else {
        a.json
    };
    let ctx = Context::load(g).await?;
    let value: serde_json::Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => {
            let err = crate::OpError::new(
                crate::ErrorCode::InvalidRequest,
                format!("the request is not valid JSON: {e}"),
            );
            print_json(&serde_json::json!({ "status": "error", "error": err.to_json() }));
            return Ok(ExitCode::from(4));
        }
    };
    let mut caller = Caller::new("local", None, Transport::Cli);
    caller.asker =
        Some(if a.yes { Arc::new(ask::Yes) as Arc<dyn Asker> } else { Arc::new(ask::Terminal) });
    let response =
        ctx.dispatcher().handle_as(&value, Arc::new(Observer::default()), Arc::new(caller)).await;
    print_json(&response.body);
    // This process ends now: what an op's program left running ends first.
    crate::exec::orphans::sweep();
    Ok(match (response.is_error, response.body["status"].as_str()) {
        (true, _) => ExitCode::from(4),
        (false, Some("success")) => ExitCode::SUCCESS,
        _ => ExitCode::FAILURE,
    })
}
