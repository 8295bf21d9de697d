//! `job.kill` by signals, for jobs without an entity identity (a job with
//! one is killed only by its fronted CLI's own kill, in
//! `dispatch::host`; this file refuses to signal it).
//!
//! The rules, in order:
//! 1. A finished job: a no-op result.
//! 2. The kill request is marked on the record (`kill_requested_ms`), so a
//!    supervisor that has not started the program yet stops it at once.
//! 3. **Nothing is signalled unless it is provably ours.** The group is
//!    signalled only when its leader is the recorded process (same boot,
//!    pid and start time), or when the recorded supervisor is provably alive
//!    (it has not recorded the end yet, so the group it created still holds
//!    the leader's pid as its id: Linux does not hand out a pid that is
//!    still a process group's id; the residual window is a group that
//!    emptied and whose id was handed out again while the supervisor was
//!    still recording, which needs a full pid wrap-around). Otherwise — supervisor died, reboot, pid
//!    reused — the job is reaped as `lost` by CAS and nothing is signalled.
//! 4. `kill_sent_ms` is written *before* the TERM, so the supervisor can
//!    tell an end caused by the kill from one that came first (the job then
//!    keeps its own end, and the result says the kill was not needed).
//! 5. TERM, KILL after the grace period if the group is still there
//!    (watched continuously since the verified TERM), then a short wait for
//!    the supervisor to record the end.

use serde_json::{json, Value};
use std::time::{Duration, Instant};

use super::args::KillArgs;
use crate::error::{ErrorCode, OpError};
use crate::jobs::model::{End, Job, Reason, Started, State, Status};
use crate::jobs::observe;
use crate::jobs::process::{group_alive, now_ms, signal_group};
use crate::jobs::store::{db_error, Store};

/// Default time between TERM and KILL.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(3);
/// Longest grace a caller may ask for.
pub const MAX_GRACE_SECONDS: f64 = 60.0;
/// How long to wait for the supervisor to record the end after the group is gone.
const END_WAIT: Duration = Duration::from_secs(3);

/// The grace period `args` ask for, clamped.
pub fn grace(args: &KillArgs) -> Duration {
    args.grace_seconds
        .filter(|s| !s.is_nan())
        .map(|s| Duration::from_secs_f64(s.clamp(0.0, MAX_GRACE_SECONDS)))
        .unwrap_or(DEFAULT_GRACE)
}

/// Kill job `args.id` (or prefix) by signals.
pub async fn run(store: &Store, args: &KillArgs) -> Result<Value, OpError> {
    let grace = grace(args);
    let job = store.resolve(&args.id)?;
    if job.status().terminal() {
        return Ok(already_terminal(&job));
    }
    if let Some(entity) = &job.entity {
        return Err(entity_refusal(&job, entity, "it is stopped only by that CLI's own kill"));
    }
    let marked = blocking(store, &job.id, |j| {
        if !j.status().terminal() && j.kill_requested_ms.is_none() {
            j.kill_requested_ms = Some(now_ms());
        }
    })
    .await?;
    if marked.status().terminal() {
        return Ok(already_terminal(&marked));
    }
    let mut signalled = false;
    let mut escalated = false;
    if let State::Running(Started { pid: pgid, .. }) = marked.state {
        if !marked.leader_verified() && !marked.supervisor_verified() {
            return Ok(reap_unverified(store, marked));
        }
        // Leader verified, or the leader just ended and its live supervisor
        // is about to record that: signal only a group that is still there.
        if marked.leader_verified() || group_alive(pgid) {
            signalled = true;
            let sent = blocking(store, &marked.id, |j| {
                if !j.status().terminal() {
                    j.kill_sent_ms = Some(now_ms());
                }
            })
            .await?;
            if sent.status().terminal() {
                return Ok(ended(&sent, false, false));
            }
            signal_group(pgid, libc::SIGTERM);
            let start = Instant::now();
            while group_alive(pgid) && start.elapsed() < grace {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            if group_alive(pgid) {
                escalated = true;
                signal_group(pgid, libc::SIGKILL);
            }
        }
    }
    // The supervisor records the end; if it is gone too, record it here.
    let start = Instant::now();
    loop {
        let now = store
            .get(&marked.id)
            .map_err(db_error)?
            .ok_or_else(|| OpError::new(ErrorCode::NotFound, "the job vanished"))?;
        if now.status().terminal() {
            return Ok(ended(&now, signalled, escalated));
        }
        let supervisor = now.supervisor_verified();
        if !supervisor && now.status() == Status::Running && signalled {
            let mut killed = now.clone();
            killed.finish(End::Killed, Reason::KillRequested, (None, None));
            if store.cas(&killed, now.version).map_err(db_error)? {
                return Ok(ended(&killed, signalled, escalated));
            }
        } else if start.elapsed() > END_WAIT {
            // Still preparing: the supervisor will see the request and stop
            // the program as soon as it starts.
            return Ok(
                json!({ "id": now.id, "killed": false, "kill_requested": true, "signalled": signalled, "job": now.to_json() }),
            );
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The result for a job that has ended: `killed` only if the kill ended it;
/// a job that ended on its own first keeps its own end (`not_needed`).
fn ended(job: &Job, signalled: bool, escalated: bool) -> Value {
    let killed = job.status() == Status::Killed;
    json!({ "id": job.id, "killed": killed, "not_needed": !killed, "signalled": signalled, "escalated_to_sigkill": escalated, "job": job.to_json() })
}

fn already_terminal(job: &Job) -> Value {
    json!({ "id": job.id, "killed": false, "already_terminal": true, "job": job.to_json() })
}

/// The recorded leader is not provably the process the supervisor started
/// and the supervisor is gone: whatever holds that pid now is not ours.
/// Record the job `lost` (fenced CAS, like any observer) and signal nothing.
fn reap_unverified(store: &Store, job: Job) -> Value {
    let pid = job.pid();
    let (now, _, _) = observe::reap(store, job);
    json!({
        "id": now.id,
        "killed": false,
        "signalled": false,
        "lost": now.status() == Status::Lost,
        "note": format!("the job's recorded process {} is not the one its supervisor started (it ended, the machine rebooted, or the pid was reused) and its supervisor is gone; nothing was signalled", pid.unwrap_or_default()),
        "job": now.to_json(),
    })
}

/// The refusal for signalling a job that carries an entity identity
/// (SPEC §7.3: never signal the group after a known entity).
pub fn entity_refusal(job: &Job, entity: &str, why: &str) -> OpError {
    OpError::new(
        ErrorCode::KillFailed,
        format!("job {} is known to its CLI as entity {entity}; {why}, so it was left running and was not signalled. Stop it with that CLI, or load plugin `{}` again and retry", job.id, job.plugin),
    )
    .with("id", job.id.as_str())
    .with("entity", serde_json::from_str::<Value>(entity).unwrap_or(Value::Null))
    .with("plugin", job.plugin.as_str())
    .with("signalled", false)
}

/// [`Store::update`] off the async runtime.
pub async fn blocking(
    store: &Store,
    id: &str,
    change: impl Fn(&mut Job) + Send + 'static,
) -> Result<Job, OpError> {
    let (s, id) = (store.clone(), id.to_string());
    tokio::task::spawn_blocking(move || s.update(&id, change))
        .await
        .map_err(|e| OpError::new(ErrorCode::Internal, e.to_string()))?
        .map_err(|e| {
            OpError::new(ErrorCode::Internal, format!("cannot record the kill on the job: {e:#}"))
        })
}
