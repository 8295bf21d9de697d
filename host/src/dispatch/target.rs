//! Two-stage verbs (SPEC §2.1): a verb whose parameters depend on a target
//! — a just recipe, a playbook — resolved through the plugin at help time
//! (`help: "<verb>:<target>"`) and again at every run, so a caller always
//! validates against the target as it is now and learns when it changed.

use jsonschema::Validator;
use serde_json::{json, Value};
use std::sync::Arc;

use super::audit::Trail;
use super::caller::Caller;
use super::op::OpOutcome;
use super::turns::{Access, Slot};
use super::Dispatcher;
use crate::config::Decision;
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
    pub(crate) async fn resolve_target(&self, verb: &Arc<Verb>, target: &str, caller: &Caller) -> Result<ResolvedTarget, OpError> {
        let mut trail = self.trail(&json!({ "resolve_target": target }));
        let rule = self.policy().decide(verb);
        trail.decision = Some(rule.rule.decision);
        trail.decided_by = Some(rule.name());
        let result = self.resolve_target_traced(verb, target, caller, &mut trail).await;
        if trail.program.is_some() {
            let result = result.as_ref().map(|_| Value::Null).map_err(Clone::clone);
            self.record(caller, &OpOutcome { op: verb.name.clone(), verb: Some(Arc::clone(verb)), result }, trail);
        }
        result
    }

    async fn resolve_target_traced(&self, verb: &Arc<Verb>, target: &str, caller: &Caller, trail: &mut Trail) -> Result<ResolvedTarget, OpError> {
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
        self.begin(caller, verb, trail).await?;
        let outcome = run_command(&prepared, self.run_limits.capture_bytes).await?;
        let resolved = runtime
            .resolve(&verb.plugin.component, &verb.name, target, &outcome)
            .await
            .map_err(|e| e.to_op_error(plugin))?
            .map_err(|e| self.plugin_error(plugin, e))?;
        let bad = |what: String| OpError::new(ErrorCode::InvalidOutput, format!("plugin `{plugin}` resolved `{target}` badly: {what}")).with("plugin", plugin);
        // A resolved target is plugin text like `describe`'s, bounded the same.
        let bounds = runtime.limits().bounds;
        Exceeded::check("schema_bytes", bounds.schema_bytes, resolved.params_schema.len())
            .map_err(|e| e.to_op_error(plugin, "the resolved target's schema (limits.plugin_schema_bytes)"))?;
        Exceeded::check("summary_bytes", SUMMARY_BYTES, resolved.summary.len()).map_err(|e| e.to_op_error(plugin, "the resolved target's summary"))?;
        if let Some(c) = control_character(resolved.summary.trim()) {
            return Err(bad(format!("its summary contains the control character {c:?}; plugin text is refused, not cleaned")));
        }
        let schema: Value = serde_json::from_str(&resolved.params_schema).map_err(|e| bad(format!("the schema is not JSON ({e})")))?;
        let identity: Value = serde_json::from_str(&resolved.identity).map_err(|e| bad(format!("the identity is not JSON ({e})")))?;
        if let Some(p) = open_objects(&schema).first() {
            return Err(bad(format!("the resolved schema is open at {p}")));
        }
        let validator = compile(&schema).map_err(|e| bad(format!("the schema is invalid ({e})")))?;
        let fingerprint = fingerprint(&json!({ "schema": schema, "identity": identity }));
        Ok(ResolvedTarget { schema, summary: resolved.summary, identity, fingerprint, validator })
    }

    /// What the OS sandbox does to `verb`'s programs, for its contract: the
    /// root's access and the network, or why nothing can run confined.
    fn sandbox_note(&self, verb: &Verb) -> Value {
        if self.config.sandbox.mode == crate::config::SandboxMode::Off {
            return json!({ "enforced": false, "note": "the operator turned the sandbox off: programs run with the user's full rights" });
        }
        if let Some(why) = &crate::sandbox::support().missing {
            return json!({ "enforced": false, "note": format!("ops that start a program answer sandbox_unavailable: {why}") });
        }
        let Some((name, program)) = verb.programs.iter().next() else { return json!({ "enforced": true, "note": "runs no program" }) };
        let env: std::collections::BTreeMap<String, String> =
            self.config.env_allow.iter().filter_map(|n| std::env::var(n).ok().map(|v| (n.clone(), v))).collect();
        let p = super::op::profile_for(&self.config, verb, name, program, &env);
        let root = &self.config.root;
        let access = if p.write.iter().any(|w| w == root) {
            "read-write"
        } else if p.read.iter().any(|r| r == root) {
            "read-only"
        } else {
            "none"
        };
        json!({ "enforced": true, "root": access, "network": p.network, "note": "`verbgate doctor` lists every path" })
    }

    /// `help: "<verb>"` for a two-stage verb gets its targets listed;
    /// `help: "<verb>:<target>"` gets the resolved contract.
    ///
    /// A verb the policy denies gets its contract but runs nothing, not
    /// even its target resolution; a resolution takes a shared turn on the
    /// root like any reading op.
    pub(crate) async fn help_with_target(&self, name: &str, caller: &Caller) -> Result<Value, OpError> {
        let (verb_name, target) = match name.split_once(':') {
            Some((v, t)) => (v, Some(t)),
            None => (name, None),
        };
        let registry = self.registry_for(verb_name).await;
        let mut contract = super::help::verb_help(&registry, verb_name)?;
        let verb = registry.resolve(verb_name).cloned().expect("verb_help found it");
        contract["policy"] = super::help::policy_note(&verb, &self.policy);
        contract["sandbox"] = self.sandbox_note(&verb);
        if !verb.two_stage {
            if target.is_some() {
                return Err(OpError::new(ErrorCode::InvalidRequest, format!("`{}` has no targets; ask {{\"help\": \"{}\"}}", verb.name, verb.name))
                    .with("verb", verb.name.as_str()));
            }
            return Ok(contract);
        }
        let rule = self.policy().decide(&verb);
        let denied = (rule.rule.decision == Decision::Deny).then(|| super::gate::denied(&verb, rule));
        let _turn = match denied {
            Some(_) => None,
            None => Some(Slot::take(&self.turns, Some(Access::Shared)).await?),
        };
        match target {
            None | Some("") => {
                // The contract stands even when the targets cannot be listed
                // (no justfile here, say): the reason is shown beside it.
                let listing = match denied {
                    Some(e) => Err(e),
                    None => self.resolve_target(&verb, "", caller).await,
                };
                match listing {
                    Ok(listing) => contract["targets"] = listing.identity.get("targets").cloned().unwrap_or(Value::Array(vec![])),
                    Err(e) => {
                        contract["targets"] = Value::Null;
                        contract["targets_error"] = e.to_json();
                    }
                }
                contract["target_help"] = json!(format!("{{\"help\": \"{}:<target>\"}} gives a target's parameters and fingerprint", verb.name));
                Ok(contract)
            }
            Some(t) => {
                if let Some(e) = denied {
                    return Err(e);
                }
                let r = self.resolve_target(&verb, t, caller).await?;
                Ok(json!({
                    "verb": verb.name,
                    "target": t,
                    "kind": verb.kind.as_str(),
                    "summary": r.summary,
                    "params_schema": r.schema,
                    "schema_fingerprint": r.fingerprint,
                    "fingerprint_required": verb.kind == crate::runtime::model::VerbKind::Spawn,
                    "resolved": r.identity,
                    "effects": contract["effects"],
                    "policy": contract["policy"],
                    "plugin": contract["plugin"],
                }))
            }
        }
    }
}
