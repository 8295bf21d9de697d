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

use super::model::{End, Ended, Job, Reason, Started, State, Status};
use crate::config::ensure_private_dir;
use crate::error::{ErrorCode, OpError};

/// How long a writer waits for a lock before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// How many times [`Store::update`] retries a refused write.
const CAS_RETRIES: usize = 50;

/// Schema version stored in `PRAGMA user_version`.
/// 1: the first schema. 2: boot id, kill-sent time, output cap and
/// truncation flags (added columns: a version-1 store migrates in place).
/// 3: the caller that started the job (`owner`; older jobs are `local`'s).
const SCHEMA_VERSION: i64 = 3;

/// Schema 1, as first released.
const SCHEMA_V1: &str = "CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY, verb TEXT NOT NULL, plugin TEXT NOT NULL, plugin_digest TEXT NOT NULL,
    args TEXT NOT NULL, label TEXT NOT NULL, program TEXT NOT NULL, argv TEXT NOT NULL,
    cwd TEXT NOT NULL, env TEXT NOT NULL, time_limit_ms INTEGER NOT NULL,
    status TEXT NOT NULL, reason_code TEXT, version INTEGER NOT NULL,
    created_ms INTEGER NOT NULL, started_ms INTEGER, ended_ms INTEGER,
    exit_code INTEGER, signal INTEGER, supervisor_pid INTEGER, supervisor_start INTEGER,
    pid INTEGER, pid_start INTEGER, entity TEXT, kill_requested_ms INTEGER, error TEXT);
 CREATE INDEX IF NOT EXISTS jobs_status ON jobs(status);";

/// Schema 1 → 2: only added columns with defaults, so old rows load.
const MIGRATE_V2: &str = "ALTER TABLE jobs ADD COLUMN boot_id TEXT;
 ALTER TABLE jobs ADD COLUMN kill_sent_ms INTEGER;
 ALTER TABLE jobs ADD COLUMN output_limit_bytes INTEGER NOT NULL DEFAULT 0;
 ALTER TABLE jobs ADD COLUMN stdout_truncated INTEGER NOT NULL DEFAULT 0;
 ALTER TABLE jobs ADD COLUMN stderr_truncated INTEGER NOT NULL DEFAULT 0;";

/// Schema 2 → 3: who started each job (jobs of older stores were started
/// by the local user: tokens could not be told apart then).
const MIGRATE_V3: &str = "ALTER TABLE jobs ADD COLUMN owner TEXT NOT NULL DEFAULT 'local';";

const COLUMNS: &str = "id, verb, plugin, plugin_digest, args, label, program, argv, cwd, env, time_limit_ms, status, \
reason_code, version, created_ms, started_ms, ended_ms, exit_code, signal, supervisor_pid, supervisor_start, pid, \
pid_start, entity, kill_requested_ms, error, boot_id, kill_sent_ms, output_limit_bytes, stdout_truncated, stderr_truncated, owner";

/// The statuses that count as running for `limits.max_running_jobs`.
const LIVE: &str = "status IN ('preparing', 'running')";

