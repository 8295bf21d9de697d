//! The job store: one SQLite database (`$VERBGATE_HOME/state/jobs.db`,
//! directory 0700, files 0600, WAL, busy timeout) shared by every verbgate
//! process — the MCP server, `verbgate request`, and each job's supervisor.
//!
//! Every status change is a compare-and-swap on the `version` column: a
//! writer states the version it read, and a refused write changes nothing.
//! That is what lets an observer reap a vanished job without ever
//! overwriting an end the supervisor recorded a moment earlier.

use rusqlite::{params, Connection, OptionalExtension, Row};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::model::{Job, Status};
use crate::config::ensure_private_dir;
use crate::error::{ErrorCode, OpError};

/// How long a writer waits for a lock before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// How many times [`Store::update`] retries a refused write.
const CAS_RETRIES: usize = 50;

/// Schema version stored in `PRAGMA user_version`.
const SCHEMA_VERSION: i64 = 1;

const COLUMNS: &str = "id, verb, plugin, plugin_digest, args, label, program, argv, cwd, env, time_limit_ms, status, \
reason_code, version, created_ms, started_ms, ended_ms, exit_code, signal, supervisor_pid, supervisor_start, pid, \
pid_start, entity, kill_requested_ms, error";

/// Handle to the job database. Clones share one pool of connections:
/// opening SQLite costs more than most queries here.
#[derive(Debug, Clone)]
pub struct Store {
    path: PathBuf,
    dir: PathBuf,
    pool: Arc<Mutex<Vec<Connection>>>,
}

/// Most idle connections kept for reuse.
const POOL_MAX: usize = 8;

/// A pooled connection, returned to the pool when dropped.
pub struct PooledConn {
    conn: Option<Connection>,
    pool: Arc<Mutex<Vec<Connection>>>,
}

impl std::ops::Deref for PooledConn {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        self.conn.as_ref().expect("present until drop")
    }
}

impl Drop for PooledConn {
    fn drop(&mut self) {
        if let (Some(conn), Ok(mut pool)) = (self.conn.take(), self.pool.lock()) {
            if pool.len() < POOL_MAX {
                pool.push(conn);
            }
        }
    }
}

