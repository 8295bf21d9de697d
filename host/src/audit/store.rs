//! The audit trail's SQLite file: append, query, prune.

use anyhow::{Context, Result};
use rusqlite::{params, Connection, OptionalExtension};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use super::record::Record;
use crate::config::ensure_private_dir;

/// Schema version stored in `PRAGMA user_version`.
const SCHEMA_VERSION: i64 = 2;

const SCHEMA_V1: &str = "
CREATE TABLE IF NOT EXISTS audit (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    time_ms     INTEGER NOT NULL,
    transport   TEXT NOT NULL,
    client      TEXT,
    caller      TEXT NOT NULL,
    verb        TEXT NOT NULL,
    args        TEXT NOT NULL,
    fingerprint TEXT,
    decision    TEXT,
    decided_by  TEXT,
    answer      TEXT,
    program     TEXT,
    argv        TEXT,
    outcome     TEXT NOT NULL,
    duration_ms INTEGER NOT NULL,
    job_id      TEXT,
    dry_run     INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS audit_time ON audit(time_ms);
";

/// Version 2: the read-back command of an `exec-read` plan.
const UPGRADE_V2: &str = "ALTER TABLE audit ADD COLUMN read_back TEXT;";

/// Several verbgate processes (a server, `verbgate request`) may append at
/// once; a writer waits this long for another's transaction.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// A row `verbgate audit` cannot show as a [`Record`]: a column holds a
/// value outside its closed set.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Unreadable {
    /// The row's id.
    pub id: i64,
    /// Its verb column, as stored.
    pub verb: String,
    /// Which column holds what (escaped).
    #[serde(rename = "unreadable")]
    pub why: String,
}

/// A write the store is asked to make (the writer thread batches them).
pub enum Write {
    /// Append a row.
    Insert(Record),
    /// Replace the row with this id (written before its op ran) with the
    /// op's end.
    Update(i64, Record),
}

/// The audit file, one connection shared by the process's ops.
pub struct AuditStore {
    path: PathBuf,
    conn: Mutex<Connection>,
}

/// Which rows `verbgate audit` lists.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Only rows at or after this time, ms since the epoch.
    pub since_ms: Option<i64>,
    /// Only rows whose verb matches this pattern (`git.*`, exact, `*`).
    pub verb: Option<String>,
    /// Only rows with this outcome (`ok` or an error code).
    pub outcome: Option<String>,
    /// Only rows with an id above this (for `--follow`).
    pub after_id: Option<i64>,
    /// At most this many rows (the newest), oldest first.
    pub limit: usize,
    /// Take the *oldest* `limit` rows instead (an export's pages).
    pub oldest: bool,
}

/// What a prune removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct PruneReport {
    /// Rows removed for age.
    pub expired: usize,
    /// Rows removed past the row cap.
    pub over_count: usize,
}

