//! A plan must be of the kind its verb declares. The declared kind decides
//! which gates an op passes before the plugin is asked for a plan (a spawn
//! verb needs the caller's fingerprint), so a plan of another kind would
//! walk around them: a `read` verb whose plan was a spawn once started a
//! job with no fingerprint.
//!
//! | declared kind | exec plan | exec-read plan | spawn plan | host plan              |
//! |---------------|-----------|----------------|------------|------------------------|
//! | `read`        | yes       | no             | no         | bundled core, `job.*`  |
//! | `exec`        | yes       | yes            | no         | no                     |
//! | `spawn`       | no        | no             | yes        | no                     |
//! | `control`     | yes       | no             | no         | bundled core, `job.*`  |
//!
//! A host plan is allowed only to the bundled core component, only for its
//! own `job.` verbs, and only naming the verb it plans for.

use crate::error::{ErrorCode, OpError};
use crate::registry::fence::{namespace, CORE_NAMESPACE};
use crate::registry::{Source, Verb};
use crate::runtime::model::{Plan, VerbKind};

/// The wire name of a plan's kind.
pub fn plan_kind(plan: &Plan) -> &'static str {
    match plan {
        Plan::Exec(_) => "exec",
        Plan::Spawn(_) => "spawn",
        Plan::Host(_) => "host",
        Plan::ExecRead { .. } => "exec_read",
    }
}

/// Refuse a plan whose kind the verb's declared kind does not allow
/// (`plan_refused`, naming the verb, both kinds and the plugin).
pub fn check_plan_kind(verb: &Verb, plan: &Plan) -> Result<(), OpError> {
    let core_job_verb = verb.plugin.source == Source::Bundled && verb.plugin.name == "core" && namespace(&verb.name) == CORE_NAMESPACE;
    let allowed = match (verb.kind, plan) {
        (VerbKind::Read | VerbKind::Exec | VerbKind::Control, Plan::Exec(_)) => true,
        (VerbKind::Exec, Plan::ExecRead { .. }) => true,
        (VerbKind::Spawn, Plan::Spawn(_)) => true,
        (VerbKind::Read | VerbKind::Control, Plan::Host(call)) => core_job_verb && call.name == verb.name,
        _ => false,
    };
    if allowed {
        return Ok(());
    }
    let (declared, planned) = (verb.kind.as_str(), plan_kind(plan));
    let why = match plan {
        Plan::Host(_) => "host operations are planned only by the bundled core, for its own job verbs".to_string(),
        _ => format!(
            "a `{declared}` verb may not plan a `{planned}`: the declared kind decides which checks an op passes (a spawn needs the schema fingerprint)"
        ),
    };
    Err(OpError::new(
        ErrorCode::PlanRefused,
        format!("`{}` is declared `{declared}` but plugin `{}` planned a `{planned}`; {why}. Nothing ran", verb.name, verb.plugin.name),
    )
    .with("verb", verb.name.as_str())
    .with("verb_kind", declared)
    .with("plan_kind", planned)
    .with("plugin", verb.plugin.name.as_str()))
}