/// Handle to the job database. Clones share one pool of connections:
/// opening SQLite costs more than most queries here.
#[derive(Debug, Clone)]
pub struct Store {
    path: PathBuf,
    dir: PathBuf,
    pool: Arc<Mutex<Vec<Connection>>>,
    /// Whose jobs this handle sees (`None`: every job). A job of another
    /// owner answers `not_found` exactly like a missing one.
    viewer: Option<Arc<str>>,
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
        // 0600 before SQLite opens it (its -wal/-shm files copy the mode),
        // made without following a link planted in its place.
        if !path.exists() {
            crate::private_files::create_private_file_once(&path, b"")?;
        }
        let store = Store {
            path,
            dir: state_dir.to_path_buf(),
            pool: Arc::new(Mutex::new(Vec::new())),
            viewer: None,
        };
        let conn = store.conn()?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
        if version != SCHEMA_VERSION {
            migrate(&conn, &store.path)?;
        }
        Ok(store)
    }

    /// This store as `owner` sees it: only the jobs `owner` started
    /// (`None`: every job).
    pub fn viewed_by(&self, owner: Option<&str>) -> Store {
        Store { viewer: owner.map(Arc::from), ..self.clone() }
    }

    /// Directory for one job's output files.
    pub fn job_dir(&self, id: &str) -> PathBuf {
        self.jobs_dir().join(id)
    }

    /// The directory holding every job's directory.
    pub fn jobs_dir(&self) -> PathBuf {
        self.dir.join("jobs")
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
        insert_on(&*self.conn()?, j)
    }

    /// Insert a new job unless `cap` jobs are already preparing or
    /// running; the count and the insert are one transaction, so two
    /// concurrent spawns cannot both take the last place. `Err(running)`
    /// when the cap is reached.
    pub fn insert_bounded(&self, j: &Job, cap: usize) -> rusqlite::Result<Result<(), usize>> {
        let conn = self.conn()?;
        conn.execute_batch("BEGIN IMMEDIATE")?;
        let result = (|| {
            let running: i64 =
                conn.query_row(&format!("SELECT COUNT(*) FROM jobs WHERE {LIVE}"), [], |r| {
                    r.get(0)
                })?;
            if running as usize >= cap {
                return Ok(Err(running as usize));
            }
            insert_on(&conn, j)?;
            Ok(Ok(()))
        })();
        conn.execute_batch(if matches!(result, Ok(Ok(()))) { "COMMIT" } else { "ROLLBACK" })?;
        result
    }

    /// Ids of jobs preparing or running (what `limits.max_running_jobs` counts).
    pub fn live_ids(&self) -> rusqlite::Result<Vec<String>> {
        let conn = self.conn()?;
        let mut stmt = conn.prepare(&format!("SELECT id FROM jobs WHERE {LIVE} ORDER BY id"))?;
        let rows = stmt.query_map([], |r| r.get(0))?;
        rows.collect()
    }

    /// Every ended job, newest first: `(id, version, ended_ms or created_ms)`.
    pub fn ended(&self) -> rusqlite::Result<Vec<(String, i64, i64)>> {
        let conn = self.conn()?;
        let mut stmt = conn.prepare(&format!("SELECT id, version, COALESCE(ended_ms, created_ms) FROM jobs WHERE NOT {LIVE} ORDER BY id DESC"))?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
        rows.collect()
    }

    /// Delete an ended job's row if it is still at `version`; whether it was
    /// deleted. A job that is (somehow) live again is never deleted.
    pub fn delete_ended(&self, id: &str, version: i64) -> rusqlite::Result<bool> {
        let n = self.conn()?.execute(
            &format!("DELETE FROM jobs WHERE id = ?1 AND version = ?2 AND NOT {LIVE}"),
            params![id, version],
        )?;
        Ok(n == 1)
    }

    /// One job by exact id.
    pub fn get(&self, id: &str) -> rusqlite::Result<Option<Job>> {
        let conn = self.conn()?;
        let mut stmt = conn.prepare_cached(&format!("SELECT {COLUMNS} FROM jobs WHERE id = ?1"))?;
        stmt.query_row([id], row_to_job).optional()
    }

    /// Resolve an id or unique prefix: `not_found` / `ambiguous_id` name it.
    pub fn resolve(&self, id_or_prefix: &str) -> Result<Job, OpError> {
        let clean =
            !id_or_prefix.is_empty() && id_or_prefix.chars().all(|c| c.is_ascii_alphanumeric());
        if !clean {
            return Err(OpError::new(
                ErrorCode::NotFound,
                format!("no job {id_or_prefix:?}: job ids are letters and digits"),
            )
            .with("id", id_or_prefix));
        }
        let conn = self.conn().map_err(db_error)?;
        let mut stmt = conn
            .prepare_cached(&format!("SELECT {COLUMNS} FROM jobs WHERE id >= ?1 AND id < ?1 || '~' AND (?2 IS NULL OR owner = ?2) ORDER BY id LIMIT 6"))
            .map_err(db_error)?;
        let jobs: Vec<Job> = stmt
            .query_map(params![id_or_prefix, self.viewer.as_deref()], row_to_job)
            .map_err(db_error)?
            .collect::<Result<_, _>>()
            .map_err(db_error)?;
        if let Some(exact) = jobs.iter().find(|j| j.id == id_or_prefix) {
            return Ok(exact.clone());
        }
        match jobs.len() {
            0 => Err(OpError::new(
                ErrorCode::NotFound,
                format!("no job with id or prefix `{id_or_prefix}` (see job.list)"),
            )
            .with("id", id_or_prefix)),
            1 => Ok(jobs.into_iter().next().expect("one job")),
            _ => Err(OpError::new(
                ErrorCode::AmbiguousId,
                format!("`{id_or_prefix}` matches several jobs; give more of the id"),
            )
            .with("id", id_or_prefix)
            .with("matches", jobs.iter().map(|j| j.id.clone()).collect::<Vec<_>>())),
        }
    }

    /// Newest jobs first, optionally filtered.
    pub fn list(
        &self,
        limit: usize,
        status: Option<Status>,
        verb: Option<&str>,
    ) -> rusqlite::Result<Vec<Job>> {
        let conn = self.conn()?;
        let mut stmt =
            conn.prepare(&format!("SELECT {COLUMNS} FROM jobs WHERE (?1 IS NULL OR status = ?1) AND (?2 IS NULL OR verb = ?2) AND (?4 IS NULL OR owner = ?4) ORDER BY id DESC LIMIT ?3"))?;
        let rows = stmt.query_map(
            params![status.map(Status::as_str), verb, limit as i64, self.viewer.as_deref()],
            row_to_job,
        )?;
        rows.collect()
    }

    /// Write `new` if the stored version is still `expected`; returns
    /// whether the write happened. `new.version` is ignored (bumped here).
    pub fn cas(&self, new: &Job, expected: i64) -> rusqlite::Result<bool> {
        let changed = self.conn()?.execute(
            "UPDATE jobs SET status = ?1, reason_code = ?2, version = version + 1, started_ms = ?3, ended_ms = ?4,
                exit_code = ?5, signal = ?6, supervisor_pid = ?7, supervisor_start = ?8, pid = ?9, pid_start = ?10,
                entity = ?11, kill_requested_ms = ?12, error = ?13, boot_id = ?16, kill_sent_ms = ?17,
                stdout_truncated = ?18, stderr_truncated = ?19
             WHERE id = ?14 AND version = ?15",
            params![
                new.status().as_str(),
                new.reason_code().map(Reason::as_str),
                new.started_ms(),
                new.ended_ms(),
                new.exit_code(),
                new.signal(),
                new.supervisor_pid,
                new.supervisor_start,
                new.pid(),
                new.state.started().and_then(|s| s.pid_start),
                new.entity,
                new.kill_requested_ms,
                new.error,
                new.id,
                expected,
                new.boot_id,
                new.kill_sent_ms,
                new.stdout_truncated,
                new.stderr_truncated
            ],
        )?;
        Ok(changed == 1)
    }
}

