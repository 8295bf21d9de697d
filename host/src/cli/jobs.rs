//! `verbgate jobs prune`: apply the retention limits
//! (`limits.job_retain_days`, `limits.job_retain_count`) to the job store
//! now, and say what was removed. Running jobs are never pruned.

use anyhow::Result;
use std::process::ExitCode;

use super::global::GlobalArgs;
use crate::config::Config;
use crate::jobs::{JobLimits, Jobs};

/// `verbgate jobs …`.
#[derive(Debug, clap::Subcommand)]
pub enum JobsCommand {
    /// Remove ended jobs (records and output files) older than
    /// limits.job_retain_days or beyond the newest limits.job_retain_count.
    Prune {
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Run a `jobs` subcommand.
pub fn run(g: &GlobalArgs, c: JobsCommand) -> Result<ExitCode> {
    let JobsCommand::Prune { json } = c;
    let config = Config::load(&g.overrides())?;
    let exe = std::env::current_exe()?;
    let jobs = Jobs::open(&config.state_dir(), exe, JobLimits::from(&config.limits))?;
    let report = jobs.prune()?;
    let failed = report.pruned.iter().any(|p| p.files_error.is_some());
    if json {
        super::global::print_json(&serde_json::to_value(&report)?);
    } else {
        for p in &report.pruned {
            match &p.files_error {
                None => println!(
                    "removed job {} ({})",
                    p.id,
                    if p.why == "age" {
                        "older than the retention age"
                    } else {
                        "beyond the retention count"
                    }
                ),
                Some(e) => println!("removed job {}'s record; its files were left: {e}", p.id),
            }
        }
        println!(
            "pruned {} ended job(s), kept {} (limits.job_retain_days = {}, limits.job_retain_count = {}); running jobs are never pruned",
            report.pruned.len(),
            report.kept,
            report.retain_days,
            report.retain_count
        );
    }
    Ok(if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}
