//! Building what most subcommands need: the configuration, the sandbox
//! runtime (with the compile cache) and the loaded registry.

use anyhow::Result;
use std::sync::Arc;

use super::global::GlobalArgs;
use crate::audit::AuditStore;
use crate::config::Config;
use crate::dispatch::Dispatcher;
use crate::jobs::{JobLimits, Jobs};
use crate::registry::live::LiveRegistry;
use crate::registry::{LoadMode, Registry};
use crate::runtime::{Runtime, SandboxLimits};

/// The loaded state behind a request.
pub struct Context {
    /// The configuration.
    pub config: Arc<Config>,
    /// The runtime.
    pub runtime: Arc<Runtime>,
    /// The registry requests are served from (grows as background
    /// compiles finish in [`LoadMode::Background`]).
    pub live: Arc<LiveRegistry>,
    /// The job store.
    pub jobs: Jobs,
    /// The audit trail (`None` with `audit.enabled = false`).
    pub audit: Option<Arc<AuditStore>>,
}

impl Context {
    /// Load config, runtime and registry.
    pub async fn load(g: &GlobalArgs) -> Result<Context> {
        Self::load_with(g, LoadMode::Eager).await
    }

    /// Load, compiling uncached disk components in the background when
    /// `mode` says so (the server, so that none delays the others).
    pub async fn load_with(g: &GlobalArgs, mode: LoadMode) -> Result<Context> {
        let config = Arc::new(Config::load(&g.overrides())?);
        config.check_home_apart_from_root()?;
        // What the programs of its ops leave running comes to this process,
        // which ends it (exec::orphans).
        crate::exec::orphans::become_reaper().map_err(|e| {
            anyhow::anyhow!("cannot become the reaper of the programs verbgate starts: {e}")
        })?;
        let runtime =
            Arc::new(Runtime::new(SandboxLimits::from(&config.limits), Some(config.cache_dir()))?);
        let loaded = Registry::load_with(&config, runtime.clone(), mode).await?;
        let live = match mode {
            LoadMode::Eager => LiveRegistry::fixed(Arc::new(loaded)),
            LoadMode::Background => LiveRegistry::start(loaded, config.clone()),
        };
        let exe = std::env::current_exe().map_err(|e| {
            anyhow::anyhow!("cannot find the verbgate binary for job supervisors: {e}")
        })?;
        let jobs = Jobs::open(&config.state_dir(), exe, JobLimits::from(&config.limits))?;
        // The trail is opened before any op can run: an op is never run
        // unrecorded because its file could not be opened.
        let audit = if config.audit.enabled {
            Some(Arc::new(AuditStore::open(&config.state_dir())?))
        } else {
            None
        };
        Ok(Context { config, runtime, live, jobs, audit })
    }

    /// The registry as it is now (complete, for one-shot commands).
    pub fn registry(&self) -> Arc<Registry> {
        self.live.current()
    }

    /// A dispatcher over this context.
    pub fn dispatcher(&self) -> Arc<Dispatcher> {
        Dispatcher::live(
            self.live.clone(),
            self.config.clone(),
            Some(self.jobs.clone()),
            self.audit.clone(),
        )
    }
}
