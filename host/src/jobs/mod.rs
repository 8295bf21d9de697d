//! Durable, supervised background jobs.
//!
//! A spawn plan becomes a record in the [`store`] (status `preparing`) and a
//! detached [`supervisor`] process (`verbgate __supervise`, its own session)
//! that runs the program and records its end. Everything else observes or
//! signals: [`observe`] (`job.wait`), [`kill`] (`job.kill`), [`output`]
//! (`job.output`). Every verbgate process on the machine — MCP servers,
//! `verbgate request`, supervisors — shares the one store, so a job started
//! from one is visible to all (CLI ↔ MCP parity), and a server can die and
//! restart without losing a job's end.

pub mod kill;
pub mod model;
pub mod observe;
pub mod output;
pub mod process;
pub mod store;
pub mod supervisor;

use serde_json::{json, Value};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::error::{ErrorCode, OpError};
use crate::exec::Prepared;
use model::{Job, Status};
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
    /// Time limit the plan asked for (none = unlimited).
    pub time_limit: Option<Duration>,
}

/// The job subsystem of one verbgate process.
#[derive(Debug, Clone)]
pub struct Jobs {
    store: Store,
    state_dir: PathBuf,
    supervisor_exe: PathBuf,
}

impl Jobs {
    /// Open the store in `state_dir`; supervisors are started by running
    /// `supervisor_exe __supervise` (normally this very binary).
    pub fn open(state_dir: &Path, supervisor_exe: PathBuf) -> anyhow::Result<Jobs> {
        Ok(Jobs { store: Store::open(state_dir)?, state_dir: state_dir.to_path_buf(), supervisor_exe })
    }

    /// The store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Record a job and start its supervisor; returns at once.
    pub fn spawn(&self, req: SpawnRequest<'_>) -> Result<Job, OpError> {
        let p = req.prepared;
        let label = std::iter::once(p.name.as_str()).chain(p.argv.iter().map(String::as_str)).collect::<Vec<_>>().join(" ");
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
            time_limit_ms: req.time_limit.map(|d| d.as_millis() as u64).unwrap_or(0),
            created_ms: process::now_ms(),
            ..Job::default()
        };
        self.store.insert(&job).map_err(db_error)?;
        let mut cmd = Command::new(&self.supervisor_exe);
        cmd.arg("__supervise").arg("--state").arg(&self.state_dir).arg("--id").arg(&job.id);
        cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
        // SAFETY: setsid is async-signal-safe; it detaches the supervisor
        // from our session so it outlives us and our terminal.
        unsafe {
            cmd.pre_exec(|| {
                libc::setsid();
                Ok(())
            });
        }
        match cmd.spawn() {
            Ok(mut child) => {
                // Reap it when it ends, so it never lingers as a zombie of ours.
                std::thread::spawn(move || {
                    let _ = child.wait();
                });
                Ok(job)
            }
            Err(e) => {
                let mut failed = job.clone();
                failed.status = Status::Failed;
                failed.reason_code = Some(model::reason::LAUNCH_FAILED.into());
                failed.error = Some(format!("cannot start the job supervisor: {e}"));
                failed.ended_ms = Some(process::now_ms());
                let _ = self.store.cas(&failed, job.version);
                Err(OpError::new(ErrorCode::LaunchFailed, format!("cannot start the job supervisor {}: {e}", self.supervisor_exe.display())))
            }
        }
    }

    /// Run a native job operation for the core plugin's host plans.
    pub async fn host_call(&self, name: &str, args: &Value) -> Result<Value, OpError> {
        let id = args["id"].as_str().unwrap_or_default();
        match name {
            "job.status" => Ok(self.store.resolve(id)?.to_json()),
            "job.list" => {
                let limit = args["limit"].as_u64().unwrap_or(20).clamp(1, 500) as usize;
                let status = match args["status"].as_str() {
                    None => None,
                    Some(s) => Some(Status::parse(s).ok_or_else(|| OpError::new(ErrorCode::InvalidArgs, format!("unknown status `{s}`")).with("param", "status"))?),
                };
                let jobs = self.store.list(limit, status, args["verb"].as_str()).map_err(db_error)?;
                Ok(json!({ "jobs": jobs.iter().map(Job::to_json).collect::<Vec<_>>() }))
            }
            "job.output" => output::read_page(
                &self.store,
                id,
                args["stream"].as_str().unwrap_or("stdout"),
                args["offset"].as_u64().unwrap_or(0),
                args["limit"].as_u64().unwrap_or(65536),
            ),
            "job.wait" => observe::wait(&self.store, &observe::WaitArgs::from_json(args)).await,
            "job.kill" => {
                let grace = args["grace_seconds"].as_f64().map(|s| Duration::from_secs_f64(s.clamp(0.0, 60.0))).unwrap_or(kill::DEFAULT_GRACE);
                kill::kill(&self.store, id, grace).await
            }
            other => Err(OpError::new(ErrorCode::Unavailable, format!("host operation `{other}` does not exist"))),
        }
    }
}
