//! Observing jobs: where each id falls for `job.wait` (see
//! [`super::ops::wait`]), and the one fenced write an observer may make.
//!
//! - One entry per requested id, in input order, every entry with the same
//!   keys; unknown or ambiguous ids are per-id errors that never stop the
//!   others.
//! - Every observed id lands in exactly one list: `terminal`, `pending`
//!   (waiting can still change it), `stopped_without_end` (its processes are
//!   gone with no end recorded and the finding could not be published) or
//!   `unresolved_spawn` (still `preparing` past the echoed age threshold).
//! - Observing never changes a job, with one fenced exception: the first
//!   observer of a running job whose supervisor and processes are
//!   conclusively gone records it `lost` (`process_gone_no_end`) by CAS; a
//!   refused write leaves the record untouched. "Conclusively" means: the
//!   supervisor and the program are not provably the recorded processes
//!   (pid, start time and boot id all re-checked).

use serde_json::{json, Value};
use std::time::Duration;

use super::model::{End, Job, Reason, Status};
use super::process::{group_alive, now_ms, same_boot};
use super::store::Store;
use crate::error::OpError;

/// Age after which a job still `preparing` is `unresolved_spawn`.
pub const UNRESOLVED_SPAWN_AFTER: Duration = Duration::from_secs(10);

/// Where an observed id falls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Ended.
    Terminal,
    /// Waiting can still change it.
    Pending,
    /// Gone without a recorded end, and that could not be published.
    StoppedWithoutEnd,
    /// Still preparing past the threshold.
    UnresolvedSpawn,
}

/// One id's observation.
#[derive(Debug, Clone)]
pub struct Observation {
    /// The id or prefix as asked.
    pub requested: String,
    /// The job, when the id resolved.
    pub job: Option<Job>,
    /// Where it falls, when the id resolved.
    pub class: Option<Class>,
    /// Its supervisor is gone but its processes live on.
    pub possibly_orphaned: bool,
    /// Why the id did not resolve.
    pub error: Option<OpError>,
}

impl Observation {
    /// The `job.wait` entry.
    pub fn to_json(&self) -> Value {
        match &self.job {
            Some(j) => json!({
                "id": j.id,
                "kind": j.verb,
                "label": j.label,
                "status": j.status().as_str(),
                "terminal": j.status().terminal(),
                "outcome": j.status().outcome(),
                "reason_code": j.reason_code(),
                "possibly_orphaned": self.possibly_orphaned,
                "error": Value::Null,
            }),
            None => json!({
                "id": self.requested,
                "kind": Value::Null,
                "label": Value::Null,
                "status": Value::Null,
                "terminal": false,
                "outcome": Value::Null,
                "reason_code": Value::Null,
                "possibly_orphaned": false,
                "error": self.error.as_ref().map(OpError::to_json),
            }),
        }
    }
}

/// Observe one job (by id or prefix), reaping it if it is conclusively gone.
pub fn observe(store: &Store, requested: &str) -> Observation {
    let job = match store.resolve(requested) {
        Ok(j) => j,
        Err(e) => {
            return Observation {
                requested: requested.into(),
                job: None,
                class: None,
                possibly_orphaned: false,
                error: Some(e),
            }
        }
    };
    let (job, class, orphaned) = classify(store, job);
    Observation {
        requested: requested.into(),
        job: Some(job),
        class: Some(class),
        possibly_orphaned: orphaned,
        error: None,
    }
}

fn classify(store: &Store, job: Job) -> (Job, Class, bool) {
    match job.status() {
        s if s.terminal() => (job, Class::Terminal, false),
        Status::Preparing => {
            let age = Duration::from_millis((now_ms() - job.created_ms).max(0) as u64);
            let class =
                if age >= UNRESOLVED_SPAWN_AFTER { Class::UnresolvedSpawn } else { Class::Pending };
            (job, class, false)
        }
        _ => {
            // Every liveness fact is checked against the recorded start
            // times and boot: after a reboot or a pid reuse, whatever holds
            // those numbers now is not this job's.
            let supervisor = job.supervisor_verified();
            let program = job.leader_verified()
                || (same_boot(job.boot_id.as_deref()) && job.pid().is_some_and(group_alive));
            if supervisor {
                return (job, Class::Pending, false);
            }
            if program {
                // The supervisor is gone but the work lives on: nobody will
                // record its end, yet waiting may still see it finish.
                return (job, Class::Pending, true);
            }
            reap(store, job)
        }
    }
}

/// The fenced exception: record a conclusively gone job as `lost`, by CAS
/// on the version that was observed.
pub fn reap(store: &Store, job: Job) -> (Job, Class, bool) {
    let mut lost = job.clone();
    lost.finish(End::Lost, Reason::ProcessGoneNoEnd, (None, None));
    match store.cas(&lost, job.version) {
        Ok(true) => {
            lost.version += 1;
            (lost, Class::Terminal, false)
        }
        // Refused: someone wrote first (most likely the end itself).
        Ok(false) => match store.get(&job.id) {
            Ok(Some(now)) if now.status().terminal() => (now, Class::Terminal, false),
            Ok(Some(now)) => (now, Class::StoppedWithoutEnd, false),
            _ => (job, Class::StoppedWithoutEnd, false),
        },
        Err(_) => (job, Class::StoppedWithoutEnd, false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::model::{Started, State};
    use crate::jobs::store::tests::sample;

    #[test]
    fn exactly_one_of_many_concurrent_observers_publishes_lost() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let mut gone = sample("00000bgone");
        gone.state =
            State::Running(Started { pid: i32::MAX as i64 - 7, pid_start: Some(1), started_ms: 1 });
        gone.supervisor_pid = Some(i32::MAX as i64 - 8);
        store.insert(&gone).unwrap();
        let observers: Vec<_> = (0..8)
            .map(|_| {
                let s = store.clone();
                std::thread::spawn(move || observe(&s, "00000bgone"))
            })
            .collect();
        let results: Vec<Observation> = observers.into_iter().map(|h| h.join().unwrap()).collect();
        assert!(results.iter().all(|o| o.class == Some(Class::Terminal)));
        let now = store.get("00000bgone").unwrap().unwrap();
        assert_eq!(now.status(), Status::Lost);
        assert_eq!(now.version, 1, "exactly one reap was published");
    }
}
