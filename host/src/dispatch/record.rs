//! The last stage of an op, and the record it keeps on the way: what
//! dispatch tells the audit trail is collected in a [`Trail`] while the op
//! runs (the policy's decision, the person's answer, the program and argv,
//! the job). The trail fails closed: before an op acts, its row is
//! committed ([`Ledger::begin`]) and the op does not run if it cannot be;
//! when the op's outcome is known the row is updated (or, for an op
//! refused before it acted, written) by the writer thread
//! ([`Ledger::finish`]).
//!
//! A leaf of dispatch: every stage may note what it did here, and this
//! module knows none of them.

use serde_json::Value;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use super::ask::Answer;
use super::caller::Caller;
use super::outcome::OpOutcome;
use crate::audit::{redact, AuditStore, AuditWriter, Record, RowOutcome};
use crate::config::Decision;
use crate::error::{ErrorCode, OpError};
use crate::exec::Prepared;
use crate::registry::Verb;

/// What happened to one op on its way through dispatch.
#[derive(Debug)]
pub struct Trail {
    /// When the op arrived (for its duration).
    started: Instant,
    /// When the op arrived, ms since the epoch.
    time_ms: i64,
    /// Its args (kept only while the trail is on).
    args: Option<Value>,
    /// The row written before anything ran ([`Ledger::begin`]); the
    /// op's end updates it.
    row: Option<i64>,
    /// The policy's decision.
    pub decision: Option<Decision>,
    /// The rule, or who answered an `ask`.
    pub decided_by: Option<String>,
    /// The person's answer to an `ask`.
    pub answer: Option<Answer>,
    /// The program and argv the plan resolved to.
    pub program: Option<(String, Words)>,
    /// An `exec-read` plan's read-back command.
    pub read_back: Option<(String, Words)>,
    /// The job a spawn started.
    pub job_id: Option<String>,
    /// A dry run: nothing ran.
    pub dry_run: bool,
    /// Set when the request was cancelled: an op that has not yet begun
    /// to act does not begin.
    cancelled: Option<Arc<AtomicBool>>,
}

impl Trail {
    /// Let the request's cancellation stop this op before it acts.
    pub fn cancelled_by(mut self, flag: &Arc<AtomicBool>) -> Trail {
        self.cancelled = Some(Arc::clone(flag));
        self
    }

    /// Note the command an op is about to run (or would, for a dry run).
    pub fn ran(&mut self, prepared: &Prepared) {
        self.program = Some((prepared.program.display().to_string(), Words::of(prepared)));
    }

    /// Note the row [`Ledger::begin`] (or a [`Commit`]) made durable.
    pub fn began(&mut self, row: i64) {
        self.row = Some(row);
    }

    /// Note an `exec-read` plan's read-back command.
    pub fn reads_back(&mut self, prepared: &Prepared) {
        self.read_back = Some((prepared.program.display().to_string(), Words::of(prepared)));
    }
}

/// Most argv words a row records.
pub const ARGV_WORDS: usize = 64;

/// A command's argv with which words the caller gave.
#[derive(Debug, Clone)]
pub struct Words {
    argv: Vec<String>,
    caller: Vec<bool>,
}

impl Words {
    fn of(p: &Prepared) -> Words {
        Words { argv: p.argv.clone(), caller: p.caller_words.clone() }
    }

    /// The argv as recorded: a word the caller gave (a value, path or
    /// option) that holds one of `secrets` is replaced, whole, by
    /// [`crate::audit::REDACTED`] (an option keeps its `--name=`). Only
    /// those positions: a plugin's own words are never touched, so a
    /// secret that equals `status` or a single letter cannot blank or
    /// mangle what the record shows ran; and a word is never cut into
    /// pieces (a secret inside a caller's `--header=Bearer <secret>` takes
    /// the whole value with it).
    ///
    /// The record is bounded like the args: each word cut at
    /// [`crate::audit::VALUE_BYTES`], at most [`ARGV_WORDS`] words, then a
    /// word saying how many more there were — a plan with thousands of
    /// long paths cannot grow the trail by megabytes a row.
    fn redacted(&self, secrets: &[&str]) -> Vec<String> {
        let mut words: Vec<String> = self
            .argv
            .iter()
            .take(ARGV_WORDS)
            .enumerate()
            .map(|(i, word)| {
                if !self.caller.get(i).copied().unwrap_or(false) {
                    return word.clone();
                }
                let holds = |text: &str| secrets.iter().any(|s| text.contains(s));
                match word.strip_prefix("--").and_then(|w| w.split_once('=')) {
                    Some((name, v)) if holds(v) => format!("--{name}={}", crate::audit::REDACTED),
                    _ if holds(word) => crate::audit::REDACTED.to_string(),
                    _ => word.clone(),
                }
            })
            .map(|w| crate::audit::clip_value(&w))
            .collect();
        if self.argv.len() > ARGV_WORDS {
            words.push(format!("… ({} more words)", self.argv.len() - ARGV_WORDS));
        }
        words
    }
}

