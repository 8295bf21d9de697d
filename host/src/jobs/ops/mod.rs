//! The core plugin's job operations, typed: a host call (`name` + JSON
//! `args`) is deserialized once into one [`JobOp`], and each operation lives
//! in its own file. Argument defaults and clamps are written once, here and
//! in those files; the core plugin's schemas already validated the args, so
//! a shape error here is a bug in a plan, not a caller's mistake.

mod args;
pub mod kill;
pub mod list;
pub mod output;
pub mod status;
pub mod wait;

use serde::Deserialize;

use crate::error::{ErrorCode, OpError};
pub use args::{IdArgs, KillArgs, ListArgs, OutputArgs, WaitArgs};

/// One job operation with its arguments.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "op", content = "args")]
pub enum JobOp {
    /// `job.status {id}`.
    #[serde(rename = "job.status")]
    Status(IdArgs),
    /// `job.list {limit, status?, verb?}`.
    #[serde(rename = "job.list")]
    List(ListArgs),
    /// `job.output {id, stream, offset, limit}`.
    #[serde(rename = "job.output")]
    Output(OutputArgs),
    /// `job.result {id}` (mapped by the dispatcher: it needs the plugin).
    #[serde(rename = "job.result")]
    Result(IdArgs),
    /// `job.wait {ids, max_wait_seconds, poll_interval_seconds}`.
    #[serde(rename = "job.wait")]
    Wait(WaitArgs),
    /// `job.kill {id, grace_seconds}`.
    #[serde(rename = "job.kill")]
    Kill(KillArgs),
}

/// Every operation name.
pub const NAMES: &[&str] =
    &["job.status", "job.list", "job.output", "job.result", "job.wait", "job.kill"];

/// Whether the operation named `name` changes anything (a kill); the others
/// only read the job store. The audit trail makes an acting op's row
/// durable before it runs.
pub fn acts(name: &str) -> bool {
    name == "job.kill"
}

impl JobOp {
    /// Parse host call `name` with JSON `args`.
    pub fn parse(name: &str, args: &str) -> Result<JobOp, OpError> {
        if !NAMES.contains(&name) {
            return Err(OpError::new(
                ErrorCode::Unavailable,
                format!("host operation `{name}` does not exist"),
            )
            .with("call", name));
        }
        let args: serde_json::Value = serde_json::from_str(args).map_err(|e| {
            OpError::new(ErrorCode::InvalidOutput, format!("host call args are not JSON: {e}"))
        })?;
        serde_json::from_value(serde_json::json!({ "op": name, "args": args })).map_err(|e| {
            OpError::new(ErrorCode::InvalidArgs, format!("`{name}`: {e}")).with("call", name)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::model::Status;

    #[test]
    fn operations_parse_once_with_their_defaults() {
        let JobOp::List(l) = JobOp::parse("job.list", "{}").unwrap() else { panic!() };
        assert_eq!((l.limit, l.status, l.verb), (20, None, None));
        let JobOp::Output(o) = JobOp::parse("job.output", r#"{"id":"ab"}"#).unwrap() else {
            panic!()
        };
        assert_eq!((o.stream, o.offset, o.limit), (crate::jobs::model::Stream::Stdout, 0, 65536));
        let JobOp::List(l) = JobOp::parse("job.list", r#"{"status":"timed_out"}"#).unwrap() else {
            panic!()
        };
        assert_eq!(l.status, Some(Status::TimedOut));
        let e = JobOp::parse("job.list", r#"{"status":"sleeping"}"#).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArgs);
        assert_eq!(JobOp::parse("job.nope", "{}").unwrap_err().code, ErrorCode::Unavailable);
        assert_eq!(
            JobOp::parse("job.status", "{}").unwrap_err().code,
            ErrorCode::InvalidArgs,
            "an id is required"
        );
    }
}
