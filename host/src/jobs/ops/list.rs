//! `job.list`: recent jobs, newest first, optionally filtered.

use serde_json::{json, Value};

use super::args::ListArgs;
use crate::error::OpError;
use crate::jobs::model::Job;
use crate::jobs::store::{db_error, Store};

/// Most jobs one call lists.
pub const MAX_LIMIT: u64 = 500;

/// Run `job.list`.
pub fn run(store: &Store, args: &ListArgs) -> Result<Value, OpError> {
    let limit = args.limit.clamp(1, MAX_LIMIT) as usize;
    let jobs = store.list(limit, args.status, args.verb.as_deref()).map_err(db_error)?;
    Ok(json!({ "jobs": jobs.iter().map(Job::to_json).collect::<Vec<_>>() }))
}
