//! The sandbox runtime: wasmtime with the component model.
//!
//! - One [`Engine`] per process, with epoch interruption; a ticker thread
//!   advances the epoch every [`EPOCH_TICK`], so each call's wall-clock
//!   deadline is enforced even against a guest that never yields.
//! - Components are compiled once (or loaded from [`cache`]) and pre-linked
//!   into an `InstancePre`; **every call gets a fresh store and instance**,
//!   so nothing leaks between ops or callers.
//! - A trap, a deadline or a limit hit becomes a [`SandboxError`] for that
//!   one op; the runtime itself keeps serving.

pub mod bounds;
pub mod cache;
mod conversions;
pub mod inspect;
pub mod model;
mod pool;
pub mod sandbox;
pub mod since_v0_1_0;
pub mod since_v0_2_0;
pub mod wit;

use std::path::PathBuf;
use std::time::Duration;
use thiserror::Error;
use wasmtime::component::{Component, Linker};
use wasmtime::{Engine, Store};

use crate::config::Limits;
use crate::error::{ErrorCode, LoadCode, OpError};
pub use cache::CacheStatus;
use model::{Command, Outcome, Plan, PluginInfo, PluginOpError, Resolved};
pub use sandbox::LimitKind;
use sandbox::SandboxState;
use wit::{PluginInstance, PluginPre};

/// How often the epoch advances: the resolution of plugin deadlines.
pub const EPOCH_TICK: Duration = Duration::from_millis(5);

/// Limits applied to every plugin call.
#[derive(Debug, Clone, Copy)]
pub struct SandboxLimits {
    /// Wall-clock deadline per call (instantiate + one export).
    pub timeout: Duration,
    /// Linear memory cap per instance, bytes.
    pub memory_bytes: usize,
    /// Largest JSON text a plugin may return, bytes.
    pub output_bytes: usize,
    /// Plugin calls that may hold an instance at once (the instance pool).
    pub concurrent_calls: u32,
    /// Bounds on what plugins return (describe, plans, errors).
    pub bounds: bounds::PluginBounds,
}

impl From<&Limits> for SandboxLimits {
    fn from(l: &Limits) -> Self {
        SandboxLimits {
            timeout: Duration::from_millis(l.plugin_timeout_ms),
            memory_bytes: (l.plugin_memory_mib as usize) << 20,
            output_bytes: l.plugin_output_bytes,
            concurrent_calls: l.plugin_concurrent_calls,
            bounds: bounds::PluginBounds::from(l),
        }
    }
}

/// Why a plugin call produced no answer.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum SandboxError {
    /// The guest trapped.
    #[error("the plugin trapped: {0}")]
    Trap(String),
    /// The guest ran past its deadline.
    #[error("the plugin ran past its {0} ms deadline and was stopped")]
    Timeout(u128),
    /// The guest hit a resource limit.
    #[error("the plugin hit its {limit} limit ({detail})")]
    Limit {
        /// Which limit.
        limit: LimitKind,
        /// What was exceeded.
        detail: String,
    },
    /// Every slot of the instance pool is taken by other calls (wasmtime's
    /// pool error, as it says it).
    #[error("the plugin hit its concurrent_calls limit ({0}; retry when fewer plugin calls are running)")]
    Busy(String),
}

impl SandboxError {
    /// The per-op error, naming the plugin.
    pub fn to_op_error(&self, plugin: &str) -> OpError {
        let (code, extra) = match self {
            SandboxError::Trap(_) => (ErrorCode::PluginTrap, None),
            SandboxError::Timeout(_) => (ErrorCode::PluginTimeout, None),
            SandboxError::Limit { limit, .. } => (ErrorCode::PluginLimit, Some(limit.as_str())),
            SandboxError::Busy(_) => {
                (ErrorCode::PluginLimit, Some(LimitKind::ConcurrentCalls.as_str()))
            }
        };
        let mut e = OpError::new(code, format!("plugin `{plugin}`: {self}")).with("plugin", plugin);
        if let Some(limit) = extra {
            // `bound` names the limit as every `plugin_limit` does; `limit`
            // keeps the name here too, as callers already read it.
            e = e.with("limit", limit).with("bound", limit);
        }
        e
    }
}

