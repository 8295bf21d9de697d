//! Host plans: the native operations behind the bundled core component's
//! job verbs. Only the bundled core may plan them — a plugin from disk that
//! asks for a host call is refused, so installing a component can never
//! grant it control over jobs.

use serde_json::{json, Value};

use super::Dispatcher;
use crate::error::{ErrorCode, OpError};
use crate::jobs::output::read_all;
use crate::jobs::Jobs;
use crate::registry::{Source, Verb};
use crate::runtime::model::{HostCall, Outcome};

/// Largest stdout (and stderr) of a finished job that `job.result` maps;
/// bigger outputs are read with `job.output`.
pub const RESULT_OUTPUT_BYTES: usize = 8 << 20;

impl Dispatcher {
    /// The job subsystem, or why there is none.
    pub(crate) fn jobs(&self) -> Result<&Jobs, OpError> {
        self.jobs.as_ref().ok_or_else(|| OpError::new(ErrorCode::Unavailable, "this verbgate has no job store"))
    }

    /// Run a host call planned by `verb`.
    pub(crate) async fn host_call(&self, verb: &Verb, call: &HostCall) -> Result<Value, OpError> {
        let trusted = verb.plugin.source == Source::Bundled && verb.plugin.name == "core";
        if !trusted {
            return Err(OpError::new(ErrorCode::PlanRefused, format!("plugin `{}` planned host operation `{}`; only the bundled core may", verb.plugin.name, call.name))
                .with("plugin", verb.plugin.name.as_str()));
        }
        let args: Value = serde_json::from_str(&call.args)
            .map_err(|e| OpError::new(ErrorCode::InvalidOutput, format!("host call args are not JSON: {e}")))?;
        if call.name == "job.result" {
            return self.job_result(args["id"].as_str().unwrap_or_default()).await;
        }
        self.jobs()?.host_call(&call.name, &args).await
    }

    /// `job.result`: a finished job's output mapped through the plugin that
    /// spawned it, saying so if that plugin changed since.
    async fn job_result(&self, id: &str) -> Result<Value, OpError> {
        let jobs = self.jobs()?;
        let job = jobs.store().resolve(id)?;
        if !job.status.terminal() {
            return Err(OpError::new(ErrorCode::JobNotFinished, format!("job {} is {}; wait for it with job.wait", job.id, job.status.as_str()))
                .with("id", job.id.as_str())
                .with("status", job.status.as_str()));
        }
        let read = |stream: &str| -> Result<Vec<u8>, OpError> {
            read_all(jobs.store(), &job.id, stream, RESULT_OUTPUT_BYTES)?.ok_or_else(|| {
                OpError::new(ErrorCode::OutputOverflow, format!("job {}'s {stream} is larger than {RESULT_OUTPUT_BYTES} bytes; page through it with job.output", job.id))
                    .with("stream", stream)
                    .with("limit_bytes", RESULT_OUTPUT_BYTES)
            })
        };
        let outcome = Outcome { exit_code: job.exit_code, signal: job.signal, stdout: read("stdout")?, stderr: read("stderr")?, host_result: None };
        let verb = self.registry.resolve(&job.verb).cloned().ok_or_else(|| {
            OpError::new(ErrorCode::Unavailable, format!("`{}`, which started job {}, is no longer loaded, so its output cannot be mapped; read it with job.output", job.verb, job.id))
        })?;
        let plugin_changed = verb.plugin.digest != job.plugin_digest;
        let mapped = self.map_outcome(&verb, &job.args, &outcome).await;
        let mut out = json!({
            "id": job.id,
            "kind": job.verb,
            "status": job.status.as_str(),
            "terminal": true,
            "outcome": job.status.outcome(),
            "reason_code": job.reason_code,
            "exit_code": job.exit_code,
            "plugin_changed": plugin_changed,
        });
        match mapped {
            Ok(result) => out["result"] = result,
            Err(e) => out["error"] = e.to_json(),
        }
        if plugin_changed {
            out["note"] = json!(format!("plugin `{}` changed since this job started (digest {} then, {} now); the mapping is the current plugin's", verb.plugin.name, job.plugin_digest, verb.plugin.digest));
        }
        Ok(out)
    }
}
