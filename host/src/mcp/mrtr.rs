//! Consent on protocol 2026-07-28: multi round-trip requests (MRTR,
//! SEP-2322). On that protocol a server may not send `elicitation/create`;
//! it answers the `tools/call` with an `InputRequiredResult` carrying the
//! questions, and the client calls again with `inputResponses` and the
//! `requestState` it was given.
//!
//! verbgate keeps one dispatcher for both eras, so a batch runs exactly as
//! it does for a 2025-11-25 client: ops run in batch order, and an op the
//! policy asks about waits for its answer (its turn on the root given
//! back, its plan checked again after a yes). Only the way the question
//! travels differs. The batch runs **once**, in the background; when ops
//! wait for answers, the round ends with their questions and the batch is
//! *held* under the `requestState`. The retry delivers the answers to the
//! waiting ops and observes the same batch on, until it finishes (the
//! envelope) or asks again (the next round). So no op ever runs twice
//! across rounds: ops that needed no consent ran in the round they were
//! reached, and their results come back with the rest of the envelope.
//!
//! The `requestState` is sealed (HMAC-SHA256, rmcp's
//! [`RequestStateCodec`], a key made for this process) over the batch's
//! id, the round, and a digest of the tool arguments, bound to the caller
//! (token identity, transport, client) as associated data, with a time to
//! live. A retry is refused (`invalid_request`, naming what was wrong in
//! `request_state`) when the state was altered or forged, comes from
//! another caller or another server process, carries other arguments, was
//! already used (each state is good for one retry), or expired. An
//! answer can only reach the questions of its own round, which the ops
//! that asked them are waiting on with exactly the commands shown.

use anyhow::Context;
use rmcp::model::{
    ElicitationAction, InputRequest, InputRequests, InputRequiredResult, RequestStateCodec,
    RequestStateError, SealOptions,
};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{oneshot, watch};

use super::consent::{form, offered, CHOICES};
use crate::dispatch::ask::{Answer, AskFuture, Asker, Question};
use crate::dispatch::{Observer, Response};
use crate::error::{ErrorCode, OpError};
use crate::private_files::random_bytes;

/// How long a held batch waits, once one of its ops asked, for others of
/// the same phase to ask too, so questions asked together travel in one
/// round (each new question restarts the wait, up to [`GATHER_MAX`]).
pub const GATHER_QUIET: Duration = Duration::from_millis(150);

/// The longest a round waits to gather questions.
pub const GATHER_MAX: Duration = Duration::from_secs(1);

/// How long a finished batch's envelope is kept for a retry that comes
/// after every question it carried timed out, and how far past the
/// consent timeout a `requestState` stays valid for that retry.
pub const RESULT_GRACE: Duration = Duration::from_secs(300);

/// Most batches one caller may have held at once (waiting for a retry);
/// past it the oldest unfinished one is cancelled, as a legacy client
/// cancelling its call would.
pub const HELD_PER_CALLER: usize = 64;

/// The longest part of a refused `requestState` quoted back.
const QUOTED_STATE_BYTES: usize = 64;

/// The batches held between rounds, and the key that seals their states.
/// One per stdio connection, one per HTTP server (a 2026-07-28 HTTP
/// request belongs to no session, so any request of the same caller may
/// carry the retry).
pub struct Rounds {
    codec: RequestStateCodec,
    /// Secret salt for batch ids: an id is the digest of it and a counter.
    salt: [u8; 32],
    next: std::sync::atomic::AtomicU64,
    held: Mutex<HashMap<String, Arc<Held>>>,
}

impl std::fmt::Debug for Rounds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rounds").field("held", &self.lock().len()).finish()
    }
}

/// What `requestState` carries, sealed: which batch, which round, and the
/// digest of the arguments the round was issued for.
#[derive(Serialize, Deserialize)]
struct Sealed {
    batch: String,
    round: u32,
    args: String,
}

