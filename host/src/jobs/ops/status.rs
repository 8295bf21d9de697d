//! `job.status`: one job's record.

use serde_json::Value;

use super::args::IdArgs;
use crate::error::OpError;
use crate::jobs::store::Store;

/// Run `job.status`.
pub fn run(store: &Store, args: &IdArgs) -> Result<Value, OpError> {
    Ok(store.resolve(&args.id)?.to_json())
}
