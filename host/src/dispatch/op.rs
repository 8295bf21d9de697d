//! Running one op through the flow: resolve the verb, validate args against
//! its closed schema, check the fingerprint (spawn verbs), ask the plugin for
//! a plan, check and render the plan, run it natively, and map the outcome
//! through the plugin, checking the result against the declared schema.

use serde_json::{json, Value};
use std::sync::Arc;

use super::audit::Trail;
use super::caller::Caller;
use super::policy::Rule;
use super::request::{OpRequest, TARGET_BYTES};
use super::turns::{Access, Slot};
use super::Dispatcher;
use crate::config::Decision;
use crate::error::{ErrorCode, OpError};
use crate::exec::{run_command, Prepared};
use crate::jobs::SpawnRequest;
use crate::json::near_matches;
use crate::registry::schema;
use crate::registry::Verb;
use crate::runtime::bounds::{check_command, Exceeded, PluginBounds, ERROR_CODE_BYTES};
use crate::runtime::model::VerbKind;
use crate::runtime::model::{Command, Outcome, Plan, PluginOpError};
use crate::runtime::Ready;

/// The result of one op, before it is put in the envelope.
pub struct OpOutcome {
    /// The op name as the caller wrote it.
    pub op: String,
    /// The verb it resolved to, if any (errors then carry its schema).
    pub verb: Option<Arc<Verb>>,
    /// The result or the error.
    pub result: Result<Value, OpError>,
}

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

/// How long an op naming an unknown verb waits for background compiles.
const LOADING_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

impl Dispatcher {
    /// The registry to look `name` up in: if it is unknown while components
    /// are still compiling in the background, wait for them (it may be one
    /// of theirs) rather than call it unknown.
    pub(crate) async fn registry_for(&self, name: &str) -> Arc<crate::registry::Registry> {
        let registry = self.registry();
        if registry.resolve(name).is_some() || registry.deferred().is_empty() {
            return registry;
        }
        self.live_registry().wait_loaded(LOADING_WAIT).await;
        self.registry()
    }

    /// Run one op to its outcome. Never panics on caller input.
    pub(crate) async fn run_op(&self, req: OpRequest, caller: &Caller, trail: &mut Trail) -> OpOutcome {
        let registry = self.registry_for(&req.op).await;
        let Some(verb) = registry.resolve(&req.op).cloned() else {
            if let Some(err) = registry.unavailable_error(&req.op) {
                return OpOutcome { op: req.op, verb: None, result: Err(err) };
            }
            let hints = near_matches(&req.op, registry.verb_names());
            let mut msg = format!("no verb named `{}`", req.op);
            match hints.first() {
                Some(h) => msg.push_str(&format!("; did you mean `{h}`?")),
                None => msg.push_str("; ask {\"help\": true} for the catalog"),
            }
            let err = OpError::new(ErrorCode::UnknownVerb, msg).with("verb", req.op.as_str()).with("did_you_mean", hints);
            return OpOutcome { op: req.op, verb: None, result: Err(err) };
        };
        let result = self.run_verb(&verb, &req, caller, trail).await;
        OpOutcome { op: req.op, verb: Some(verb), result }
    }

    async fn run_verb(&self, verb: &Arc<Verb>, req: &OpRequest, caller: &Caller, trail: &mut Trail) -> Result<Value, OpError> {
        // A denied verb is refused before anything about it runs, even the
        // plugin's `plan`; an `ask` is settled once the plan shows what will run.
        let rule = self.policy.decide(verb);
        trail.decision = Some(rule.rule.decision);
        trail.decided_by = Some(rule.name());
        if rule.rule.decision == Decision::Deny {
            return Err(super::gate::denied(verb, rule));
        }
        // From here the op's checks look at the root: it holds its turn
        // (alone if it may change the root) until its program is done.
        let mut slot = Slot::take(&self.turns, Access::of(verb)).await?;
        let reordered;
        let (target, req) = if verb.two_stage {
            let (target, args) = self.check_target(verb, req, caller).await?;
            if let (Some(name), Some(fp)) = (target["name"].as_str(), target["fingerprint"].as_str()) {
                slot.target = Some((name.to_string(), fp.to_string()));
            }
            reordered = OpRequest { args, ..req.clone() };
            (Some(target), &reordered)
        } else {
            verb.validate_args(&req.args)?;
            if verb.kind == VerbKind::Spawn {
                check_fingerprint(verb, req.fingerprint.as_deref())?;
            }
            (None, req)
        };
        let mut result = self.execute(verb, req, rule, caller, trail, &mut slot).await?;
        if let (Some(t), Value::Object(map)) = (target, &mut result) {
            map.insert("target".into(), t);
        }
        Ok(result)
    }