/// One batch, running in the background, whose ops may be waiting for a
/// person's answers.
pub struct Held {
    id: String,
    /// The caller binding (see [`Rounds::binding`]): only it may resume.
    binding: String,
    /// Digest of the tool arguments.
    args: String,
    inner: Mutex<Inner>,
    /// Bumped whenever a question arrives or the batch finishes.
    changed: watch::Sender<u64>,
    /// The batch's progress, reported by every round that observes it.
    observer: Arc<Observer>,
}

#[derive(Default)]
struct Inner {
    /// The last round whose questions went out (0: none yet).
    round: u32,
    /// Whether the retry for `round` has come.
    redeemed: bool,
    /// Questions asked and not yet sent.
    waiting: Vec<Waiting>,
    /// Questions sent in `round`, by key, until its retry answers them.
    out: BTreeMap<String, Waiting>,
    /// Keys given so far.
    keys: usize,
    /// The longest a question of this batch may wait.
    longest: Duration,
    /// The envelope, once the batch finished.
    done: Option<Response>,
    finished_at: Option<Instant>,
    /// Set when the batch was cancelled: every question answers
    /// [`Answer::Cancelled`].
    cancelled: bool,
    /// When the batch was put in the table (it asked for the first time).
    listed_at: Option<Instant>,
    /// The background task running the batch.
    task: Option<tokio::task::AbortHandle>,
}

/// A question and the op waiting for its answer.
struct Waiting {
    form: Value,
    /// What was wrong with the last answer, when it is asked again.
    note: Option<String>,
    reply: oneshot::Sender<Answer>,
}

/// What a round ends with.
pub enum Step {
    /// The batch finished: its envelope.
    Done(Response),
    /// Ops wait for answers: the questions and the sealed state.
    Ask(InputRequiredResult),
}

