//! The registry: which verbs exist, who provides them, and which are
//! reachable.
//!
//! Loading order is fixed and documented: bundled components first (pinned
//! by digest), then `*.wasm` files from each plugin directory in order, files
//! sorted by name. A component from disk is loaded **only** if its signature
//! verifies against the trust store, every time (cache hits included).
//! Whatever cannot be made available — an untrusted file, a bad schema, a
//! reserved namespace, a name already taken, a missing program, a verb
//! outside the allow list — is recorded in [`Registry::unavailable`] with a
//! reason, never silently dropped. On a name collision the verb loaded first
//! keeps the name (bundled before disk, then file order), and a namespace
//! belongs to one plugin ([`namespaces`]). What `describe` returns is
//! bounded ([`bounds`]) before any per-verb work.

pub mod bounds;
pub mod bundled;
pub mod fence;
pub mod lint;
pub mod live;
pub mod namespaces;
pub mod schema;

use jsonschema::Validator;
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::config::Config;
use crate::error::LoadCode;
use crate::exec::programs::Unresolved;
use crate::exec::Programs;
use crate::json::{clip, fingerprint, sha256_hex};
use crate::runtime::bounds::NAME_BYTES;
use crate::runtime::model::{Effects, VerbKind, VerbSpec};
use crate::runtime::{CacheStatus, LoadedComponent, Runtime, SandboxLimits};
use crate::trust::{verify_component, TrustStore};
use lint::Severity;

/// Where a component came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Source {
    /// Compiled into the binary.
    Bundled,
    /// A file on disk.
    File {
        /// The file.
        path: PathBuf,
    },
}

impl Source {
    fn describe(&self) -> String {
        match self {
            Source::Bundled => "bundled".into(),
            Source::File { path } => path.display().to_string(),
        }
    }
}

/// A loaded plugin component.
pub struct Plugin {
    /// Name from `describe`.
    pub name: String,
    /// Version from `describe`.
    pub version: String,
    /// SHA-256 of the component bytes, hex.
    pub digest: String,
    /// Signer key id (`None` for bundled components, pinned by digest).
    pub signer: Option<String>,
    /// Where it came from.
    pub source: Source,
    /// The compiled component.
    pub component: LoadedComponent,
}

/// One reachable verb.
pub struct Verb {
    /// Canonical name.
    pub name: String,
    /// One-line summary.
    pub summary: String,
    /// Kind.
    pub kind: VerbKind,
    /// Params schema.
    pub params_schema: Value,
    /// Result schema, if declared.
    pub result_schema: Option<Value>,
    /// `sha256:` fingerprint of the params schema.
    pub fingerprint: String,
    /// Catalog signature line.
    pub signature: String,
    /// Declared aliases.
    pub aliases: Vec<String>,
    /// Declared program names → resolved absolute paths.
    pub programs: BTreeMap<String, PathBuf>,
    /// Whether the verb resolves a target (`help: "<verb>:<target>"`).
    pub two_stage: bool,
    /// What running it can do (policy input).
    pub effects: Effects,
    /// Top-level params the audit trail redacts.
    pub sensitive: Vec<String>,
    /// The providing plugin.
    pub plugin: Arc<Plugin>,
    validator: Validator,
    result_validator: Option<Validator>,
}

impl Verb {
    /// Validate args against the closed params schema.
    pub fn validate_args(&self, args: &Value) -> Result<(), crate::OpError> {
        schema::validate_args(&self.validator, &self.params_schema, &self.name, args)
    }

    /// Problems with a result against the declared result schema.
    pub fn result_problems(&self, result: &Value) -> Vec<String> {
        match &self.result_validator {
            None => Vec::new(),
            Some(v) => v
                .iter_errors(result)
                .take(5)
                .map(|e| format!("{}: {e}", e.instance_path().as_str()))
                .collect(),
        }
    }
}

/// Something that could not be made available, and why.
#[derive(Debug, Clone, Serialize)]
pub struct Unavailable {
    /// The verb, when one verb is affected (else the whole component).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verb: Option<String>,
    /// Plugin name, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plugin: Option<String>,
    /// Where it came from (`bundled` or a file path).
    pub source: String,
    /// Stable reason code (`untrusted`, `open_schema`, `collision`, …).
    pub code: LoadCode,
    /// What went wrong and what to do.
    pub reason: String,
}

