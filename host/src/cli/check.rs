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
use super::global::{print_json, GlobalArgs};
use crate::error::LoadCode;
use crate::exec::Programs;
use crate::json::sha256_hex;
use crate::registry::bounds::check_describe;
use crate::registry::fence::namespace;
use crate::registry::lint::{lint_plugin, Finding, Severity};
use crate::registry::schema::{compile, sample_args};
use crate::runtime::inspect::{ShapeError, ALLOWED_IMPORT_PACKAGES};
use crate::runtime::model::{Plan, VerbKind, VerbSpec};
use crate::runtime::{LoadError, LoadedComponent};
use crate::trust::{verify_component, TrustStore};

/// Arguments of `check`.
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// The component to check.
    component: PathBuf,
}

fn problem(code: LoadCode, message: String, fix: &str) -> Value {
    json!({ "code": code, "severity": "error", "message": message, "fix": fix })
}

/// Check a component.
pub async fn run(g: &GlobalArgs, a: CheckArgs) -> Result<ExitCode> {
    let bytes = std::fs::read(&a.component)
        .with_context(|| format!("cannot read {}", a.component.display()))?;
    let ctx = Context::load(g).await?;
    let report = check_bytes(&ctx, &bytes).await;
    let ok = report.ok();
    let mut out = report.to_json();
    out["file"] = json!(a.component);
    print_json(&out);
    Ok(if ok { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// What `check` found.
pub(super) struct Report {
    wit_version: Option<String>,
    plugin: Value,
    verbs: Vec<String>,
    errors: Vec<Value>,
    warnings: Vec<Value>,
    lint: Vec<Finding>,
}

impl Report {
    /// No errors (warnings and lint do not fail a check).
    pub(super) fn ok(&self) -> bool {
        self.errors.is_empty()
    }

    /// The report as printed.
    pub(super) fn to_json(&self) -> Value {
        json!({
            "ok": self.ok(),
            "wit_version": self.wit_version,
            "plugin": self.plugin,
            "verbs": self.verbs,
            "errors": self.errors,
            "warnings": self.warnings,
            "lint": self.lint,
        })
    }
}

/// Check component bytes against this machine's runtime and registry.
pub(super) async fn check_bytes(ctx: &Context, bytes: &[u8]) -> Report {
    let mut r = Report {
        wit_version: None,
        plugin: Value::Null,
        verbs: vec![],
        errors: vec![],
        warnings: vec![],
        lint: vec![],
    };
    match verify_component(bytes, &TrustStore::load(&ctx.config.trust_dir()).unwrap_or_default()) {
        Ok(s) => r.plugin = json!({ "signer": s.key_id }),
        Err(e) => r.warnings.push(json!({
            "code": e.kind(),
            "message": format!("this component would not load from a plugin directory here: {e}"),
            "fix": "sign it with `verbgate sign` using a key the operator trusts",
        })),
    }
    // Through the compile cache (keyed by the bytes' digest, used only for
    // these very bytes): a Python or JS guest is compiled once for `check`,
    // `dev` and the next start together.
    let component = match ctx.runtime.load(bytes, &sha256_hex(bytes)) {
        Ok(c) => c,
        Err(LoadError::Shape(ShapeError::ForbiddenImports(imports))) => {
            // One finding per import outside the policy, each named.
            for import in imports {
                let message = format!("the component imports `{import}`, which verbgate does not provide (allowed: {})", ALLOWED_IMPORT_PACKAGES.join(", "));
                let mut finding = problem(
                    LoadCode::ImportOutsidePolicy,
                    message,
                    load_fix(LoadCode::ImportOutsidePolicy),
                );
                finding["import"] = json!(import);
                r.errors.push(finding);
            }
            return r;
        }
        Err(e) => {
            r.errors.push(problem(e.code(), e.to_string(), load_fix(e.code())));
            return r;
        }
    };
    r.wit_version = Some(component.wit_version.clone());
    let info = match ctx.runtime.describe(&component).await {
        Ok(i) => i,
        Err(e) => {
            r.errors.push(problem(
                LoadCode::DescribeFailed,
                format!("describe() failed: {e}"),
                "make describe() pure and cheap",
            ));
            return r;
        }
    };
    // The whole describe is measured first, as at load: past a bound,
    // nothing of it is echoed and no per-verb work is done.
    let bounds = ctx.runtime.limits().bounds;
    if let Some(f) = check_describe(&info, &bounds) {
        r.errors.push(serde_json::to_value(&f).unwrap_or_default());
        return r;
    }
    r.plugin =
        json!({ "name": info.name, "version": info.version, "signer": r.plugin.get("signer") });
    for f in lint_plugin(&info, false, &bounds) {
        match f.severity {
            Severity::Error => r.errors.push(serde_json::to_value(&f).unwrap_or_default()),
            Severity::Warning => r.lint.push(f),
        }
    }
    if info.verbs.iter().any(|v| v.effects == crate::runtime::model::Effects::Undeclared) {
        r.warnings.push(json!({
            "code": LoadCode::EffectsUndeclared,
            "message": format!("built against verbgate:verbs@{}, which cannot declare effects: the policy treats every verb as possibly doing anything (by default a person is asked before each op)", component.wit_version),
            "fix": "rebuild against verbgate:verbs@0.2.0 (the current SDK or `verbgate new`) and declare each verb's effects",
        }));
    }
    let programs = Programs::new(ctx.config.programs.clone(), std::env::var_os("PATH").as_deref());
    for spec in &info.verbs {
        r.verbs.push(spec.name.clone());
        let registry = ctx.registry();
        for name in std::iter::once(&spec.name).chain(&spec.aliases) {
            if let Some(owner) = registry.resolve(name).filter(|v| v.plugin.name != info.name) {
                r.errors.push(json!({
                    "code": LoadCode::VerbCollision,
                    "severity": "error",
                    "verb": spec.name,
                    "message": format!("`{name}` is already provided by plugin `{}` here, so this one would be refused", owner.plugin.name),
                    "fix": "use your own namespace",
                }));
            } else if let Some(owner) =
                registry.namespace_owner(name).filter(|o| o.plugin != info.name)
            {
                r.errors.push(json!({
                    "code": LoadCode::NamespaceOwned,
                    "severity": "error",
                    "verb": spec.name,
                    "message": format!("`{name}` is in the `{}` namespace, which belongs to {} here, so this verb would be refused", namespace(name), owner.describe()),
                    "fix": "use your own namespace (e.g. your plugin's name)",
                }));
            }
        }
        for p in &spec.programs {
            if let Err(why) = programs.resolve(p) {
                r.warnings.push(
                    json!({ "code": LoadCode::MissingProgram, "verb": spec.name, "message": why.to_string(), "fix": "install it or set programs.<name> in verbgate.toml" }),
                );
            }
        }
        if let Some(f) = undeclared_program(ctx, &component, spec).await {
            r.errors.push(serde_json::to_value(&f).unwrap_or_default());
        }
    }
    r
}

/// The one-line fix for a component the runtime refused to load.
fn load_fix(code: LoadCode) -> &'static str {
    match code {
        LoadCode::ImportOutsidePolicy => "import only WASI p2 io/cli/clocks/random/filesystem/sockets (for componentize-js: `-d http -d fetch-event`)",
        LoadCode::UnknownWitVersion => "rebuild against a supported verbgate:verbs version (the SDK, or `verbgate new`)",
        LoadCode::NotAPlugin => "export verbgate:verbs/plugin@<version> (world `verb-plugin`)",
        LoadCode::NotAComponent => "build a WebAssembly component (wasm32-wasip2, componentize-py, componentize-js), not a core module",
        _ => "build with the SDK or a `verbgate new` template",
    }
}

/// Plan a sample call of an exec/spawn verb and report a plan that names a
/// program the verb did not declare (the host would refuse every such call
/// with `plan_refused`). A plan that fails on the sample proves nothing, so
/// it is not reported.
async fn undeclared_program(
    ctx: &Context,
    component: &LoadedComponent,
    spec: &VerbSpec,
) -> Option<Finding> {
    if !matches!(spec.kind, VerbKind::Exec | VerbKind::Spawn) || spec.two_stage {
        return None;
    }
    let schema: Value = serde_json::from_str(&spec.params_schema).ok()?;
    let args = sample_args(&schema);
    if !compile(&schema).ok()?.is_valid(&args) {
        return None;
    }
    let plan = ctx.runtime.plan(component, &spec.name, &args.to_string()).await.ok()?.ok()?;
    let planned = match plan {
        Plan::Exec(c) | Plan::Spawn(c) => vec![("", c.program)],
        Plan::ExecRead { run, read_back } => {
            vec![("", run.program), (" as its read-back", read_back.program)]
        }
        Plan::Host(_) => return None,
    };
    let (role, program) = planned.into_iter().find(|(_, p)| !spec.programs.contains(p))?;
    Some(Finding {
        code: LoadCode::UndeclaredProgram,
        severity: Severity::Error,
        verb: Some(spec.name.clone()),
        pointer: None,
        message: format!("planning {} with {args} runs `{program}`{role}, which the verb does not declare (declared: {:?})", spec.name, spec.programs),
        fix: "add the program to the verb's `programs`, or plan only declared programs",
    })
}
