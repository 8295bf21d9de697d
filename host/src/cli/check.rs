//! `verbgate check <component.wasm>`: everything a verb author needs to know
//! before shipping, without trusting or running the component's plans.
//!
//! - `errors`: what would stop the component or a verb from loading
//!   (contract version, imports, `describe`, names, fence, schemas,
//!   collisions with verbs already installed here);
//! - `warnings`: what depends on this machine (signature not trusted here,
//!   a declared program not found);
//! - `lint`: what loads but serves callers worse (missing descriptions, …).

use anyhow::{Context as _, Result};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::ExitCode;

use super::context::Context;
use super::{print_json, GlobalArgs};
use crate::exec::Programs;
use crate::registry::lint::{lint_plugin, Finding, Severity};
use crate::trust::{verify_component, TrustStore};

/// Arguments of `check`.
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// The component to check.
    component: PathBuf,
}

fn problem(code: &str, message: String, fix: &str) -> Value {
    json!({ "code": code, "severity": "error", "message": message, "fix": fix })
}

/// Check a component.
pub async fn run(g: &GlobalArgs, a: CheckArgs) -> Result<ExitCode> {
    let bytes = std::fs::read(&a.component).with_context(|| format!("cannot read {}", a.component.display()))?;
    let ctx = Context::load(g).await?;
    let report = check_bytes(&ctx, &bytes).await;
    let ok = report.errors.is_empty();
    print_json(&json!({
        "ok": ok,
        "file": a.component,
        "wit_version": report.wit_version,
        "plugin": report.plugin,
        "verbs": report.verbs,
        "errors": report.errors,
        "warnings": report.warnings,
        "lint": report.lint,
    }));
    Ok(if ok { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

struct Report {
    wit_version: Option<String>,
    plugin: Value,
    verbs: Vec<String>,
    errors: Vec<Value>,
    warnings: Vec<Value>,
    lint: Vec<Finding>,
}

async fn check_bytes(ctx: &Context, bytes: &[u8]) -> Report {
    let mut r = Report { wit_version: None, plugin: Value::Null, verbs: vec![], errors: vec![], warnings: vec![], lint: vec![] };
    match verify_component(bytes, &TrustStore::load(&ctx.config.trust_dir()).unwrap_or_default()) {
        Ok(s) => r.plugin = json!({ "signer": s.key_id }),
        Err(e) => r.warnings.push(json!({
            "code": e.kind(),
            "message": format!("this component would not load from a plugin directory here: {e}"),
            "fix": "sign it with `verbgate sign` using a key the operator trusts",
        })),
    }
    let component = match ctx.runtime.load_uncached(bytes) {
        Ok(c) => c,
        Err(e) => {
            r.errors.push(problem("load_failed", e.to_string(), "build against a supported verbgate:verbs version with the SDK"));
            return r;
        }
    };
    r.wit_version = Some(component.wit_version.clone());
    let info = match ctx.runtime.describe(&component).await {
        Ok(i) => i,
        Err(e) => {
            r.errors.push(problem("describe_failed", format!("describe() failed: {e}"), "make describe() pure and cheap"));
            return r;
        }
    };
    r.plugin = json!({ "name": info.name, "version": info.version, "signer": r.plugin.get("signer") });
    for f in lint_plugin(&info, false) {
        match f.severity {
            Severity::Error => r.errors.push(serde_json::to_value(&f).unwrap_or_default()),
            Severity::Warning => r.lint.push(f),
        }
    }
    let programs = Programs::new(ctx.config.programs.clone(), std::env::var_os("PATH").as_deref());
    for spec in &info.verbs {
        r.verbs.push(spec.name.clone());
        for name in std::iter::once(&spec.name).chain(&spec.aliases) {
            if let Some(owner) = ctx.registry.resolve(name).filter(|v| v.plugin.name != info.name) {
                r.errors.push(json!({
                    "code": "verb_collision",
                    "severity": "error",
                    "verb": spec.name,
                    "message": format!("`{name}` is already provided by plugin `{}` here, so this one would be refused", owner.plugin.name),
                    "fix": "use your own namespace",
                }));
            }
        }
        for p in &spec.programs {
            if let Err(why) = programs.resolve(p) {
                r.warnings.push(json!({ "code": "missing_program", "verb": spec.name, "message": why, "fix": "install it or set programs.<name> in verbgate.toml" }));
            }
        }
    }
    r
}