impl AuditStore {
    /// Open (creating 0600 if needed) `audit.db` in `state_dir`.
    pub fn open(state_dir: &Path) -> Result<AuditStore> {
        ensure_private_dir(state_dir)?;
        let path = state_dir.join("audit.db");
        // 0600 before SQLite opens it (its -wal/-shm files copy the mode),
        // made without following a link planted in its place.
        if !path.exists() {
            crate::private_files::create_private_file_once(&path, b"")?;
        }
        let meta = std::fs::symlink_metadata(&path)?;
        crate::private_files::check_private(&path, &meta).map_err(|e| anyhow::anyhow!("{e}"))?;
        let conn = Connection::open(&path)
            .with_context(|| format!("cannot open the audit trail {}", path.display()))?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        // WAL with NORMAL sync: a committed row survives a crash of this
        // process; only a power loss can drop the last few.
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        let mut conn = conn;
        migrate(&mut conn, &path)?;
        Ok(AuditStore { path, conn: Mutex::new(conn) })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Append one record; returns its id.
    pub fn append(&self, r: &Record) -> rusqlite::Result<i64> {
        let conn = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        insert(&conn, r)?;
        Ok(conn.last_insert_rowid())
    }

    /// Append records in one transaction (all or none).
    pub fn append_all(&self, records: &[Record]) -> rusqlite::Result<()> {
        let mut conn = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        let tx = conn.transaction()?;
        for r in records {
            insert(&tx, r)?;
        }
        tx.commit()
    }

    /// Replace everything an op's end changes in row `id` (written before
    /// the op acted) with `r`'s values.
    pub fn update(&self, id: i64, r: &Record) -> rusqlite::Result<()> {
        let conn = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        update(&conn, id, r)
    }

    /// Inserts and updates in one transaction (all or none), in order.
    pub fn write_all(&self, writes: &[Write]) -> rusqlite::Result<()> {
        let mut conn = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        let tx = conn.transaction()?;
        for w in writes {
            match w {
                Write::Insert(r) => insert(&tx, r)?,
                Write::Update(id, r) => update(&tx, *id, r)?,
            }
        }
        tx.commit()
    }

    /// Rows matching `filter`, oldest first (the newest `limit` of them, or
    /// with `filter.oldest` the oldest).
    /// A row holding a value outside a column's closed set (a newer
    /// verbgate wrote it, or the file was edited) is listed as
    /// [`Unreadable`], naming it, and the rows around it are still read.
    pub fn query(&self, filter: &Filter) -> rusqlite::Result<Vec<Result<Record, Unreadable>>> {
        let conn = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        let order = if filter.oldest { "ASC" } else { "DESC" };
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT id, time_ms, transport, client, caller, verb, args, fingerprint, decision, decided_by, answer, program, argv, outcome, duration_ms, job_id, dry_run, read_back
             FROM audit WHERE time_ms >= ?1 AND id > ?2 AND (?3 IS NULL OR outcome = ?3) ORDER BY id {order}",
        ))?;
        let rows = stmt.query_map(
            params![
                filter.since_ms.unwrap_or(i64::MIN),
                filter.after_id.unwrap_or(0),
                filter.outcome
            ],
            |row| {
                let (id, verb): (i64, String) = (row.get(0)?, row.get(5)?);
                let closed = (row.get(2), row.get(8), row.get(10), row.get(13));
                let (transport, decision, answer, outcome) = match closed {
                    (Ok(t), Ok(d), Ok(a), Ok(o)) => (t, d, a, o),
                    (t, d, a, o) => {
                        let why =
                            [t.err(), d.err(), a.err(), o.err()].into_iter().flatten().map(|e| {
                                match e {
                                    rusqlite::Error::FromSqlConversionFailure(_, _, why) => {
                                        Ok(why.to_string())
                                    }
                                    e => Err(e),
                                }
                            });
                        let why = why.collect::<rusqlite::Result<Vec<String>>>()?.join("; ");
                        return Ok(Err(Unreadable { id, verb, why }));
                    }
                };
                Ok(Ok(Record {
                    id,
                    time_ms: row.get(1)?,
                    transport,
                    client: row.get(3)?,
                    caller: row.get(4)?,
                    verb,
                    args: row.get(6)?,
                    fingerprint: row.get(7)?,
                    decision,
                    decided_by: row.get(9)?,
                    answer,
                    program: row.get(11)?,
                    argv: row.get(12)?,
                    outcome,
                    duration_ms: row.get(14)?,
                    job_id: row.get(15)?,
                    dry_run: row.get(16)?,
                    read_back: row.get(17)?,
                }))
            },
        )?;
        let pattern = filter.verb.as_ref().map(|p| vec![p.clone()]);
        let mut out = Vec::new();
        for row in rows {
            let row = row?;
            let verb = match &row {
                Ok(r) => &r.verb,
                Err(u) => &u.verb,
            };
            if crate::registry::fence::allowed(verb, pattern.as_deref()) {
                out.push(row);
                if out.len() >= filter.limit {
                    break;
                }
            }
        }
        if !filter.oldest {
            out.reverse();
        }
        Ok(out)
    }

    /// Rows still saying `started` with an id above `after_id` that arrived
    /// at or after `since_ms`: id and verb (an export's continuation must
    /// not pass them, whatever outcome it asked for).
    pub fn started_after(
        &self,
        after_id: i64,
        since_ms: i64,
    ) -> rusqlite::Result<Vec<(i64, String)>> {
        let conn = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        let mut stmt = conn.prepare_cached(
            "SELECT id, verb FROM audit WHERE id > ?1 AND time_ms >= ?2 AND outcome = 'started' ORDER BY id",
        )?;
        let rows = stmt.query_map(params![after_id, since_ms], |r| Ok((r.get(0)?, r.get(1)?)))?;
        rows.collect()
    }

    /// The newest row id (0 when empty), where `--follow` starts.
    pub fn last_id(&self) -> rusqlite::Result<i64> {
        let conn = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        Ok(conn
            .query_row("SELECT max(id) FROM audit", [], |r| r.get::<_, Option<i64>>(0))
            .optional()?
            .flatten()
            .unwrap_or(0))
    }

    /// Remove rows older than `retain_days` and past the newest
    /// `retain_rows`.
    pub fn prune(
        &self,
        retain_days: u64,
        retain_rows: u64,
        now_ms: i64,
    ) -> rusqlite::Result<PruneReport> {
        let conn = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        let cutoff = now_ms.saturating_sub((retain_days as i64).saturating_mul(86_400_000));
        let expired = conn.execute("DELETE FROM audit WHERE time_ms < ?1", params![cutoff])?;
        let over_count = conn.execute(
            "DELETE FROM audit WHERE id NOT IN (SELECT id FROM audit ORDER BY id DESC LIMIT ?1)",
            params![i64::try_from(retain_rows).unwrap_or(i64::MAX)],
        )?;
        Ok(PruneReport { expired, over_count })
    }
}

