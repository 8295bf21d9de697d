//! Retention: ended jobs are pruned — their rows and their output
//! directories — when older than `limits.job_retain_days` or beyond the
//! newest `limits.job_retain_count` ended jobs. Applied when the server
//! starts and by `verbgate jobs prune`.
//!
//! - A job that is preparing or running is never pruned (the delete is
//!   fenced on the status and the version read).
//! - Only the job's own directory, `state/jobs/<id>`, is removed, and
//!   nothing is followed through a symbolic link: if `state/jobs` is not a
//!   real directory nothing is removed through it; if `<id>` is a link, the
//!   link itself is removed, never its target; inside a real directory,
//!   removal does not follow links either (`std::fs::remove_dir_all`
//!   removes a link, not what it points to).

use serde::Serialize;
use std::path::Path;

use super::limits::JobLimits;
use super::store::Store;

/// One pruned job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Pruned {
    /// The job id.
    pub id: String,
    /// `age` (older than the retention age) or `count` (beyond the newest
    /// retained).
    pub why: &'static str,
    /// Whether an output directory (or a link in its place) was removed.
    pub files_removed: bool,
    /// Why its files could not be removed, if they could not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub files_error: Option<String>,
}

/// What a prune did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Report {
    /// The pruned jobs, newest first.
    pub pruned: Vec<Pruned>,
    /// Ended jobs kept.
    pub kept: usize,
    /// The retention age applied, days.
    pub retain_days: u64,
    /// The retention count applied.
    pub retain_count: usize,
}

/// Prune ended jobs of `store` past `limits`, as of `now_ms`.
pub fn prune(store: &Store, limits: &JobLimits, now_ms: i64) -> anyhow::Result<Report> {
    let cutoff = now_ms.saturating_sub(limits.retain_age.as_millis().min(i64::MAX as u128) as i64);
    let mut report = Report {
        retain_days: limits.retain_age.as_secs() / 86_400,
        retain_count: limits.retain_count,
        ..Report::default()
    };
    let mut kept = 0usize;
    for (id, version, ended_ms) in store.ended()? {
        let why = if ended_ms < cutoff {
            "age"
        } else if kept >= limits.retain_count {
            "count"
        } else {
            kept += 1;
            continue;
        };
        // Row first: once it is gone nobody reads the files through it.
        if !store.delete_ended(&id, version)? {
            kept += 1;
            continue;
        }
        let (files_removed, files_error) = match remove_job_dir(&store.jobs_dir(), &id) {
            Ok(removed) => (removed, None),
            Err(e) => (false, Some(e.to_string())),
        };
        report.pruned.push(Pruned { id, why, files_removed, files_error });
    }
    report.kept = kept;
    Ok(report)
}

/// Remove `jobs_dir/<id>` without following links; whether anything was there.
fn remove_job_dir(jobs_dir: &Path, id: &str) -> std::io::Result<bool> {
    if id.is_empty() || !id.chars().all(|c| c.is_ascii_alphanumeric()) {
        return Err(std::io::Error::other(format!(
            "job id {id:?} is not a plain name; its files were left alone"
        )));
    }
    match std::fs::symlink_metadata(jobs_dir) {
        Ok(m) if m.file_type().is_dir() => {}
        Ok(_) => {
            return Err(std::io::Error::other(format!(
                "{} is not a directory (a link?); nothing was removed through it",
                jobs_dir.display()
            )))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    }
    let path = jobs_dir.join(id);
    match std::fs::symlink_metadata(&path) {
        Ok(m) if m.file_type().is_dir() => std::fs::remove_dir_all(&path).map(|()| true),
        // A link (or a file) in the job's place: remove the entry itself.
        Ok(_) => std::fs::remove_file(&path).map(|()| true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::model::{End, Ended, Reason, Started, State, Status};
    use crate::jobs::store::tests::sample;
    use std::time::Duration;

    const DAY: i64 = 86_400_000;

    #[test]
    fn prunes_by_age_and_count_never_live_jobs_and_never_through_links() {
        let tmp = tempfile::tempdir().unwrap();
        let store = Store::open(&tmp.path().join("state")).unwrap();
        let now = 100 * DAY;
        let outside = tmp.path().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("precious"), "keep me").unwrap();
        // Oldest first: 01 old (age), 02..04 recent ended, 05 running and old.
        for (id, status, ended) in [
            ("0001", Status::Succeeded, now - 30 * DAY),
            ("0002", Status::Failed, now - DAY),
            ("0003", Status::Killed, now - DAY),
            ("0004", Status::Succeeded, now - DAY),
            ("0005", Status::Running, 0),
        ] {
            let mut j = sample(id);
            j.state = match End::of(status) {
                Some(end) => State::Ended(Ended {
                    end,
                    reason: Reason::ExitedZero,
                    ended_ms: ended,
                    started: None,
                    exit_code: None,
                    signal: None,
                }),
                None => State::Running(Started {
                    pid: i32::MAX as i64 - 3,
                    pid_start: Some(1),
                    started_ms: 1,
                }),
            };
            store.insert(&j).unwrap();
            std::fs::create_dir_all(store.job_dir(id)).unwrap();
            std::fs::write(store.job_dir(id).join("stdout"), "x").unwrap();
        }
        // Job 0002's directory was replaced by a link to somewhere else, and
        // 0001's holds a link to the same place.
        std::fs::remove_dir_all(store.job_dir("0002")).unwrap();
        std::os::unix::fs::symlink(&outside, store.job_dir("0002")).unwrap();
        std::os::unix::fs::symlink(&outside, store.job_dir("0001").join("stderr")).unwrap();
        let limits = JobLimits {
            retain_age: Duration::from_secs(14 * 86_400),
            retain_count: 2,
            ..JobLimits::default()
        };
        let r = prune(&store, &limits, now).unwrap();
        let got: Vec<(&str, &str)> = r.pruned.iter().map(|p| (p.id.as_str(), p.why)).collect();
        assert_eq!(got, vec![("0002", "count"), ("0001", "age")]);
        assert_eq!(r.kept, 2);
        assert!(store.get("0001").unwrap().is_none() && store.get("0002").unwrap().is_none());
        assert!(store.get("0005").unwrap().is_some(), "a running job is never pruned");
        assert!(
            !store.job_dir("0001").exists()
                && std::fs::symlink_metadata(store.job_dir("0002")).is_err()
        );
        assert_eq!(
            std::fs::read_to_string(outside.join("precious")).unwrap(),
            "keep me",
            "nothing outside was touched"
        );
        assert!(store.job_dir("0003").exists() && store.job_dir("0005").exists());
        // Nothing left to prune.
        assert!(prune(&store, &limits, now).unwrap().pruned.is_empty());
    }
}
