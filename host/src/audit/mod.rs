//! The audit trail: every op — run, refused, denied, asked — as one row in
//! `$VERBGATE_HOME/state/audit.db` (SQLite, 0600 like the job store), with
//! who asked, what the policy decided and who decided it, what ran and how
//! it ended. Queued as the op ends and committed in batches by a writer
//! thread ([`AuditWriter`]), flushed when the dispatcher goes away; read by
//! `verbgate audit` (and exported as JSON Lines by `verbgate audit export`,
//! [`export`]).
//!
//! Args are stored bounded (`audit.args_bytes`) and with the values of the
//! params a verb marks sensitive replaced by `"<redacted>"`: the trail is
//! for reading later, by people who should not learn secrets from it.

pub mod export;
mod record;
mod store;
mod writer;

pub use record::{
    clip_value, redact, Answer, Record, RowOutcome, Transport, REDACTED, VALUE_BYTES,
};
pub use store::{AuditStore, Filter, PruneReport, Unreadable};
pub use writer::AuditWriter;
