//! `job.kill` for jobs without an entity identity: mark the kill request on
//! the record (so the supervisor records `killed`, not a plain failure),
//! TERM the process group the supervisor created, KILL it after a grace
//! period, then wait briefly for the supervisor to record the end. Killing
//! a job that already ended is a no-op result.

use serde_json::{json, Value};
use std::time::{Duration, Instant};

use super::model::{reason, Status};
use super::process::{alive, group_alive, now_ms, signal_group};
use super::store::{db_error, Store};
use crate::error::OpError;

/// Default time between TERM and KILL.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(3);
/// How long to wait for the supervisor to record the end after the group is gone.
const END_WAIT: Duration = Duration::from_secs(3);

/// Kill job `id` (or prefix).
pub async fn kill(store: &Store, id: &str, grace: Duration) -> Result<Value, OpError> {
    let job = store.resolve(id)?;
    if job.status.terminal() {
        return Ok(json!({ "id": job.id, "killed": false, "already_terminal": true, "job": job.to_json() }));
    }
    let s = store.clone();
    let jid = job.id.clone();
    let marked = tokio::task::spawn_blocking(move || {
        s.update(&jid, |j| {
            if !j.status.terminal() && j.kill_requested_ms.is_none() {
                j.kill_requested_ms = Some(now_ms());
            }
        })
    })
    .await
    .map_err(|e| OpError::new(crate::ErrorCode::Internal, e.to_string()))?
    .map_err(|e| OpError::new(crate::ErrorCode::Internal, format!("cannot record the kill request: {e:#}")))?;
    if marked.status.terminal() {
        return Ok(json!({ "id": marked.id, "killed": false, "already_terminal": true, "job": marked.to_json() }));
    }
    let mut escalated = false;
    if let (Status::Running, Some(pgid)) = (marked.status, marked.pid) {
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
    // The supervisor records the end; if it is gone too, record it here.
    let start = Instant::now();
    loop {
        let now = store.get(&marked.id).map_err(db_error)?.ok_or_else(|| OpError::new(crate::ErrorCode::NotFound, "the job vanished"))?;
        if now.status.terminal() {
            return Ok(json!({ "id": now.id, "killed": now.status == Status::Killed, "escalated_to_sigkill": escalated, "job": now.to_json() }));
        }
        let supervisor = alive(now.supervisor_pid, now.supervisor_start);
        if (!supervisor && now.status == Status::Running) || start.elapsed() > END_WAIT {
            let mut killed = now.clone();
            killed.status = Status::Killed;
            killed.reason_code = Some(reason::KILL_REQUESTED.into());
            killed.ended_ms = Some(now_ms());
            if !supervisor && store.cas(&killed, now.version).map_err(db_error)? {
                return Ok(json!({ "id": now.id, "killed": true, "escalated_to_sigkill": escalated, "job": killed.to_json() }));
            }
            if start.elapsed() > END_WAIT {
                // Still preparing: the supervisor will see the request and
                // stop the program as soon as it starts.
                return Ok(json!({ "id": now.id, "killed": false, "kill_requested": true, "job": now.to_json() }));
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
