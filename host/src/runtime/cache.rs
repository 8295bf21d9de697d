//! The on-disk cache of compiled components, so a warm start never
//! recompiles. Entries are keyed by the component's SHA-256 *and* the
//! engine's compatibility hash (compiled code is only valid for the engine
//! settings that produced it), stored 0600 in a 0700 directory.
//!
//! The cache is never trusted on its own: a component is looked up only
//! after its original bytes were verified (signature or pinned digest), and
//! the key is the digest of those verified bytes.

use anyhow::Result;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use wasmtime::component::Component;
use wasmtime::Engine;

use crate::config::{ensure_private_dir, write_private_file};

/// Whether a load used the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CacheStatus {
    /// Loaded precompiled code from the cache.
    Hit,
    /// Compiled now (and stored).
    Compiled,
}

/// A directory of compiled components for one engine configuration.
#[derive(Debug, Clone)]
pub struct CompileCache {
    dir: Option<PathBuf>,
    engine_key: String,
}

impl CompileCache {
    /// A cache in `dir` (created 0700 on first store); `None` disables it.
    pub fn new(engine: &Engine, dir: Option<PathBuf>) -> Self {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut h);
        CompileCache { dir, engine_key: format!("{:016x}", h.finish()) }
    }

    fn path_for(&self, dir: &Path, digest: &str) -> PathBuf {
        dir.join(format!("{digest}-{}.cwasm", self.engine_key))
    }

    /// Whether compiled code for `digest` is stored (a load would be a hit).
    pub fn is_cached(&self, digest: &str) -> bool {
        self.dir.as_ref().is_some_and(|d| self.path_for(d, digest).is_file())
    }

    /// The component for already-verified `bytes` whose SHA-256 is `digest`.
    pub fn load(&self, engine: &Engine, bytes: &[u8], digest: &str) -> Result<(Component, CacheStatus)> {
        let Some(dir) = &self.dir else {
            return Ok((Component::new(engine, bytes)?, CacheStatus::Compiled));
        };
        let path = self.path_for(dir, digest);
        if path.exists() {
            // SAFETY: `deserialize_file` trusts the file to be compiled code
            // from a compatible engine. The file lives in our private cache
            // directory, is named by the digest of bytes we just verified and
            // by this engine's compatibility hash; wasmtime still checks the
            // header and engine compatibility and errors out on a mismatch.
            match unsafe { Component::deserialize_file(engine, &path) } {
                Ok(c) => return Ok((c, CacheStatus::Hit)),
                Err(e) => tracing::warn!(path = %path.display(), error = %e, "discarding unusable cache entry"),
            }
        }
        let compiled = engine.precompile_component(bytes)?;
        if let Err(e) = ensure_private_dir(dir).and_then(|_| write_private_file(&path, &compiled)) {
            tracing::warn!(path = %path.display(), error = %e, "cannot store compiled component");
        }
        // SAFETY: these bytes were produced by `precompile_component` on this
        // very engine a moment ago.
        let component = unsafe { Component::deserialize(engine, &compiled)? };
        Ok((component, CacheStatus::Compiled))
    }
}