    /// A two-stage verb's op: re-resolve its target now, validate the args
    /// against the resolved schema, and say whether the target changed since
    /// the caller read its fingerprint (the change is reported, not refused:
    /// the args still had to validate against the target as it is now).
    async fn check_target(&self, verb: &Arc<Verb>, req: &OpRequest, caller: &Caller) -> Result<(Value, Value), OpError> {
        let name = req.args.get("target").and_then(Value::as_str).ok_or_else(|| {
            OpError::new(ErrorCode::InvalidArgs, format!("`{}` needs `target`; list them with {{\"help\": \"{}\"}}", verb.name, verb.name))
                .with("param", "target")
        })?;
        // As in `help: "<verb>:<target>"`: no target name is longer, and the
        // name is quoted back in messages and handed to the plugin.
        if name.len() > TARGET_BYTES {
            return Err(OpError::new(ErrorCode::InvalidArgs, format!("`target` is {} bytes; no target name is longer than {TARGET_BYTES} bytes", name.len()))
                .with("param", "target")
                .with("limit", TARGET_BYTES)
                .with("actual", name.len()));
        }
        let resolved = self.resolve_target(verb, name, caller).await?;
        let help_call = json!({ "help": format!("{}:{name}", verb.name) });
        schema::validate_args(&resolved.validator, &resolved.schema, &verb.name, &req.args).map_err(|e| {
            e.with("target_schema", resolved.schema.clone()).with("target_fingerprint", resolved.fingerprint.as_str()).with("target_help", help_call.clone())
        })?;
        let given = req.fingerprint.as_deref();
        if verb.kind == VerbKind::Spawn && given.is_none() {
            return Err(OpError::new(
                ErrorCode::FingerprintRequired,
                format!("`{}` starts a job, so the op must carry the target's `schema_fingerprint` (from {help_call}, also included here)", verb.name),
            )
            .with("target_schema", resolved.schema.clone())
            .with("target_fingerprint", resolved.fingerprint.as_str())
            .with("target_help", help_call));
        }
        let changed = given.is_some_and(|g| g != resolved.fingerprint);
        let info = json!({ "name": name, "fingerprint": resolved.fingerprint, "fingerprint_given": given, "changed": changed });
        Ok((info, in_schema_order(&resolved.schema, &req.args, &verb.name)?))
    }

