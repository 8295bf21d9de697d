//! The registry a long-running server serves from: a snapshot that is
//! replaced whole when a component compiled in the background joins it.
//!
//! Every op takes the current snapshot once, so it sees one consistent verb
//! surface even while a new component is being admitted. Components are
//! compiled one at a time, in load order, so collisions between them are
//! settled as in an eager load; a verb already serving keeps its name
//! against one that joins later.

use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

use super::Registry;
use crate::config::Config;

/// A registry that grows as deferred components finish compiling. The
/// snapshot is the only state: what is still loading is its deferred list.
pub struct LiveRegistry {
    current: watch::Sender<Arc<Registry>>,
}

impl LiveRegistry {
    /// A registry that never changes.
    pub fn fixed(registry: Arc<Registry>) -> Arc<Self> {
        Arc::new(LiveRegistry { current: watch::Sender::new(registry) })
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
                worker.current.send_replace(Arc::new(grown));
                crate::runtime::release_freed_memory();
            }
        });
        live
    }

    /// The registry as it is now.
    pub fn current(&self) -> Arc<Registry> {
        self.current.borrow().clone()
    }

    /// Components still compiling (their file names).
    pub fn loading(&self) -> Vec<String> {
        self.current.borrow().deferred().iter().map(|d| d.file_name()).collect()
    }

    /// Wait until nothing is compiling, at most `limit`; true if done.
    pub async fn wait_loaded(&self, limit: Duration) -> bool {
        let mut rx = self.current.subscribe();
        tokio::time::timeout(limit, rx.wait_for(|r| r.deferred().is_empty()))
            .await
            .is_ok_and(|r| r.is_ok())
    }
}
