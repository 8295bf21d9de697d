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
    /// or the default when it set none. A plan's zero is no time limit
    /// asked for, not "none": it gets the default (a job always has one;
    /// the config refuses a zero default or maximum).
    pub fn time_limit(&self, asked: Option<Duration>) -> Duration {
        asked.filter(|d| !d.is_zero()).unwrap_or(self.default_time_limit).min(self.max_time_limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plans_zero_time_limit_gets_the_default_never_none() {
        // Seen in review: `timeout_ms: 0` in a spawn plan gave min(0, max)
        // = 0, stored as "no limit", so the job outlived the maximum.
        let l = JobLimits::from(&crate::config::Limits::default());
        assert_eq!(l.time_limit(Some(Duration::ZERO)), l.default_time_limit);
        assert_eq!(l.time_limit(None), l.default_time_limit);
        assert_eq!(l.time_limit(Some(Duration::from_secs(u64::MAX / 4))), l.max_time_limit);
        assert!(!l.time_limit(Some(Duration::ZERO)).is_zero());
    }
}