/// A plugin as reported by `verbgate verbs`.
#[derive(Debug, Clone, Serialize)]
pub struct PluginReport {
    /// Name.
    pub name: String,
    /// Version.
    pub version: String,
    /// SHA-256 hex.
    pub digest: String,
    /// Signer key id.
    pub signer: Option<String>,
    /// Source.
    pub source: Source,
    /// Contract version.
    pub wit_version: String,
    /// Whether compiled code came from the cache on this start.
    pub cache: CacheStatus,
}

/// The loaded verb surface. Cloned (cheaply: verbs are shared) when a
/// component compiled in the background joins it.
#[derive(Clone)]
pub struct Registry {
    verbs: BTreeMap<String, Arc<Verb>>,
    aliases: BTreeMap<String, String>,
    plugins: Vec<PluginReport>,
    unavailable: Vec<Unavailable>,
    runtime: Arc<Runtime>,
    /// Verified components waiting to be compiled (see [`LoadMode`]).
    deferred: Vec<Arc<Deferred>>,
    /// Who owns each namespace.
    namespaces: namespaces::Namespaces,
    /// Programs not installed here (not configured, not on `PATH`) and
    /// the verbs left out for them: one INFO line, not a WARN per verb.
    not_installed: BTreeMap<String, Vec<String>>,
}

/// How to treat components whose compiled code is not cached yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadMode {
    /// Compile everything before returning (one-shot commands).
    Eager,
    /// Return at once with what is cached, and leave the rest in
    /// [`Registry::deferred`] for [`live::LiveRegistry`] to compile in the
    /// background (the server): neither a Python guest's seconds-long first
    /// compile nor the bundled components' on a fresh home delays
    /// `initialize` and `tools/list`. Once one component is deferred, every
    /// later one is too, so components join in load order and a namespace
    /// goes to the same owner as in an eager load, cold or warm.
    Background,
}

/// A deferred component's compile under way: its result, or an error if the
/// thread compiling it was lost.
pub type Compiling =
    tokio::sync::oneshot::Receiver<Result<LoadedComponent, crate::runtime::LoadError>>;

/// A verified component whose compilation was deferred.
pub struct Deferred {
    candidate: Candidate,
    digest: String,
    signer: Option<String>,
}

impl Deferred {
    /// Where it came from (for the server's log).
    pub fn source(&self) -> String {
        self.candidate.source.describe()
    }

    /// Whether it is one of the components built into the binary.
    pub fn is_bundled(&self) -> bool {
        self.candidate.bundled
    }

    /// Its file's name without the directory, for `loading` lists clients
    /// see: where the operator keeps plugins is not theirs to learn.
    pub fn file_name(&self) -> String {
        match &self.candidate.source {
            Source::Bundled => "bundled".into(),
            Source::File { path } => path
                .file_name()
                .map_or_else(|| "component".into(), |n| n.to_string_lossy().into_owned()),
        }
    }
}

/// The limits for the plugin named `name`: the defaults, with whatever
/// `[components.<name>]` sets (already checked against the operator caps).
fn component_limits(config: &Config, defaults: SandboxLimits, name: &str) -> SandboxLimits {
    let mut l = defaults;
    if let Some(c) = config.components.get(name) {
        if let Some(m) = c.memory_mib {
            l.memory_bytes = (m as usize) << 20;
        }
        if let Some(t) = c.timeout_ms {
            l.timeout = std::time::Duration::from_millis(t);
        }
    }
    l
}

/// A component's bytes before loading.
struct Candidate {
    bytes: Vec<u8>,
    source: Source,
    bundled: bool,
}

/// What loading does with one component, decided before any is compiled.
enum Step {
    /// Refused before loading: where from, why.
    Refuse(Source, LoadCode, String),
    /// What listing a plugin directory found unusable.
    Listed(Unavailable),
    /// Load and admit it: its verified bytes, digest and signer.
    Admit(Candidate, String, Option<String>),
}

