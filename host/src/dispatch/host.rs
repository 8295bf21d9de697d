//! Host plans (a part of the run stage): the native operations behind the bundled core component's
//! job verbs. Only the bundled core may plan them — a plugin from disk that
//! asks for a host call is refused, so installing a component can never
//! grant it control over jobs.

use serde_json::{json, Value};

use super::caller::Caller;
use super::record::Trail;
use super::Dispatcher;
use crate::error::{ErrorCode, OpError};
use crate::exec::run_command;
use crate::jobs::model::{Job, Status, Stream};
use crate::jobs::ops::{kill, JobOp, KillArgs};
use crate::jobs::output::{read_all, read_prefix};
use crate::jobs::{process, Jobs};
use crate::registry::{Source, Verb};
use crate::runtime::model::{HostCall, Outcome};

/// Largest stdout (and stderr) of a finished job that `job.result` maps;
/// bigger outputs are read with `job.output`.
pub const RESULT_OUTPUT_BYTES: usize = 8 << 20;
/// How much of a running job's stdout its plugin sees to name the entity.
const ENTITY_OUTPUT_BYTES: usize = 64 << 10;
/// How long to wait for the end after the CLI's own kill succeeded.
const ENTITY_END_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

impl Dispatcher {
    /// The job subsystem, or why there is none.
    pub(crate) fn jobs(&self) -> Result<&Jobs, OpError> {
        self.jobs
            .as_ref()
            .ok_or_else(|| OpError::new(ErrorCode::Unavailable, "this verbgate has no job store"))
    }

    /// The jobs `caller` may see and act on: its own, or all of them for
    /// the local user and a token granted every job.
    pub(crate) fn jobs_for(&self, caller: &Caller) -> Result<Jobs, OpError> {
        Ok(self.jobs()?.viewed_by((!caller.all_jobs).then_some(caller.owner.as_str())))
    }

    /// Run a host call planned by `verb`.
    /// A program it starts (an entity-aware kill) goes into `trail`, and
    /// the op's row is made durable again before that program runs.
    pub(crate) async fn host_call(
        &self,
        verb: &Verb,
        call: &HostCall,
        caller: &Caller,
        trail: &mut Trail,
    ) -> Result<Value, OpError> {
        let trusted = verb.plugin.source == Source::Bundled && verb.plugin.name == "core";
        if !trusted {
            return Err(OpError::new(
                ErrorCode::PlanRefused,
                format!(
                    "plugin `{}` planned host operation `{}`; only the bundled core may",
                    verb.plugin.name, call.name
                ),
            )
            .with("plugin", verb.plugin.name.as_str()));
        }
        let op = JobOp::parse(&call.name, &call.args)?;
        match &op {
            JobOp::Result(a) => self.job_result(&a.id, caller).await,
            JobOp::Kill(a) => self.job_kill(a, verb, caller, trail).await,
            _ => self.jobs_for(caller)?.run(&op).await,
        }
    }

