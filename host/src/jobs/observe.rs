//! `job.wait`: a bounded observation of several jobs.
//!
//! - Clamps are echoed: `max_wait_seconds` (default 25, [0, 300]) and
//!   `poll_interval_seconds` (default 1, [0.05, 10]); 0 is a snapshot.
//! - One entry per requested id, in input order, every entry with the same
//!   keys; unknown or ambiguous ids are per-id errors that never stop the
//!   others.
//! - Every observed id lands in exactly one list: `terminal`, `pending`
//!   (waiting can still change it), `stopped_without_end` (its processes are
//!   gone with no end recorded and the finding could not be published) or
//!   `unresolved_spawn` (still `preparing` past the echoed age threshold).
//! - One-poll floor: a call that would return without having waited while
//!   an id sits in either special list first waits one poll interval
//!   (bounded by the window) and observes again.
//! - Observing never changes a job, with one fenced exception: the first
//!   observer of a running job whose supervisor and processes are
//!   conclusively gone records it `lost` (`process_gone_no_end`) by CAS; a
//!   refused write leaves the record untouched.
//! - Ends are noticed within [`END_CHECK`] of being recorded (a cheap status
//!   query), not at the next poll tick.

use serde_json::{json, Value};
use std::time::{Duration, Instant};

use super::model::{reason, Job, Status};
use super::process::{alive, group_alive, now_ms};
use super::store::{db_error, Store};
use crate::error::OpError;

/// Age after which a job still `preparing` is `unresolved_spawn`.
pub const UNRESOLVED_SPAWN_AFTER: Duration = Duration::from_secs(10);
/// How often a wait checks for recorded ends between full observations.
pub const END_CHECK: Duration = Duration::from_millis(20);

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
    requested: String,
    job: Option<Job>,
    class: Option<Class>,
    possibly_orphaned: bool,
    error: Option<OpError>,
}