    async fn execute(&self, verb: &Arc<Verb>, req: &OpRequest, rule: &Rule, caller: &Caller, trail: &mut Trail, slot: &mut Slot<'_>) -> Result<Value, OpError> {
        let args_text = req.args.to_string();
        let runtime = &self.runtime;
        let component = &verb.plugin.component;
        let plan = runtime
            .plan(component, &verb.name, &args_text)
            .await
            .map_err(|e| e.to_op_error(&verb.plugin.name))?
            .map_err(|e| self.plugin_error(&verb.plugin.name, e))?;
        super::kind::check_plan_kind(verb, &plan)?;
        let outcome = match plan {
            Plan::Exec(cmd) => {
                let prepared = self.prepare(verb, &cmd).await?;
                trail.ran(&prepared);
                if req.dry_run {
                    trail.dry_run = true;
                    return self.dry_run(verb, json!({ "dry_run": true, "plan": { "kind": "exec", "command": prepared.to_json() } }));
                }
                self.consent(verb, req, rule, &[&prepared], caller, trail, slot).await?;
                self.recheck(verb, caller, slot, &[(&cmd, &prepared)]).await?;
                self.begin(caller, verb, trail).await?;
                // map-result's instance is made while the program runs.
                let (outcome, ready) = tokio::join!(run_command(&prepared, self.run_limits.capture_bytes), runtime.ready(component));
                return self.map_outcome(verb, &args_text, &outcome?, ready).await;
            }
            Plan::ExecRead { run, read_back } => {
                // Both commands pass every check before either runs, so a
                // refused read-back never leaves a write half-reported.
                let prepared = self.prepare(verb, &run).await?;
                let then = self.prepare(verb, &read_back).await?;
                trail.ran(&prepared);
                trail.reads_back(&then);
                if req.dry_run {
                    trail.dry_run = true;
                    return self.dry_run(
                        verb,
                        json!({ "dry_run": true, "plan": { "kind": "exec_read", "command": prepared.to_json(), "read_back": then.to_json() } }),
                    );
                }
                self.consent(verb, req, rule, &[&prepared, &then], caller, trail, slot).await?;
                self.recheck(verb, caller, slot, &[(&run, &prepared), (&read_back, &then)]).await?;
                self.begin(caller, verb, trail).await?;
                let (outcome, ready) = tokio::join!(self.run_then_read(verb, &prepared, &read_back, &then), runtime.ready(component));
                return self.map_outcome(verb, &args_text, &outcome?, ready).await;
            }
            Plan::Spawn(cmd) => {
                let prepared = self.prepare(verb, &cmd).await?;
                trail.ran(&prepared);
                if req.dry_run {
                    trail.dry_run = true;
                    return self.dry_run(verb, json!({ "dry_run": true, "plan": { "kind": "spawn", "command": prepared.to_json() } }));
                }
                self.consent(verb, req, rule, &[&prepared], caller, trail, slot).await?;
                self.recheck(verb, caller, slot, &[(&cmd, &prepared)]).await?;
                self.begin(caller, verb, trail).await?;
                let job = self.jobs()?.spawn(SpawnRequest {
                    owner: &caller.owner,
                    verb: &verb.name,
                    plugin: &verb.plugin.name,
                    plugin_digest: &verb.plugin.digest,
                    args: &args_text,
                    prepared: &prepared,
                    time_limit: cmd.timeout_ms.map(|ms| std::time::Duration::from_millis(ms.into())),
                })?;
                trail.job_id = Some(job.id.clone());
                return Ok(json!({
                    "job": { "id": job.id, "kind": job.verb, "label": job.label, "status": job.status().as_str(), "time_limit_ms": job.time_limit_ms },
                    "next": { "op": "job.wait", "args": { "ids": [job.id] } },
                }));
            }
            Plan::Host(call) => {
                if req.dry_run {
                    trail.dry_run = true;
                    let args = serde_json::from_str::<Value>(&call.args).unwrap_or(Value::Null);
                    return self.dry_run(verb, json!({ "dry_run": true, "plan": { "kind": "host", "call": call.name, "args": args } }));
                }
                self.consent(verb, req, rule, &[], caller, trail, slot).await?;
                slot.take_again().await?;
                // Of the host's job operations only a kill acts (the others
                // read the job store): its row is durable before it runs,
                // the readers' rows are queued like a refusal's.
                if crate::jobs::ops::acts(&call.name) {
                    self.begin(caller, verb, trail).await?;
                }
                let result = self.host_call(verb, &call, caller, trail).await?;
                Outcome { exit_code: Some(0), host_result: Some(result.to_string()), ..Outcome::default() }
            }
        };
        self.map_outcome(verb, &args_text, &outcome, None).await
    }

    /// Run an `exec-read` plan: `run`, then — only when it exited 0 with
    /// its stdout whole — the read-back, whose outcome rides along as
    /// `read_back`. The write may have changed what the checks saw (a
    /// switched branch brings other files; a directory may now be a
    /// symlink), so the read-back is prepared again and runs only if it is
    /// still exactly the command that was checked and shown (`checked`).
    async fn run_then_read(&self, verb: &Verb, run: &Prepared, read_back: &Command, checked: &Prepared) -> Result<Outcome, OpError> {
        let capture = self.run_limits.capture_bytes;
        let mut outcome = run_command(run, capture).await?;
        if outcome.exit_code == Some(0) && !outcome.stdout_truncated {
            let again = self.prepare(verb, read_back).await.map_err(read_back_failed)?;
            if again != *checked {
                return Err(read_back_failed(
                    OpError::new(ErrorCode::PlanRefused, "the read-back resolves differently after the write (a path or directory changed), so it was not run")
                        .with("plugin", verb.plugin.name.as_str()),
                ));
            }
            outcome.read_back = Some(Box::new(run_command(&again, capture).await.map_err(read_back_failed)?));
        }
        Ok(outcome)
    }