/// Why a component could not be loaded.
#[derive(Debug, Error)]
pub enum LoadError {
    /// Its shape (version, exports, imports) is unacceptable.
    #[error(transparent)]
    Shape(#[from] inspect::ShapeError),
    /// It targets a contract version this host does not support.
    #[error("targets verbgate:verbs@{found}, which this verbgate does not support (supported: {supported}); rebuild it against a supported version or upgrade verbgate", supported = wit::SUPPORTED_VERSIONS.join(", "))]
    UnsupportedVersion {
        /// The version found.
        found: String,
    },
    /// wasmtime refused it.
    #[error("cannot compile or link: {0}")]
    Compile(String),
}

impl LoadError {
    /// The stable code reported for this refusal (registry `unavailable`
    /// entries and `verbgate check` findings).
    pub fn code(&self) -> LoadCode {
        match self {
            LoadError::Shape(inspect::ShapeError::ForbiddenImports(_)) => {
                LoadCode::ImportOutsidePolicy
            }
            LoadError::Shape(inspect::ShapeError::NoPluginExport) => LoadCode::NotAPlugin,
            LoadError::Shape(inspect::ShapeError::Invalid(_)) => LoadCode::NotAComponent,
            LoadError::UnsupportedVersion { .. } => LoadCode::UnknownWitVersion,
            LoadError::Compile(_) => LoadCode::LoadFailed,
        }
    }
}

/// A compiled, pre-linked component ready to instantiate per call.
pub struct LoadedComponent {
    pre: PluginPre,
    /// The contract version it targets.
    pub wit_version: String,
    /// Whether compiled code came from the cache.
    pub cache: CacheStatus,
    /// The limits its calls run under: the runtime's defaults unless the
    /// operator set `[components.<name>]` (see [`LoadedComponent::set_limits`]).
    limits: SandboxLimits,
}

impl LoadedComponent {
    /// Run this component's calls under other limits (per-component
    /// settings, already checked against the operator caps).
    pub fn set_limits(&mut self, limits: SandboxLimits) {
        self.limits = limits;
    }

    /// The limits this component's calls run under.
    pub fn limits(&self) -> SandboxLimits {
        self.limits
    }
}

/// How long map-result waits for a pool slot after its program ran (see
/// [`Runtime::map_result`]): the default `plugin_timeout_cap_ms`, the
/// longest any call holds one.
pub const SLOT_WAIT_AFTER_RUN: Duration = Duration::from_secs(30);

/// The smallest instance pool in which [`Runtime::ready`] makes
/// map-result's instance while the program runs: a full batch (8 ops) and a
/// few HTTP clients' batches still leave most of such a pool to plans.
pub const PREPARE_AHEAD_MIN_CALLS: u32 = 64;

/// The engine, linker and compile cache shared by all components.
pub struct Runtime {
    engine: Engine,
    linker: Linker<SandboxState>,
    cache: cache::CompileCache,
    limits: SandboxLimits,
}

impl Runtime {
    /// A runtime; `cache_dir` `None` disables the compile cache.
    /// The instance pool is shrunk when the address space cannot hold it
    /// (see [`pool`]); [`Runtime::limits`] then reports the smaller
    /// `concurrent_calls`.
    pub fn new(mut limits: SandboxLimits, cache_dir: Option<PathBuf>) -> anyhow::Result<Runtime> {
        let (engine, calls) = pool::pooled_engine(limits.concurrent_calls)?;
        limits.concurrent_calls = calls;
        let mut linker = Linker::new(&engine);
        // Every standard WASI p2 interface is linked, but each call's context
        // grants nothing (see `sandbox`); imports outside WASI are refused by
        // `inspect` before linking.
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
        // The contract's type-only interface, one per supported version:
        // nothing to provide but its (empty) instance.
        for version in wit::SUPPORTED_VERSIONS {
            linker.instance(&format!("verbgate:verbs/types@{version}"))?;
        }
        spawn_epoch_ticker(&engine);
        let cache = cache::CompileCache::new(&engine, cache_dir);
        Ok(Runtime { engine, linker, cache, limits })
    }

