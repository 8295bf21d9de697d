//! Two-stage verbs (SPEC §2.1): a verb whose parameters depend on a target
//! — a just recipe, a playbook — resolved through the plugin at help time
//! (`help: "<verb>:<target>"`) and again at every run, so a caller always
//! validates against the target as it is now and learns when it changed.

use jsonschema::Validator;
use serde_json::{json, Value};
use std::sync::Arc;

use super::caller::Caller;
use super::outcome::OpOutcome;
use super::record::Trail;
use super::Dispatcher;
use crate::error::{ErrorCode, OpError};
use crate::exec::run_command;
use crate::json::fingerprint;
use crate::registry::schema::{compile, open_objects};
use crate::registry::Verb;
use crate::runtime::bounds::{control_character, Exceeded, SUMMARY_BYTES};

/// A resolved target.
pub struct ResolvedTarget {
    /// Closed params schema for the target.
    pub schema: Value,
    /// One line about it.
    pub summary: String,
    /// What was resolved.
    pub identity: Value,
    /// `sha256:` of schema + identity: changes when the target is edited.
    pub fingerprint: String,
    /// Validator for `schema`.
    pub validator: Validator,
}

impl Dispatcher {
    /// Resolve `target` of a two-stage verb (empty: list the targets) for
    /// `caller`. Resolving starts a program (`just --dump`), so it has an
    /// audit row of its own, at help time and before an op alike (args
    /// `{"resolve_target": "<target>"}`). The caller holds a turn on the
    /// root.
    pub(crate) async fn resolve_target(
        &self,
        verb: &Arc<Verb>,
        target: &str,
        caller: &Caller,
    ) -> Result<ResolvedTarget, OpError> {
        let mut trail = self.ledger.trail(&json!({ "resolve_target": target }));
        let rule = self.policy().decide(verb, caller);
        trail.decision = Some(rule.rule.decision);
        trail.decided_by = Some(rule.name());
        let result = self.resolve_target_traced(verb, target, caller, &mut trail).await;
        if trail.program.is_some() {
            let result = result.as_ref().map(|_| Value::Null).map_err(Clone::clone);
            self.ledger.finish(
                caller,
                &OpOutcome { op: verb.name.clone(), verb: Some(Arc::clone(verb)), result },
                trail,
            );
        }
        result
    }

    async fn resolve_target_traced(
        &self,
        verb: &Arc<Verb>,
        target: &str,
        caller: &Caller,
        trail: &mut Trail,
    ) -> Result<ResolvedTarget, OpError> {
        let runtime = &self.runtime;
        let plugin = verb.plugin.name.as_str();
        let cmd = runtime
            .resolve_plan(&verb.plugin.component, &verb.name, target)
            .await
            .map_err(|e| e.to_op_error(plugin))?
            .map_err(|e| self.plugin_error(plugin, e))?;
        let mut prepared = self.prepare(verb, &cmd).await?;
        // Resolving a target only reads, whatever the verb does when it runs.
        prepared.sandbox = prepared.sandbox.map(|p| p.read_only());
        trail.ran(&prepared);
        self.ledger.begin(caller, verb, trail).await?;
        let outcome = run_command(&prepared, self.run_limits.capture_bytes).await?;
        let resolved = runtime
            .resolve(&verb.plugin.component, &verb.name, target, &outcome)
            .await
            .map_err(|e| e.to_op_error(plugin))?
            .map_err(|e| self.plugin_error(plugin, e))?;
        let bad = |what: String| {
            OpError::new(
                ErrorCode::InvalidOutput,
                format!("plugin `{plugin}` resolved `{target}` badly: {what}"),
            )
            .with("plugin", plugin)
        };
        // A resolved target is plugin text like `describe`'s, bounded the same.
        let bounds = runtime.limits().bounds;
        Exceeded::check("schema_bytes", bounds.schema_bytes, resolved.params_schema.len())
            .map_err(|e| {
                e.to_op_error(plugin, "the resolved target's schema (limits.plugin_schema_bytes)")
            })?;
        Exceeded::check("summary_bytes", SUMMARY_BYTES, resolved.summary.len())
            .map_err(|e| e.to_op_error(plugin, "the resolved target's summary"))?;
        if let Some(c) = control_character(resolved.summary.trim()) {
            return Err(bad(format!("its summary contains the control character {c:?}; plugin text is refused, not cleaned")));
        }
        let schema: Value = serde_json::from_str(&resolved.params_schema)
            .map_err(|e| bad(format!("the schema is not JSON ({e})")))?;
        let identity: Value = serde_json::from_str(&resolved.identity)
            .map_err(|e| bad(format!("the identity is not JSON ({e})")))?;
        if let Some(p) = open_objects(&schema).first() {
            return Err(bad(format!("the resolved schema is open at {p}")));
        }
        let validator =
            compile(&schema).map_err(|e| bad(format!("the schema is invalid ({e})")))?;
        let fingerprint = fingerprint(&json!({ "schema": schema, "identity": identity }));
        Ok(ResolvedTarget { schema, summary: resolved.summary, identity, fingerprint, validator })
    }
}
