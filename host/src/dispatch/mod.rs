//! Dispatch: one request in, one JSON envelope out. Shared by every
//! transport (the CLI's `verbgate request` and the MCP `request` tool), so
//! both give byte-identical answers for the same request and state.
//!
//! Envelope:
//! - ops → `{"status": "success"|"partial", "results": [...]}`, one entry
//!   per op **in input order** (`{"ok": true, "op", "result"}` or
//!   `{"ok": false, "op", "error"}`); ops run concurrently, except that
//!   an op that may change the root runs alone, in batch order (see
//!   [`turns`]);
//! - help → `{"status": "success", "help": {...}}`;
//! - a request that cannot be run at all → `{"status": "error", "error"}`.
//!
//! An argument or fingerprint error carries the verb's schema by reference:
//! the error has `schema_fingerprint` (and the help call to make), and the
//! schema itself appears once in the envelope's `schemas` map, however many
//! ops failed against it.
//!
//! One op's path is [`pipeline`]: its stages, in order, are [`resolve`],
//! [`policy`], [`args`], [`plan`], [`prepare`], [`consent`], [`run`] (with
//! the job operations of [`host`]), [`map`] and [`record`]. The data that
//! flows between them lives in leaf modules that know no stage
//! ([`request`], [`caller`], [`ask`], [`outcome`], [`record`]'s trail),
//! and this module imports nothing but those leaves, [`policy`] and
//! [`turns`]: no module of dispatch imports one that imports it.

mod args;
pub mod ask;
pub mod caller;
mod consent;
pub mod help;
mod host;
mod map;
pub mod outcome;
mod pipeline;
mod plan;
pub mod policy;
pub mod prepare;
mod record;
pub mod request;
mod resolve;
mod run;
pub mod target;
pub mod turns;

use serde_json::{json, Map, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::config::Config;
use crate::error::{ErrorCode, OpError};
use crate::exec::RunLimits;
use crate::jobs::Jobs;
use crate::registry::live::LiveRegistry;
use crate::registry::Registry;
use crate::runtime::Runtime;
pub use caller::{Caller, Claims, Transport};
use outcome::OpOutcome;
use record::Ledger;
use request::Request;

/// Codes whose error carries the verb's schema.
const SCHEMA_BEARING: &[ErrorCode] = &[
    ErrorCode::UnknownParam,
    ErrorCode::InvalidArgs,
    ErrorCode::FingerprintRequired,
    ErrorCode::FingerprintStale,
];

/// Progress of a request's ops, readable while it runs.
#[derive(Debug, Default)]
pub struct Observer {
    /// Ops in the request (0 until known).
    pub total: AtomicUsize,
    /// Ops finished.
    pub done: AtomicUsize,
}

/// A response: the JSON and whether it is a request-level error (which the
/// MCP transport reports with `isError: true`).
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// The envelope.
    pub body: Value,
    /// True when the request as a whole failed.
    pub is_error: bool,
}

/// The dispatcher: registry plus the settings ops run with.
pub struct Dispatcher {
    registry: Arc<LiveRegistry>,
    /// The sandbox every component runs in; it never changes while the
    /// registry grows, so calls reach it without a registry snapshot.
    runtime: Arc<Runtime>,
    config: Arc<Config>,
    run_limits: RunLimits,
    jobs: Option<Jobs>,
    /// Defences against hostile repository content, applied to every plan.
    guards: Arc<crate::exec::Guards>,
    /// The operator's `[[policy]]` rules and the defaults.
    policy: policy::Policy,
    /// Where every op is recorded (nowhere with `audit.enabled = false`);
    /// dropping the dispatcher writes every queued row.
    ledger: Ledger,
    /// Ops take turns on the root: a writer alone, readers together.
    turns: turns::Turns,
}

impl Dispatcher {
    /// A dispatcher over a loaded registry; `jobs` is the job store spawn
    /// and job verbs use (without it they answer `unavailable`), `audit` the
    /// trail every op is recorded in.
    pub fn new(
        registry: Arc<Registry>,
        config: Arc<Config>,
        jobs: Option<Jobs>,
        audit: Option<Arc<crate::audit::AuditStore>>,
    ) -> Arc<Self> {
        Self::live(LiveRegistry::fixed(registry), config, jobs, audit)
    }

