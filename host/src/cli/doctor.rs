//! `verbgate doctor`: what this machine enforces and the OS sandbox profile
//! each verb's programs run in — so an operator sees, before anything runs,
//! what "confined" means here (and when it would be refused instead).

use anyhow::Result;
use clap::Args;
use serde_json::{json, Map, Value};
use std::process::ExitCode;

use super::context::Context;
use super::global::GlobalArgs;
use crate::config::SandboxMode;

/// `verbgate doctor`.
#[derive(Debug, Args)]
pub struct DoctorArgs {}

/// Print the sandbox's support and every verb's profile as JSON.
pub async fn run(g: &GlobalArgs, _args: DoctorArgs) -> Result<ExitCode> {
    // The doctor looks; it never moves itself between cgroups.
    #[cfg(target_os = "linux")]
    crate::sandbox::cgroup::forbid_setup();
    let ctx = Context::load(g).await?;
    let support = crate::sandbox::support();
    let mode = match ctx.config.sandbox.mode {
        SandboxMode::Enforce => "enforce",
        SandboxMode::Off => "off",
    };
    let enforced = ctx.config.sandbox.mode == SandboxMode::Enforce && support.missing.is_none();
    let what = match (ctx.config.sandbox.mode, &support.missing) {
        (SandboxMode::Off, _) => "programs run unconfined (sandbox.mode = \"off\"); the policy asks before repository code runs".to_string(),
        (SandboxMode::Enforce, Some(why)) => format!("every op that would start a program answers sandbox_unavailable: {why}"),
        (SandboxMode::Enforce, None) => "every program runs confined by its verb's profile".to_string(),
    };
    // The environment programs get (the toolchain is found through it).
    let env: std::collections::BTreeMap<String, String> = ctx
        .config
        .env_allow
        .iter()
        .filter_map(|n| std::env::var(n).ok().map(|v| (n.clone(), v)))
        .collect();
    let mut verbs = Map::new();
    for verb in ctx.registry().verbs() {
        let profile = match verb.programs.iter().next() {
            Some((name, program)) if enforced => {
                crate::dispatch::prepare::profile_for(&ctx.config, verb, name, program, &env)
                    .to_json()
            }
            _ => Value::Null,
        };
        verbs.insert(verb.name.clone(), profile);
    }
    let out = json!({
        "sandbox": {
            "mode": mode,
            "enforced": enforced,
            "mechanism": support.mechanism,
            "landlock_abi": support.landlock_abi,
            "covers": support.covers,
            "missing": support.missing,
            "what_happens": what,
        },
        "memory_bound": memory_bound(&ctx.config),
        "root": ctx.config.root.display().to_string(),
        "verbs": Value::Object(verbs),
    });
    println!("{}", serde_json::to_string_pretty(&out)?);
    Ok(ExitCode::SUCCESS)
}

/// The memory bound on each program's tree: its size and where its
/// cgroups go, or why ops would answer `sandbox_unavailable`.
fn memory_bound(config: &crate::config::Config) -> Value {
    let mib = config.limits.max_memory_mib;
    if mib == 0 || !config.sandbox.namespaces || !cfg!(target_os = "linux") {
        return json!({"max_memory_mib": null, "cgroups": null, "missing": null});
    }
    match crate::sandbox::memory_cgroups() {
        Ok(at) => json!({"max_memory_mib": mib, "cgroups": at, "missing": null}),
        Err(why) => json!({"max_memory_mib": mib, "cgroups": null, "missing": why}),
    }
}
