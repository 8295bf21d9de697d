//! The registry a long-running server serves from: a snapshot that is
//! replaced whole when a component compiled in the background joins it.
//!
//! Every op takes the current snapshot once, so it sees one consistent verb
//! surface even while a new component is being admitted. Components are
//! compiled side by side but join one at a time, in load order, so
//! collisions between them are settled as in an eager load; a verb already
//! serving keeps its name against one that joins later.

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

    /// Serve `registry` now and compile its deferred components in the
    /// background (side by side; each joins, in load order, as soon as it
    /// and those before it are ready). Needs a tokio runtime.
    pub fn start(registry: Registry, config: Arc<Config>) -> Arc<Self> {
        let compiling = registry.compile_deferred();
        let live = Self::fixed(Arc::new(registry));
        let worker = live.clone();
        tokio::spawn(async move {
            for (next, rx) in compiling {
                tracing::info!(source = %next.source(), "compiling in the background");
                let loaded = rx.await.ok();
                let grown = worker.current().with_deferred_admitted(&next, loaded, &config).await;
                worker.current.send_replace(Arc::new(grown));
                crate::runtime::release_freed_memory();
            }
            worker.current().log_missing_programs();
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

    /// Wait until `name` resolves to a verb the caller `reaches`, or nothing
    /// is compiling, at most `limit`: an op waits for its own verb, not for
    /// every component (a Python guest compiling after it). A verb the
    /// caller may not reach waits as long as one that does not exist, so
    /// when the wait ends tells a narrowed caller nothing about it.
    pub async fn wait_for_verb(
        &self,
        name: &str,
        reaches: impl Fn(&str) -> bool,
        limit: Duration,
    ) -> bool {
        let done = |r: &Registry| {
            r.resolve(name).is_some_and(|v| reaches(&v.name)) || r.deferred().is_empty()
        };
        self.wait_until(limit, done).await
    }

    /// Wait until no bundled component is compiling, at most `limit`: the
    /// catalog waits for the verbs every install has, and names the
    /// plugins still compiling after them as `loading`.
    pub async fn wait_bundled(&self, limit: Duration) -> bool {
        self.wait_until(limit, |r| !r.deferred().iter().any(|d| d.is_bundled())).await
    }

    /// Wait until nothing is compiling, at most `limit`: a server whose
    /// client left early lets its compiles finish and be cached, so the
    /// next start is not cold again.
    pub async fn settle(&self, limit: Duration) -> bool {
        self.wait_until(limit, |r| r.deferred().is_empty()).await
    }

    async fn wait_until(&self, limit: Duration, done: impl Fn(&Registry) -> bool) -> bool {
        let mut rx = self.current.subscribe();
        tokio::time::timeout(limit, rx.wait_for(|r| done(r))).await.is_ok_and(|r| r.is_ok())
    }
}
