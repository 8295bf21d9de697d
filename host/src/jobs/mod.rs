//! Durable, supervised background jobs.
//!
//! A spawn plan becomes a record in the [`store`] (status `preparing`) and a
//! detached [`supervisor`] process (`verbgate __supervise`, its own session)
//! that runs the program and records its end. Everything else observes or
//! signals: the core plugin's job operations, one file each under [`ops`]
//! (`job.wait` builds on [`observe`]). Every job is bounded by
//! [`JobLimits`]: how many run at once, how much output each stream keeps,
//! how long it may run, and how long its record is kept ([`prune`]). Every
//! verbgate process on the machine — MCP servers,
//! `verbgate request`, supervisors — shares the one store, so a job started
//! from one is visible to all (CLI ↔ MCP parity), and a server can die and
//! restart without losing a job's end.

mod capture;
mod limits;
pub mod model;
pub mod observe;
pub mod ops;
pub mod output;
pub mod process;
pub mod prune;
pub mod store;
pub mod supervisor;
mod testhook;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::error::{ErrorCode, OpError};
use crate::exec::Prepared;
pub use limits::JobLimits;
use model::{End, Job, Reason};
use ops::JobOp;
use store::{db_error, Store};

/// What a spawn needs besides the prepared command.
pub struct SpawnRequest<'a> {
    /// The spawn verb.
    pub verb: &'a str,
    /// The plugin that planned it.
    pub plugin: &'a str,
    /// That plugin's digest.
    pub plugin_digest: &'a str,
    /// The op's args as JSON text.
    pub args: &'a str,
    /// The checked command.
    pub prepared: &'a Prepared,
    /// Who starts it (see [`crate::jobs::model::Job::owner`]).
    pub owner: &'a str,
    /// Time limit the plan asked for (none = the default; clamped to the
    /// maximum either way).
    pub time_limit: Option<Duration>,
}

impl Default for JobLimits {
    fn default() -> Self {
        JobLimits::from(&crate::config::Limits::default())
    }
}

/// The job subsystem of one verbgate process.
#[derive(Debug, Clone)]
pub struct Jobs {
    store: Store,
    state_dir: PathBuf,
    supervisor_exe: PathBuf,
    limits: JobLimits,
}

impl Jobs {
    /// Open the store in `state_dir`; supervisors are started by running
    /// `supervisor_exe __supervise` (normally this very binary).
    pub fn open(
        state_dir: &Path,
        supervisor_exe: PathBuf,
        limits: JobLimits,
    ) -> anyhow::Result<Jobs> {
        Ok(Jobs {
            store: Store::open(state_dir)?,
            state_dir: state_dir.to_path_buf(),
            supervisor_exe,
            limits,
        })
    }

    /// The limits jobs run within.
    pub fn limits(&self) -> &JobLimits {
        &self.limits
    }

    /// Prune ended jobs past the retention limits (see [`prune`]).
    pub fn prune(&self) -> anyhow::Result<prune::Report> {
        prune::prune(&self.store, &self.limits, process::now_ms())
    }

    /// These jobs as `owner` sees them (`None`: all of them).
    pub fn viewed_by(&self, owner: Option<&str>) -> Jobs {
        Jobs { store: self.store.viewed_by(owner), ..self.clone() }
    }