/// The string values of the op's sensitive params: a plugin may well pass
/// a secret to its program (`--token=…`), and the trail records argv as
/// well as args.
fn secrets<'a>(args: Option<&'a Value>, sensitive: &[String]) -> Vec<&'a str> {
    sensitive
        .iter()
        .filter_map(|name| args?.get(name)?.as_str())
        .filter(|s| !s.is_empty())
        .collect()
}

/// Where ops are recorded: the audit writer (none with `audit.enabled =
/// false`) and how much of an op's args a row keeps. Dropping it writes
/// every queued row.
pub struct Ledger {
    writer: Option<AuditWriter>,
    args_bytes: usize,
}

impl Ledger {
    /// A ledger over `store` (none: nothing is recorded), keeping at most
    /// `args_bytes` of an op's args a row.
    pub fn new(store: Option<Arc<AuditStore>>, args_bytes: usize) -> Ledger {
        Ledger { writer: store.map(AuditWriter::start), args_bytes }
    }

    /// Start the trail of an op arriving with `args` (kept only when they
    /// will be recorded).
    pub fn trail(&self, args: &Value) -> Trail {
        Trail {
            started: Instant::now(),
            time_ms: crate::jobs::process::now_ms(),
            args: self.writer.is_some().then(|| args.clone()),
            row: None,
            decision: None,
            decided_by: None,
            answer: None,
            program: None,
            read_back: None,
            job_id: None,
            dry_run: false,
            cancelled: None,
        }
    }

    /// The row for an op named `op` (resolved to `verb`, if it was) as its
    /// trail stands, ending in `outcome`.
    fn row(
        &self,
        caller: &Caller,
        op: &str,
        verb: Option<&Verb>,
        outcome: RowOutcome,
        trail: &Trail,
    ) -> Record {
        let sensitive = verb.map_or(&[][..], |v| v.sensitive.as_slice());
        let args =
            trail.args.as_ref().map_or_else(String::new, |a| redact(a, sensitive, self.args_bytes));
        let secrets = secrets(trail.args.as_ref(), sensitive);
        let (program, argv) = match &trail.program {
            Some((p, words)) => {
                (Some(p.clone()), Some(Value::from(words.redacted(&secrets)).to_string()))
            }
            None => (None, None),
        };
        Record {
            id: 0,
            time_ms: trail.time_ms,
            transport: caller.transport,
            client: caller.client.clone(),
            caller: caller.name.clone(),
            verb: verb.map_or_else(|| op.to_string(), |v| v.name.clone()),
            args,
            fingerprint: verb.map(|v| v.fingerprint.clone()),
            decision: trail.decision,
            decided_by: trail.decided_by.clone(),
            answer: trail.answer,
            program,
            argv,
            outcome,
            duration_ms: i64::try_from(trail.started.elapsed().as_millis()).unwrap_or(i64::MAX),
            job_id: trail.job_id.clone(),
            dry_run: trail.dry_run,
            read_back: trail.read_back.as_ref().map(|(p, words)| {
                Value::from(
                    std::iter::once(p.clone()).chain(words.redacted(&secrets)).collect::<Vec<_>>(),
                )
                .to_string()
            }),
        }
    }

    /// Make the op's row durable *before* it acts: called right before a
    /// program starts (or a job is spawned, or killed), with
    /// what is about to run in `trail`. The row says `started` until the
    /// op's end replaces it. If the row cannot be committed (the database
    /// is locked past its busy timeout, the disk is full), the op does not
    /// run: `audit_unavailable`. Called again (a kill program found while a
    /// `job.kill` runs), it updates the same row, durably again.
    pub async fn begin(
        &self,
        caller: &Caller,
        verb: &Verb,
        trail: &mut Trail,
    ) -> Result<(), OpError> {
        let Some(commit) = self.commit(caller, verb, trail)? else { return Ok(()) };
        let path = commit.store.path().to_path_buf();
        let written = tokio::task::spawn_blocking(move || commit.write()).await;
        let id = written.map_err(|e| unrecorded(&verb.name, &e.to_string(), &path))??;
        trail.began(id);
        Ok(())
    }

