//! What dispatch tells the audit trail about one op: collected in a
//! [`Trail`] while the op runs (the policy's decision, the person's answer,
//! the program and argv, the job), then written as one [`Record`] when the
//! op's outcome is known, before the answer goes back.

use serde_json::Value;
use std::time::Instant;

use super::caller::Caller;
use super::consent::Answer;
use super::op::OpOutcome;
use super::Dispatcher;
use crate::audit::{redact, Record};
use crate::config::Decision;
use crate::exec::Prepared;

/// What happened to one op on its way through dispatch.
#[derive(Debug, Default)]
pub struct Trail {
    /// The policy's decision.
    pub decision: Option<Decision>,
    /// The rule, or who answered an `ask`.
    pub decided_by: Option<String>,
    /// The person's answer to an `ask`.
    pub answer: Option<Answer>,
    /// The program and argv the plan resolved to.
    pub program: Option<(String, Vec<String>)>,
    /// An `exec-read` plan's read-back command: program then argv.
    pub read_back: Option<Vec<String>>,
    /// The job a spawn started.
    pub job_id: Option<String>,
    /// A dry run: nothing ran.
    pub dry_run: bool,
}

impl Trail {
    /// Note the command an op is about to run (or would, for a dry run).
    pub fn ran(&mut self, prepared: &Prepared) {
        self.program = Some((prepared.program.display().to_string(), prepared.argv.clone()));
    }

    /// Note an `exec-read` plan's read-back command.
    pub fn reads_back(&mut self, prepared: &Prepared) {
        self.read_back = Some(std::iter::once(prepared.program.display().to_string()).chain(prepared.argv.iter().cloned()).collect());
    }
}

/// The argv with every sensitive param's string value cut out: a plugin may
/// well pass a secret to its program (`--token=…`), and the trail records
/// argv as well as args.
fn redact_argv(argv: Vec<String>, args: Option<&Value>, sensitive: &[String]) -> Vec<String> {
    let secrets: Vec<&str> = sensitive.iter().filter_map(|name| args?.get(name)?.as_str()).filter(|s| !s.is_empty()).collect();
    if secrets.is_empty() {
        return argv;
    }
    argv.into_iter().map(|a| secrets.iter().fold(a, |a, s| a.replace(s, crate::audit::REDACTED))).collect()
}

/// When an op arrived and with what args (kept only while the trail is on).
pub struct Arrival {
    started: Instant,
    time_ms: i64,
    args: Option<Value>,
}

impl Dispatcher {
    /// Start timing an op; its args are kept only when they will be recorded.
    pub(crate) fn arrival(&self, args: &Value) -> Arrival {
        Arrival { started: Instant::now(), time_ms: crate::jobs::process::now_ms(), args: self.audit.is_some().then(|| args.clone()) }
    }

    /// Queue the op's row for the writer. A failing write is logged, never
    /// turned into the op's failure: the op has already happened.
    pub(crate) fn record(&self, caller: &Caller, arrival: Arrival, outcome: &OpOutcome, trail: Trail) {
        let Some(store) = &self.audit else { return };
        let verb = outcome.verb.as_deref();
        let sensitive = verb.map_or(&[][..], |v| v.sensitive.as_slice());
        let args = arrival.args.as_ref().map_or_else(String::new, |a| redact(a, sensitive, self.config.audit.args_bytes));
        let (program, argv) = match trail.program {
            Some((p, argv)) => (Some(p), Some(Value::from(redact_argv(argv, arrival.args.as_ref(), sensitive)).to_string())),
            None => (None, None),
        };
        let record = Record {
            id: 0,
            time_ms: arrival.time_ms,
            transport: caller.transport.as_str().to_string(),
            client: caller.client.clone(),
            caller: caller.name.clone(),
            verb: verb.map_or_else(|| outcome.op.clone(), |v| v.name.clone()),
            args,
            fingerprint: verb.map(|v| v.fingerprint.clone()),
            decision: trail.decision.map(|d| d.as_str().to_string()),
            decided_by: trail.decided_by,
            answer: trail.answer.map(|a| a.as_str().to_string()),
            program,
            argv,
            outcome: match &outcome.result {
                Ok(_) => "ok".to_string(),
                Err(e) => e.code.as_str().to_string(),
            },
            duration_ms: i64::try_from(arrival.started.elapsed().as_millis()).unwrap_or(i64::MAX),
            job_id: trail.job_id,
            dry_run: trail.dry_run,
            read_back: trail.read_back.map(|words| Value::from(redact_argv(words, arrival.args.as_ref(), sensitive)).to_string()),
        };
        store.record(record);
    }
}