    /// The store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Record a job and start its supervisor; returns at once. Refused
    /// with `job_limit` when `limits.max_running_jobs` jobs are already
    /// preparing or running; the time limit is clamped (see
    /// [`JobLimits::time_limit`]) and recorded on the job.
    pub fn spawn(&self, req: SpawnRequest<'_>) -> Result<Job, OpError> {
        let p = req.prepared;
        let label = std::iter::once(p.name.as_str())
            .chain(p.argv.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ");
        let label: String = label.chars().take(200).collect();
        let job = Job {
            id: process::new_job_id(),
            verb: req.verb.into(),
            plugin: req.plugin.into(),
            plugin_digest: req.plugin_digest.into(),
            args: req.args.into(),
            label,
            program: p.program.display().to_string(),
            argv: serde_json::to_string(&p.argv).unwrap_or_default(),
            cwd: p.cwd.display().to_string(),
            env: serde_json::to_string(&p.env).unwrap_or_default(),
            time_limit_ms: Some(self.limits.time_limit(req.time_limit))
                .filter(|d| !d.is_zero())
                .map(|d| d.as_millis() as u64),
            output_limit_bytes: Some(self.limits.output_bytes).filter(|b| *b > 0),
            boot_id: process::boot_id(),
            created_ms: process::now_ms(),
            owner: req.owner.to_string(),
            ..Job::default()
        };
        self.insert_bounded(&job)?;
        let mut cmd = Command::new(&self.supervisor_exe);
        cmd.arg("__supervise").arg("--state").arg(&self.state_dir).arg("--id").arg(&job.id);
        // The supervisor itself is not confined (it writes the job's
        // output files and the store); the program it starts is.
        if let Some(profile) = &p.sandbox {
            cmd.arg("--sandbox").arg(serde_json::to_string(profile).unwrap_or_default());
        }
        cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
        // The supervisor leaves our session itself, first thing
        // ([`supervisor::supervise`]): a `pre_exec` hook here would force
        // std to fork this whole process (milliseconds with wasmtime's pool
        // mapped) instead of posix_spawn.
        match crate::exec::orphans::spawn(|| cmd.spawn()) {
            Ok(mut child) => {
                // Reap it when it ends, so it never lingers as a zombie of
                // ours (registered until then: it is no leftover).
                std::thread::spawn(move || {
                    let _ = child.wait();
                    crate::exec::orphans::forget(child.id());
                });
                Ok(job)
            }
            Err(e) => {
                let mut failed = job.clone();
                failed.finish(End::Failed, Reason::LaunchFailed, (None, None));
                failed.error = Some(format!("cannot start the job supervisor: {e}"));
                let _ = self.store.cas(&failed, job.version);
                Err(OpError::new(
                    ErrorCode::LaunchFailed,
                    format!(
                        "cannot start the job supervisor {}: {e}",
                        self.supervisor_exe.display()
                    ),
                ))
            }
        }
    }

    /// Insert `job` within the running cap. At the cap, first reap the
    /// counted jobs that are provably gone (a crash or reboot must not use
    /// up the cap for ever), then count again.
    fn insert_bounded(&self, job: &Job) -> Result<(), OpError> {
        let cap = self.limits.max_running;
        if self.store.insert_bounded(job, cap).map_err(db_error)?.is_ok() {
            return Ok(());
        }
        for id in self.store.live_ids().map_err(db_error)? {
            observe::observe(&self.store, &id);
        }
        match self.store.insert_bounded(job, cap).map_err(db_error)? {
            Ok(()) => Ok(()),
            Err(running) => Err(OpError::new(
                ErrorCode::JobLimit,
                format!("{running} jobs are already preparing or running, and limits.max_running_jobs allows {cap}; wait for one to end (job.wait), stop one (job.kill), or raise limits.max_running_jobs in verbgate.toml"),
            )
            .with("limit", cap)
            .with("running", running)
            .with("setting", "limits.max_running_jobs")),
        }
    }

    /// Run a job operation the core plugin planned (all but `job.result`,
    /// which needs the spawning plugin, and entity-aware kills, which need
    /// its `kill-plan`: both live in the dispatcher).
    pub async fn run(&self, op: &JobOp) -> Result<Value, OpError> {
        match op {
            JobOp::Status(a) => ops::status::run(&self.store, a),
            JobOp::List(a) => ops::list::run(&self.store, a),
            JobOp::Output(a) => ops::output::run(&self.store, a),
            JobOp::Wait(a) => ops::wait::run(&self.store, &ops::wait::Window::new(a)).await,
            JobOp::Kill(a) => ops::kill::run(&self.store, a).await,
            JobOp::Result(_) => Err(OpError::new(
                ErrorCode::Internal,
                "job.result is mapped by the dispatcher, not the job store",
            )),
        }
    }
}
