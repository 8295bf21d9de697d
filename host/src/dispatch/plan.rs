//! Stage 4 of an op: ask the verb's plugin for a plan, and check that the
//! plan is of the kind its verb declares. The declared kind decides which
//! gates an op passes before the plugin is asked for a plan (a spawn verb
//! needs the caller's fingerprint), so a plan of another kind would walk
//! around them: a `read` verb whose plan was a spawn once started a job
//! with no fingerprint.
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

use serde_json::Value;

use crate::error::{ErrorCode, OpError};
use crate::registry::fence::{namespace, CORE_NAMESPACE};
use crate::registry::{Source, Verb};
use crate::runtime::bounds::{Exceeded, PluginBounds, ERROR_CODE_BYTES};
use crate::runtime::model::{Plan, PluginOpError, VerbKind};

use super::Dispatcher;

/// Codes a plugin may report as they are; anything else becomes
/// `plugin_error` with the plugin's code kept in `plugin_code`.
const PLUGIN_CODES: &[ErrorCode] = &[
    ErrorCode::InvalidArgs,
    ErrorCode::ExitNonzero,
    ErrorCode::InvalidOutput,
    ErrorCode::NotFound,
    ErrorCode::AmbiguousId,
    ErrorCode::Unavailable,
    ErrorCode::Timeout,
    ErrorCode::UnknownVerb,
];

impl Dispatcher {
    /// The plugin's plan for `verb` called with `args_text`, of a kind the
    /// verb may plan.
    pub(crate) async fn plan(&self, verb: &Verb, args_text: &str) -> Result<Plan, OpError> {
        let plan = self
            .runtime
            .plan(&verb.plugin.component, &verb.name, args_text)
            .await
            .map_err(|e| e.to_op_error(&verb.plugin.name))?
            .map_err(|e| self.plugin_error(&verb.plugin.name, e))?;
        check_plan_kind(verb, &plan)?;
        Ok(plan)
    }

    /// Map a plugin's error under this runtime's bounds (see [`plugin_error`]).
    pub(crate) fn plugin_error(&self, plugin: &str, e: PluginOpError) -> OpError {
        plugin_error(plugin, e, &self.runtime.limits().bounds)
    }
}

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
    let core_job_verb = verb.plugin.source == Source::Bundled
        && verb.plugin.name == "core"
        && namespace(&verb.name) == CORE_NAMESPACE;
    let allowed = match (verb.kind, plan) {
        (VerbKind::Read | VerbKind::Exec | VerbKind::Control, Plan::Exec(_)) => true,
        (VerbKind::Exec, Plan::ExecRead { .. }) => true,
        (VerbKind::Spawn, Plan::Spawn(_)) => true,
        (VerbKind::Read | VerbKind::Control, Plan::Host(call)) => {
            core_job_verb && call.name == verb.name
        }
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

/// Map a plugin's error into the closed vocabulary. Its text is bounded
/// (`error_code_bytes`, `error_message_bytes`, `error_details_bytes`: past
/// one, the op is a `plugin_limit` instead), and its details are kept under
/// `plugin_details`, never merged into the host's keys: a plugin must not
/// be able to set `ok`, `op`, `help` or `schema_fingerprint` in what the
/// caller reads as the host's answer.
pub(crate) fn plugin_error(plugin: &str, e: PluginOpError, bounds: &PluginBounds) -> OpError {
    let measured = Exceeded::check("error_code_bytes", ERROR_CODE_BYTES, e.code.len())
        .map_err(|x| (x, "the error code"))
        .and_then(|()| {
            Exceeded::check("error_message_bytes", bounds.error_message_bytes, e.message.len())
                .map_err(|x| (x, "the error message (limits.plugin_error_message_bytes)"))
        })
        .and_then(|()| {
            let details = e.details.as_ref().map_or(0, String::len);
            Exceeded::check("error_details_bytes", bounds.error_details_bytes, details)
                .map_err(|x| (x, "the error details (limits.plugin_error_details_bytes)"))
        });
    if let Err((exceeded, what)) = measured {
        return exceeded.to_op_error(plugin, what);
    }
    let known = ErrorCode::from_wire(&e.code).filter(|c| PLUGIN_CODES.contains(c));
    let mut err = OpError::new(known.unwrap_or(ErrorCode::PluginError), e.message);
    if let Some(details) = e.details.as_deref().and_then(|d| serde_json::from_str::<Value>(d).ok())
    {
        err = err.with("plugin_details", details);
    }
    if known.is_none() {
        err = err.with("plugin_code", e.code.as_str());
    }
    err.with("plugin", plugin)
}
