//! The registry a long-running server serves from: a snapshot that is
//! replaced whole when a component compiled in the background joins it.
//!
//! Every op takes the current snapshot once, so it sees one consistent verb
//! surface even while a new component is being admitted. Components are
//! compiled one at a time, in load order, so collisions between them are
//! settled as in an eager load; a verb already serving keeps its name
//! against one that joins later.

use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio::sync::watch;

use super::Registry;
use crate::config::Config;

/// A registry that grows as deferred components finish compiling.
pub struct LiveRegistry {
    current: RwLock<Arc<Registry>>,
    /// Sources still compiling; empty once everything is loaded.
    loading: watch::Sender<Vec<String>>,
}

impl LiveRegistry {
    /// A registry that never changes.
    pub fn fixed(registry: Arc<Registry>) -> Arc<Self> {
        let loading = registry.deferred().iter().map(|d| d.source()).collect();
        Arc::new(LiveRegistry { current: RwLock::new(registry), loading: watch::Sender::new(loading) })
    }

    /// Serve `registry` now and compile its deferred components in a
    /// background task (needs a tokio runtime).
    pub fn start(registry: Registry, config: Arc<Config>) -> Arc<Self> {
        let live = Self::fixed(Arc::new(registry));
        let worker = live.clone();
        tokio::spawn(async move {
            loop {
                let snapshot = worker.current();
                let Some(next) = snapshot.deferred().first().cloned() else { break };
                tracing::info!(source = %next.source(), "compiling in the background");
                let grown = snapshot.with_deferred_loaded(&next, &config).await;
                let remaining = grown.deferred().iter().map(|d| d.source()).collect();
                *worker.current.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(grown);
                worker.loading.send_replace(remaining);
                crate::runtime::release_freed_memory();
            }
        });
        live
    }

    /// The registry as it is now.
    pub fn current(&self) -> Arc<Registry> {
        self.current.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Components still compiling (their sources).
    pub fn loading(&self) -> Vec<String> {
        self.loading.borrow().clone()
    }

    /// Wait until nothing is compiling, at most `limit`; true if done.
    pub async fn wait_loaded(&self, limit: Duration) -> bool {
        let mut rx = self.loading.subscribe();
        tokio::time::timeout(limit, rx.wait_for(|l| l.is_empty())).await.is_ok_and(|r| r.is_ok())
    }
}