/// A database failure as an op error (never a bare SQLite string).
pub fn db_error(e: rusqlite::Error) -> OpError {
    OpError::new(ErrorCode::Internal, format!("the job store failed: {e}"))
}

/// Create or migrate the schema to [`SCHEMA_VERSION`], in one immediate
/// transaction that re-reads the version, so two processes opening an old
/// store at once migrate it once.
fn migrate(conn: &Connection, path: &Path) -> anyhow::Result<()> {
    conn.execute_batch("BEGIN IMMEDIATE")?;
    let result = (|| -> anyhow::Result<()> {
        let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
        if version > SCHEMA_VERSION {
            anyhow::bail!("the job store {} was written by a newer verbgate (schema {version}, this one knows {SCHEMA_VERSION})", path.display());
        }
        if version < 1 {
            conn.execute_batch(SCHEMA_V1)?;
        }
        if version < 2 {
            conn.execute_batch(MIGRATE_V2)?;
        }
        if version < 3 {
            conn.execute_batch(MIGRATE_V3)?;
        }
        conn.pragma_update(None, "user_version", SCHEMA_VERSION)?;
        Ok(())
    })();
    conn.execute_batch(if result.is_ok() { "COMMIT" } else { "ROLLBACK" })?;
    result
}

fn insert_on(conn: &Connection, j: &Job) -> rusqlite::Result<()> {
    conn.execute(
        &format!("INSERT INTO jobs ({COLUMNS}) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,?21,?22,?23,?24,?25,?26,?27,?28,?29,?30,?31,?32)"),
        params![
            j.id, j.verb, j.plugin, j.plugin_digest, j.args, j.label, j.program, j.argv, j.cwd, j.env,
            j.time_limit_ms.unwrap_or(0) as i64, j.status().as_str(), j.reason_code().map(Reason::as_str), j.version, j.created_ms, j.started_ms(),
            j.ended_ms(), j.exit_code(), j.signal(), j.supervisor_pid, j.supervisor_start, j.pid(), j.state.started().and_then(|s| s.pid_start),
            j.entity, j.kill_requested_ms, j.error, j.boot_id, j.kill_sent_ms, j.output_limit_bytes.unwrap_or(0) as i64,
            j.stdout_truncated, j.stderr_truncated, j.owner
        ],
    )?;
    Ok(())
}