/// Bring the file to [`SCHEMA_VERSION`]. The file is hostile input: its
/// version number may lie, so the columns are looked at, not assumed. The
/// write lock is taken only when something must change (so `verbgate audit`
/// can read while a server writes), and the version is read again under it
/// (two processes opening an old file at once must not both add a column).
fn migrate(conn: &mut Connection, path: &Path) -> Result<()> {
    let current = |c: &Connection| -> rusqlite::Result<(i64, bool)> {
        let version: i64 = c.pragma_query_value(None, "user_version", |r| r.get(0))?;
        let has_read_back: bool = c.query_row(
            "SELECT COUNT(*) FROM pragma_table_info('audit') WHERE name = 'read_back'",
            [],
            |r| r.get::<_, i64>(0),
        )? > 0;
        Ok((version, has_read_back))
    };
    let (version, has_read_back) = current(conn)?;
    if version > SCHEMA_VERSION {
        anyhow::bail!("the audit trail {} was written by a newer verbgate (schema {version}, this one knows {SCHEMA_VERSION})", path.display());
    }
    if version == SCHEMA_VERSION && has_read_back {
        return Ok(());
    }
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let (version, has_read_back) = current(&tx)?;
    tx.execute_batch(SCHEMA_V1)?;
    if !has_read_back {
        tx.execute_batch(UPGRADE_V2)?;
    }
    if version < SCHEMA_VERSION {
        tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
    }
    tx.commit()?;
    Ok(())
}

/// One `INSERT` of `r` (the statement is cached per connection).
/// What an op's end may change in its row: who decided, the answer, what
/// ran, how it ended, how long it took, the job.
fn update(conn: &Connection, id: i64, r: &Record) -> rusqlite::Result<()> {
    let mut stmt = conn.prepare_cached(
        "UPDATE audit SET decision = ?2, decided_by = ?3, answer = ?4, program = ?5, argv = ?6, outcome = ?7, duration_ms = ?8, job_id = ?9, dry_run = ?10, read_back = ?11
         WHERE id = ?1",
    )?;
    stmt.execute(params![
        id,
        r.decision,
        r.decided_by,
        r.answer,
        r.program,
        r.argv,
        r.outcome,
        r.duration_ms,
        r.job_id,
        r.dry_run,
        r.read_back
    ])?;
    Ok(())
}

