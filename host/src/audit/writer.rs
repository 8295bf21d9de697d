//! Writing the trail off the ops' path: an op hands its row to a channel
//! (a few hundred nanoseconds) and a writer thread commits whatever has
//! arrived in one transaction, so a 16-op batch costs one commit, not 16,
//! and no op waits for SQLite. Dropping the writer (the dispatcher going
//! away: `verbgate request` ending, a stdio server's client leaving) writes
//! every row still queued before it returns. A process killed by a signal
//! can lose the rows of its last few milliseconds.

use std::sync::mpsc::{channel, Receiver, Sender, TryRecvError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use super::record::Record;
use super::store::{AuditStore, Write};

/// Most rows committed in one transaction.
const BATCH: usize = 512;

/// How long the writer gathers rows after the first one arrives before it
/// commits them: one transaction per few milliseconds of ops, instead of
/// one per op competing with the ops for the CPU.
const GATHER: std::time::Duration = std::time::Duration::from_millis(5);

/// The trail's writer thread and its queue.
pub struct AuditWriter {
    tx: Mutex<Option<Sender<Write>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
    store: Arc<AuditStore>,
}

impl AuditWriter {
    /// Start a writer for `store`. If no thread can be started, rows are
    /// written on the caller's thread instead (slower, never lost).
    pub fn start(store: Arc<AuditStore>) -> AuditWriter {
        let (tx, rx) = channel();
        let for_thread = store.clone();
        match std::thread::Builder::new()
            .name("verbgate-audit".into())
            .spawn(move || write_loop(&for_thread, &rx))
        {
            Ok(thread) => {
                AuditWriter { tx: Mutex::new(Some(tx)), thread: Mutex::new(Some(thread)), store }
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot start the audit writer thread; writing rows inline");
                AuditWriter { tx: Mutex::new(None), thread: Mutex::new(None), store }
            }
        }
    }

    /// Queue a row. When the writer is gone (it never is while the
    /// dispatcher lives), the row is written here instead of dropped.
    pub fn record(&self, record: Record) {
        self.send(Write::Insert(record));
    }

    /// Queue the update of row `id` to `record`.
    pub fn update(&self, id: i64, record: Record) {
        self.send(Write::Update(id, record));
    }

    /// The store the writer writes to (for the rows an op writes itself,
    /// durably, before it acts).
    pub fn store(&self) -> Arc<AuditStore> {
        Arc::clone(&self.store)
    }

    fn send(&self, write: Write) {
        let sent = match self.tx.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
            Some(tx) => tx.send(write).map_err(|e| e.0),
            None => Err(write),
        };
        if let Err(write) = sent {
            if let Err(e) = self.store.write_all(std::slice::from_ref(&write)) {
                tracing::error!(error = %e, "cannot write the audit trail");
            }
        }
    }

    /// Write every queued row and stop the thread.
    pub fn flush(&self) {
        drop(self.tx.lock().unwrap_or_else(|e| e.into_inner()).take());
        if let Some(thread) = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take() {
            // It may be parked, gathering: the closed channel ends that.
            thread.thread().unpark();
            if thread.join().is_err() {
                tracing::error!("the audit writer panicked; rows may be missing");
            }
        }
    }
}

impl Drop for AuditWriter {
    fn drop(&mut self) {
        self.flush();
    }
}

fn write_loop(store: &AuditStore, rx: &Receiver<Write>) {
    while let Ok(first) = rx.recv() {
        let mut rows = vec![first];
        // Gather without waiting on the channel: a receiver blocked in it
        // is woken by every send (a futex wake on the op's thread, for
        // each row), while a parked thread is woken only by `flush`, which
        // ends the gathering at once (the channel is then closed).
        let until = std::time::Instant::now() + GATHER;
        while rows.len() < BATCH {
            match rx.try_recv() {
                Ok(r) => rows.push(r),
                // Closed: what is queued is written and the loop then ends.
                Err(TryRecvError::Disconnected) => break,
                Err(TryRecvError::Empty) => {
                    let left = until.saturating_duration_since(std::time::Instant::now());
                    if left.is_zero() {
                        break;
                    }
                    std::thread::park_timeout(left);
                }
            }
        }
        if let Err(e) = store.write_all(&rows) {
            tracing::error!(error = %e, rows = rows.len(), "cannot write the audit trail");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::{Filter, RowOutcome, Transport};

    #[test]
    fn a_queued_row_lands_while_the_writer_runs_on() {
        // The writer gathers parked, not blocked on the channel: nothing
        // but its own timeout wakes it for the rows after the first, which
        // must still land without a flush.
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(AuditStore::open(&dir.path().join("state")).unwrap());
        let writer = AuditWriter::start(store.clone());
        let row = |verb: &str| Record {
            transport: Transport::Cli,
            caller: "local".into(),
            verb: verb.into(),
            outcome: RowOutcome::Ok,
            ..Record::default()
        };
        writer.record(row("v.first"));
        writer.record(row("v.second"));
        let count = || store.query(&Filter { limit: 10, ..Filter::default() }).unwrap().len();
        let waited = std::time::Instant::now();
        while count() < 2 && waited.elapsed() < std::time::Duration::from_secs(10) {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(count(), 2, "both rows are written while the writer lives");
        drop(writer);
    }

    #[test]
    fn every_queued_row_is_written_by_the_time_the_writer_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(AuditStore::open(&dir.path().join("state")).unwrap());
        let writer = AuditWriter::start(store.clone());
        for i in 0..2000 {
            writer.record(Record {
                time_ms: i,
                transport: Transport::Cli,
                caller: "local".into(),
                verb: format!("v.n{i}"),
                outcome: RowOutcome::Ok,
                ..Record::default()
            });
        }
        drop(writer);
        let rows: Vec<Record> = store
            .query(&Filter { limit: usize::MAX, ..Filter::default() })
            .unwrap()
            .into_iter()
            .map(Result::unwrap)
            .collect();
        assert_eq!(rows.len(), 2000);
        assert_eq!(rows[1999].verb, "v.n1999", "in order");
    }
}
