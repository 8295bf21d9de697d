//! `verbgate trust add|list|remove`: the operator's trust store. These are
//! deliberately terminal commands and never verbs (the fence).

use anyhow::Result;
use clap::Subcommand;
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;

use super::global::{print_json, GlobalArgs};
use crate::config::Config;
use crate::trust::TrustStore;

/// `trust` subcommands.
#[derive(Debug, Subcommand)]
pub enum TrustCommand {
    /// Trust a public key (PEM, raw wasmsign2, or OpenSSH ed25519).
    Add {
        /// The public key file.
        key: PathBuf,
        /// A label to show beside the key id.
        #[arg(long)]
        name: Option<String>,
    },
    /// List trusted keys (and key files that were skipped, with the reason).
    List,
    /// Stop trusting a key, by id (or unique id prefix) or name.
    Remove {
        /// Key id (`ed25519:…`), a unique prefix of it, or the key's name.
        key: String,
    },
}

/// Run a trust subcommand.
pub fn run(g: &GlobalArgs, c: TrustCommand) -> Result<ExitCode> {
    let dir = Config::load(&g.overrides())?.trust_dir();
    match c {
        TrustCommand::Add { key, name } => {
            let k = TrustStore::add(&dir, &key, name.as_deref())?;
            print_json(&json!({ "ok": true, "added": k }));
        }
        TrustCommand::List => {
            let store = TrustStore::load(&dir)?;
            print_json(
                &json!({ "ok": true, "dir": dir, "keys": store.keys(), "skipped": store.bad_files() }),
            );
        }
        TrustCommand::Remove { key } => {
            let k = TrustStore::remove(&dir, &key)?;
            print_json(&json!({ "ok": true, "removed": k }));
        }
    }
    Ok(ExitCode::SUCCESS)
}