    /// A dispatcher over a registry that grows as background compiles
    /// finish (the server).
    pub fn live(
        registry: Arc<LiveRegistry>,
        config: Arc<Config>,
        jobs: Option<Jobs>,
        audit: Option<Arc<crate::audit::AuditStore>>,
    ) -> Arc<Self> {
        let l = &config.limits;
        let run_limits = RunLimits {
            default_timeout: Duration::from_millis(l.exec_timeout_ms),
            max_timeout: Duration::from_millis(l.exec_timeout_max_ms),
            capture_bytes: l.capture_bytes,
        };
        let runtime = registry.current().runtime().clone();
        let guards = Arc::new(crate::exec::Guards::new(
            config.trusted_repos.clone(),
            config.git.transports.clone(),
        ));
        let sandboxed = config.sandbox.mode == crate::config::SandboxMode::Enforce
            && crate::sandbox::support().missing.is_none();
        let policy = policy::Policy::with_sandbox(&config.policy, sandboxed);
        let ledger = Ledger::new(audit, config.audit.args_bytes);
        let turns = turns::Turns::new(&config.home, &config.root);
        Arc::new(Dispatcher {
            registry,
            runtime,
            config,
            run_limits,
            jobs,
            guards,
            policy,
            ledger,
            turns,
        })
    }

    /// The registry as it is now (take it once per op: it may grow).
    pub fn registry(&self) -> Arc<Registry> {
        self.registry.current()
    }

    /// The live registry (what is still compiling).
    pub fn live_registry(&self) -> &Arc<LiveRegistry> {
        &self.registry
    }

    /// The policy in force.
    pub fn policy(&self) -> &policy::Policy {
        &self.policy
    }

    /// The configuration ops run with (the MCP transport keeps its
    /// tasks beside the job store, as long as jobs are kept).
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The batch cap.
    pub fn batch_cap(&self) -> usize {
        self.config.limits.batch_cap
    }

    /// Record a request a transport refused before dispatch could decode
    /// it (nothing ran; the attempt is in the audit trail).
    pub fn record_refused_request(&self, caller: &Caller, request: &Value, error: &OpError) {
        self.ledger.refused_request(caller, request, error);
    }

    /// Record an HTTP request whose credentials were refused (`details`
    /// says why; the token itself is never recorded).
    pub fn record_refused_credentials(&self, caller: &Caller, details: &Value, error: &OpError) {
        self.ledger.refused_credentials(caller, details, error);
    }

    /// Handle one request.
    pub async fn handle(self: &Arc<Self>, request: &Value) -> Response {
        self.handle_observed(request, Arc::new(Observer::default())).await
    }

    /// Handle one request, counting finished ops in `observer` (the MCP
    /// transport turns the count into progress notifications).
    pub async fn handle_observed(
        self: &Arc<Self>,
        request: &Value,
        observer: Arc<Observer>,
    ) -> Response {
        self.handle_as(request, observer, Caller::local()).await
    }