    /// After a person was asked (the op's turn given back meanwhile), take
    /// the turn again and make the checks again: the root may have changed
    /// while the question was open, so the op runs only if its commands
    /// still resolve to exactly what the person was shown.
    /// A two-stage verb's target is resolved again too: its recipe may
    /// have changed (a branch switched) while the argv stayed the same.
    async fn recheck(&self, verb: &Arc<Verb>, caller: &Caller, slot: &mut Slot<'_>, shown: &[(&Command, &Prepared)]) -> Result<(), OpError> {
        if !slot.take_again().await? {
            return Ok(());
        }
        if let Some((name, fingerprint)) = slot.target.clone() {
            let now = self.resolve_target(verb, &name, caller).await?;
            if now.fingerprint != fingerprint {
                return Err(OpError::new(
                    ErrorCode::PlanRefused,
                    format!("the target `{name}` changed while the person was asked (its fingerprint is now {}); nothing ran. Send the op again to be asked about it as it is now", now.fingerprint),
                )
                .with("target", name.as_str())
                .with("target_fingerprint", now.fingerprint.as_str()));
            }
        }
        for (cmd, prepared) in shown {
            let again = self.prepare(verb, cmd).await?;
            if again != **prepared {
                return Err(OpError::new(
                    ErrorCode::PlanRefused,
                    "what the op would run changed while the person was asked (a path, directory or program now resolves differently); nothing ran. Send the op again to be asked about what it runs now",
                )
                .with("plugin", verb.plugin.name.as_str()));
            }
        }
        Ok(())
    }

    /// A dry run's answer, bounded like a plugin's result: it is made of
    /// the plugin's plan.
    fn dry_run(&self, verb: &Verb, answer: Value) -> Result<Value, OpError> {
        let bound = self.runtime.limits().bounds.dry_run_bytes;
        Exceeded::check("dry_run_bytes", bound, answer.to_string().len())
            .map_err(|e| e.to_op_error(&verb.plugin.name, "the dry run's plan as JSON (limits.plugin_output_bytes)"))?;
        Ok(answer)
    }

    /// Map a plugin's error under this runtime's bounds (see [`plugin_error`]).
    pub(crate) fn plugin_error(&self, plugin: &str, e: PluginOpError) -> OpError {
        plugin_error(plugin, e, &self.runtime.limits().bounds)
    }

    /// Check and resolve a plan's command, then apply the program's guard
    /// (host-set environment, the repository checks); a refusal caused by
    /// the plan itself names the plugin that made it. Every command a plugin
    /// plans (exec, spawn, a target's resolution, an entity kill) comes
    /// through here, so its size is bounded before anything is prepared
    /// from it.
    pub(crate) async fn prepare(&self, verb: &Verb, cmd: &crate::runtime::model::Command) -> Result<Prepared, OpError> {
        check_command(cmd, &self.runtime.limits().bounds).map_err(|e| e.to_op_error(&verb.plugin.name, "the plan"))?;
        let root = &self.config.root;
        let name_plugin = |e: OpError| if e.code == ErrorCode::PlanRefused { e.with("plugin", verb.plugin.name.as_str()) } else { e };
        let mut prepared = Prepared::from_command(cmd, &verb.programs, root, &self.config.env_allow, &self.run_limits).map_err(name_plugin)?;
        self.guards.harden(&mut prepared, root).map_err(name_plugin)?;
        self.confine(verb, &mut prepared)?;
        self.guards.check(&prepared, root).await?;
        Ok(prepared)
    }

    /// Give the command its OS sandbox profile, from the verb's effects
    /// (none only when the operator turned the sandbox off). Refused with
    /// `sandbox_unavailable` where the kernel cannot enforce it, or where
    /// the profile would reach `$VERBGATE_HOME` (inside the root).
    fn confine(&self, verb: &Verb, prepared: &mut Prepared) -> Result<(), OpError> {
        if self.config.sandbox.mode == crate::config::SandboxMode::Off {
            return Ok(());
        }
        if let Some(why) = &crate::sandbox::support().missing {
            return Err(crate::sandbox::unavailable(why));
        }
        let root = &self.config.root;
        let profile = profile_for(&self.config, verb, &prepared.name, &prepared.program, &prepared.env);
        let home = &self.config.home;
        if let Some(p) = profile.read.iter().chain(&profile.write).find(|p| home.starts_with(p) && p.starts_with(root)) {
            return Err(crate::sandbox::unavailable(&format!(
                "VERBGATE_HOME {} lies inside {}, which the program may reach; serve a root that does not hold verbgate's home, or move the home",
                home.display(),
                p.display()
            )));
        }
        if !profile.network && crate::exec::guard::Guarded::of(prepared) == Some(crate::exec::guard::Guarded::Cargo) {
            // Without the network cargo works offline, and says so when a
            // dependency is missing, instead of failing on a refused socket.
            prepared.env.insert("CARGO_NET_OFFLINE".into(), "true".into());
        }
        prepared.sandbox = Some(profile);
        Ok(())
    }

