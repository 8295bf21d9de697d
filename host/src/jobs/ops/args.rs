//! The job operations' arguments, as the core plugin's plans send them
//! (a leaf: each operation's file reads its own).

use serde::Deserialize;

use crate::jobs::model::{Status, Stream};

/// Default number of jobs `job.list` lists.
fn default_list_limit() -> u64 {
    20
}

/// Default page size of `job.output`, bytes.
fn default_page_bytes() -> u64 {
    65536
}

/// Arguments naming one job.
#[derive(Debug, Clone, Deserialize)]
pub struct IdArgs {
    /// Id or unique prefix.
    pub id: String,
}

/// `job.list` arguments.
#[derive(Debug, Clone, Deserialize)]
pub struct ListArgs {
    /// Most jobs to list (default 20, clamped to [1, 500]).
    #[serde(default = "default_list_limit")]
    pub limit: u64,
    /// Only jobs with this status.
    #[serde(default)]
    pub status: Option<Status>,
    /// Only jobs started by this verb.
    #[serde(default)]
    pub verb: Option<String>,
}

/// `job.output` arguments.
#[derive(Debug, Clone, Deserialize)]
pub struct OutputArgs {
    /// Id or unique prefix.
    pub id: String,
    /// `stdout` (default) or `stderr`.
    #[serde(default)]
    pub stream: Stream,
    /// Byte offset (default 0).
    #[serde(default)]
    pub offset: u64,
    /// Most bytes (default 64 KiB, clamped to [1, 1 MiB]).
    #[serde(default = "default_page_bytes")]
    pub limit: u64,
}

/// `job.wait` arguments as sent; [`wait::Window`] holds the clamped values.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct WaitArgs {
    /// Ids or prefixes, in order.
    #[serde(default)]
    pub ids: Vec<String>,
    /// Window, seconds (default 25, clamped to [0, 300]).
    #[serde(default)]
    pub max_wait_seconds: Option<f64>,
    /// Poll interval, seconds (default 1, clamped to [0.05, 10]).
    #[serde(default)]
    pub poll_interval_seconds: Option<f64>,
}

/// `job.kill` arguments.
#[derive(Debug, Clone, Deserialize)]
pub struct KillArgs {
    /// Id or unique prefix.
    pub id: String,
    /// Seconds between TERM and KILL (default 3, clamped to [0, 60]).
    #[serde(default)]
    pub grace_seconds: Option<f64>,
}