    /// Handle one request for `caller`: its allow list narrows what ops
    /// and help reach (see [`caller`]).
    pub async fn handle_as(
        self: &Arc<Self>,
        request: &Value,
        observer: Arc<Observer>,
        caller: Arc<Caller>,
    ) -> Response {
        let decoded = match request::decode(request, self.batch_cap()) {
            Ok(r) => r,
            Err(e) => {
                self.ledger.refused_request(&caller, request, &e);
                return request_error(e);
            }
        };
        match decoded {
            Request::Catalog => success_help(self.catalog(&caller).await),
            Request::HelpVerb(name) => match self.help_as(&name, &caller).await {
                Ok(h) => success_help(h),
                Err(e) => request_error(e),
            },
            Request::Ops(ops) => {
                let count = ops.len();
                observer.total.store(count, Ordering::Relaxed);
                // Batch order: an op that may change the root starts after
                // every op before it has finished, and the ops after it wait
                // for it; the readers in between run side by side.
                let mut accesses = Vec::with_capacity(count);
                for op in &ops {
                    let access = self
                        .registry_for(&op.op, &caller)
                        .await
                        .resolve(&op.op)
                        .and_then(|v| turns::Access::of(v));
                    accesses.push(access.unwrap_or(turns::Access::Shared));
                }
                let mut ops: Vec<Option<request::OpRequest>> = ops.into_iter().map(Some).collect();
                let mut outcomes = Vec::with_capacity(count);
                // Dropped unfinished (the caller cancelled or went away), it
                // stops the ops that have not begun to act.
                let cancel = CancelOnDrop::default();
                for phase in turns::phases(&accesses) {
                    // Each op runs in its own detached task: if the caller
                    // cancels or disconnects, dropping these handles stops
                    // the *observation* only — the work an op started runs
                    // on (the phases after it do not start).
                    let handles: Vec<_> = phase
                        .map(|i| {
                            let op = ops[i].take().expect("each op runs in one phase");
                            let me = Arc::clone(self);
                            let observer = Arc::clone(&observer);
                            let caller = Arc::clone(&caller);
                            let flag = Arc::clone(&cancel.0);
                            tokio::spawn(async move {
                                let trail = me.ledger.trail(&op.args).cancelled_by(&flag);
                                let outcome = me.run_op(op, &caller, trail).await;
                                observer.done.fetch_add(1, Ordering::Relaxed);
                                outcome
                            })
                        })
                        .collect();
                    for handle in handles {
                        outcomes.push(handle.await.unwrap_or_else(|e| {
                            tracing::error!(error = %e, "an op task failed");
                            OpOutcome {
                                op: String::new(),
                                verb: None,
                                result: Err(OpError::new(
                                    ErrorCode::Internal,
                                    "the op crashed inside verbgate; please report it",
                                )),
                            }
                        }));
                    }
                }
                cancel.disarm();
                Response { body: envelope(outcomes), is_error: false }
            }
        }
    }
}

/// Sets its flag when dropped before [`CancelOnDrop::disarm`].
#[derive(Default)]
struct CancelOnDrop(Arc<std::sync::atomic::AtomicBool>, bool);

impl CancelOnDrop {
    fn disarm(mut self) {
        self.1 = true;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if !self.1 {
            self.0.store(true, Ordering::SeqCst);
        }
    }
}

impl Response {
    /// MCP's `isError`: the request could not run, or it ran and no op of
    /// it succeeded ([`nothing_succeeded`]). A batch with at least one
    /// answer is not an error: hosts read `isError` as "the call failed".
    pub fn is_tool_error(&self) -> bool {
        self.is_error || nothing_succeeded(&self.body, &[])
    }
}

/// Whether `envelope` has ops and none of them succeeded: each answered
/// `ok: false` or, for the entries at `jobs` (a finished job's
/// `job.result`, as a task's result holds), its job's `outcome` is other
/// than `success` — a failed `cargo.test`.
pub fn nothing_succeeded(envelope: &Value, jobs: &[usize]) -> bool {
    let Some(results) = envelope["results"].as_array() else { return false };
    let failed = |(i, r): (usize, &Value)| {
        r["ok"] != true || (jobs.contains(&i) && r["result"]["outcome"] != "success")
    };
    !results.is_empty() && results.iter().enumerate().all(failed)
}

fn success_help(help: Value) -> Response {
    Response { body: json!({ "status": "success", "help": help }), is_error: false }
}

fn request_error(e: OpError) -> Response {
    Response { body: json!({ "status": "error", "error": e.to_json() }), is_error: true }
}

/// Assemble the per-op envelope, carrying each failing schema once.
fn envelope(outcomes: Vec<OpOutcome>) -> Value {
    let mut all_ok = true;
    let mut schemas = Map::new();
    let results: Vec<Value> = outcomes
        .into_iter()
        .map(|o| match o.result {
            Ok(result) => json!({ "ok": true, "op": o.op, "result": result }),
            Err(err) => {
                all_ok = false;
                let mut e = err.to_json();
                if let (Some(verb), true) = (&o.verb, SCHEMA_BEARING.contains(&err.code)) {
                    e["verb"] = json!(verb.name);
                    e["schema_fingerprint"] = json!(verb.fingerprint);
                    e["help"] = json!({ "help": verb.name });
                    schemas
                        .entry(verb.fingerprint.clone())
                        .or_insert_with(|| verb.params_schema.clone());
                }
                json!({ "ok": false, "op": o.op, "error": e })
            }
        })
        .collect();
    let mut body =
        json!({ "status": if all_ok { "success" } else { "partial" }, "results": results });
    if !schemas.is_empty() {
        body["schemas"] = Value::Object(schemas);
    }
    body
}
