//! The result of one op, as the pipeline hands it to the envelope and the
//! audit trail.

use serde_json::Value;
use std::sync::Arc;

use crate::error::OpError;
use crate::registry::Verb;

/// The result of one op, before it is put in the envelope.
pub struct OpOutcome {
    /// The op name as the caller wrote it.
    pub op: String,
    /// The verb it resolved to, if any (errors then carry its schema).
    pub verb: Option<Arc<Verb>>,
    /// The result or the error.
    pub result: Result<Value, OpError>,
}
