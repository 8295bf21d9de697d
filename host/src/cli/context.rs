//! Building what most subcommands need: the configuration, the sandbox
//! runtime (with the compile cache) and the loaded registry.

use anyhow::Result;
use std::sync::Arc;

use super::GlobalArgs;
use crate::config::Config;
use crate::dispatch::Dispatcher;
use crate::jobs::Jobs;
use crate::registry::Registry;
use crate::runtime::{Runtime, SandboxLimits};

/// The loaded state behind a request.
pub struct Context {
    /// The configuration.
    pub config: Arc<Config>,
    /// The runtime.
    pub runtime: Arc<Runtime>,
    /// The registry.
    pub registry: Arc<Registry>,
    /// The job store.
    pub jobs: Jobs,
}

impl Context {
    /// Load config, runtime and registry.
    pub async fn load(g: &GlobalArgs) -> Result<Context> {
        let config = Arc::new(Config::load(&g.overrides())?);
        let runtime = Arc::new(Runtime::new(SandboxLimits::from(&config.limits), Some(config.cache_dir()))?);
        let registry = Arc::new(Registry::load(&config, runtime.clone()).await?);
        let exe = std::env::current_exe().map_err(|e| anyhow::anyhow!("cannot find the verbgate binary for job supervisors: {e}"))?;
        let jobs = Jobs::open(&config.state_dir(), exe)?;
        Ok(Context { config, runtime, registry, jobs })
    }

    /// A dispatcher over this context.
    pub fn dispatcher(&self) -> Arc<Dispatcher> {
        Dispatcher::new(self.registry.clone(), self.config.clone(), Some(self.jobs.clone()))
    }
}
