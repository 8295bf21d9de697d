//! The bounds every job runs within (a leaf: the store, the supervisor and
//! pruning read them).

use std::time::Duration;

/// The bounds every job runs within (from `[limits]`, see `config.rs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobLimits {
    /// Jobs preparing or running at once (`limits.max_running_jobs`).
    pub max_running: usize,
    /// Cap on each of stdout and stderr, bytes (`limits.job_output_bytes`).
    pub output_bytes: u64,
    /// Time limit of a plan that sets none (`limits.job_timeout_ms`).
    pub default_time_limit: Duration,
    /// Most time limit a plan may set (`limits.job_timeout_max_ms`).
    pub max_time_limit: Duration,
    /// Ended jobs older than this are pruned (`limits.job_retain_days`).
    pub retain_age: Duration,
    /// At most this many ended jobs are kept (`limits.job_retain_count`).
    pub retain_count: usize,
}

impl From<&crate::config::Limits> for JobLimits {
    fn from(l: &crate::config::Limits) -> Self {
        JobLimits {
            max_running: l.max_running_jobs,
            output_bytes: l.job_output_bytes,
            default_time_limit: Duration::from_millis(l.job_timeout_ms),
            max_time_limit: Duration::from_millis(l.job_timeout_max_ms),
            retain_age: Duration::from_secs(l.job_retain_days.saturating_mul(86_400)),
            retain_count: l.job_retain_count,
        }
    }
}

impl JobLimits {
    /// The time limit a job runs with: the plan's, clamped to the maximum,
    /// or the default when it set none.
    pub fn time_limit(&self, asked: Option<Duration>) -> Duration {
        asked.unwrap_or(self.default_time_limit).min(self.max_time_limit)
    }
}