impl Store {
    /// Open (creating if needed) the store in `state_dir`.
    pub fn open(state_dir: &Path) -> anyhow::Result<Store> {
        ensure_private_dir(state_dir)?;
        let path = state_dir.join("jobs.db");
        if !path.exists() {
            use std::os::unix::fs::OpenOptionsExt;
            // Create it 0600 first: SQLite gives its -wal/-shm files the
            // database file's permissions.
            std::fs::OpenOptions::new().write(true).create(true).truncate(false).mode(0o600).open(&path)?;
        }
        let store = Store { path, dir: state_dir.to_path_buf(), pool: Arc::new(Mutex::new(Vec::new())) };
        let conn = store.conn()?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
        if version == 0 {
            conn.execute_batch(
                "CREATE TABLE IF NOT EXISTS jobs (
                    id TEXT PRIMARY KEY, verb TEXT NOT NULL, plugin TEXT NOT NULL, plugin_digest TEXT NOT NULL,
                    args TEXT NOT NULL, label TEXT NOT NULL, program TEXT NOT NULL, argv TEXT NOT NULL,
                    cwd TEXT NOT NULL, env TEXT NOT NULL, time_limit_ms INTEGER NOT NULL,
                    status TEXT NOT NULL, reason_code TEXT, version INTEGER NOT NULL,
                    created_ms INTEGER NOT NULL, started_ms INTEGER, ended_ms INTEGER,
                    exit_code INTEGER, signal INTEGER, supervisor_pid INTEGER, supervisor_start INTEGER,
                    pid INTEGER, pid_start INTEGER, entity TEXT, kill_requested_ms INTEGER, error TEXT);
                 CREATE INDEX IF NOT EXISTS jobs_status ON jobs(status);
                 PRAGMA user_version = 1;",
            )?;
        } else if version > SCHEMA_VERSION {
            anyhow::bail!(
                "the job store {} was written by a newer verbgate (schema {version}, this one knows {SCHEMA_VERSION})",
                store.path.display()
            );
        }
        Ok(store)
    }

    /// Directory for one job's output files.
    pub fn job_dir(&self, id: &str) -> PathBuf {
        self.dir.join("jobs").join(id)
    }

    /// A connection from the pool (opened when the pool is empty).
    pub fn conn(&self) -> rusqlite::Result<PooledConn> {
        let pooled = self.pool.lock().ok().and_then(|mut p| p.pop());
        let conn = match pooled {
            Some(c) => c,
            None => {
                let c = Connection::open(&self.path)?;
                c.busy_timeout(BUSY_TIMEOUT)?;
                c
            }
        };
        Ok(PooledConn { conn: Some(conn), pool: self.pool.clone() })
    }

    /// Insert a new job.
    pub fn insert(&self, j: &Job) -> rusqlite::Result<()> {
        self.conn()?.execute(
            &format!("INSERT INTO jobs ({COLUMNS}) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,?21,?22,?23,?24,?25,?26)"),
            params![
                j.id, j.verb, j.plugin, j.plugin_digest, j.args, j.label, j.program, j.argv, j.cwd, j.env,
                j.time_limit_ms as i64, j.status.as_str(), j.reason_code, j.version, j.created_ms, j.started_ms,
                j.ended_ms, j.exit_code, j.signal, j.supervisor_pid, j.supervisor_start, j.pid, j.pid_start,
                j.entity, j.kill_requested_ms, j.error
            ],
        )?;
        Ok(())
    }

    /// One job by exact id.
    pub fn get(&self, id: &str) -> rusqlite::Result<Option<Job>> {
        let conn = self.conn()?;
        let mut stmt = conn.prepare_cached(&format!("SELECT {COLUMNS} FROM jobs WHERE id = ?1"))?;
        stmt.query_row([id], row_to_job).optional()
    }

    /// Resolve an id or unique prefix: `not_found` / `ambiguous_id` name it.
    pub fn resolve(&self, id_or_prefix: &str) -> Result<Job, OpError> {
        let clean = !id_or_prefix.is_empty() && id_or_prefix.chars().all(|c| c.is_ascii_alphanumeric());
        if !clean {
            return Err(OpError::new(ErrorCode::NotFound, format!("no job {id_or_prefix:?}: job ids are letters and digits")).with("id", id_or_prefix));
        }
        let conn = self.conn().map_err(db_error)?;
        let mut stmt = conn.prepare_cached(&format!("SELECT {COLUMNS} FROM jobs WHERE id >= ?1 AND id < ?1 || '~' ORDER BY id LIMIT 6")).map_err(db_error)?;
        let jobs: Vec<Job> = stmt.query_map([id_or_prefix], row_to_job).map_err(db_error)?.collect::<Result<_, _>>().map_err(db_error)?;
        if let Some(exact) = jobs.iter().find(|j| j.id == id_or_prefix) {
            return Ok(exact.clone());
        }
        match jobs.len() {
            0 => Err(OpError::new(ErrorCode::NotFound, format!("no job with id or prefix `{id_or_prefix}` (see job.list)")).with("id", id_or_prefix)),
            1 => Ok(jobs.into_iter().next().expect("one job")),
            _ => Err(OpError::new(ErrorCode::AmbiguousId, format!("`{id_or_prefix}` matches several jobs; give more of the id"))
                .with("id", id_or_prefix)
                .with("matches", jobs.iter().map(|j| j.id.clone()).collect::<Vec<_>>())),
        }
    }

    /// Newest jobs first, optionally filtered.
    pub fn list(&self, limit: usize, status: Option<Status>, verb: Option<&str>) -> rusqlite::Result<Vec<Job>> {
        let conn = self.conn()?;
        let mut stmt = conn.prepare(&format!(
            "SELECT {COLUMNS} FROM jobs WHERE (?1 IS NULL OR status = ?1) AND (?2 IS NULL OR verb = ?2) ORDER BY id DESC LIMIT ?3"
        ))?;
        let rows = stmt.query_map(params![status.map(Status::as_str), verb, limit as i64], row_to_job)?;
        rows.collect()
    }

    /// Write `new` if the stored version is still `expected`; returns
    /// whether the write happened. `new.version` is ignored (bumped here).
    pub fn cas(&self, new: &Job, expected: i64) -> rusqlite::Result<bool> {
        let changed = self.conn()?.execute(
            "UPDATE jobs SET status = ?1, reason_code = ?2, version = version + 1, started_ms = ?3, ended_ms = ?4,
                exit_code = ?5, signal = ?6, supervisor_pid = ?7, supervisor_start = ?8, pid = ?9, pid_start = ?10,
                entity = ?11, kill_requested_ms = ?12, error = ?13
             WHERE id = ?14 AND version = ?15",
            params![
                new.status.as_str(), new.reason_code, new.started_ms, new.ended_ms, new.exit_code, new.signal,
                new.supervisor_pid, new.supervisor_start, new.pid, new.pid_start, new.entity, new.kill_requested_ms,
                new.error, new.id, expected
            ],
        )?;
        Ok(changed == 1)
    }
}

