//! `job.wait`: a bounded observation of several jobs.
//!
//! - Clamps are echoed: `max_wait_seconds` (default 25, [0, 300]) and
//!   `poll_interval_seconds` (default 1, [0.05, 10]); 0 is a snapshot.
//! - Where each id falls, and the one fenced write, are
//!   [`crate::jobs::observe`]'s.
//! - One-poll floor: a call that would return without having waited while
//!   an id sits in either special list first waits one poll interval
//!   (bounded by the window) and observes again.
//! - Ends are noticed within [`END_CHECK`] of being recorded (a cheap status
//!   query), not at the next poll tick.

use serde_json::{json, Value};
use std::time::{Duration, Instant};

use super::args::WaitArgs;
use crate::error::OpError;
use crate::jobs::observe::{observe, Class, Observation, UNRESOLVED_SPAWN_AFTER};
use crate::jobs::store::{db_error, Store};

/// How often a wait checks for recorded ends between full observations.
pub const END_CHECK: Duration = Duration::from_millis(20);

/// Effective wait settings.
#[derive(Debug, Clone)]
pub struct Window {
    /// Ids or prefixes, in order.
    pub ids: Vec<String>,
    /// Window, seconds (clamped).
    pub max_wait: f64,
    /// Poll interval, seconds (clamped).
    pub poll: f64,
}

impl Window {
    /// Clamp the args (defaults: 25 s window, 1 s poll).
    pub fn new(args: &WaitArgs) -> Window {
        let num = |v: Option<f64>, default: f64, lo: f64, hi: f64| {
            let v = v.unwrap_or(default);
            if v.is_nan() {
                default
            } else {
                v.clamp(lo, hi)
            }
        };
        Window {
            ids: args.ids.clone(),
            max_wait: num(args.max_wait_seconds, 25.0, 0.0, 300.0),
            poll: num(args.poll_interval_seconds, 1.0, 0.05, 10.0),
        }
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
pub async fn run(store: &Store, args: &Window) -> Result<Value, OpError> {
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
        let special = obs
            .iter()
            .any(|o| matches!(o.class, Some(Class::StoppedWithoutEnd | Class::UnresolvedSpawn)));
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
        let pending_ids: Vec<String> = obs
            .iter()
            .filter(|o| o.class == Some(Class::Pending))
            .filter_map(|o| o.job.as_ref().map(|j| j.id.clone()))
            .collect();
        while Instant::now() < tick {
            tokio::time::sleep(END_CHECK.min(tick.saturating_duration_since(Instant::now()))).await;
            let s = store.clone();
            let ids = pending_ids.clone();
            let ended = tokio::task::spawn_blocking(move || s.statuses(&ids))
                .await
                .ok()
                .and_then(Result::ok)
                .is_some_and(|st| st.iter().any(|(_, s)| s.terminal()));
            if ended {
                break;
            }
        }
        waited = true;
        obs = observe_all(store, &args.ids).await;
    }
    let list = |c: Class| -> Vec<String> {
        obs.iter()
            .filter(|o| o.class == Some(c))
            .filter_map(|o| o.job.as_ref().map(|j| j.id.clone()))
            .collect()
    };
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
    use crate::jobs::model::{End, Reason, Started, State};
    use crate::jobs::process::now_ms;
    use crate::jobs::store::tests::sample;

    #[test]
    fn clamps_are_applied() {
        let a = Window::new(&WaitArgs {
            ids: vec!["a".into()],
            max_wait_seconds: Some(9999.0),
            poll_interval_seconds: Some(0.0),
        });
        assert_eq!((a.max_wait, a.poll), (300.0, 0.05));
        let d = Window::new(&WaitArgs::default());
        assert_eq!((d.max_wait, d.poll), (25.0, 1.0));
        let n = Window::new(&WaitArgs {
            ids: vec![],
            max_wait_seconds: Some(-3.0),
            poll_interval_seconds: Some(60.0),
        });
        assert_eq!((n.max_wait, n.poll), (0.0, 10.0));
    }

    #[tokio::test]
    async fn partition_is_exhaustive_and_disjoint_and_reaps_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let mut done = sample("000001done");
        done.finish(End::Succeeded, Reason::ExitedZero, (Some(0), None));
        store.insert(&done).unwrap();
        let mut gone = sample("000002gone");
        gone.state =
            State::Running(Started { pid: i32::MAX as i64 - 7, pid_start: Some(1), started_ms: 1 }); // no such process
        gone.supervisor_pid = Some(i32::MAX as i64 - 8);
        store.insert(&gone).unwrap();
        let mut old = sample("000003prep");
        old.created_ms = now_ms() - 60_000;
        store.insert(&old).unwrap();
        let mut me = sample("000004live");
        me.state =
            State::Running(Started { pid: i32::MAX as i64 - 9, pid_start: Some(1), started_ms: 1 });
        me.supervisor_pid = Some(std::process::id() as i64);
        me.supervisor_start = crate::jobs::process::start_time(std::process::id() as i64);
        store.insert(&me).unwrap();

        let args = Window {
            ids: vec![
                "000001".into(),
                "000002".into(),
                "000003".into(),
                "000004".into(),
                "nope".into(),
            ],
            max_wait: 0.0,
            poll: 0.05,
        };
        let v = run(&store, &args).await.unwrap();
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
        run(&store, &args).await.unwrap();
        assert_eq!(store.get("000002gone").unwrap().unwrap().version, version);
    }

    #[tokio::test]
    async fn a_snapshot_pays_no_floor_but_a_window_does() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let mut old = sample("00000aprep");
        old.created_ms = now_ms() - 60_000;
        store.insert(&old).unwrap();
        let snap = run(&store, &Window { ids: vec!["00000a".into()], max_wait: 0.0, poll: 0.5 })
            .await
            .unwrap();
        assert!(snap["waited_ms"].as_u64().unwrap() < 400, "{snap}");
        let floored = run(&store, &Window { ids: vec!["00000a".into()], max_wait: 5.0, poll: 0.3 })
            .await
            .unwrap();
        let ms = floored["waited_ms"].as_u64().unwrap();
        assert!((300..2000).contains(&ms), "one poll floor, got {ms} ms");
        assert_eq!(floored["timed_out"], false);
    }
}