    /// The limits every call runs under.
    pub fn limits(&self) -> SandboxLimits {
        self.limits
    }

    /// Check, compile (or load from cache) and pre-link **already verified**
    /// component bytes whose SHA-256 hex is `digest`.
    pub fn load(&self, bytes: &[u8], digest: &str) -> Result<LoadedComponent, LoadError> {
        let shape = inspect::inspect(bytes)?;
        shape.check_imports()?;
        if !wit::SUPPORTED_VERSIONS.contains(&shape.wit_version.as_str()) {
            return Err(LoadError::UnsupportedVersion { found: shape.wit_version });
        }
        let (component, cache) = self
            .cache
            .load(&self.engine, bytes, digest)
            .map_err(|e| LoadError::Compile(format!("{e:#}")))?;
        self.prelink(component, &shape.wit_version, cache)
    }

    /// Make the compile cache's key ready before loading on several
    /// threads ([`cache::CompileCache::prepare_key`]).
    pub fn prepare_cache(&self) {
        self.cache.prepare_key();
    }

    /// Whether compiled code for `digest` is in the compile cache, so that
    /// loading it takes milliseconds rather than seconds.
    pub fn is_cached(&self, digest: &str) -> bool {
        self.cache.is_cached(digest)
    }

    fn prelink(
        &self,
        component: Component,
        version: &str,
        cache: CacheStatus,
    ) -> Result<LoadedComponent, LoadError> {
        let instance_pre = self
            .linker
            .instantiate_pre(&component)
            .map_err(|e| LoadError::Compile(format!("{e:#}")))?;
        let pre = PluginPre::new(version, instance_pre)
            .map_err(|e| LoadError::Compile(format!("{e:#}")))?
            .ok_or_else(|| LoadError::UnsupportedVersion { found: version.to_string() })?;
        Ok(LoadedComponent { pre, wit_version: version.to_string(), cache, limits: self.limits })
    }

    fn new_store(&self, limits: SandboxLimits) -> Store<SandboxState> {
        let mut store =
            Store::new(&self.engine, SandboxState::new(limits.memory_bytes, limits.timeout));
        store.limiter(|s| &mut s.limiter);
        arm_deadline(&mut store, limits);
        store.epoch_deadline_trap();
        store
    }

    /// A fresh instance made ahead of its call: `map-result`'s, built while
    /// the plan's program runs, so the call after the program ends skips
    /// instantiation. `None` when it cannot be made now (the call then
    /// instantiates as usual and reports any failure itself), and always
    /// `None` in a pool smaller than [`PREPARE_AHEAD_MIN_CALLS`]: there an
    /// instance held for a program's whole run (up to its timeout) would
    /// leave other ops' plans without a slot.
    pub async fn ready(&self, c: &LoadedComponent) -> Option<Ready> {
        if self.limits.concurrent_calls < PREPARE_AHEAD_MIN_CALLS {
            return None;
        }
        self.instantiate(c).await.ok().map(|(store, inst)| Ready { store, inst })
    }