    /// [`Ledger::begin`] as a [`Commit`] to write on a thread of the
    /// caller's choosing (the one that starts the program: no hop back and
    /// forth), then hand to [`Trail::began`]. `None`: the trail is off.
    /// Fails at once if the request was cancelled.
    pub fn commit(
        &self,
        caller: &Caller,
        verb: &Verb,
        trail: &Trail,
    ) -> Result<Option<Commit>, OpError> {
        if trail.cancelled.as_ref().is_some_and(|c| c.load(Ordering::SeqCst)) {
            return Err(OpError::new(
                ErrorCode::Unavailable,
                format!("the request was cancelled before `{}` began (it was waiting for its turn or a person); nothing ran", verb.name),
            ));
        }
        let Some(writer) = &self.writer else { return Ok(None) };
        Ok(Some(Commit {
            record: self.row(caller, &verb.name, Some(verb), RowOutcome::Started, trail),
            row: trail.row,
            store: writer.store(),
            verb: verb.name.clone(),
        }))
    }
    /// Queue the op's final row for the writer (or the update of the row
    /// [`begin`](Self::begin) wrote). Nothing ran without a durable row,
    /// so a failing write here loses only the end of a recorded op (its
    /// row keeps saying `started`), or a refusal.
    pub fn finish(&self, caller: &Caller, outcome: &OpOutcome, trail: Trail) {
        let telemetry = crate::telemetry::active().is_some();
        if self.writer.is_none() && !telemetry {
            return;
        }
        let code = match &outcome.result {
            Ok(_) => RowOutcome::Ok,
            Err(e) => RowOutcome::Failed(e.code),
        };
        let record = self.row(caller, &outcome.op, outcome.verb.as_deref(), code, &trail);
        if telemetry {
            // The op's span is the row's public part: what ran and how it
            // ended, never its args.
            let exit = outcome.result.as_ref().ok().and_then(|v| v.get("exit_code"));
            crate::telemetry::span::op(
                caller.trace.as_ref(),
                &record,
                exit.and_then(Value::as_i64),
            );
        }
        let Some(writer) = &self.writer else { return };
        match trail.row {
            Some(id) => writer.update(id, record),
            None => writer.record(record),
        }
    }

    /// Record a request refused as a whole (too many ops, a malformed op):
    /// nothing ran, but the attempt is in the trail. The verb column holds
    /// `request`; the args column the start of what was sent.
    pub fn refused_request(&self, caller: &Caller, request: &Value, error: &OpError) {
        self.refused("request", caller, request, error);
    }

    /// Record a request whose credentials were refused before anything
    /// was read: the verb column holds `authenticate`, the args column why
    /// (never the token).
    pub fn refused_credentials(&self, caller: &Caller, details: &Value, error: &OpError) {
        self.refused("authenticate", caller, details, error);
    }

    fn refused(&self, op: &str, caller: &Caller, args: &Value, error: &OpError) {
        if self.writer.is_none() {
            return;
        }
        let mut trail = self.trail(args);
        trail.args = Some(args.clone());
        let outcome = OpOutcome { op: op.to_string(), verb: None, result: Err(error.clone()) };
        self.finish(caller, &outcome, trail);
    }
}

/// An op's row, ready to be made durable before the op acts
/// ([`Ledger::commit`]).
pub struct Commit {
    record: Record,
    row: Option<i64>,
    store: Arc<AuditStore>,
    verb: String,
}

impl Commit {
    /// Write the row (or update the op's earlier one) and commit it; its
    /// id. Blocking: SQLite may wait up to its busy timeout.
    pub fn write(self) -> Result<i64, OpError> {
        let written = match self.row {
            Some(id) => self.store.update(id, &self.record).map(|()| id),
            None => self.store.append(&self.record),
        };
        written.map_err(|e| unrecorded(&self.verb, &e.to_string(), self.store.path()))
    }
}

/// `audit_unavailable`: the row could not be made durable, so nothing ran.
fn unrecorded(verb: &str, why: &str, path: &std::path::Path) -> OpError {
    let path = path.display().to_string();
    OpError::new(
        ErrorCode::AuditUnavailable,
        format!(
            "`{verb}` did not run: its audit row could not be written to {path} ({why}), and no op runs unrecorded. Free disk space or end what holds the database locked, then send the op again",
        ),
    )
    .with("verb", verb)
    .with("path", path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(argv: &[&str], caller: &[bool]) -> Words {
        Words { argv: argv.iter().map(|s| s.to_string()).collect(), caller: caller.to_vec() }
    }

    #[test]
    fn only_the_callers_words_holding_a_secret_are_redacted() {
        // Seen before: redaction replaced substrings, so a secret equal to
        // another argv word blanked it, and a one-letter secret mangled
        // every word containing that letter.
        let w = words(
            &["status", "--token=status", "status", "-s", "--all"],
            &[false, true, true, false, false],
        );
        assert_eq!(
            w.redacted(&["status"]),
            ["status", "--token=<redacted>", "<redacted>", "-s", "--all"]
        );
        let w = words(&["commit", "--message=a", "a"], &[false, true, false]);
        assert_eq!(
            w.redacted(&["a"]),
            ["commit", "--message=<redacted>", "a"],
            "a plugin's own word is never touched"
        );
        let many: Vec<String> = (0..100).map(|i| format!("{i}{}", "p".repeat(1000))).collect();
        let w = Words { argv: many, caller: vec![] };
        let recorded = w.redacted(&[]);
        assert_eq!(recorded.len(), ARGV_WORDS + 1);
        assert!(
            recorded[0].ends_with("(1001 bytes)") && recorded[ARGV_WORDS] == "… (36 more words)",
            "{recorded:?}"
        );
        let w = words(&["log", "xsecretx", "--header=Bearer secret"], &[false, true, true]);
        assert_eq!(
            w.redacted(&["secret"]),
            ["log", "<redacted>", "--header=<redacted>"],
            "a caller word holding the secret goes whole"
        );
    }
}