impl Rounds {
    /// A table with a fresh key (random, never stored): states die with
    /// the process, like the batches they name.
    pub fn new() -> anyhow::Result<Rounds> {
        let key = random_bytes(32)?;
        let salt: [u8; 32] = random_bytes(32)?
            .try_into()
            .map_err(|_| anyhow::anyhow!("the random source gave a short salt"))?;
        let codec = RequestStateCodec::try_new(key).context("cannot make the request-state key")?;
        Ok(Rounds { codec, salt, next: Default::default(), held: Mutex::new(HashMap::new()) })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Held>>> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Who may resume a batch: the transport, the caller's identity (a
    /// token's digest over HTTP, not its name) and the client's label,
    /// hashed. A state is sealed with it as associated data, so another
    /// caller presenting it fails the integrity check.
    pub fn binding(transport: &str, identity: &str, client: &str) -> String {
        crate::json::sha256_hex(json!([transport, identity, client]).to_string().as_bytes())
    }

    /// Digest of a call's tool arguments (as the client sent them).
    pub fn args_digest(args: &Value) -> String {
        crate::json::sha256_hex(args.to_string().as_bytes())
    }

    /// A new batch for `binding` and `args`; run it with [`Held::asker`]
    /// and [`Held::run`], then observe it with [`Rounds::observe`].
    pub fn begin(&self, binding: String, args: &Value) -> Arc<Held> {
        self.sweep();
        let n = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let id = crate::json::sha256_hex(&[&self.salt[..], &n.to_le_bytes()].concat());
        Arc::new(Held {
            id,
            binding,
            args: Self::args_digest(args),
            inner: Mutex::default(),
            changed: watch::channel(0).0,
            observer: Arc::new(Observer::default()),
        })
    }

    /// Forget finished batches nobody collected within [`RESULT_GRACE`].
    fn sweep(&self) {
        self.lock().retain(|_, h| h.lock().finished_at.is_none_or(|t| t.elapsed() < RESULT_GRACE));
    }

    /// Open a retry's `requestState` for `binding` and `args`: the batch
    /// it names, its round now redeemed. Refusals are `invalid_request`
    /// with `request_state` saying what was wrong.
    pub fn resume(&self, state: &str, binding: &str, args: &Value) -> Result<Arc<Held>, OpError> {
        self.sweep();
        let sealed: Sealed = self
            .codec
            .open_json_with(state, binding.as_bytes())
            .map_err(|e| refused_state(state, &e))?;
        if sealed.args != Self::args_digest(args) {
            return Err(state_error(
                state,
                "other_arguments",
                "the requestState was issued for a call with other arguments; a retry must send exactly the arguments of the call that was asked about. Send the request again without requestState to be asked about these ops",
            ));
        }
        let held = self.lock().get(&sealed.batch).cloned();
        let Some(held) = held else {
            return Err(state_error(
                state,
                "used",
                "the requestState was already used: its batch has answered (or was cancelled), and each requestState is good for one retry. Send the request again without requestState to be asked again",
            ));
        };
        let mut inner = held.lock();
        if inner.round != sealed.round || inner.redeemed {
            return Err(state_error(
                state,
                "used",
                "the requestState was already used: each requestState is good for one retry, and this round was answered. Use the requestState of the newest round, or send the request again without requestState",
            ));
        }
        inner.redeemed = true;
        drop(inner);
        Ok(held)
    }

    /// Deliver a retry's answers to the questions of the round `held` was
    /// resumed at. A question whose answer is missing, not an elicitation
    /// result, or an `accept` of no choice the form offers is asked again
    /// in the next round (SEP-2322's SHOULD), its message saying what was
    /// wrong: a client's slip does not use up the batch, and the
    /// question's own timeout still bounds how long it is asked.
    pub fn deliver(held: &Held, responses: Option<&BTreeMap<String, Value>>) {
        let out = std::mem::take(&mut held.lock().out);
        let mut again = Vec::new();
        for (key, mut waiting) in out {
            match elicit_answer(&key, responses.and_then(|r| r.get(&key))) {
                // An op whose question timed out meanwhile hears nothing.
                Ok(decided) => {
                    let _ = waiting.reply.send(decided);
                }
                Err(_) if waiting.reply.is_closed() => {}
                Err(wrong) => {
                    tracing::info!(%key, %wrong, "asking again: the retry's answer was unusable");
                    waiting.note = Some(wrong);
                    again.push(waiting);
                }
            }
        }
        if !again.is_empty() {
            held.lock().waiting.extend(again);
            held.changed.send_modify(|n| *n += 1);
        }
    }

    /// Observe `held` until it finishes or asks: the next [`Step`].
    /// `cancel` ends the observation (the client cancelled the call):
    /// the batch is cancelled as a legacy call's would be.
    pub async fn observe(
        &self,
        held: &Arc<Held>,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Option<Step> {
        let mut changes = held.changed.subscribe();
        loop {
            let (done, asked) = {
                let mut inner = held.lock();
                inner.waiting.retain(|w| !w.reply.is_closed());
                (inner.done.clone(), !inner.waiting.is_empty())
            };
            if let Some(done) = done {
                self.lock().remove(&held.id);
                return Some(Step::Done(done));
            }
            if asked {
                // More ops of the same phase may be about to ask.
                let started = Instant::now();
                while started.elapsed() < GATHER_MAX {
                    match tokio::time::timeout(GATHER_QUIET, changes.changed()).await {
                        Ok(Ok(())) if held.lock().done.is_none() => continue,
                        _ => break,
                    }
                }
                if let Some(step) = self.ask(held) {
                    return Some(step);
                }
                continue;
            }
            tokio::select! {
                changed = changes.changed() => if changed.is_err() { return None },
                _ = cancel.cancelled() => {
                    self.cancel(held);
                    return None;
                }
            }
        }
    }

    /// End a round with the questions waiting in `held`, listing the
    /// batch for its retry. `None` when they were answered meanwhile (timed
    /// out, or the batch finished).
    fn ask(&self, held: &Arc<Held>) -> Option<Step> {
        let mut inner = held.lock();
        if inner.done.is_some() {
            return None;
        }
        let waiting: Vec<Waiting> = std::mem::take(&mut inner.waiting)
            .into_iter()
            .filter(|w| !w.reply.is_closed())
            .collect();
        if waiting.is_empty() {
            return None;
        }
        inner.round += 1;
        inner.redeemed = false;
        let mut requests = InputRequests::new();
        for w in waiting {
            inner.keys += 1;
            let key = format!("consent_{}", inner.keys);
            let mut params = w.form.clone();
            if let Some(note) = &w.note {
                let message = params["message"].as_str().unwrap_or_default();
                params["message"] = Value::String(format!("{note}{ASKED_AGAIN}{message}"));
            }
            match serde_json::from_value::<InputRequest>(
                json!({ "method": "elicitation/create", "params": params }),
            ) {
                Ok(request) => {
                    requests.insert(key.clone(), request);
                    inner.out.insert(key, w);
                }
                Err(e) => {
                    tracing::error!(error = %e, "cannot build an input request from the consent form");
                    let _ = w.reply.send(Answer::Failed);
                }
            }
        }
        if requests.is_empty() {
            return None;
        }
        let ttl = inner.longest + RESULT_GRACE;
        let sealed = Sealed { batch: held.id.clone(), round: inner.round, args: held.args.clone() };
        let newly = inner.listed_at.is_none();
        inner.listed_at.get_or_insert_with(Instant::now);
        drop(inner);
        let state = match self.codec.seal_json_with(
            &sealed,
            &SealOptions::new().associated_data(held.binding.as_bytes()).ttl(ttl),
        ) {
            Ok(s) => s,
            Err(e) => {
                tracing::error!(error = %e, "cannot seal a requestState");
                // Nobody can be asked: asking again would fail the same way.
                for (_, waiting) in std::mem::take(&mut held.lock().out) {
                    let _ = waiting.reply.send(Answer::Failed);
                }
                return None;
            }
        };
        if newly {
            self.list(held);
        }
        Some(Step::Ask(InputRequiredResult::new(Some(requests), Some(state))))
    }

    /// Put `held` in the table, cancelling its caller's oldest unfinished
    /// batch when the caller already holds [`HELD_PER_CALLER`].
    fn list(&self, held: &Arc<Held>) {
        let evict = {
            let mut table = self.lock();
            table.insert(held.id.clone(), held.clone());
            let mut mine: Vec<(Instant, Arc<Held>)> = Vec::new();
            for h in table.values().filter(|h| h.binding == held.binding) {
                let inner = h.lock();
                if let (None, Some(at)) = (&inner.done, inner.listed_at) {
                    mine.push((at, h.clone()));
                }
            }
            if mine.len() > HELD_PER_CALLER {
                mine.sort_by_key(|(t, _)| *t);
                Some(mine.swap_remove(0).1)
            } else {
                None
            }
        };
        if let Some(old) = evict {
            tracing::info!(batch = %old.id, "cancelling the oldest held batch of a caller at the cap");
            self.cancel(&old);
        }
    }

    /// Cancel `held`: waiting ops hear [`Answer::Cancelled`], later ones
    /// too, and ops not begun stop (dropping the batch's future, as a
    /// legacy call cancelled by its client does); ops that began run on.
    pub fn cancel(&self, held: &Arc<Held>) {
        let task = {
            let mut inner = held.lock();
            inner.cancelled = true;
            inner.waiting.clear();
            inner.out.clear();
            inner.task.take()
        };
        if let Some(t) = task {
            t.abort();
        }
        self.lock().remove(&held.id);
    }
}

impl Held {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The batch's id (logs).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The batch's progress (ops done of ops total).
    pub fn observer(&self) -> Arc<Observer> {
        self.observer.clone()
    }

    /// The [`Asker`] the batch's ops ask through; `unavailable` says why
    /// this client cannot be asked (it declared no form elicitation).
    pub fn asker(self: &Arc<Self>, unavailable: Option<String>) -> Arc<dyn Asker> {
        Arc::new(RoundAsker { held: Arc::downgrade(self), unavailable })
    }

    /// Run the batch in the background: `work` is the dispatcher's
    /// handling of the request, its envelope kept for the round that
    /// observes the end.
    pub fn run<F>(self: &Arc<Self>, work: F)
    where
        F: std::future::Future<Output = Response> + Send + 'static,
    {
        let me = self.clone();
        let task = tokio::spawn(async move {
            let response = work.await;
            {
                let mut inner = me.lock();
                inner.done = Some(response);
                inner.finished_at = Some(Instant::now());
            }
            me.changed.send_modify(|n| *n += 1);
        });
        self.lock().task = Some(task.abort_handle());
    }
}

/// Asks by holding the question for the next round's `InputRequiredResult`.
struct RoundAsker {
    /// Weak: a batch forgotten (cancelled, collected) does not live on
    /// through its ops' askers.
    held: std::sync::Weak<Held>,
    unavailable: Option<String>,
}

impl Asker for RoundAsker {
    fn unavailable(&self) -> Option<String> {
        self.unavailable.clone()
    }

    fn ask<'a>(&'a self, q: &'a Question) -> AskFuture<'a> {
        Box::pin(async move {
            let Some(held) = self.held.upgrade() else { return Answer::Cancelled };
            let (reply, answer) = oneshot::channel();
            {
                let mut inner = held.lock();
                if inner.cancelled {
                    return Answer::Cancelled;
                }
                inner.longest = inner.longest.max(q.timeout);
                inner.waiting.push(Waiting { form: form(q), note: None, reply });
            }
            held.changed.send_modify(|n| *n += 1);
            drop(held);
            match tokio::time::timeout(q.timeout, answer).await {
                Err(_) => Answer::Timeout,
                // The batch was cancelled, its questions dropped.
                Ok(Err(_)) => Answer::Cancelled,
                Ok(Ok(a)) => a,
            }
        })
    }
}

/// What separates the note on a question asked again from its message.
const ASKED_AGAIN: &str = " — so verbgate asks again.\n\n";

/// The person's answer in the `inputResponses` value for `key` (an
/// `ElicitResult`), or what was wrong with it: missing, not an
/// elicitation result, or accepted with no choice the form offers.
fn elicit_answer(key: &str, value: Option<&Value>) -> Result<Answer, String> {
    let Some(value) = value else {
        return Err(format!("The retry carried no answer for `{key}` in inputResponses"));
    };
    let action: ElicitationAction = value
        .get("action")
        .and_then(|a| serde_json::from_value(a.clone()).ok())
        .ok_or_else(|| {
            format!("The answer for `{key}` was not an elicitation result (its `action` must be accept, decline or cancel)")
        })?;
    offered(action, value.get("content")).ok_or_else(|| {
        let decision = value.get("content").and_then(|c| c.get("decision"));
        let given = decision.map_or("nothing".to_string(), |d| {
            crate::text::escape(&d.to_string(), QUOTED_STATE_BYTES)
        });
        format!(
            "The accepted answer for `{key}` chose {given}; `decision` must be one of {}",
            CHOICES.join(", ")
        )
    })
}

/// A refused state: `invalid_request`, with `request_state` naming the
/// reason and the start of the value quoted.
fn state_error(state: &str, reason: &str, message: &str) -> OpError {
    OpError::new(ErrorCode::InvalidRequest, message.to_string())
        .with("request_state", reason)
        .with("given", crate::text::escape(state, QUOTED_STATE_BYTES))
}

/// The refusal for a state that does not open.
fn refused_state(state: &str, e: &RequestStateError) -> OpError {
    match e {
        RequestStateError::Expired => state_error(
            state,
            "expired",
            "the requestState expired: its questions were answered by the consent timeout (consent.timeout_ms) long ago and the batch's result is gone. Send the request again without requestState to be asked again",
        ),
        _ => state_error(
            state,
            "not_issued",
            "the requestState is not one this server issued to this caller: it was altered, comes from another client or token, or from a verbgate process that has since stopped (states die with the process). Send the request again without requestState to be asked again",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::model::Effects;
    use tokio_util::sync::CancellationToken;

    fn question(verb: &str, timeout: Duration) -> Question {
        Question {
            verb: verb.into(),
            args: json!({}),
            effects: Effects::Undeclared,
            rule: "default:undeclared".into(),
            reason: None,
            program: Some("/bin/echo".into()),
            argv: vec!["hi".into()],
            cwd: Some("/r".into()),
            read_back: None,
            read_back_cwd: None,
            timeout,
        }
    }

    fn accept(answer: &str) -> Value {
        json!({ "action": "accept", "content": { "decision": answer } })
    }

    /// A batch of two ops asking in turn, then answering what they heard.
    fn start(rounds: &Rounds, binding: &str, args: &Value) -> Arc<Held> {
        let held = rounds.begin(binding.to_string(), args);
        let asker = held.asker(None);
        held.run(async move {
            let first = asker.ask(&question("git.add", Duration::from_secs(30))).await;
            let second = asker.ask(&question("git.commit", Duration::from_secs(30))).await;
            Response {
                body: json!({ "heard": [first.as_str(), second.as_str()] }),
                is_error: false,
            }
        });
        held
    }

    fn asked(step: Option<Step>) -> InputRequiredResult {
        match step {
            Some(Step::Ask(r)) => r,
            Some(Step::Done(r)) => panic!("expected questions, the batch ended: {}", r.body),
            None => panic!("expected questions, the observation ended"),
        }
    }

    #[tokio::test]
    async fn each_round_carries_its_questions_and_a_state_good_for_one_retry() {
        let rounds = Rounds::new().unwrap();
        let args = json!({ "ops": [{ "op": "git.add" }, { "op": "git.commit" }] });
        let me = Rounds::binding("http", "token-a", "py/1");
        let held = start(&rounds, &me, &args);
        let never = CancellationToken::new();
        let first = asked(rounds.observe(&held, &never).await);
        let keys: Vec<String> = first.input_requests.as_ref().unwrap().keys().cloned().collect();
        assert_eq!(keys, ["consent_1"]);
        let state = first.request_state.clone().unwrap();

        // Another caller, other arguments, an altered value: refused, and
        // the state is not spent by them.
        let other = Rounds::binding("http", "token-b", "py/1");
        let refused = |r: Result<Arc<Held>, OpError>| {
            r.err().map(|e| e.to_json()["request_state"].as_str().unwrap_or("").to_string())
        };
        assert_eq!(refused(rounds.resume(&state, &other, &args)).as_deref(), Some("not_issued"));
        assert_eq!(
            refused(rounds.resume(&state, &me, &json!({"ops": []}))).as_deref(),
            Some("other_arguments")
        );
        let mut altered = state.clone();
        altered.replace_range(altered.len() - 2.., if state.ends_with("AA") { "BB" } else { "AA" });
        assert_eq!(refused(rounds.resume(&altered, &me, &args)).as_deref(), Some("not_issued"));

        let again = rounds
            .resume(&state, &me, &args)
            .expect("the state opens for its caller and arguments");
        assert_eq!(
            refused(rounds.resume(&state, &me, &args)).as_deref(),
            Some("used"),
            "one retry per state"
        );
        Rounds::deliver(
            &again,
            Some(&BTreeMap::from([("consent_1".to_string(), accept("allow_once"))])),
        );
        let second = asked(rounds.observe(&again, &never).await);
        assert_eq!(
            second.input_requests.as_ref().unwrap().keys().cloned().collect::<Vec<_>>(),
            ["consent_2"],
            "the next op asks in the next round"
        );
        let state2 = second.request_state.unwrap();
        let last = rounds.resume(&state2, &me, &args).unwrap();
        // No answer for its key: asked again, in a round of its own.
        Rounds::deliver(&last, Some(&BTreeMap::new()));
        let third = asked(rounds.observe(&last, &never).await);
        assert_eq!(
            third.input_requests.as_ref().unwrap().keys().cloned().collect::<Vec<_>>(),
            ["consent_3"]
        );
        let state3 = third.request_state.unwrap();
        let last = rounds.resume(&state3, &me, &args).unwrap();
        Rounds::deliver(
            &last,
            Some(&BTreeMap::from([("consent_3".to_string(), json!({"action": "decline"}))])),
        );
        match rounds.observe(&last, &never).await {
            Some(Step::Done(r)) => assert_eq!(r.body["heard"], json!(["allow_once", "decline"])),
            _ => panic!("the batch should have ended"),
        }
        assert_eq!(
            refused(rounds.resume(&state3, &me, &args)).as_deref(),
            Some("used"),
            "a collected batch is gone"
        );
    }

    #[tokio::test]
    async fn a_cancelled_observation_cancels_the_waiting_ops() {
        let rounds = Rounds::new().unwrap();
        let args = json!({});
        let held = rounds.begin("b".into(), &args);
        let asker = held.asker(None);
        let (tx, rx) = oneshot::channel();
        // As in dispatch, the op runs in a task of its own: cancelling the
        // batch drops its observation, not the op.
        held.run(async move {
            let op = tokio::spawn(async move {
                let a = asker.ask(&question("git.add", Duration::from_secs(30))).await;
                let _ = tx.send(a);
            });
            let _ = op.await;
            Response { body: json!({}), is_error: false }
        });
        let cancel = CancellationToken::new();
        let first = asked(rounds.observe(&held, &cancel).await);
        let state = first.request_state.unwrap();
        let again = rounds.resume(&state, "b", &args).unwrap();
        cancel.cancel();
        assert!(rounds.observe(&again, &cancel).await.is_none());
        assert_eq!(
            tokio::time::timeout(Duration::from_secs(5), rx).await.unwrap().unwrap(),
            Answer::Cancelled
        );
    }

    #[tokio::test]
    async fn an_unanswered_question_times_out_and_the_late_retry_gets_the_envelope() {
        let rounds = Rounds::new().unwrap();
        let args = json!({});
        let held = rounds.begin("b".into(), &args);
        let asker = held.asker(None);
        held.run(async move {
            let a = asker.ask(&question("git.add", Duration::from_millis(400))).await;
            Response { body: json!({ "heard": a.as_str() }), is_error: false }
        });
        let never = CancellationToken::new();
        let state = asked(rounds.observe(&held, &never).await).request_state.unwrap();
        tokio::time::sleep(Duration::from_millis(600)).await;
        let late = rounds
            .resume(&state, "b", &args)
            .expect("a late retry still opens (the result is kept)");
        Rounds::deliver(
            &late,
            Some(&BTreeMap::from([("consent_1".to_string(), accept("allow_once"))])),
        );
        match rounds.observe(&late, &never).await {
            Some(Step::Done(r)) => {
                assert_eq!(r.body["heard"], "timeout", "the late answer allowed nothing")
            }
            _ => panic!("the batch had ended"),
        }
    }

    #[test]
    fn only_an_accepted_allow_in_an_elicit_result_allows() {
        let read = |v: Value| elicit_answer("consent_1", Some(&v));
        assert_eq!(read(accept("allow_once")), Ok(Answer::AllowOnce));
        assert_eq!(read(accept("allow_session")), Ok(Answer::AllowSession));
        assert_eq!(read(accept("deny")), Ok(Answer::Decline));
        assert_eq!(read(json!({"action": "decline"})), Ok(Answer::Decline));
        assert_eq!(read(json!({"action": "cancel"})), Ok(Answer::Dismissed));
        let wrong = read(json!({"action": "accept", "content": {"decision": "yes"}})).unwrap_err();
        assert!(wrong.contains("\"yes\"") && wrong.contains("allow_once"), "{wrong}");
        let wrong = read(json!({"code": -1, "message": "no"})).unwrap_err();
        assert!(wrong.contains("not an elicitation result"), "{wrong}");
        let wrong = elicit_answer("consent_1", None).unwrap_err();
        assert!(wrong.contains("no answer for `consent_1`"), "{wrong}");
    }
}
