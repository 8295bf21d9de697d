//! `verbgate token add|list|revoke`: bearer tokens for `serve --http`.
//! Terminal commands only, never verbs: a client that could mint tokens
//! could widen its own reach.

use anyhow::Result;
use clap::Subcommand;
use serde_json::json;
use std::process::ExitCode;

use super::global::{print_json, GlobalArgs};
use crate::config::Config;
use crate::tokens::TokenStore;

/// `token` subcommands.
#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Make a token and print it (the only time it is shown).
    Add {
        /// The token's name: what requests made with it run as.
        name: String,
        /// Verb patterns the token may reach (`*`, `ns.*`, or a verb name;
        /// repeatable). Default: everything the server serves.
        #[arg(long = "allow", value_name = "PATTERN", num_args = 1..)]
        allow: Vec<String>,
        /// Let the token see and act on every job (`job.*`), not only the
        /// ones it started.
        #[arg(long = "all-jobs")]
        all_jobs: bool,
    },
    /// List tokens: names, allow patterns, creation time (never the token).
    List,
    /// Revoke a token; it stops working on its next request.
    Revoke {
        /// The token's name.
        name: String,
    },
}

/// Run a token subcommand.
pub fn run(g: &GlobalArgs, c: TokenCommand) -> Result<ExitCode> {
    let store = TokenStore::at_home(&Config::load(&g.overrides())?.home);
    match c {
        TokenCommand::Add { name, allow, all_jobs } => {
            let allow = (!allow.is_empty()).then_some(allow);
            let token = store.add_with(&name, allow.clone(), all_jobs)?;
            print_json(
                &json!({ "ok": true, "name": name, "allow": allow, "all_jobs": all_jobs, "token": token,
                "note": "shown once: store it now; only its hash is kept" }),
            );
        }
        TokenCommand::List => {
            let tokens: Vec<_> =
                store.list()?.into_iter().map(|t| json!({ "name": t.name, "allow": t.allow, "all_jobs": t.all_jobs, "created": t.created })).collect();
            print_json(&json!({ "ok": true, "file": store.path(), "tokens": tokens }));
        }
        TokenCommand::Revoke { name } => {
            if !store.revoke(&name)? {
                print_json(
                    &json!({ "ok": false, "error": { "code": "not_found", "message": format!("no token named `{name}`; `verbgate token list` shows them"), "name": name } }),
                );
                return Ok(ExitCode::FAILURE);
            }
            print_json(&json!({ "ok": true, "revoked": name }));
        }
    }
    Ok(ExitCode::SUCCESS)
}