/// A database failure as an op error (never a bare SQLite string).
pub fn db_error(e: rusqlite::Error) -> OpError {
    OpError::new(ErrorCode::Internal, format!("the job store failed: {e}"))
}

fn row_to_job(r: &Row<'_>) -> rusqlite::Result<Job> {
    let status: String = r.get(11)?;
    Ok(Job {
        id: r.get(0)?,
        verb: r.get(1)?,
        plugin: r.get(2)?,
        plugin_digest: r.get(3)?,
        args: r.get(4)?,
        label: r.get(5)?,
        program: r.get(6)?,
        argv: r.get(7)?,
        cwd: r.get(8)?,
        env: r.get(9)?,
        time_limit_ms: r.get::<_, i64>(10)? as u64,
        status: Status::parse(&status).unwrap_or(Status::Lost),
        reason_code: r.get(12)?,
        version: r.get(13)?,
        created_ms: r.get(14)?,
        started_ms: r.get(15)?,
        ended_ms: r.get(16)?,
        exit_code: r.get(17)?,
        signal: r.get(18)?,
        supervisor_pid: r.get(19)?,
        supervisor_start: r.get(20)?,
        pid: r.get(21)?,
        pid_start: r.get(22)?,
        entity: r.get(23)?,
        kill_requested_ms: r.get(24)?,
        error: r.get(25)?,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn sample(id: &str) -> Job {
        Job {
            id: id.into(),
            verb: "x.run".into(),
            plugin: "x".into(),
            plugin_digest: "d".into(),
            args: "{}".into(),
            label: "true".into(),
            program: "/bin/true".into(),
            argv: "[]".into(),
            cwd: "/".into(),
            env: "{}".into(),
            created_ms: 1,
            ..Job::default()
        }
    }

    #[test]
    fn cas_refuses_a_stale_version_and_files_are_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("state")).unwrap();
        store.insert(&sample("0001aa")).unwrap();
        let mut j = store.get("0001aa").unwrap().unwrap();
        j.status = Status::Running;
        assert!(store.cas(&j, 0).unwrap());
        j.status = Status::Lost;
        assert!(!store.cas(&j, 0).unwrap(), "a stale CAS must be refused");
        let now = store.get("0001aa").unwrap().unwrap();
        assert_eq!((now.status, now.version), (Status::Running, 1));
        let mode = std::fs::metadata(dir.path().join("state/jobs.db")).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let dmode = std::fs::metadata(dir.path().join("state")).unwrap().permissions().mode() & 0o777;
        assert_eq!(dmode, 0o700);
    }

    #[test]
    fn prefixes_resolve_uniquely_or_say_why_not() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        store.insert(&sample("00aa11")).unwrap();
        store.insert(&sample("00aa22")).unwrap();
        assert_eq!(store.resolve("00aa1").unwrap().id, "00aa11");
        assert_eq!(store.resolve("00aa22").unwrap().id, "00aa22");
        assert_eq!(store.resolve("00aa").unwrap_err().code, ErrorCode::AmbiguousId);
        assert_eq!(store.resolve("ff").unwrap_err().code, ErrorCode::NotFound);
        assert_eq!(store.resolve("'; drop").unwrap_err().code, ErrorCode::NotFound);
    }
}

impl Store {
    /// Read-modify-CAS, retried when another writer (a kill request, the
    /// supervisor) bumped the version in between. Returns the record as
    /// written, or as found when `change` left it alone.
    pub fn update(&self, id: &str, change: impl Fn(&mut Job)) -> anyhow::Result<Job> {
        for _ in 0..CAS_RETRIES {
            let current = self.get(id)?.ok_or_else(|| anyhow::anyhow!("job {id} vanished"))?;
            let mut next = current.clone();
            change(&mut next);
            if next == current {
                return Ok(current);
            }
            if self.cas(&next, current.version)? {
                next.version = current.version + 1;
                return Ok(next);
            }
        }
        anyhow::bail!("could not update job {id}: too many concurrent writers")
    }

    /// Statuses of the given ids (missing ids are left out): the cheap
    /// check `job.wait` runs between full observations.
    pub fn statuses(&self, ids: &[String]) -> rusqlite::Result<Vec<(String, Status)>> {
        let conn = self.conn()?;
        let mut stmt = conn.prepare_cached("SELECT status FROM jobs WHERE id = ?1")?;
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some(s) = stmt.query_row([id], |r| r.get::<_, String>(0)).optional()? {
                out.push((id.clone(), Status::parse(&s).unwrap_or(Status::Lost)));
            }
        }
        Ok(out)
    }
}