    /// Instantiate for map-result, whose program has already run: a full
    /// pool is waited out (polling, up to [`SLOT_WAIT_AFTER_RUN`]) rather
    /// than refused, because "retry when fewer calls run" would have the
    /// caller run a write a second time. Every holder of a slot gives it
    /// back within its own call deadline (at most `plugin_timeout_cap_ms`).
    async fn instantiate_after_run(
        &self,
        c: &LoadedComponent,
    ) -> Result<(Store<SandboxState>, PluginInstance), SandboxError> {
        let waited = std::time::Instant::now();
        loop {
            match self.instantiate(c).await {
                Err(SandboxError::Busy(pool)) => {
                    if waited.elapsed() >= SLOT_WAIT_AFTER_RUN {
                        return Err(SandboxError::Limit {
                            limit: LimitKind::ConcurrentCalls,
                            detail: format!(
                                "{pool} for {} s after the program ran; the program's effects happened but its result \
                                 is lost: check them before running the op again",
                                SLOT_WAIT_AFTER_RUN.as_secs()
                            ),
                        });
                    }
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                other => return other,
            }
        }
    }

    async fn instantiate(
        &self,
        c: &LoadedComponent,
    ) -> Result<(Store<SandboxState>, PluginInstance), SandboxError> {
        let mut store = self.new_store(c.limits);
        match self.within(c, c.pre.instantiate(&mut store)).await? {
            Ok(i) => Ok((store, i)),
            Err(e) => Err(self.classify(&store, e)),
        }
    }

    /// The wall-clock guard on a guest call. The epoch deadline stops a
    /// guest that *runs* too long; a guest that *waits* (a WASI sleep or
    /// poll, linked because guest runtimes import clocks) runs no wasm code
    /// in which an epoch check could fire, so the same deadline is enforced
    /// here too, and the call is abandoned (its store dropped) when it passes.
    async fn within<T>(
        &self,
        c: &LoadedComponent,
        call: impl std::future::Future<Output = wasmtime::Result<T>>,
    ) -> Result<wasmtime::Result<T>, SandboxError> {
        // The epoch deadline fires first for a running guest (its message is
        // the same); the grace keeps the two from racing.
        let limit = c.limits.timeout + EPOCH_TICK * 4;
        tokio::time::timeout(limit, call)
            .await
            .map_err(|_| SandboxError::Timeout(c.limits.timeout.as_millis()))
    }

    /// Turn a wasmtime error into the op-level reason.
    fn classify(&self, store: &Store<SandboxState>, err: wasmtime::Error) -> SandboxError {
        let data = store.data();
        log_guest_stdio(data);
        if let Some(limit) = data.limiter.hit {
            return SandboxError::Limit { limit, detail: data.limiter.detail() };
        }
        if let Some(pool) = err.downcast_ref::<wasmtime::PoolConcurrencyLimitError>() {
            // Every pool slot is busy: a limit of this host, not a fault of
            // the plugin; the op can be retried.
            return SandboxError::Busy(pool.to_string());
        }
        match err.downcast_ref::<wasmtime::Trap>() {
            Some(wasmtime::Trap::Interrupt) => SandboxError::Timeout(data.timeout.as_millis()),
            Some(trap) => SandboxError::Trap(trap.to_string()),
            None => SandboxError::Trap(
                format!("{err:#}").lines().next().unwrap_or("unknown failure").to_string(),
            ),
        }
    }

    fn finish<T>(
        &self,
        store: Store<SandboxState>,
        r: wasmtime::Result<T>,
    ) -> Result<T, SandboxError> {
        match r {
            Ok(v) => {
                log_guest_stdio(store.data());
                Ok(v)
            }
            Err(e) => Err(self.classify(&store, e)),
        }
    }

    fn bounded(&self, text: String) -> Result<String, SandboxError> {
        // Output is bounded by the operator-wide limit, never per component:
        // it protects the host's memory and the caller's context alike.
        if text.len() > self.limits.output_bytes {
            return Err(SandboxError::Limit {
                limit: LimitKind::OutputBytes,
                detail: format!(
                    "returned {} bytes of JSON, more than the {}-byte bound",
                    text.len(),
                    self.limits.output_bytes
                ),
            });
        }
        Ok(text)
    }

    /// Call `describe`. Its text is measured by the caller, before any
    /// per-verb work (`registry::bounds::check_describe`).
    pub async fn describe(&self, c: &LoadedComponent) -> Result<PluginInfo, SandboxError> {
        let (mut store, inst) = self.instantiate(c).await?;
        let r = self.within(c, inst.describe(&mut store)).await?;
        self.finish(store, r)
    }

    /// Call `plan`.
    pub async fn plan(
        &self,
        c: &LoadedComponent,
        verb: &str,
        args: &str,
    ) -> Result<Result<Plan, PluginOpError>, SandboxError> {
        let (mut store, inst) = self.instantiate(c).await?;
        let r = self.within(c, inst.plan(&mut store, verb, args)).await?;
        self.finish(store, r)
    }

    /// Call `map-result`; the JSON text is size-bounded here (parsing and
    /// schema checks are the caller's).
    pub async fn map_result(
        &self,
        c: &LoadedComponent,
        verb: &str,
        args: &str,
        outcome: &Outcome,
        ready: Option<Ready>,
    ) -> Result<Result<String, PluginOpError>, SandboxError> {
        let (mut store, inst) = match ready {
            Some(Ready { mut store, inst }) => {
                // The deadline counts from the call, not from when the
                // instance was made.
                arm_deadline(&mut store, c.limits);
                (store, inst)
            }
            None => self.instantiate_after_run(c).await?,
        };
        let r = self.within(c, inst.map_result(&mut store, verb, args, outcome)).await?;
        match self.finish(store, r)? {
            Ok(text) => self.bounded(text).map(Ok),
            Err(e) => Ok(Err(e)),
        }
    }

    /// Call `resolve-plan`.
    pub async fn resolve_plan(
        &self,
        c: &LoadedComponent,
        verb: &str,
        target: &str,
    ) -> Result<Result<Command, PluginOpError>, SandboxError> {
        let (mut store, inst) = self.instantiate(c).await?;
        let r = self.within(c, inst.resolve_plan(&mut store, verb, target)).await?;
        self.finish(store, r)
    }

    /// Call `resolve`; the returned JSON texts are size-bounded.
    pub async fn resolve(
        &self,
        c: &LoadedComponent,
        verb: &str,
        target: &str,
        outcome: &Outcome,
    ) -> Result<Result<Resolved, PluginOpError>, SandboxError> {
        let (mut store, inst) = self.instantiate(c).await?;
        let r = self.within(c, inst.resolve(&mut store, verb, target, outcome)).await?;
        match self.finish(store, r)? {
            Ok(res) => {
                self.bounded(res.params_schema.clone())?;
                self.bounded(res.identity.clone())?;
                Ok(Ok(res))
            }
            Err(e) => Ok(Err(e)),
        }
    }

    /// Call `kill-plan`.
    pub async fn kill_plan(
        &self,
        c: &LoadedComponent,
        verb: &str,
        entity: &str,
    ) -> Result<Option<Command>, SandboxError> {
        let (mut store, inst) = self.instantiate(c).await?;
        let r = self.within(c, inst.kill_plan(&mut store, verb, entity)).await?;
        self.finish(store, r)
    }
}

fn log_guest_stdio(state: &SandboxState) {
    for (stream, pipe) in [("stdout", &state.stdout), ("stderr", &state.stderr)] {
        let bytes = pipe.contents();
        if !bytes.is_empty() {
            tracing::debug!(stream, output = %String::from_utf8_lossy(&bytes), "guest output");
        }
    }
}

/// An instance made ahead of its call (see [`Runtime::ready`]); used once.
pub struct Ready {
    store: Store<SandboxState>,
    inst: PluginInstance,
}

/// Set a store's epoch deadline to `limits.timeout` from now.
fn arm_deadline(store: &mut Store<SandboxState>, limits: SandboxLimits) {
    let ticks = limits.timeout.as_millis().div_ceil(EPOCH_TICK.as_millis()).max(1) as u64;
    store.set_epoch_deadline(ticks);
}

/// Hand memory freed after compiling back to the operating system.
/// Cranelift's working memory is freed once a component is compiled, but
/// glibc keeps freed heap pages mapped; a long-running server that compiled
/// at start would otherwise carry tens of MiB it never uses again.
pub fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free heap pages to the kernel; it
    // touches no live allocation.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Advance the engine's epoch every [`EPOCH_TICK`] until the engine is gone.
fn spawn_epoch_ticker(engine: &Engine) {
    let weak = engine.weak();
    std::thread::Builder::new()
        .name("verbgate-epoch".into())
        .spawn(move || loop {
            std::thread::sleep(EPOCH_TICK);
            match weak.upgrade() {
                Some(engine) => engine.increment_epoch(),
                None => return,
            }
        })
        .expect("cannot start the epoch ticker thread");
}