    pub(crate) async fn map_outcome(&self, verb: &Arc<Verb>, args_text: &str, outcome: &Outcome, ready: Option<Ready>) -> Result<Value, OpError> {
        let text = self
            .runtime
            .map_result(&verb.plugin.component, &verb.name, args_text, outcome, ready)
            .await
            .map_err(|e| e.to_op_error(&verb.plugin.name))?
            .map_err(|e| self.plugin_error(&verb.plugin.name, e))?;
        let value: Value = serde_json::from_str(&text).map_err(|e| {
            OpError::new(ErrorCode::InvalidOutput, format!("plugin `{}` returned a result that is not JSON: {e}", verb.plugin.name))
                .with("plugin", verb.plugin.name.as_str())
        })?;
        let problems = verb.result_problems(&value);
        if !problems.is_empty() {
            return Err(OpError::new(
                ErrorCode::InvalidOutput,
                format!("plugin `{}` returned a result that does not match `{}`'s declared result schema: {}", verb.plugin.name, verb.name, problems[0]),
            )
            .with("plugin", verb.plugin.name.as_str())
            .with("problems", problems));
        }
        Ok(value)
    }
}

/// The OS sandbox profile of `verb`'s program `name` (resolved to
/// `program`, run with `env`) under `config`.
pub fn profile_for(
    config: &crate::config::Config,
    verb: &Verb,
    name: &str,
    program: &std::path::Path,
    env: &std::collections::BTreeMap<String, String>,
) -> crate::sandbox::Profile {
    let root = &config.root;
    crate::sandbox::Profile::derive(&crate::sandbox::profile::Inputs {
        verb: &verb.name,
        effects: &verb.effects,
        root,
        program,
        env,
        widen: &config.sandbox.allow,
        also_read: crate::exec::guard::ancestors::read_above_root(name, program, root),
    })
}

/// The args in the order the schema declares its properties — the order a
/// target's positional parameters take (`just r a b c`). A parameter left
/// out before one that was given would shift every later value one place
/// left (`{a, c}` of `r a b=(expr) c="z"` ran `just r 1 3`, giving `b` the
/// value of `c`), so it is filled with its literal default, and refused
/// when it has none (an expression default only the program could compute).
fn in_schema_order(schema: &Value, args: &Value, verb: &str) -> Result<Value, OpError> {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else { return Ok(args.clone()) };
    let last_given = props.keys().rposition(|k| args.get(k).is_some());
    let mut out = serde_json::Map::new();
    for (i, (name, prop)) in props.iter().enumerate() {
        match args.get(name) {
            Some(v) => {
                out.insert(name.clone(), v.clone());
            }
            None if last_given.is_some_and(|last| i < last) => match prop.get("default") {
                Some(d) => {
                    out.insert(name.clone(), d.clone());
                }
                None => {
                    let later = props.keys().skip(i + 1).find(|k| args.get(*k).is_some()).cloned().unwrap_or_default();
                    return Err(OpError::new(
                        ErrorCode::InvalidArgs,
                        format!("`{name}` is left out but `{later}` after it is given; parameters are passed by position and `{name}` has no literal default, so pass `{name}` explicitly (its default is computed by the program and cannot be filled in here)"),
                    )
                    .with("param", name.as_str())
                    .with("verb", verb));
                }
            },
            None => {}
        }
    }
    Ok(Value::Object(out))
}

/// Spawn verbs must carry the fingerprint of the schema the caller read.
fn check_fingerprint(verb: &Verb, given: Option<&str>) -> Result<(), OpError> {
    match given {
        Some(fp) if fp == verb.fingerprint => Ok(()),
        Some(fp) => Err(OpError::new(
            ErrorCode::FingerprintStale,
            format!(
                "`{}`'s schema changed since it was read (you sent {fp}); re-read it with {{\"help\": \"{}\"}} or use the schema and fingerprint included here",
                verb.name, verb.name
            ),
        )
        .with("given", fp)),
        None => Err(OpError::new(
            ErrorCode::FingerprintRequired,
            format!("`{}` starts a job, so the op must carry `schema_fingerprint` (from {{\"help\": \"{}\"}}, also included here)", verb.name, verb.name),
        )),
    }
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
    if let Some(details) = e.details.as_deref().and_then(|d| serde_json::from_str::<Value>(d).ok()) {
        err = err.with("plugin_details", details);
    }
    if known.is_none() {
        err = err.with("plugin_code", e.code.as_str());
    }
    err.with("plugin", plugin)
}

/// An error of an `exec-read` plan's read-back: the write already ran and
/// exited 0, which the caller must learn (a retried commit commits twice).
fn read_back_failed(e: OpError) -> OpError {
    let message = format!("the write ran and exited 0, but its read-back failed, so the new state is unknown (do not simply retry the write): {}", e.message);
    OpError { message, ..e }.with("wrote", true)
}