fn insert(conn: &Connection, r: &Record) -> rusqlite::Result<()> {
    let mut stmt = conn.prepare_cached(
        "INSERT INTO audit (time_ms, transport, client, caller, verb, args, fingerprint, decision, decided_by, answer, program, argv, outcome, duration_ms, job_id, dry_run, read_back)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
    )?;
    stmt.execute(params![
        r.time_ms,
        r.transport,
        r.client,
        r.caller,
        r.verb,
        r.args,
        r.fingerprint,
        r.decision,
        r.decided_by,
        r.answer,
        r.program,
        r.argv,
        r.outcome,
        r.duration_ms,
        r.job_id,
        r.dry_run,
        r.read_back
    ])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::{RowOutcome, Transport};

    /// Every row of a query, each one readable.
    fn records(rows: rusqlite::Result<Vec<Result<Record, Unreadable>>>) -> Vec<Record> {
        rows.unwrap().into_iter().map(|r| r.expect("a readable row")).collect()
    }

    fn rec(verb: &str, outcome: &str, time_ms: i64) -> Record {
        let outcome = match outcome {
            "ok" => RowOutcome::Ok,
            "started" => RowOutcome::Started,
            code => {
                RowOutcome::Failed(crate::error::ErrorCode::from_wire(code).expect("a known code"))
            }
        };
        Record {
            time_ms,
            transport: Transport::Cli,
            caller: "local".into(),
            verb: verb.into(),
            args: "{}".into(),
            outcome,
            ..Record::default()
        }
    }

    #[test]
    fn appends_filters_and_prunes_in_a_private_file() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        let store = AuditStore::open(&state).unwrap();
        assert_eq!(std::fs::metadata(store.path()).unwrap().permissions().mode() & 0o777, 0o600);
        for (i, (verb, outcome)) in [
            ("git.status", "ok"),
            ("git.commit", "consent_declined"),
            ("cargo.test", "ok"),
            ("git.log", "policy_denied"),
        ]
        .iter()
        .enumerate()
        {
            store.append(&rec(verb, outcome, 1000 * (i as i64 + 1))).unwrap();
        }
        let all = Filter { limit: 100, ..Filter::default() };
        let verbs: Vec<String> = records(store.query(&all)).into_iter().map(|r| r.verb).collect();
        assert_eq!(verbs, ["git.status", "git.commit", "cargo.test", "git.log"]);
        let git = records(store.query(&Filter {
            verb: Some("git.*".into()),
            since_ms: Some(2000),
            limit: 100,
            ..Filter::default()
        }));
        assert_eq!(
            git.iter().map(|r| r.verb.as_str()).collect::<Vec<_>>(),
            ["git.commit", "git.log"]
        );
        let ok = records(store.query(&Filter {
            outcome: Some("ok".into()),
            limit: 1,
            ..Filter::default()
        }));
        assert_eq!(ok.len(), 1);
        assert_eq!(ok[0].verb, "cargo.test", "the newest matching row");
        assert_eq!(store.last_id().unwrap(), 4);
        let after =
            records(store.query(&Filter { after_id: Some(3), limit: 100, ..Filter::default() }));
        assert_eq!(after.len(), 1);
        // Age first (rows at 1000 and 2000 are older than 1 day before 86_402_500), then count.
        let report = store.prune(1, 1, 86_402_500).unwrap();
        assert_eq!(report, PruneReport { expired: 2, over_count: 1 });
        assert_eq!(records(store.query(&all)).len(), 1);
        // Reopening keeps the schema and the rows.
        drop(store);
        assert_eq!(AuditStore::open(&state).unwrap().query(&all).unwrap().len(), 1);
    }

    #[test]
    fn a_value_outside_a_columns_closed_set_is_refused_by_name() {
        // The trail lives in VERBGATE_HOME, which is hostile input: a
        // transport, decision, answer or outcome this verbgate never writes
        // is named, never shown as if it were one of ours — and one such
        // row (a newer verbgate's code) does not hide the others.
        let dir = tempfile::tempdir().unwrap();
        let store = AuditStore::open(dir.path()).unwrap();
        store.append(&rec("git.log", "ok", 1)).unwrap();
        assert_eq!(
            store.query(&Filter { limit: 10, ..Filter::default() }).unwrap()[0]
                .as_ref()
                .unwrap()
                .outcome,
            RowOutcome::Ok
        );
        store.append(&rec("git.diff", "ok", 2)).unwrap();
        for (column, value) in [
            ("transport", "\u{1b}[2Jtelnet"),
            ("decision", "maybe"),
            ("answer", "yes!"),
            ("outcome", "all_good"),
        ] {
            let conn = Connection::open(dir.path().join("audit.db")).unwrap();
            conn.execute(&format!("UPDATE audit SET {column} = ?1 WHERE id = 1"), [value]).unwrap();
            let rows = store.query(&Filter { limit: 10, ..Filter::default() }).unwrap();
            let bad =
                rows[0].as_ref().expect_err("the row with a foreign value is not shown as ours");
            // Exact here, as `--json` is; the table escapes it (e2e/display).
            assert!(
                bad.id == 1 && bad.why.contains(&format!("unknown {column} `{value}`")),
                "{column}: {bad:?}"
            );
            assert_eq!(rows[1].as_ref().expect("the next row is still read").verb, "git.diff");
            let fix = if column == "transport" {
                "'cli'"
            } else if column == "outcome" {
                "'ok'"
            } else {
                "NULL"
            };
            conn.execute(&format!("UPDATE audit SET {column} = {fix}"), []).unwrap();
        }
        assert!(store
            .query(&Filter { limit: 10, ..Filter::default() })
            .unwrap()
            .iter()
            .all(Result::is_ok));
    }

    #[test]
    fn a_version_1_trail_gains_the_read_back_column_and_keeps_its_rows() {
        use std::os::unix::fs::OpenOptionsExt;
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        ensure_private_dir(&state).unwrap();
        let path = state.join("audit.db");
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&path)
            .unwrap();
        let old = Connection::open(&path).unwrap();
        old.execute_batch(&format!("{SCHEMA_V1} PRAGMA user_version = 1;")).unwrap();
        old.execute(
            "INSERT INTO audit (time_ms, transport, caller, verb, args, outcome, duration_ms, dry_run) VALUES (5, 'cli', 'local', 'git.log', '{}', 'ok', 1, 0)",
            [],
        )
        .unwrap();
        drop(old);
        let store = AuditStore::open(&state).unwrap();
        store
            .append(&Record {
                read_back: Some(r#"["/usr/bin/git","log","-1"]"#.into()),
                ..rec("git.commit", "ok", 6)
            })
            .unwrap();
        let rows = records(store.query(&Filter { limit: 10, ..Filter::default() }));
        assert_eq!(
            rows.iter().map(|r| (r.verb.as_str(), r.read_back.as_deref())).collect::<Vec<_>>(),
            [("git.log", None), ("git.commit", Some(r#"["/usr/bin/git","log","-1"]"#))]
        );
        drop(store);
        // Opening again does not add the column twice.
        assert_eq!(
            AuditStore::open(&state)
                .unwrap()
                .query(&Filter { limit: 10, ..Filter::default() })
                .unwrap()
                .len(),
            2
        );
        // A version number that lies either way is not believed: lowered
        // with the column present, the column is not added twice.
        Connection::open(&path).unwrap().pragma_update(None, "user_version", 1).unwrap();
        assert_eq!(
            AuditStore::open(&state)
                .unwrap()
                .query(&Filter { limit: 10, ..Filter::default() })
                .unwrap()
                .len(),
            2
        );
    }

    #[test]
    fn a_trail_claiming_version_2_without_its_column_is_repaired_not_left_failing() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        drop(AuditStore::open(&state).unwrap());
        let path = state.join("audit.db");
        let c = Connection::open(&path).unwrap();
        c.execute_batch(&format!("DROP TABLE audit; {SCHEMA_V1} PRAGMA user_version = 2;"))
            .unwrap();
        drop(c);
        let store = AuditStore::open(&state).unwrap();
        store
            .append(&Record { read_back: Some("[]".into()), ..rec("git.add", "ok", 1) })
            .expect("every row can be written");
        assert_eq!(
            records(store.query(&Filter { limit: 10, ..Filter::default() }))[0]
                .read_back
                .as_deref(),
            Some("[]")
        );
    }
}
