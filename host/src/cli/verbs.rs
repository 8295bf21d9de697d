//! `verbgate verbs`: the catalog as JSON, with every plugin loaded and
//! everything that could not be made available, with reasons.

use anyhow::Result;
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;

use super::context::Context;
use super::global::{print_json, GlobalArgs};
use crate::dispatch::help::surface_version;
use crate::trust::TrustStore;

/// Arguments of `verbs`.
#[derive(Debug, clap::Args)]
pub struct VerbsArgs {
    /// Also load signed components from this directory.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

/// Print the catalog.
pub async fn run(g: &GlobalArgs, a: VerbsArgs) -> Result<ExitCode> {
    let mut g = g.clone();
    g.plugins.extend(a.dir);
    let ctx = Context::load(&g).await?;
    let verbs: Vec<_> = ctx
        .registry()
        .verbs()
        .map(|v| {
            json!({
                "verb": v.name,
                "kind": v.kind.as_str(),
                "signature": v.signature,
                "schema_fingerprint": v.fingerprint,
                "plugin": v.plugin.name,
                "programs": v.programs,
                "effects": v.effects.to_json(),
            })
        })
        .collect();
    print_json(&json!({
        "surface_version": surface_version(&ctx.registry()),
        "verbs": verbs,
        "plugins": ctx.registry().plugins(),
        "unavailable": ctx.registry().unavailable(),
        // Trust store files that were not read as keys, with the reason
        // (a FIFO, a symlink, an oversized or foreign file, …).
        "trust_skipped": TrustStore::load(&ctx.config.trust_dir()).map(|s| s.bad_files().to_vec()).unwrap_or_default(),
    }));
    Ok(ExitCode::SUCCESS)
}