impl Observation {
    fn to_json(&self) -> Value {
        match &self.job {
            Some(j) => json!({
                "id": j.id,
                "kind": j.verb,
                "label": j.label,
                "status": j.status.as_str(),
                "terminal": j.status.terminal(),
                "outcome": j.status.outcome(),
                "reason_code": j.reason_code,
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
        Err(e) => return Observation { requested: requested.into(), job: None, class: None, possibly_orphaned: false, error: Some(e) },
    };
    let (job, class, orphaned) = classify(store, job);
    Observation { requested: requested.into(), job: Some(job), class: Some(class), possibly_orphaned: orphaned, error: None }
}

fn classify(store: &Store, job: Job) -> (Job, Class, bool) {
    match job.status {
        s if s.terminal() => (job, Class::Terminal, false),
        Status::Preparing => {
            let age = Duration::from_millis((now_ms() - job.created_ms).max(0) as u64);
            let class = if age >= UNRESOLVED_SPAWN_AFTER { Class::UnresolvedSpawn } else { Class::Pending };
            (job, class, false)
        }
        _ => {
            let supervisor = alive(job.supervisor_pid, job.supervisor_start);
            let program = alive(job.pid, job.pid_start) || job.pid.is_some_and(group_alive);
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
fn reap(store: &Store, job: Job) -> (Job, Class, bool) {
    let mut lost = job.clone();
    lost.status = Status::Lost;
    lost.reason_code = Some(reason::PROCESS_GONE_NO_END.into());
    lost.ended_ms = Some(now_ms());
    match store.cas(&lost, job.version) {
        Ok(true) => {
            lost.version += 1;
            (lost, Class::Terminal, false)
        }
        // Refused: someone wrote first (most likely the end itself).
        Ok(false) => match store.get(&job.id) {
            Ok(Some(now)) if now.status.terminal() => (now, Class::Terminal, false),
            Ok(Some(now)) => (now, Class::StoppedWithoutEnd, false),
            _ => (job, Class::StoppedWithoutEnd, false),
        },
        Err(_) => (job, Class::StoppedWithoutEnd, false),
    }
}

/// Effective wait settings.
#[derive(Debug, Clone)]
pub struct WaitArgs {
    /// Ids or prefixes, in order.
    pub ids: Vec<String>,
    /// Window, seconds (clamped).
    pub max_wait: f64,
    /// Poll interval, seconds (clamped).
    pub poll: f64,
}

impl WaitArgs {
    /// Read and clamp the args.
    pub fn from_json(args: &Value) -> WaitArgs {
        let ids = args["ids"].as_array().map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_string)).collect()).unwrap_or_default();
        let num = |k: &str, default: f64, lo: f64, hi: f64| {
            let v = args[k].as_f64().unwrap_or(default);
            if v.is_nan() { default } else { v.clamp(lo, hi) }
        };
        WaitArgs { ids, max_wait: num("max_wait_seconds", 25.0, 0.0, 300.0), poll: num("poll_interval_seconds", 1.0, 0.05, 10.0) }
    }
}

async fn observe_all(store: &Store, ids: &[String]) -> Vec<Observation> {
    let store = store.clone();
    let ids = ids.to_vec();
    tokio::task::spawn_blocking(move || ids.iter().map(|id| observe(&store, id)).collect())
        .await
        .unwrap_or_default()
}

/// Run `job.wait`.
pub async fn wait(store: &Store, args: &WaitArgs) -> Result<Value, OpError> {
    let started = Instant::now();
    let window = Duration::from_secs_f64(args.max_wait);
    let poll = Duration::from_secs_f64(args.poll);
    let deadline = started + window;
    let mut waited = false;
    let mut obs = observe_all(store, &args.ids).await;
    if obs.len() != args.ids.len() {
        return Err(db_error(rusqlite::Error::InvalidQuery));
    }
    loop {
        let pending = obs.iter().any(|o| o.class == Some(Class::Pending));
        let special = obs.iter().any(|o| matches!(o.class, Some(Class::StoppedWithoutEnd | Class::UnresolvedSpawn)));
        let now = Instant::now();
        if now >= deadline {
            break;
        }
        if !pending {
            if waited || !special {
                break;
            }
            // The one-poll floor.
            tokio::time::sleep(poll.min(deadline - now)).await;
            waited = true;
            obs = observe_all(store, &args.ids).await;
            continue;
        }
        // Wait for the next poll tick, checking cheaply for recorded ends.
        let tick = (now + poll).min(deadline);
        let pending_ids: Vec<String> = obs.iter().filter(|o| o.class == Some(Class::Pending)).filter_map(|o| o.job.as_ref().map(|j| j.id.clone())).collect();
        while Instant::now() < tick {
            tokio::time::sleep(END_CHECK.min(tick.saturating_duration_since(Instant::now()))).await;
            let s = store.clone();
            let ids = pending_ids.clone();
            let ended = tokio::task::spawn_blocking(move || s.statuses(&ids)).await.ok().and_then(Result::ok).is_some_and(|st| st.iter().any(|(_, s)| s.terminal()));
            if ended {
                break;
            }
        }
        waited = true;
        obs = observe_all(store, &args.ids).await;
    }
    let list = |c: Class| -> Vec<String> { obs.iter().filter(|o| o.class == Some(c)).filter_map(|o| o.job.as_ref().map(|j| j.id.clone())).collect() };
    let pending = list(Class::Pending);
    let all_terminal = obs.iter().all(|o| o.class == Some(Class::Terminal));
    Ok(json!({
        "jobs": obs.iter().map(Observation::to_json).collect::<Vec<_>>(),
        "all_terminal": all_terminal,
        "timed_out": !pending.is_empty(),
        "terminal": list(Class::Terminal),
        "pending": pending,
        "stopped_without_end": list(Class::StoppedWithoutEnd),
        "unresolved_spawn": list(Class::UnresolvedSpawn),
        "errors": obs.iter().filter(|o| o.error.is_some()).map(|o| o.requested.clone()).collect::<Vec<_>>(),
        "max_wait_seconds": args.max_wait,
        "poll_interval_seconds": args.poll,
        "unresolved_spawn_after_seconds": UNRESOLVED_SPAWN_AFTER.as_secs_f64(),
        "waited_ms": started.elapsed().as_millis() as u64,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::store::tests::sample;

    #[test]
    fn clamps_are_applied() {
        let a = WaitArgs::from_json(&json!({"ids": ["a"], "max_wait_seconds": 9999, "poll_interval_seconds": 0}));
        assert_eq!((a.max_wait, a.poll), (300.0, 0.05));
        let d = WaitArgs::from_json(&json!({"ids": []}));
        assert_eq!((d.max_wait, d.poll), (25.0, 1.0));
        let n = WaitArgs::from_json(&json!({"max_wait_seconds": -3, "poll_interval_seconds": 60}));
        assert_eq!((n.max_wait, n.poll), (0.0, 10.0));
    }

    #[tokio::test]
    async fn partition_is_exhaustive_and_disjoint_and_reaps_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let mut done = sample("000001done");
        done.status = Status::Succeeded;
        store.insert(&done).unwrap();
        let mut gone = sample("000002gone");
        gone.status = Status::Running;
        gone.pid = Some(i32::MAX as i64 - 7); // no such process
        gone.supervisor_pid = Some(i32::MAX as i64 - 8);
        store.insert(&gone).unwrap();
        let mut old = sample("000003prep");
        old.created_ms = now_ms() - 60_000;
        store.insert(&old).unwrap();
        let mut me = sample("000004live");
        me.status = Status::Running;
        me.supervisor_pid = Some(std::process::id() as i64);
        me.supervisor_start = super::super::process::start_time(std::process::id() as i64);
        store.insert(&me).unwrap();

        let args = WaitArgs { ids: vec!["000001".into(), "000002".into(), "000003".into(), "000004".into(), "nope".into()], max_wait: 0.0, poll: 0.05 };
        let v = wait(&store, &args).await.unwrap();
        assert_eq!(v["terminal"], json!(["000001done", "000002gone"]));
        assert_eq!(v["unresolved_spawn"], json!(["000003prep"]));
        assert_eq!(v["pending"], json!(["000004live"]));
        assert_eq!(v["errors"], json!(["nope"]));
        assert_eq!(v["timed_out"], true);
        assert_eq!(v["jobs"][1]["status"], "lost");
        assert_eq!(v["jobs"][1]["reason_code"], "process_gone_no_end");
        assert_eq!(v["jobs"][4]["error"]["code"], "not_found");
        // Same keys on every entry.
        let keys = |e: &Value| e.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
        for e in v["jobs"].as_array().unwrap() {
            assert_eq!(keys(e), keys(&v["jobs"][0]));
        }
        // The reap happened once: a second observer sees it terminal, version unchanged.
        let version = store.get("000002gone").unwrap().unwrap().version;
        wait(&store, &args).await.unwrap();
        assert_eq!(store.get("000002gone").unwrap().unwrap().version, version);
    }

    #[test]
    fn exactly_one_of_many_concurrent_observers_publishes_lost() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let mut gone = sample("00000bgone");
        gone.status = Status::Running;
        gone.pid = Some(i32::MAX as i64 - 7);
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
        assert_eq!(now.status, Status::Lost);
        assert_eq!(now.version, 1, "exactly one reap was published");
    }

    #[tokio::test]
    async fn a_snapshot_pays_no_floor_but_a_window_does() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let mut old = sample("00000aprep");
        old.created_ms = now_ms() - 60_000;
        store.insert(&old).unwrap();
        let snap = wait(&store, &WaitArgs { ids: vec!["00000a".into()], max_wait: 0.0, poll: 0.5 }).await.unwrap();
        assert!(snap["waited_ms"].as_u64().unwrap() < 400, "{snap}");
        let floored = wait(&store, &WaitArgs { ids: vec!["00000a".into()], max_wait: 5.0, poll: 0.3 }).await.unwrap();
        let ms = floored["waited_ms"].as_u64().unwrap();
        assert!((300..2000).contains(&ms), "one poll floor, got {ms} ms");
        assert_eq!(floored["timed_out"], false);
    }
}