    /// `job.kill`. A running job whose verb's mapping names an *entity* (the
    /// fronted CLI's own id for the run) is killed by that plugin's
    /// `kill-plan`, run natively; its outcome is returned, and if it fails —
    /// or cannot be run at all: the plugin is no longer loaded, or its
    /// `kill-plan` names no command for the entity — `kill_failed` is
    /// returned. Never a fallback to signalling the process group, which
    /// would leave the CLI's own records claiming otherwise (SPEC §7.3).
    /// Without an entity, the process group is stopped by signals
    /// ([`crate::jobs::ops::kill`]). A job whose plugin is gone and that has
    /// no recorded entity cannot be asked for one; it is signalled.
    async fn job_kill(
        &self,
        args: &KillArgs,
        op_verb: &Verb,
        caller: &Caller,
        trail: &mut Trail,
    ) -> Result<Value, OpError> {
        let jobs = self.jobs_for(caller)?;
        let jobs = &jobs;
        let job = jobs.store().resolve(&args.id)?;
        // Its plugin may still be compiling after a restart: wait for it.
        let verb = self.registry_for(&job.verb, caller).await.resolve(&job.verb).cloned();
        if job.status().terminal() || (job.status() != Status::Running && job.entity.is_none()) {
            return jobs.run(&JobOp::Kill(args.clone())).await;
        }
        let entity = match (&job.entity, &verb) {
            (Some(e), _) => Some(e.clone()),
            (None, Some(verb)) => self.extract_entity(verb, &job).await,
            (None, None) => None,
        };
        let Some(entity) = entity else { return jobs.run(&JobOp::Kill(args.clone())).await };
        let Some(verb) = verb else {
            return Err(kill::entity_refusal(
                &job,
                &entity,
                &format!("`{}`, which started it, is no longer loaded, so that CLI's own kill cannot be planned", job.verb),
            ));
        };
        // The kill runs the job verb's plugin and a program it plans: a verb
        // the policy now denies runs nothing, not even its kill-plan (and
        // the job is not signalled either: no fallback).
        let rule = self.policy().decide(&verb, caller);
        if rule.rule.decision == crate::config::Decision::Deny {
            return Err(super::policy::denied(&verb, rule).with("id", job.id.as_str()));
        }
        let cmd = self
            .runtime
            .kill_plan(&verb.plugin.component, &verb.name, &entity)
            .await
            .map_err(|e| e.to_op_error(&verb.plugin.name))?;
        let Some(cmd) = cmd else {
            return Err(kill::entity_refusal(
                &job,
                &entity,
                &format!("plugin `{}`'s kill-plan names no command for it", verb.plugin.name),
            ));
        };
        // Its checks and its run take the job verb's turn on the root.
        let _turn = super::turns::Slot::take(&self.turns, super::turns::Access::of(&verb)).await?;
        let mut prepared = self.prepare(&verb, &cmd).await?;
        // The CLI's own kill stops a run started in another sandbox: it
        // must see and signal processes outside its own, so it gets no PID
        // namespace of its own either.
        if let Some(profile) = prepared.sandbox.as_mut() {
            profile.signals = true;
            profile.processes = None;
            // No namespaces, so no memory cgroup either (the wrapper makes it).
            profile.memory_mib = None;
        }
        trail.ran(&prepared);
        self.ledger.begin(caller, op_verb, trail).await?;
        let store = jobs.store();
        // Both marks go on before the CLI's kill runs: an end observed after
        // `kill_sent_ms` is the kill's; one before it is the job's own.
        let marked = kill::blocking(store, &job.id, |j| {
            if !j.status().terminal() {
                let now = process::now_ms();
                j.kill_requested_ms = Some(now);
                j.kill_sent_ms = Some(now);
            }
        })
        .await?;
        if marked.status().terminal() {
            return jobs.run(&JobOp::Kill(args.clone())).await;
        }
        // Take the marks off a job the kill did not end, so that its later
        // natural end is not recorded as `killed`.
        let unmark = || {
            kill::blocking(store, &job.id, |j| {
                if !j.status().terminal() {
                    j.kill_requested_ms = None;
                    j.kill_sent_ms = None;
                }
            })
        };
        let fail = |message: String| {
            OpError::new(ErrorCode::KillFailed, message)
                .with("id", job.id.as_str())
                .with("entity", serde_json::from_str::<Value>(&entity).unwrap_or(Value::Null))
                .with("signalled", false)
        };
        let outcome = match run_command(&prepared, self.run_limits.capture_bytes).await {
            Ok(o) => o,
            Err(e) => {
                let _ = unmark().await;
                return Err(fail(format!(
                    "the entity-aware kill of job {} could not run ({}); the job was left running and was not signalled",
                    job.id, e.message
                ))
                .with("cause", e.to_json()));
            }
        };
        let kill_report = json!({
            "program": prepared.name,
            "exit_code": outcome.exit_code,
            "signal": outcome.signal,
            "output": serde_json::from_slice::<Value>(&outcome.stdout).unwrap_or_else(|_| json!(String::from_utf8_lossy(&outcome.stdout))),
            "stderr": String::from_utf8_lossy(&outcome.stderr),
        });
        if outcome.exit_code != Some(0) {
            let _ = unmark().await;
            let stderr = String::from_utf8_lossy(&outcome.stderr).trim().to_string();
            return Err(fail(format!("the CLI's own kill of job {} failed ({stderr}); the job was left running and was not signalled", job.id))
                .with("kill", kill_report));
        }
        // The CLI stopped its run; the supervisor records the end.
        let deadline = std::time::Instant::now() + ENTITY_END_WAIT;
        let mut now = job.clone();
        while std::time::Instant::now() < deadline {
            now = jobs.store().resolve(&job.id)?;
            if now.status().terminal() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        let mut result = json!({
            "id": job.id,
            "killed": now.status() == Status::Killed,
            "delegated": true,
            "entity": serde_json::from_str::<Value>(&entity).unwrap_or(Value::Null),
            "kill": kill_report,
        });
        if now.status().terminal() {
            result["not_needed"] = json!(now.status() != Status::Killed);
        } else {
            now = unmark().await?;
            result["ended"] = json!(false);
            result["note"] = json!(format!(
                "the CLI's own kill reported success but job {} had not ended after {} s; it is still {} and its kill mark was cleared",
                job.id,
                ENTITY_END_WAIT.as_secs(),
                now.status().as_str()
            ));
        }
        result["job"] = now.to_json();
        Ok(result)
    }

    /// Ask the spawning plugin for the job's entity from its output so far,
    /// and store it on the job.
    async fn extract_entity(&self, verb: &Verb, job: &Job) -> Option<String> {
        let jobs = self.jobs.as_ref()?;
        let stdout = read_prefix(jobs.store(), &job.id, Stream::Stdout, ENTITY_OUTPUT_BYTES);
        let outcome = Outcome { stdout, running: true, ..Outcome::default() };
        let text = self
            .runtime
            .map_result(&verb.plugin.component, &verb.name, &job.args, &outcome, None)
            .await
            .ok()?
            .ok()?;
        let value: Value = serde_json::from_str(&text).ok()?;
        let entity = match &value["entity"] {
            v @ (Value::String(_) | Value::Number(_)) => v.to_string(),
            _ => return None,
        };
        let store = jobs.store().clone();
        let (id, e) = (job.id.clone(), entity.clone());
        let _ =
            tokio::task::spawn_blocking(move || store.update(&id, |j| j.entity = Some(e.clone())))
                .await;
        Some(entity)
    }

    /// `job.result`: a finished job's output mapped through the plugin that
    /// spawned it, saying so if that plugin changed since.
    async fn job_result(&self, id: &str, caller: &Caller) -> Result<Value, OpError> {
        let jobs = self.jobs_for(caller)?;
        let jobs = &jobs;
        let job = jobs.store().resolve(id)?;
        if !job.status().terminal() {
            return Err(OpError::new(
                ErrorCode::JobNotFinished,
                format!("job {} is {}; wait for it with job.wait", job.id, job.status().as_str()),
            )
            .with("id", job.id.as_str())
            .with("status", job.status().as_str()));
        }
        let read = |stream: Stream| -> Result<Vec<u8>, OpError> {
            read_all(jobs.store(), &job.id, stream, RESULT_OUTPUT_BYTES)?.ok_or_else(|| {
                OpError::new(
                    ErrorCode::OutputOverflow,
                    format!("job {}'s {} is larger than {RESULT_OUTPUT_BYTES} bytes; page through it with job.output", job.id, stream.name()),
                )
                .with("stream", stream.name())
                .with("limit_bytes", RESULT_OUTPUT_BYTES)
            })
        };
        let outcome = Outcome {
            exit_code: job.exit_code(),
            signal: job.signal(),
            stdout: read(Stream::Stdout)?,
            stderr: read(Stream::Stderr)?,
            ..Outcome::default()
        };
        let verb = self.registry_for(&job.verb, caller).await.resolve(&job.verb).cloned().ok_or_else(|| {
            OpError::new(
                ErrorCode::Unavailable,
                format!("`{}`, which started job {}, is no longer loaded, so its output cannot be mapped; read it with job.output", job.verb, job.id),
            )
        })?;
        let plugin_changed = verb.plugin.digest != job.plugin_digest;
        let mapped = self.map_outcome(&verb, &job.args, &outcome, None).await;
        let mut out = json!({
            "id": job.id,
            "kind": job.verb,
            "status": job.status().as_str(),
            "terminal": true,
            "outcome": job.status().outcome(),
            "reason_code": job.reason_code(),
            "exit_code": job.exit_code(),
            "plugin_changed": plugin_changed,
        });
        match mapped {
            Ok(result) => out["result"] = result,
            Err(e) => out["error"] = e.to_json(),
        }
        if plugin_changed {
            out["note"] = json!(format!(
                "plugin `{}` changed since this job started (digest {} then, {} now); the mapping is the current plugin's",
                verb.plugin.name, job.plugin_digest, verb.plugin.digest
            ));
        }
        Ok(out)
    }
}