/// Load (from the compile cache, or compile) every component `steps`
/// admits, in their order, on as many threads as there are cores: a warm
/// start is mostly reading cached code, checking its tag and deserializing
/// it, about 20 ms for the bundled components on one core of this machine
/// (`just bench`: start to tools/list 45 → 40 ms on two). The price is the
/// loading thread's malloc arena, which keeps the part of the components'
/// metadata it allocated: about 1.4 MiB of idle RSS, reused by the next
/// thread glibc starts.
fn load_side_by_side(
    runtime: &Runtime,
    steps: &[Step],
) -> Vec<Result<LoadedComponent, crate::runtime::LoadError>> {
    let jobs: Vec<(&[u8], &str)> = steps
        .iter()
        .filter_map(|s| match s {
            Step::Admit(c, digest, _) => Some((c.bytes.as_slice(), digest.as_str())),
            Step::Refuse(..) | Step::Listed(_) => None,
        })
        .collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let done: Vec<std::sync::Mutex<Option<_>>> =
        jobs.iter().map(|_| std::sync::Mutex::new(None)).collect();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(jobs.len());
    runtime.prepare_cache();
    let work = || loop {
        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let Some((bytes, digest)) = jobs.get(i) else { break };
        let loaded = runtime.load(bytes, digest);
        *done[i].lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(loaded);
    };
    std::thread::scope(|scope| {
        // This thread works too; a thread that cannot be started only
        // leaves more for the others.
        for _ in 1..threads {
            let _ =
                std::thread::Builder::new().name("verbgate-load".into()).spawn_scoped(scope, work);
        }
        work();
    });
    done.into_iter()
        .map(|m| {
            m.into_inner()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .expect("every job is taken by a thread that finishes it")
        })
        .collect()
}

/// The components waiting for a compile thread, each with where its
/// result goes.
type CompileQueue = std::sync::Mutex<
    std::vec::IntoIter<(
        Arc<Deferred>,
        tokio::sync::oneshot::Sender<Result<LoadedComponent, crate::runtime::LoadError>>,
    )>,
>;

/// Compile what `queue` holds until it is empty. A compile that panics
/// refuses its own component, with why, and the thread goes on.
fn compile_queued(runtime: &Runtime, queue: &CompileQueue) {
    loop {
        let next = queue.lock().unwrap_or_else(std::sync::PoisonError::into_inner).next();
        let Some((d, tx)) = next else { break };
        let loaded = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            runtime.load(&d.candidate.bytes, &d.digest)
        }))
        .unwrap_or_else(|panic| {
            Err(crate::runtime::LoadError::Compile(format!(
                "the compiler panicked: {}",
                panic_message(&*panic)
            )))
        });
        let _ = tx.send(loaded);
    }
}

/// Most components compiled side by side in the background.
const MAX_COMPILE_THREADS: usize = 4;

