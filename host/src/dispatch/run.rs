//! Stage 7 of an op: run what was planned, prepared and agreed to — a
//! program to its end (with an `exec-read` plan's read-back), a job, or a
//! native job operation. The op's audit row is made durable here, before
//! anything acts ([`super::record::Ledger::begin`]); a program's row is
//! committed by the thread that then starts it, while its private `TMPDIR`
//! and sandbox are made ([`crate::exec::run_after`]).

use serde_json::{json, Value};

use super::caller::Caller;
use super::prepare::{Planned, RunKind};
use super::record::Commit;
use super::record::Trail;
use super::Dispatcher;
use crate::error::{ErrorCode, OpError};
use crate::exec::{run_after, run_command, Launch, Prepared};
use crate::jobs::SpawnRequest;
use crate::registry::Verb;
use crate::runtime::model::{Command, Outcome};
use crate::runtime::Ready;

/// What running a plan gave.
pub enum Ran {
    /// The program (or host operation) ended: its outcome, for the plugin
    /// to map, and the plugin's instance made ready meanwhile.
    Ended(Outcome, Option<Ready>),
    /// A job started: the answer, as it is (there is nothing to map yet).
    Started(Value),
}

impl Dispatcher {
    /// Run `planned` for `verb`, called with `args_text`.
    pub(crate) async fn run(
        &self,
        verb: &Verb,
        args_text: &str,
        planned: &Planned,
        caller: &Caller,
        trail: &mut Trail,
    ) -> Result<Ran, OpError> {
        let component = &verb.plugin.component;
        let first = planned.steps.first();
        match (&planned.run, first) {
            (RunKind::Exec | RunKind::ExecRead, Some(step)) => {
                // The row is committed on the thread that then starts the
                // program, while the program's directory and sandbox are
                // made here.
                let commit = self.ledger.commit(caller, verb, trail)?;
                let capture = self.run_limits.capture_bytes;
                let first_run = async {
                    let (row, outcome) = run_after(
                        &step.prepared,
                        capture,
                        || Launch::new(&step.prepared),
                        move || commit.map(Commit::write).transpose(),
                    )
                    .await?;
                    if let Some(row) = row {
                        trail.began(row);
                    }
                    outcome
                };
                // map-result's instance is made while the program runs.
                let (outcome, ready) = if let RunKind::ExecRead = planned.run {
                    let then = planned.steps.get(1).expect("an exec-read plan has its read-back");
                    tokio::join!(
                        self.run_then_read(verb, first_run, &then.command, &then.prepared),
                        self.runtime.ready(component)
                    )
                } else {
                    tokio::join!(first_run, self.runtime.ready(component))
                };
                Ok(Ran::Ended(outcome?, ready))
            }
            (RunKind::Spawn { time_limit }, Some(step)) => {
                self.begin(planned, verb, caller, trail).await?;
                let job = self.jobs()?.spawn(SpawnRequest {
                    owner: &caller.owner,
                    verb: &verb.name,
                    plugin: &verb.plugin.name,
                    plugin_digest: &verb.plugin.digest,
                    args: args_text,
                    prepared: &step.prepared,
                    time_limit: *time_limit,
                })?;
                trail.job_id = Some(job.id.clone());
                Ok(Ran::Started(json!({
                    "job": { "id": job.id, "kind": job.verb, "label": job.label, "status": job.status().as_str(), "time_limit_ms": job.time_limit_ms },
                    "next": { "op": "job.wait", "args": { "ids": [job.id] } },
                })))
            }
            (RunKind::Host(call), _) => {
                self.begin(planned, verb, caller, trail).await?;
                let result = self.host_call(verb, call, caller, trail).await?;
                Ok(Ran::Ended(
                    Outcome {
                        exit_code: Some(0),
                        host_result: Some(result.to_string()),
                        ..Outcome::default()
                    },
                    None,
                ))
            }
            (_, None) => Err(OpError::new(
                ErrorCode::Internal,
                "a plan that runs a command has none; please report it",
            )),
        }
    }

    /// Make the op's row durable before a job starts or a host operation
    /// acts (one that only reads, like `job.status`, queues its row at the
    /// end instead).
    async fn begin(
        &self,
        planned: &Planned,
        verb: &Verb,
        caller: &Caller,
        trail: &mut Trail,
    ) -> Result<(), OpError> {
        match planned.acts() {
            true => self.ledger.begin(caller, verb, trail).await,
            false => Ok(()),
        }
    }

    /// Run an `exec-read` plan: `run`, then — only when it exited 0 with
    /// its stdout whole — the read-back, whose outcome rides along as
    /// `read_back`. The write may have changed what the checks saw (a
    /// switched branch brings other files; a directory may now be a
    /// symlink), so the read-back is prepared again and runs only if it is
    /// still exactly the command that was checked and shown (`checked`).
    async fn run_then_read(
        &self,
        verb: &Verb,
        run: impl std::future::Future<Output = Result<Outcome, OpError>>,
        read_back: &Command,
        checked: &Prepared,
    ) -> Result<Outcome, OpError> {
        let capture = self.run_limits.capture_bytes;
        let mut outcome = run.await?;
        if outcome.exit_code == Some(0) && !outcome.stdout_truncated {
            let again = self.prepare(verb, read_back).await.map_err(read_back_failed)?;
            if again != *checked {
                return Err(read_back_failed(
                    OpError::new(ErrorCode::PlanRefused, "the read-back resolves differently after the write (a path or directory changed), so it was not run")
                        .with("plugin", verb.plugin.name.as_str()),
                ));
            }
            outcome.read_back =
                Some(Box::new(run_command(&again, capture).await.map_err(read_back_failed)?));
        }
        Ok(outcome)
    }
}

/// An error of an `exec-read` plan's read-back: the write already ran and
/// exited 0, which the caller must learn (a retried commit commits twice).
fn read_back_failed(e: OpError) -> OpError {
    let message = format!("the write ran and exited 0, but its read-back failed, so the new state is unknown (do not simply retry the write): {}", e.message);
    OpError { message, ..e }.with("wrote", true)
}
