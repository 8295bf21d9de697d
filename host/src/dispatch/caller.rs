//! Who is asking: the caller identity a transport hands to dispatch, and the
//! per-caller allow list (an HTTP token's `--allow` patterns).
//!
//! The operator's config `allow` already shaped the registry; a caller's
//! allow list only narrows that surface further, for ops *and* for help, so
//! a narrowed client can neither run nor discover a verb outside it: such a
//! verb answers `unknown_verb` exactly as a verb that does not exist, with
//! suggestions drawn only from what the caller reaches.

use serde_json::{json, Value};
use std::sync::Arc;

use super::audit::Trail;
use super::consent::{Asker, Grants};
use super::op::OpOutcome;
use super::request::OpRequest;
use super::Dispatcher;
use crate::error::{ErrorCode, OpError};
use crate::json::near_matches;
use crate::registry::fence;

/// How a request arrived (recorded in the audit trail).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// MCP over stdin/stdout (`verbgate serve`).
    Stdio,
    /// MCP over Streamable HTTP (`verbgate serve --http`).
    Http,
    /// `verbgate request`.
    Cli,
    /// A program embedding the dispatcher (benchmarks, tests).
    Library,
}

impl Transport {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Transport::Stdio => "stdio",
            Transport::Http => "http",
            Transport::Cli => "cli",
            Transport::Library => "library",
        }
    }
}

/// The caller of one request: who it is, what it may reach, how it came,
/// and how (whether) a person can be asked on its behalf. Carried through
/// dispatch to the policy and the audit trail.
#[derive(Clone)]
pub struct Caller {
    /// The caller's name: a token's name over HTTP, `local` on stdio and
    /// the command line (whoever started the process).
    pub name: String,
    /// Verb patterns this caller may reach (`*`, `ns.*`, exact names), or
    /// `None` for everything the registry serves.
    pub allow: Option<Vec<String>>,
    /// How the request arrived.
    pub transport: Transport,
    /// The MCP client's `name/version` from `initialize`.
    pub client: Option<String>,
    /// How to ask a person for an op the policy says to ask about; `None`
    /// when nobody can be asked.
    pub asker: Option<Arc<dyn Asker>>,
    /// Verbs a person allowed for the rest of this session.
    pub grants: Arc<Grants>,
    /// Who the jobs this caller starts belong to: `local` (the machine's
    /// user) or `token:<first 16 hex of the token's hash>` (a name can be
    /// minted again; a hash cannot).
    pub owner: String,
    /// Whether it sees and acts on every job, not only its own: the local
    /// user, and a token granted `--all-jobs`.
    pub all_jobs: bool,
}

impl std::fmt::Debug for Caller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Caller")
            .field("name", &self.name)
            .field("allow", &self.allow)
            .field("transport", &self.transport)
            .field("client", &self.client)
            .field("can_ask", &self.asker.is_some())
            .finish()
    }
}

impl Caller {
    /// A caller named `name` with an allow list, over `transport`, that
    /// nobody can be asked for (set [`Caller::asker`] to change that).
    pub fn new(name: &str, allow: Option<Vec<String>>, transport: Transport) -> Caller {
        Caller {
            name: name.to_string(),
            allow,
            transport,
            client: None,
            asker: None,
            grants: Arc::new(Grants::default()),
            owner: "local".to_string(),
            all_jobs: true,
        }
    }

    /// A token's caller: its jobs are its own (by the token's hash) unless
    /// it was granted every job.
    pub fn for_token(name: &str, sha256: &str, allow: Option<Vec<String>>, all_jobs: bool, transport: Transport) -> Caller {
        let mut c = Caller::new(name, allow, transport);
        c.owner = format!("token:{}", sha256.get(..16).unwrap_or(sha256));
        c.all_jobs = all_jobs;
        c
    }

    /// The process's own user, embedding the dispatcher: no narrowing, and
    /// nobody to ask.
    pub fn local() -> Arc<Caller> {
        Arc::new(Caller::new("local", None, Transport::Library))
    }

    /// Whether this caller may reach the verb named `verb` (its canonical
    /// name, not an alias).
    pub fn permits(&self, verb: &str) -> bool {
        fence::allowed(verb, self.allow.as_deref())
    }

    /// The error for a verb outside this caller's allow list.
    pub fn refusal(&self, verb: &str) -> OpError {
        OpError::new(
            ErrorCode::NotAllowed,
            format!("`{verb}` is outside the allow list of the token `{}`; ask the operator for a token that allows it", self.name),
        )
        .with("verb", verb)
        .with("caller", self.name.as_str())
    }
}

impl Dispatcher {
    /// Run one op for `caller`: a verb outside the caller's allow list is
    /// refused before anything about it runs, as if it did not exist.
    pub(crate) async fn run_op_as(&self, req: OpRequest, caller: &Caller, trail: &mut Trail) -> OpOutcome {
        if caller.allow.is_none() {
            return self.run_op(req, caller, trail).await;
        }
        let registry = self.registry_for(&req.op).await;
        match registry.resolve(&req.op) {
            Some(verb) if caller.permits(&verb.name) => self.run_op(req, caller, trail).await,
            _ => {
                // Outside the list or unknown: one answer, so the caller
                // cannot learn which verbs exist.
                let err = self.unknown_for(&req.op, caller);
                OpOutcome { op: req.op, verb: None, result: Err(err) }
            }
        }
    }

    /// `help: "<verb>"` for `caller`.
    pub(crate) async fn help_as(&self, name: &str, caller: &Caller) -> Result<Value, OpError> {
        if caller.allow.is_some() {
            let verb_name = name.split_once(':').map_or(name, |(v, _)| v);
            let registry = self.registry_for(verb_name).await;
            if !registry.resolve(verb_name).is_some_and(|verb| caller.permits(&verb.name)) {
                return Err(self.unknown_for(verb_name, caller));
            }
        }
        self.help_with_target(name, caller).await
    }

    fn unknown_for(&self, name: &str, caller: &Caller) -> OpError {
        let registry = self.registry();
        if caller.permits(name) {
            if let Some(err) = registry.unavailable_error(name) {
                return err;
            }
        }
        let hints = near_matches(name, registry.verb_names().filter(|n| caller.permits(n)));
        let msg = match hints.first() {
            Some(h) => format!("no verb named `{name}`; did you mean `{h}`?"),
            None => format!("no verb named `{name}`; ask {{\"help\": true}} for the catalog"),
        };
        OpError::new(ErrorCode::UnknownVerb, msg).with("verb", name).with("did_you_mean", json!(hints))
    }
}