/// What a panic said, when it said it as text.
fn panic_message(panic: &(dyn std::any::Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("no message")
}

impl Registry {
    /// Load bundled components and every component in the configured plugin
    /// directories.
    pub async fn load(config: &Config, runtime: Arc<Runtime>) -> anyhow::Result<Registry> {
        Self::load_with(config, runtime, LoadMode::Eager).await
    }

    /// Load, deferring uncached disk components in [`LoadMode::Background`].
    pub async fn load_with(
        config: &Config,
        runtime: Arc<Runtime>,
        mode: LoadMode,
    ) -> anyhow::Result<Registry> {
        let trust = TrustStore::load(&config.trust_dir())?;
        let programs = Programs::new(config.programs.clone(), std::env::var_os("PATH").as_deref());
        let mut reg = Registry {
            verbs: BTreeMap::new(),
            aliases: BTreeMap::new(),
            plugins: Vec::new(),
            unavailable: Vec::new(),
            runtime,
            deferred: Vec::new(),
            namespaces: namespaces::Namespaces::default(),
            not_installed: BTreeMap::new(),
        };
        // What to do with each component, in order: hashing and signature
        // checks here, compiling or loading from the cache below (side by
        // side: it is most of a warm start), admitting in this order (which
        // plugin owns a namespace depends on it).
        let mut steps: Vec<Step> = Vec::new();
        // Whether a component was deferred: every later one then is too.
        // `defer` hands back what is to be loaded now, or keeps it deferred.
        let mut deferring = false;
        let mut defer = |reg: &mut Registry,
                         c: Candidate,
                         digest: String,
                         signer: Option<String>| {
            if mode == LoadMode::Eager || (!deferring && reg.runtime.is_cached(&digest)) {
                return Some((c, digest, signer));
            }
            if !deferring {
                tracing::info!(source = %c.source.describe(), "not in the compile cache: compiling it and what loads after it in the background");
            }
            deferring = true;
            reg.deferred.push(Arc::new(Deferred { candidate: c, digest, signer }));
            None
        };
        for b in bundled::BUNDLED {
            // build.rs hashed the file it embedded, so this only catches an
            // embed that differs from what was hashed (the file replaced
            // mid-build). What the committed bytes are is guarded elsewhere:
            // `e2e/install::committed_bundled_components_equal_a_fresh_build`
            // rebuilds them from plugins/, and `--version` prints the digests.
            let digest = sha256_hex(b.bytes);
            if digest != b.sha256 {
                steps.push(Step::Refuse(
                    Source::Bundled,
                    LoadCode::DigestMismatch,
                    format!("bundled component `{}` does not match its pinned digest", b.name),
                ));
                continue;
            }
            let c = Candidate { bytes: b.bytes.to_vec(), source: Source::Bundled, bundled: true };
            if let Some((c, digest, signer)) = defer(&mut reg, c, digest, None) {
                steps.push(Step::Admit(c, digest, signer));
            }
        }
        for dir in &config.plugin_dirs {
            let mut listing = Vec::new();
            let paths = component_files(dir, &mut listing);
            steps.extend(listing.into_iter().map(Step::Listed));
            for path in paths {
                let source = Source::File { path: path.clone() };
                let bytes = match std::fs::read(&path) {
                    Ok(b) => b,
                    Err(e) => {
                        let why = format!("cannot read {}: {e}", path.display());
                        steps.push(Step::Refuse(source, LoadCode::Unreadable, why));
                        continue;
                    }
                };
                // Verify the very bytes that will be compiled.
                let signer = match verify_component(&bytes, &trust) {
                    Ok(s) => s,
                    Err(e) => {
                        let why = format!("{} refused: {e}", path.display());
                        steps.push(Step::Refuse(source, e.kind(), why));
                        continue;
                    }
                };
                let digest = sha256_hex(&bytes);
                let candidate = Candidate { bytes, source, bundled: false };
                if let Some((c, digest, signer)) =
                    defer(&mut reg, candidate, digest, Some(signer.key_id))
                {
                    steps.push(Step::Admit(c, digest, signer));
                }
            }
        }
        let mut loaded = load_side_by_side(&reg.runtime, &steps).into_iter();
        for step in steps {
            match step {
                Step::Refuse(source, code, why) => reg.refuse(None, None, &source, code, why),
                Step::Listed(u) => reg.unavailable.push(u),
                Step::Admit(c, digest, signer) => {
                    let l = loaded.next().expect("one load per admitted component");
                    reg.admit_loaded(&c, l, digest, signer, config, &programs).await;
                }
            }
        }
        // With components still to join, the line waits for the last of
        // them (live::LiveRegistry), so it is printed once, complete.
        if reg.deferred.is_empty() {
            reg.log_missing_programs();
        }
        Ok(reg)
    }

    /// Log [`Self::missing_programs_summary`], if there is one, at INFO.
    pub fn log_missing_programs(&self) {
        if let Some(summary) = self.missing_programs_summary() {
            tracing::info!(code = LoadCode::MissingProgram.as_str(), "{summary}");
        }
    }

    /// One line for every verb left out because its program is not
    /// installed, by program (`rg (rg.search, rg.files); go (go.test)`):
    /// not a warning — a machine without node has no use for `jest.run`.
    pub fn missing_programs_summary(&self) -> Option<String> {
        if self.not_installed.is_empty() {
            return None;
        }
        let verbs: usize = self.not_installed.values().map(Vec::len).sum();
        let list: Vec<String> =
            self.not_installed.iter().map(|(p, v)| format!("{p} ({})", v.join(", "))).collect();
        Some(format!(
            "{verbs} verbs are unavailable because their program is not installed: {}; install one or set programs.<name> in verbgate.toml (`verbgate check` lists them)",
            list.join("; ")
        ))
    }

    fn refuse(
        &mut self,
        verb: Option<&str>,
        plugin: Option<&str>,
        source: &Source,
        code: LoadCode,
        reason: String,
    ) {
        // Names come from the plugin: an over-long one is recorded clipped.
        let verb = verb.map(|v| clip(v, NAME_BYTES));
        let plugin = plugin.map(|p| clip(p, NAME_BYTES));
        let not_installed = verb
            .as_deref()
            .is_some_and(|v| self.not_installed.values().any(|verbs| verbs.iter().any(|n| n == v)));
        if code == LoadCode::MissingProgram && not_installed {
            // Expected on most machines (one line for them all: see
            // `missing_programs_summary`); each is in `verbgate check`. A
            // configured path that is wrong stays a warning.
            tracing::debug!(verb, plugin, source = %source.describe(), code = code.as_str(), "{reason}");
        } else {
            tracing::warn!(verb, plugin, source = %source.describe(), code = code.as_str(), "{reason}");
        }
        self.unavailable.push(Unavailable {
            verb,
            plugin,
            source: source.describe(),
            code,
            reason,
        });
    }

    /// Components waiting to be compiled (empty after an eager load).
    pub fn deferred(&self) -> &[Arc<Deferred>] {
        &self.deferred
    }

    /// Compile (or load from the cache) every deferred component side by
    /// side, on as many threads as there are cores, each result delivered
    /// on its own channel as it is ready: the caller admits them in order,
    /// each as soon as it and those before it are done.
    pub fn compile_deferred(&self) -> Vec<(Arc<Deferred>, Compiling)> {
        let (jobs, receivers): (Vec<_>, Vec<_>) = self
            .deferred
            .iter()
            .map(|d| {
                let (tx, rx) = tokio::sync::oneshot::channel();
                ((d.clone(), tx), (d.clone(), rx))
            })
            .unzip();
        let queue = Arc::new(std::sync::Mutex::new(jobs.into_iter()));
        // Wasmtime already spreads one compile over every core; a few side by
        // side keep the cores busy between its parallel phases without
        // holding a dozen compiles' memory at once.
        let threads =
            std::thread::available_parallelism().map_or(1, |n| n.get()).min(MAX_COMPILE_THREADS);
        self.runtime.prepare_cache();
        let compile = {
            let runtime = self.runtime.clone();
            move |queue: Arc<CompileQueue>| compile_queued(&runtime, &queue)
        };
        let mut started = 0;
        for _ in 0..threads.min(receivers.len()) {
            let (queue, compile) = (queue.clone(), compile.clone());
            let spawned = std::thread::Builder::new()
                .name("verbgate-compile".into())
                .spawn(move || compile(queue));
            started += usize::from(spawned.is_ok());
        }
        // No thread could be started (a process at its thread limit): the
        // components still compile, on the runtime's blocking pool.
        if started == 0 && !receivers.is_empty() {
            tokio::task::spawn_blocking(move || compile(queue));
        }
        receivers
    }

    /// This registry with deferred component `d` admitted from `loaded`
    /// (what [`Self::compile_deferred`] delivered for it; `None` if its
    /// compile was lost) and no longer deferred.
    pub async fn with_deferred_admitted(
        &self,
        d: &Arc<Deferred>,
        loaded: Option<Result<LoadedComponent, crate::runtime::LoadError>>,
        config: &Config,
    ) -> Registry {
        let mut next = self.clone();
        next.deferred.retain(|x| !Arc::ptr_eq(x, d));
        let programs = Programs::new(config.programs.clone(), std::env::var_os("PATH").as_deref());
        match loaded {
            Some(loaded) => {
                next.admit_loaded(
                    &d.candidate,
                    loaded,
                    d.digest.clone(),
                    d.signer.clone(),
                    config,
                    &programs,
                )
                .await
            }
            None => next.refuse(
                None,
                None,
                &d.candidate.source,
                LoadCode::LoadFailed,
                "background compile stopped: its thread could not be started or ended early"
                    .to_string(),
            ),
        }
        next
    }

    async fn admit_loaded(
        &mut self,
        c: &Candidate,
        loaded: Result<LoadedComponent, crate::runtime::LoadError>,
        digest: String,
        signer: Option<String>,
        config: &Config,
        programs: &Programs,
    ) {
        let mut component = match loaded {
            Ok(l) => l,
            Err(e) => {
                return self.refuse(
                    None,
                    None,
                    &c.source,
                    e.code(),
                    format!("{}: {e}", c.source.describe()),
                )
            }
        };
        // Per-component limits are keyed by plugin name; `describe` itself
        // runs under the limits of the file's stem (`py-echo.wasm` →
        // `py-echo`), so a guest that needs more memory to start can get it.
        if let Source::File { path } = &c.source {
            if let Some(stem) = path.file_stem().and_then(|s| s.to_str()) {
                component.set_limits(component_limits(config, self.runtime.limits(), stem));
            }
        }
        let info = match self.runtime.describe(&component).await {
            Ok(i) => i,
            Err(e) => {
                return self.refuse(
                    None,
                    None,
                    &c.source,
                    LoadCode::DescribeFailed,
                    format!("{}: describe() failed: {e}", c.source.describe()),
                )
            }
        };
        // The whole describe is measured before any per-verb work.
        if let Some(f) = bounds::check_describe(&info, &self.runtime.limits().bounds) {
            return self.refuse(
                None,
                None,
                &c.source,
                f.code,
                format!("{}: {}; fix: {}", c.source.describe(), f.message, f.fix),
            );
        }
        if self.plugins.iter().any(|p| p.name == info.name) {
            let msg = format!(
                "a plugin named `{}` is already loaded; {} is ignored",
                info.name,
                c.source.describe()
            );
            return self.refuse(None, Some(&info.name), &c.source, LoadCode::DuplicatePlugin, msg);
        }
        component.set_limits(component_limits(config, self.runtime.limits(), &info.name));
        let is_core = c.bundled && info.name == "core";
        let findings = lint::lint_plugin(&info, is_core, &self.runtime.limits().bounds);
        if let Some(f) = findings.iter().find(|f| f.severity == Severity::Error && f.verb.is_none())
        {
            return self.refuse(None, Some(&info.name), &c.source, f.code, f.message.clone());
        }
        let plugin = Arc::new(Plugin {
            name: info.name.clone(),
            version: info.version.clone(),
            digest,
            signer,
            source: c.source.clone(),
            component,
        });
        self.plugins.push(PluginReport {
            name: plugin.name.clone(),
            version: plugin.version.clone(),
            digest: plugin.digest.clone(),
            signer: plugin.signer.clone(),
            source: plugin.source.clone(),
            wit_version: plugin.component.wit_version.clone(),
            cache: plugin.component.cache,
        });
        for spec in &info.verbs {
            let errors: Vec<_> = findings
                .iter()
                .filter(|f| f.severity == Severity::Error && f.verb.as_deref() == Some(&spec.name))
                .collect();
            if let Some(f) = errors.first() {
                let reason = match &f.pointer {
                    Some(p) => format!("{} (at {p}); fix: {}", f.message, f.fix),
                    None => format!("{}; fix: {}", f.message, f.fix),
                };
                self.refuse(Some(&spec.name), Some(&plugin.name), &c.source, f.code, reason);
                continue;
            }
            if let Err((code, reason)) = self.add_verb(spec, &plugin, c.bundled, config, programs) {
                self.refuse(Some(&spec.name), Some(&plugin.name), &c.source, code, reason);
            }
        }
    }

    fn add_verb(
        &mut self,
        spec: &VerbSpec,
        plugin: &Arc<Plugin>,
        bundled: bool,
        config: &Config,
        programs: &Programs,
    ) -> Result<(), (LoadCode, String)> {
        // Ownership is settled before the allow list: which plugin a
        // namespace belongs to never depends on what the operator lets
        // callers reach.
        for name in std::iter::once(&spec.name).chain(&spec.aliases) {
            if let Some(owner) = self.owner_of(name) {
                return Err((
                    LoadCode::Collision,
                    format!("`{name}` is already provided by plugin `{owner}`; the first loaded keeps it (bundled first, then plugin files in name order)"),
                ));
            }
        }
        let claimant = namespaces::Owner { plugin: plugin.name.clone(), bundled };
        for name in std::iter::once(&spec.name).chain(&spec.aliases) {
            if let Err(owner) = self.namespaces.claim(name, &claimant) {
                return Err((
                    LoadCode::NamespaceOwned,
                    format!("`{name}` is in the `{}` namespace, which belongs to {}; a namespace belongs to one plugin (bundled namespaces to the bundled plugins, others to the first plugin loaded that declares them)", fence::namespace(name), owner.describe()),
                ));
            }
        }
        if !fence::allowed(&spec.name, config.allow.as_deref()) {
            return Err((
                LoadCode::NotAllowed,
                format!("`{}` is not in the allow list of verbgate.toml", spec.name),
            ));
        }
        let mut resolved = BTreeMap::new();
        for p in &spec.programs {
            let path = programs.resolve(p).map_err(|r| {
                if let Unresolved::NotOnPath(name) = &r {
                    self.not_installed.entry(name.clone()).or_default().push(spec.name.clone());
                }
                (LoadCode::MissingProgram, r.to_string())
            })?;
            resolved.insert(p.clone(), path);
        }
        // Lint already proved both schemas parse and compile.
        let params_schema: Value = serde_json::from_str(&spec.params_schema)
            .map_err(|e| (LoadCode::InvalidSchema, e.to_string()))?;
        let validator =
            schema::compile(&params_schema).map_err(|e| (LoadCode::InvalidSchema, e))?;
        let (result_schema, result_validator) = match &spec.result_schema {
            None => (None, None),
            Some(t) => {
                let s: Value = serde_json::from_str(t)
                    .map_err(|e| (LoadCode::InvalidResultSchema, e.to_string()))?;
                let v = schema::compile(&s).map_err(|e| (LoadCode::InvalidResultSchema, e))?;
                (Some(s), Some(v))
            }
        };
        let verb = Verb {
            name: spec.name.clone(),
            summary: spec.summary.trim().to_string(),
            kind: spec.kind,
            fingerprint: fingerprint(&params_schema),
            signature: schema::signature(
                &spec.name,
                &params_schema,
                spec.kind == VerbKind::Spawn,
                spec.summary.trim(),
            ),
            params_schema,
            result_schema,
            aliases: spec.aliases.clone(),
            programs: resolved,
            two_stage: spec.two_stage,
            effects: spec.effects.clone(),
            sensitive: spec.sensitive.clone(),
            plugin: plugin.clone(),
            validator,
            result_validator,
        };
        for alias in &spec.aliases {
            self.aliases.insert(alias.clone(), spec.name.clone());
        }
        self.verbs.insert(spec.name.clone(), Arc::new(verb));
        Ok(())
    }

    fn owner_of(&self, name: &str) -> Option<String> {
        let canonical = self.aliases.get(name).map(String::as_str).unwrap_or(name);
        self.verbs.get(canonical).map(|v| v.plugin.name.clone())
    }

    /// The verb named `name` or aliased by it.
    pub fn resolve(&self, name: &str) -> Option<&Arc<Verb>> {
        let canonical = self.aliases.get(name).map(String::as_str).unwrap_or(name);
        self.verbs.get(canonical)
    }

    /// Reachable verbs, by name.
    pub fn verbs(&self) -> impl Iterator<Item = &Arc<Verb>> {
        self.verbs.values()
    }

    /// Reachable verb names (never aliases).
    pub fn verb_names(&self) -> impl Iterator<Item = &str> {
        self.verbs.keys().map(String::as_str)
    }

    /// Loaded plugins.
    pub fn plugins(&self) -> &[PluginReport] {
        &self.plugins
    }

    /// What could not be made available.
    pub fn unavailable(&self) -> &[Unavailable] {
        &self.unavailable
    }

    /// Why verb `name` is not here although a trusted plugin declares it,
    /// when the reason is one the operator can fix on this machine: the
    /// program it runs is not installed (`missing_program`). Other refusals
    /// (collisions, the allow list, bad schemas) stay unknown verbs to a
    /// caller.
    pub fn missing_program(&self, name: &str) -> Option<&Unavailable> {
        self.unavailable
            .iter()
            .find(|u| u.code == LoadCode::MissingProgram && u.verb.as_deref() == Some(name))
    }

    /// The `unavailable` error for a verb whose program is missing, if it is
    /// one.
    pub fn unavailable_error(&self, name: &str) -> Option<crate::OpError> {
        let u = self.missing_program(name)?;
        Some(
            crate::OpError::new(
                crate::ErrorCode::Unavailable,
                format!("`{name}` is unavailable on this machine: {}", u.reason),
            )
            .with("verb", name)
            .with("reason_code", u.code.as_str())
            .with("reason", u.reason.as_str()),
        )
    }

    /// Who owns the namespace of `name`, if anyone does.
    pub fn namespace_owner(&self, name: &str) -> Option<&namespaces::Owner> {
        self.namespaces.owner_of(name)
    }

    /// The runtime components run in.
    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.runtime
    }
}

/// `*.wasm` files in `dir`, sorted; a missing directory has none.
fn component_files(dir: &Path, unavailable: &mut Vec<Unavailable>) -> Vec<PathBuf> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(e) => {
            unavailable.push(Unavailable {
                verb: None,
                plugin: None,
                source: dir.display().to_string(),
                code: LoadCode::Unreadable,
                reason: format!("cannot read plugin directory {}: {e}", dir.display()),
            });
            return Vec::new();
        }
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "wasm") && p.is_file())
        .collect();
    files.sort();
    files
}