fn row_to_job(r: &Row<'_>) -> rusqlite::Result<Job> {
    let status: String = r.get(11)?;
    let reason: Option<String> = r.get(12)?;
    let (started_ms, ended_ms): (Option<i64>, Option<i64>) = (r.get(15)?, r.get(16)?);
    let (pid, pid_start): (Option<i64>, Option<i64>) = (r.get(21)?, r.get(22)?);
    let started =
        pid.map(|pid| Started { pid, pid_start, started_ms: started_ms.unwrap_or_default() });
    // A status this verbgate does not know (a newer one wrote it) reads as
    // lost; a terminal row without a reason (never written) as unknown.
    let status = Status::parse(&status).unwrap_or(Status::Lost);
    let state = match (status, started) {
        (Status::Preparing, _) => State::Preparing,
        (Status::Running, Some(s)) => State::Running(s),
        // Running with no pid cannot be written; read it as gone.
        (Status::Running, None) => State::Ended(Ended {
            end: End::Lost,
            reason: Reason::ProcessGoneNoEnd,
            ended_ms: ended_ms.unwrap_or_default(),
            started: None,
            exit_code: None,
            signal: None,
        }),
        (s, started) => State::Ended(Ended {
            end: End::of(s).unwrap_or(End::Lost),
            reason: reason.as_deref().and_then(Reason::parse).unwrap_or(Reason::ProcessGoneNoEnd),
            ended_ms: ended_ms.unwrap_or_default(),
            started,
            exit_code: r.get(17)?,
            signal: r.get(18)?,
        }),
    };
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
        // 0 in the table: none (the column predates NULLs).
        time_limit_ms: Some(r.get::<_, i64>(10)?).filter(|ms| *ms > 0).map(|ms| ms as u64),
        state,
        version: r.get(13)?,
        created_ms: r.get(14)?,
        supervisor_pid: r.get(19)?,
        supervisor_start: r.get(20)?,
        entity: r.get(23)?,
        kill_requested_ms: r.get(24)?,
        error: r.get(25)?,
        boot_id: r.get(26)?,
        kill_sent_ms: r.get(27)?,
        output_limit_bytes: Some(r.get::<_, i64>(28)?).filter(|b| *b > 0).map(|b| b as u64),
        stdout_truncated: r.get(29)?,
        stderr_truncated: r.get(30)?,
        owner: r.get(31)?,
    })
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
        j.state = State::Running(Started { pid: 5, pid_start: Some(6), started_ms: 7 });
        assert!(store.cas(&j, 0).unwrap());
        j.finish(End::Lost, Reason::ProcessGoneNoEnd, (None, None));
        assert!(!store.cas(&j, 0).unwrap(), "a stale CAS must be refused");
        let now = store.get("0001aa").unwrap().unwrap();
        assert_eq!((now.status(), now.version, now.pid()), (Status::Running, 1, Some(5)));
        let mode =
            std::fs::metadata(dir.path().join("state/jobs.db")).unwrap().permissions().mode()
                & 0o777;
        assert_eq!(mode, 0o600);
        let dmode =
            std::fs::metadata(dir.path().join("state")).unwrap().permissions().mode() & 0o777;
        assert_eq!(dmode, 0o700);
    }

    #[test]
    fn a_schema_1_store_migrates_in_place_and_keeps_its_jobs() {
        let dir = tempfile::tempdir().unwrap();
        {
            let conn = Connection::open(dir.path().join("jobs.db")).unwrap();
            conn.execute_batch(SCHEMA_V1).unwrap();
            conn.execute_batch("PRAGMA user_version = 1;").unwrap();
            conn.execute(
                "INSERT INTO jobs (id, verb, plugin, plugin_digest, args, label, program, argv, cwd, env, time_limit_ms, status, reason_code, version, created_ms) \
                 VALUES ('00old1', 'x.run', 'x', 'd', '{}', 'true', '/bin/true', '[]', '/', '{}', 0, 'succeeded', 'exited_zero', 3, 1)",
                [],
            )
            .unwrap();
        }
        let store = Store::open(dir.path()).unwrap();
        let old = store.get("00old1").unwrap().unwrap();
        assert_eq!(
            (old.status(), old.reason_code(), old.version),
            (Status::Succeeded, Some(Reason::ExitedZero), 3)
        );
        assert_eq!(
            (old.boot_id, old.kill_sent_ms, old.output_limit_bytes, old.stdout_truncated),
            (None, None, None, false)
        );
        // Opening again (already migrated) is a no-op; new rows round-trip the new fields.
        let store = Store::open(dir.path()).unwrap();
        let mut j = sample("00new1");
        j.boot_id = Some("b".into());
        j.output_limit_bytes = Some(7);
        j.stderr_truncated = true;
        store.insert(&j).unwrap();
        assert_eq!(store.get("00new1").unwrap().unwrap(), j);
    }

    #[test]
    fn the_running_cap_counts_preparing_and_running_jobs_only() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let mut done = sample("00c0");
        done.finish(End::Failed, Reason::ExitedNonzero, (Some(1), None));
        store.insert(&done).unwrap();
        assert_eq!(store.insert_bounded(&sample("00c1"), 2).unwrap(), Ok(()));
        assert_eq!(store.insert_bounded(&sample("00c2"), 2).unwrap(), Ok(()));
        assert_eq!(store.insert_bounded(&sample("00c3"), 2).unwrap(), Err(2));
        assert!(store.get("00c3").unwrap().is_none(), "a refused spawn leaves no row");
        assert_eq!(store.live_ids().unwrap(), vec!["00c1".to_string(), "00c2".to_string()]);
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
