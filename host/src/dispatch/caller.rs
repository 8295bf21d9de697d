//! Who is asking: the caller identity a transport hands to dispatch, and the
//! per-caller allow list (an HTTP token's `--allow` patterns).
//!
//! The operator's config `allow` already shaped the registry; a caller's
//! allow list only narrows that surface further, for ops *and* for help, so
//! a narrowed client can neither run nor discover a verb outside it: such a
//! verb answers `unknown_verb` exactly as a verb that does not exist, with
//! suggestions drawn only from what the caller reaches (enforced in
//! [`super::resolve`] for ops and in [`super::help`]).

use std::sync::Arc;

use super::ask::{Asker, Grants};
pub use crate::audit::Transport;
use crate::registry::fence;

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
    /// An OAuth caller's verified identity, which `[[policy]]` rules may
    /// match (`subjects`, `groups`); `None` for every other caller.
    pub claims: Option<Arc<Claims>>,
    /// The trace context of the MCP request this caller's ops belong to
    /// (their spans' parent), when telemetry is on.
    pub trace: Option<opentelemetry::Context>,
}

/// What a verified OAuth access token says about its caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claims {
    /// `iss`.
    pub issuer: String,
    /// `sub`.
    pub subject: String,
    /// The groups claim's strings.
    pub groups: Vec<String>,
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
            claims: None,
            trace: None,
        }
    }

    /// A token's caller: its jobs are its own (by the token's hash) unless
    /// it was granted every job.
    pub fn for_token(
        name: &str,
        sha256: &str,
        allow: Option<Vec<String>>,
        all_jobs: bool,
        transport: Transport,
    ) -> Caller {
        let mut c = Caller::new(name, allow, transport);
        c.owner = format!("token:{}", sha256.get(..16).unwrap_or(sha256));
        c.all_jobs = all_jobs;
        c
    }

    /// An OAuth access token's caller (`oauth::Verified`): named by its
    /// subject, reaching what its scopes map to, owning the jobs of its
    /// issuer and subject (`oauth:<first 16 hex of their hash>`: a
    /// refreshed token is the same caller, another issuer's same subject
    /// is not).
    pub fn for_oauth(
        claims: Claims,
        identity: &str,
        allow: Vec<String>,
        transport: Transport,
    ) -> Caller {
        // `oauth:` first: a subject named like a static token (`ci`,
        // `generated`) is not that token in the audit trail.
        let name: String = std::iter::once("oauth:")
            .flat_map(str::chars)
            .chain(claims.subject.chars())
            .filter(|c| !c.is_control())
            .take(64)
            .collect();
        let mut c = Caller::new(&name, Some(allow), transport);
        c.owner = format!("oauth:{}", identity.get(..16).unwrap_or(identity));
        c.all_jobs = false;
        c.claims = Some(Arc::new(claims));
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
}
