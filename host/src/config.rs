//! Configuration: where verbgate keeps its files, which directory commands
//! run in, which verbs are reachable, and the limits. Every default is
//! documented here and in docs/configuration.md (a test keeps the two equal).
//!
//! Precedence: command-line flags, then `verbgate.toml` (`--config FILE`, or
//! `$VERBGATE_HOME/verbgate.toml` when present), then the defaults below.

use anyhow::{bail, Context, Result};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The most `limits.plugin_concurrent_calls` may be: each call reserves
/// about 8 GiB of address space, so 4096 calls already need 32 TiB.
pub const MAX_CONCURRENT_CALLS: u32 = 4096;

/// Limits applied to plugins and programs.
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// Wall-clock deadline for one plugin call (`plan`, `map-result`), ms.
    /// Default 2000.
    pub plugin_timeout_ms: u64,
    /// Linear memory cap per plugin instance, MiB. Default 64.
    pub plugin_memory_mib: u64,
    /// Largest JSON text a plugin may return, bytes. Default 4 MiB.
    pub plugin_output_bytes: usize,
    /// Default timeout for an exec plan that sets none, ms. Default 60000.
    pub exec_timeout_ms: u64,
    /// Upper bound on any exec timeout a plan asks for, ms. Default 600000.
    pub exec_timeout_max_ms: u64,
    /// Capture bound for each of stdout and stderr, bytes. Default 1 MiB.
    pub capture_bytes: usize,
    /// Most ops in one request. Default 8.
    pub batch_cap: usize,
    /// Operator cap on any one component's memory, MiB: no
    /// `[components.<name>]` setting may exceed it. Default 1024.
    pub plugin_memory_cap_mib: u64,
    /// Operator cap on any one component's call deadline, ms. Default 30000.
    pub plugin_timeout_cap_ms: u64,
    /// Plugin calls that may hold an instance at once (the instance pool);
    /// past it a call fails with `plugin_limit` (`concurrent_calls`).
    /// Default 256, at most [`MAX_CONCURRENT_CALLS`]; fewer are served
    /// where the address space cannot hold the pool.
    pub plugin_concurrent_calls: u32,
    /// Most verbs one component may declare; past it the component is
    /// refused before any per-verb work. Default 1000 (cap 10000).
    pub plugin_verbs: usize,
    /// Largest params or result schema of one verb (or resolved target),
    /// bytes. Default 262144 (cap 4 MiB).
    pub plugin_schema_bytes: usize,
    /// Most argv entries in one plan. Default 4096 (cap 65536).
    pub plan_args: usize,
    /// Largest argv plus environment text of one plan, bytes. Default
    /// 524288 (cap 2 MiB, the usual `ARG_MAX`).
    pub plan_argv_bytes: usize,
    /// Largest stdin of one plan, bytes. Default 1 MiB (cap 64 MiB).
    pub plan_stdin_bytes: usize,
    /// Most environment variables one plan may set. Default 64 (cap 1024).
    pub plan_env: usize,
    /// Largest error message a plugin may return, bytes. Default 16384
    /// (cap 64 KiB): room for a stderr tail.
    pub plugin_error_message_bytes: usize,
    /// Largest error details (JSON text) a plugin may return, bytes.
    /// Default 65536 (cap 1 MiB).
    pub plugin_error_details_bytes: usize,
    /// Jobs that may be preparing or running at once, across every verbgate
    /// process sharing the store; past it a spawn fails with `job_limit`.
    /// Default 16.
    pub max_running_jobs: usize,
    /// Processes (threads included) one confined program's tree may hold
    /// at once, verbgate's one in its namespace counted; past it `fork`
    /// fails with EAGAIN (Linux 6.14+, with the program's own namespaces:
    /// its PID namespace's `pid_max`, set 300 above it because the kernel
    /// skips the first 300 pids once they wrap; until then a tree may hold
    /// up to 299 more). Default 1024, at least 16.
    pub max_processes: u64,
    /// Memory one confined program's whole tree may use at once, MiB
    /// (pages, the kernel's memory for it, swap), with the program's own
    /// namespaces: a memory cgroup of its own (Linux); past it the kernel
    /// ends processes of that tree only. 0: no bound. Default 4096; else
    /// 64 to 16777216 (16 TiB).
    pub max_memory_mib: u64,
    /// Cap on each of a job's stdout and stderr, bytes: past it the
    /// supervisor stops the job (`output_limit`). Default 64 MiB.
    pub job_output_bytes: u64,
    /// Time limit for a spawn plan that sets none, ms. Default 3600000 (1 h).
    pub job_timeout_ms: u64,
    /// Upper bound on any spawn plan's time limit, ms. Default 86400000 (24 h).
    pub job_timeout_max_ms: u64,
    /// Ended jobs older than this many days are pruned (rows and output
    /// files) at server start and by `verbgate jobs prune`. Default 14.
    pub job_retain_days: u64,
    /// At most this many ended jobs are kept (the newest). Default 1000.
    pub job_retain_count: usize,
    /// How long an op naming a verb not loaded yet waits for the
    /// components still compiling in the background, ms (0: not at all;
    /// at most 600000). Default 60000.
    pub loading_wait_ms: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            plugin_timeout_ms: 2_000,
            plugin_memory_mib: 64,
            plugin_output_bytes: 4 << 20,
            exec_timeout_ms: 60_000,
            exec_timeout_max_ms: 600_000,
            capture_bytes: 1 << 20,
            batch_cap: 8,
            plugin_memory_cap_mib: 1024,
            plugin_timeout_cap_ms: 30_000,
            plugin_concurrent_calls: 256,
            plugin_verbs: 1000,
            plugin_schema_bytes: 256 << 10,
            plan_args: 4096,
            plan_argv_bytes: 512 << 10,
            plan_stdin_bytes: 1 << 20,
            plan_env: 64,
            plugin_error_message_bytes: 16 << 10,
            plugin_error_details_bytes: 64 << 10,
            max_running_jobs: 16,
            max_processes: 1024,
            max_memory_mib: 4096,
            job_output_bytes: 64 << 20,
            job_timeout_ms: 3_600_000,
            job_timeout_max_ms: 86_400_000,
            job_retain_days: 14,
            job_retain_count: 1000,
            loading_wait_ms: 60_000,
        }
    }
}

/// Per-component limits (`[components.<plugin-name>]`), raising or
/// lowering the `[limits]` defaults for one component within the operator
/// caps. A Python or JavaScript guest, for instance, may need more memory
/// than a Rust one.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ComponentLimits {
    /// Linear memory cap per instance, MiB (≤ `limits.plugin_memory_cap_mib`).
    pub memory_mib: Option<u64>,
    /// Deadline per call, ms (≤ `limits.plugin_timeout_cap_ms`).
    pub timeout_ms: Option<u64>,
}

/// Refuse limits that cannot work, naming the setting: a zero count, or
/// defaults or per-component limits outside the operator caps.
fn check_limits(limits: &Limits, components: &BTreeMap<String, ComponentLimits>) -> Result<()> {
    if limits.batch_cap == 0 {
        bail!("limits.batch_cap must be at least 1");
    }
    if limits.loading_wait_ms > 600_000 {
        bail!(
            "limits.loading_wait_ms is {}: at most 600000 (10 minutes), which no client waits for",
            limits.loading_wait_ms
        );
    }
    if !(1..=MAX_CONCURRENT_CALLS).contains(&limits.plugin_concurrent_calls) {
        bail!(
            "limits.plugin_concurrent_calls is {}: it must be 1 to {MAX_CONCURRENT_CALLS} (each call reserves about 8 GiB of address space)",
            limits.plugin_concurrent_calls
        );
    }
    if limits.plugin_memory_mib > limits.plugin_memory_cap_mib {
        bail!(
            "limits.plugin_memory_mib = {} exceeds limits.plugin_memory_cap_mib = {}; raise the cap or lower the default",
            limits.plugin_memory_mib,
            limits.plugin_memory_cap_mib
        );
    }
    if limits.plugin_timeout_ms > limits.plugin_timeout_cap_ms {
        bail!(
            "limits.plugin_timeout_ms = {} exceeds limits.plugin_timeout_cap_ms = {}; raise the cap or lower the default",
            limits.plugin_timeout_ms,
            limits.plugin_timeout_cap_ms
        );
    }
    check_plugin_bounds(limits)?;
    check_job_limits(limits)?;
    check_exec_limits(limits)?;
    for (name, c) in components {
        if let Some(m) = c.memory_mib {
            if m == 0 || m > limits.plugin_memory_cap_mib {
                bail!(
                    "components.{name}.memory_mib = {m} is outside 1..={} (limits.plugin_memory_cap_mib); lower it or raise the cap",
                    limits.plugin_memory_cap_mib
                );
            }
        }
        if let Some(t) = c.timeout_ms {
            if t == 0 || t > limits.plugin_timeout_cap_ms {
                bail!(
                    "components.{name}.timeout_ms = {t} is outside 1..={} (limits.plugin_timeout_cap_ms); lower it or raise the cap",
                    limits.plugin_timeout_cap_ms
                );
            }
        }
    }
    Ok(())
}

/// The bounds on plugin text (`plugin_verbs` … `plugin_error_details_bytes`):
/// each at least 1 and at most its cap, so no setting can turn a bound off.
fn check_plugin_bounds(l: &Limits) -> Result<()> {
    let bounds = [
        ("plugin_verbs", l.plugin_verbs, 10_000),
        ("plugin_schema_bytes", l.plugin_schema_bytes, 4 << 20),
        ("plan_args", l.plan_args, 65_536),
        ("plan_argv_bytes", l.plan_argv_bytes, 2 << 20),
        ("plan_stdin_bytes", l.plan_stdin_bytes, 64 << 20),
        ("plan_env", l.plan_env, 1024),
        ("plugin_error_message_bytes", l.plugin_error_message_bytes, 64 << 10),
        ("plugin_error_details_bytes", l.plugin_error_details_bytes, 1 << 20),
    ];
    for (name, value, cap) in bounds {
        if value == 0 || value > cap {
            bail!("limits.{name} = {value} is outside 1..={cap}");
        }
    }
    Ok(())
}

/// Refuse any of the named settings that is 0.
fn at_least_one(settings: &[(&str, u64)]) -> Result<()> {
    match settings.iter().find(|(_, value)| *value == 0) {
        Some((name, _)) => bail!("limits.{name} must be at least 1"),
        None => Ok(()),
    }
}

/// The exec and plugin limits: none may be 0 (a zero capture bound or
/// deadline would fail every op), and the exec default is within its maximum.
fn check_exec_limits(l: &Limits) -> Result<()> {
    at_least_one(&[
        ("exec_timeout_ms", l.exec_timeout_ms),
        ("exec_timeout_max_ms", l.exec_timeout_max_ms),
        ("capture_bytes", l.capture_bytes as u64),
        ("plugin_timeout_ms", l.plugin_timeout_ms),
        ("plugin_memory_mib", l.plugin_memory_mib),
        ("plugin_output_bytes", l.plugin_output_bytes as u64),
        ("plugin_memory_cap_mib", l.plugin_memory_cap_mib),
        ("plugin_timeout_cap_ms", l.plugin_timeout_cap_ms),
    ])?;
    if l.exec_timeout_ms > l.exec_timeout_max_ms {
        bail!(
            "limits.exec_timeout_ms = {} exceeds limits.exec_timeout_max_ms = {}; raise the maximum or lower the default",
            l.exec_timeout_ms,
            l.exec_timeout_max_ms
        );
    }
    Ok(())
}

/// The job limits: every count at least 1, the default time limit within
/// the maximum.
fn check_job_limits(limits: &Limits) -> Result<()> {
    at_least_one(&[
        ("max_running_jobs", limits.max_running_jobs as u64),
        ("job_output_bytes", limits.job_output_bytes),
        ("job_timeout_ms", limits.job_timeout_ms),
        ("job_timeout_max_ms", limits.job_timeout_max_ms),
        ("job_retain_days", limits.job_retain_days),
        ("job_retain_count", limits.job_retain_count as u64),
    ])?;
    if limits.max_processes < 16 {
        bail!(
            "limits.max_processes = {} is too few to start a program (verbgate's own process in its namespace counts); it must be at least 16",
            limits.max_processes
        );
    }
    if limits.max_memory_mib != 0 && !(64..=1 << 24).contains(&limits.max_memory_mib) {
        bail!(
            "limits.max_memory_mib = {} is out of range: give 64 to 16777216 MiB, or 0 for no memory bound on a program's processes",
            limits.max_memory_mib
        );
    }
    if limits.job_timeout_ms > limits.job_timeout_max_ms {
        bail!(
            "limits.job_timeout_ms = {} exceeds limits.job_timeout_max_ms = {}; raise the maximum or lower the default",
            limits.job_timeout_ms,
            limits.job_timeout_max_ms
        );
    }
    Ok(())
}

/// What a `[[policy]]` rule decides for the ops it matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Run it.
    Allow,
    /// Ask a person first (MCP elicitation, or the terminal for
    /// `verbgate request`).
    Ask,
    /// Refuse it (`policy_denied`).
    Deny,
}

impl Decision {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Ask => "ask",
            Decision::Deny => "deny",
        }
    }
}

/// One `[[policy]]` rule as written. A rule matches an op when every
/// condition it states holds: its verb is one of `verbs` (patterns as in
/// `allow`), and it may have one of `effects` (effect names, or
/// `undeclared` for verbs of a contract that cannot say). A rule with
/// neither matches every op. The first matching rule decides; after the
/// operator's rules come the defaults (see `dispatch::policy`).
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct PolicyRule {
    /// Verb patterns (`git.*`, `cargo.test`, `*`).
    pub verbs: Option<Vec<String>>,
    /// Effects (`writes_repo`, `runs_repo_code`, …, `undeclared`).
    pub effects: Option<Vec<EffectPattern>>,
    /// OAuth subjects (an access token's `sub`) the rule is for; a caller
    /// without an OAuth identity (a static token, stdio) matches none.
    pub subjects: Option<Vec<String>>,
    /// OAuth groups (the access token's `[oauth] groups_claim`) the rule
    /// is for: it matches a caller in any of them.
    pub groups: Option<Vec<String>>,
    /// What to do.
    pub decision: Decision,
    /// Why, shown to callers a rule refuses or asks for.
    pub reason: Option<String>,
}

/// Effect names a rule may use besides the declared ones.
pub const UNDECLARED: &str = "undeclared";

/// What a rule's `effects` entry names: a declared effect, or
/// `undeclared` (a verb of a contract that cannot say what it does).
/// Parsed once, when the config is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EffectPattern {
    /// Verbs that declare this effect (or cannot declare any).
    Effect(crate::runtime::model::Effect),
    /// Verbs that cannot declare effects.
    Undeclared,
}

impl<'de> Deserialize<'de> for EffectPattern {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        use crate::runtime::model::Effect;
        let name = String::deserialize(d)?;
        if name == UNDECLARED {
            return Ok(EffectPattern::Undeclared);
        }
        Effect::parse(&name).map(EffectPattern::Effect).ok_or_else(|| {
            let names: Vec<&str> =
                Effect::ALL.iter().map(|e| e.as_str()).chain([UNDECLARED]).collect();
            serde::de::Error::custom(format!(
                "unknown effect {name:?}; effects are {}",
                names.join(", ")
            ))
        })
    }
}

/// Refuse a rule that could never match what its author meant: an unknown
/// effect name, an empty list, a pattern that is not a verb pattern.
fn check_policy(rules: &[PolicyRule]) -> Result<()> {
    for (i, rule) in rules.iter().enumerate() {
        let at = format!("[[policy]] rule {} of verbgate.toml", i + 1);
        for (key, list) in [("subjects", &rule.subjects), ("groups", &rule.groups)] {
            if list.as_ref().is_some_and(Vec::is_empty) {
                bail!("{at}: `{key} = []` matches nobody; leave it out to match every caller");
            }
        }
        if rule.effects.as_ref().is_some_and(Vec::is_empty) {
            bail!("{at}: `effects = []` matches nothing; leave it out to match every effect");
        }
        if let Some(verbs) = &rule.verbs {
            if verbs.is_empty() {
                bail!("{at}: `verbs = []` matches nothing; leave it out to match every verb");
            }
            for v in verbs {
                if !crate::registry::fence::is_pattern(v) {
                    bail!("{at}: {v:?} is not a verb pattern (`ns.verb`, `ns.*` or `*`)");
                }
            }
        }
    }
    Ok(())
}

/// `[consent]`: how asking a person behaves.
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct ConsentSettings {
    /// How long an op waits for the person's answer, ms; no answer in time
    /// is a refusal (`consent_declined`, answer `timeout`). Default 120000.
    pub timeout_ms: u64,
}

impl Default for ConsentSettings {
    fn default() -> Self {
        ConsentSettings { timeout_ms: 120_000 }
    }
}

/// Whether programs run in the OS sandbox.
#[derive(Debug, Clone, Copy, Deserialize, serde::Serialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum SandboxMode {
    /// Every program runs confined; where the kernel cannot confine it,
    /// its op answers `sandbox_unavailable`. The default.
    #[default]
    Enforce,
    /// Programs run with the user's full rights (the operator's explicit
    /// choice; the policy then asks before repository code runs).
    Off,
}

/// `[sandbox]`: the OS sandbox every program runs in.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct SandboxSettings {
    /// `enforce` (default) or `off`.
    pub mode: SandboxMode,
    /// Linux: each program in PID, user and mount namespaces of its own
    /// (its tree ends with it, it names no other process, a fresh `/proc`,
    /// `limits.max_processes`). Default true; where the kernel refuses
    /// them, ops answer `sandbox_unavailable` unless this is false.
    pub namespaces: bool,
    /// `[[sandbox.allow]]`: extra paths and the network for some verbs.
    pub allow: Vec<crate::sandbox::profile::Widening>,
}

impl Default for SandboxSettings {
    fn default() -> Self {
        SandboxSettings { mode: SandboxMode::default(), namespaces: true, allow: vec![] }
    }
}

/// The audit trail (`$VERBGATE_HOME/state/audit.db`).
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct AuditSettings {
    /// Record every op. Default true.
    pub enabled: bool,
    /// Rows older than this many days are pruned at server start and by
    /// `verbgate audit prune`. Default 90.
    pub retain_days: u64,
    /// At most this many rows are kept (the newest). Default 100000.
    pub retain_rows: u64,
    /// Largest args JSON recorded per op, bytes; longer args are cut and
    /// marked. Default 4096.
    pub args_bytes: usize,
}

impl Default for AuditSettings {
    fn default() -> Self {
        AuditSettings { enabled: true, retain_days: 90, retain_rows: 100_000, args_bytes: 4096 }
    }
}

/// A transport git may use to reach another repository (git's own
/// protocol names, as `GIT_ALLOW_PROTOCOL` takes them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum GitTransport {
    /// `https://` (through git's curl helper).
    Https,
    /// `ssh://` and `host:path` (through the user's ssh).
    Ssh,
    /// `file://` and local paths: the other repository's own hooks and
    /// config run (`git-upload-pack`/`git-receive-pack` start there).
    File,
    /// Plain `http://` (no TLS).
    Http,
    /// `git://` (no authentication, no TLS).
    Git,
}

impl GitTransport {
    /// git's name for it.
    pub fn as_str(self) -> &'static str {
        match self {
            GitTransport::Https => "https",
            GitTransport::Ssh => "ssh",
            GitTransport::File => "file",
            GitTransport::Http => "http",
            GitTransport::Git => "git",
        }
    }
}

/// `[git]`: how git verbs may reach other repositories.
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct GitSettings {
    /// The transports `git fetch` and `git push` may use. Default `https`
    /// and `ssh`; every other git command gets none. `file` (a local path or
    /// `file://` remote) is off by default: the receiving repository's own
    /// hooks and config would run.
    pub transports: Vec<GitTransport>,
}

impl Default for GitSettings {
    fn default() -> Self {
        GitSettings { transports: vec![GitTransport::Https, GitTransport::Ssh] }
    }
}

/// Environment variables passed to programs by default (everything else is
/// cleared). `env_allow` in the config replaces this list.
pub const DEFAULT_ENV_ALLOW: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "TMPDIR",
    "CARGO_HOME",
    "RUSTUP_HOME",
    "RUSTUP_TOOLCHAIN",
];

/// `verbgate.toml` as written by an operator.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    root: Option<PathBuf>,
    allow: Option<Vec<String>>,
    plugin_dirs: Option<Vec<PathBuf>>,
    env_allow: Option<Vec<String>>,
    #[serde(default)]
    limits: Limits,
    #[serde(default)]
    programs: BTreeMap<String, PathBuf>,
    #[serde(default)]
    components: BTreeMap<String, ComponentLimits>,
    #[serde(default)]
    trusted_repos: Vec<PathBuf>,
    #[serde(default)]
    policy: Vec<PolicyRule>,
    #[serde(default)]
    consent: ConsentSettings,
    #[serde(default)]
    audit: AuditSettings,
    #[serde(default)]
    sandbox: SandboxSettings,
    #[serde(default)]
    git: GitSettings,
    oauth: Option<crate::oauth::settings::OAuthSettings>,
}

/// Settings given on the command line; `None` means "not given".
#[derive(Debug, Default, Clone)]
pub struct Overrides {
    /// `--home`.
    pub home: Option<PathBuf>,
    /// `--config`.
    pub config: Option<PathBuf>,
    /// `--root`.
    pub root: Option<PathBuf>,
    /// `--plugins` (repeatable), added to the configured directories.
    pub plugin_dirs: Vec<PathBuf>,
}

/// The effective configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// `VERBGATE_HOME`: holds `trust/`, `plugins/`, `state/`, `cache/`, `keys/`.
    pub home: PathBuf,
    /// The directory programs run in (canonical). Default: the directory
    /// verbgate was started in.
    pub root: PathBuf,
    /// Verb patterns (`git.*`, `job.status`) that may be reached; `None`
    /// means every loaded verb.
    pub allow: Option<Vec<String>>,
    /// Directories scanned for `*.wasm` components, in order:
    /// `$VERBGATE_HOME/plugins`, then `plugin_dirs`, then `--plugins`.
    pub plugin_dirs: Vec<PathBuf>,
    /// Environment variables programs inherit.
    pub env_allow: Vec<String>,
    /// Limits.
    pub limits: Limits,
    /// Program name → absolute path, overriding the `PATH` lookup.
    pub programs: BTreeMap<String, PathBuf>,
    /// Plugin name → its own limits (checked against the caps at load).
    pub components: BTreeMap<String, ComponentLimits>,
    /// Repositories (work tree or git directory, absolute) whose own git
    /// config the operator vouches for: the git guard does not refuse them
    /// for naming programs or for lying outside the root.
    pub trusted_repos: Vec<PathBuf>,
    /// The operator's `[[policy]]` rules, in order (the defaults follow).
    pub policy: Vec<PolicyRule>,
    /// `[consent]`.
    pub consent: ConsentSettings,
    /// `[audit]`.
    pub audit: AuditSettings,
    /// `[sandbox]`.
    pub sandbox: SandboxSettings,
    /// `[git]`.
    pub git: GitSettings,
    /// `[oauth]`: the HTTP server is also an OAuth 2.1 resource server.
    pub oauth: Option<crate::oauth::settings::OAuthSettings>,
    /// The configuration file read, if any (canonical).
    pub config_file: Option<PathBuf>,
}

impl Config {
    /// Resolve the configuration from flags, environment and file.
    pub fn load(over: &Overrides) -> Result<Config> {
        let home = match &over.home {
            Some(h) => h.clone(),
            None => default_home()?,
        };
        // Every later check compares paths: a relative home, or one reached
        // through a link, must compare as where it really is.
        let home = canonical(&home)
            .with_context(|| format!("cannot resolve VERBGATE_HOME {}", home.display()))?;
        let file_path = over.config.clone().or_else(|| {
            let p = home.join("verbgate.toml");
            p.exists().then_some(p)
        });
        // Nothing in the home is trusted before it is known to be ours and
        // not writable by anyone else.
        crate::private_files::check_home(&home, file_path.as_deref())?;
        let file = match &file_path {
            Some(p) => {
                let text = std::fs::read_to_string(p)
                    .with_context(|| format!("cannot read config file {}", p.display()))?;
                toml::from_str::<FileConfig>(&text)
                    .with_context(|| format!("invalid config file {}", p.display()))?
            }
            None => FileConfig::default(),
        };
        let root = match over.root.clone().or(file.root) {
            Some(r) => r,
            None => std::env::current_dir().context("cannot read the current directory")?,
        };
        let root = root
            .canonicalize()
            .with_context(|| format!("root directory {} does not exist", root.display()))?;
        if !root.is_dir() {
            bail!("root {} is not a directory", root.display());
        }
        let mut plugin_dirs = vec![home.join("plugins")];
        plugin_dirs.extend(file.plugin_dirs.unwrap_or_default());
        plugin_dirs.extend(over.plugin_dirs.iter().cloned());
        check_limits(&file.limits, &file.components)?;
        check_policy(&file.policy)?;
        if let Some(oauth) = &file.oauth {
            oauth.check()?;
        }
        if file.consent.timeout_ms == 0 {
            bail!("consent.timeout_ms must be at least 1");
        }
        if file.audit.retain_days == 0 || file.audit.retain_rows == 0 || file.audit.args_bytes < 64
        {
            bail!(
                "audit.retain_days and audit.retain_rows must be at least 1 and audit.args_bytes at least 64 (turn the trail off with audit.enabled = false)"
            );
        }
        for (i, w) in file.sandbox.allow.iter().enumerate() {
            let at = format!("[[sandbox.allow]] entry {} of verbgate.toml", i + 1);
            if w.verbs.is_empty() {
                bail!("{at}: `verbs` is empty; name the verbs it widens (`cargo.*`, `*`)");
            }
            if let Some(p) = w.read.iter().chain(&w.write).find(|p| !p.is_absolute()) {
                bail!("{at}: paths must be absolute, got {}", p.display());
            }
        }
        for path in &file.trusted_repos {
            if !path.is_absolute() {
                bail!("trusted_repos entries must be absolute paths, got {}", path.display());
            }
        }
        for (name, path) in &file.programs {
            if !path.is_absolute() {
                bail!("programs.{name} must be an absolute path, got {}", path.display());
            }
        }
        let config_file = file_path.as_deref().map(canonical).transpose()?;
        Ok(Config {
            config_file,
            home,
            root,
            allow: file.allow,
            plugin_dirs,
            env_allow: file
                .env_allow
                .unwrap_or_else(|| DEFAULT_ENV_ALLOW.iter().map(|s| s.to_string()).collect()),
            limits: file.limits,
            programs: file.programs,
            components: file.components,
            trusted_repos: file.trusted_repos,
            policy: file.policy,
            consent: file.consent,
            audit: file.audit,
            sandbox: file.sandbox,
            git: file.git,
            oauth: file.oauth,
        })
    }

    /// `$VERBGATE_HOME/trust`: the operator's trusted public keys.
    pub fn trust_dir(&self) -> PathBuf {
        self.home.join("trust")
    }
    /// `$VERBGATE_HOME/cache`: compiled components.
    pub fn cache_dir(&self) -> PathBuf {
        self.home.join("cache")
    }
    /// `$VERBGATE_HOME/keys`: this user's signing keys.
    pub fn keys_dir(&self) -> PathBuf {
        self.home.join("keys")
    }
    /// `$VERBGATE_HOME/state`: the job store.
    pub fn state_dir(&self) -> PathBuf {
        self.home.join("state")
    }
}

/// The home lies inside the root (or the root inside the home): programs
/// verbgate runs in the root, and read verbs' path arguments, would reach
/// its keys, tokens, trust store and config. Code `sandbox_unavailable`.
#[derive(Debug, Clone)]
pub struct HomeInRoot {
    /// The home (canonical).
    pub home: PathBuf,
    /// The root (canonical).
    pub root: PathBuf,
    /// The configuration file, when it is what lies inside the root
    /// (`--config ./verbgate.toml`): a recipe would rewrite it.
    pub config: Option<PathBuf>,
}

impl HomeInRoot {
    /// The stable error code for this refusal.
    pub fn code(&self) -> crate::error::ErrorCode {
        crate::error::ErrorCode::SandboxUnavailable
    }
}

impl std::fmt::Display for HomeInRoot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(config) = &self.config {
            return write!(
                f,
                "the configuration file {} lies inside the root {}, so the programs verbgate starts there could rewrite it (turn the sandbox off, allow every verb). verbgate did not start. Keep the file outside the root (--config), e.g. in VERBGATE_HOME",
                config.display(),
                self.root.display()
            );
        }
        let (inner, outer, what) = if self.home.starts_with(&self.root) {
            (&self.home, &self.root, "verbgate's home (VERBGATE_HOME) lies inside the root")
        } else {
            (&self.root, &self.home, "the root lies inside verbgate's home (VERBGATE_HOME)")
        };
        write!(
            f,
            "{what}: {} is within {}, so the programs verbgate starts there could read or rewrite its keys, tokens and verbgate.toml. verbgate did not start. Serve a root that does not hold the home (--root), or move the home out of it (VERBGATE_HOME)",
            inner.display(),
            outer.display()
        )
    }
}

impl std::error::Error for HomeInRoot {}

impl Config {
    /// Refuse a home inside the root, or a root inside the home (both
    /// canonical, so a link or a relative path does not hide it): checked
    /// by every command that runs programs in the root, before it loads
    /// anything.
    pub fn check_home_apart_from_root(&self) -> Result<(), HomeInRoot> {
        let refused = |config: Option<PathBuf>| HomeInRoot {
            home: self.home.clone(),
            root: self.root.clone(),
            config,
        };
        if self.home.starts_with(&self.root) || self.root.starts_with(&self.home) {
            return Err(refused(None));
        }
        if let Some(file) = self.config_file.as_ref().filter(|f| f.starts_with(&self.root)) {
            return Err(refused(Some(file.clone())));
        }
        Ok(())
    }
}

/// `path` absolute (against the current directory) with every link
/// resolved; the part that does not exist yet (a home made on first use)
/// is appended, without `..`, to its deepest existing ancestor's real path.
fn canonical(path: &Path) -> Result<PathBuf> {
    let abs = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().context("cannot read the current directory")?.join(path)
    };
    let mut missing = Vec::new();
    let mut at = abs.as_path();
    loop {
        if let Ok(real) = at.canonicalize() {
            let mut out = real;
            for part in missing.iter().rev() {
                out.push(part);
            }
            return Ok(out);
        }
        match (at.parent(), at.file_name()) {
            (Some(parent), Some(name)) => {
                missing.push(name.to_os_string());
                at = parent;
            }
            _ => bail!("{} has a `..` or no existing ancestor", abs.display()),
        }
    }
}

/// `VERBGATE_HOME`, else `$XDG_DATA_HOME/verbgate`, else
/// `~/.local/share/verbgate`.
pub fn default_home() -> Result<PathBuf> {
    if let Some(h) = std::env::var_os("VERBGATE_HOME").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(h));
    }
    if let Some(x) = std::env::var_os("XDG_DATA_HOME").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(x).join("verbgate"));
    }
    match std::env::var_os("HOME").filter(|v| !v.is_empty()) {
        Some(h) => Ok(PathBuf::from(h).join(".local/share/verbgate")),
        None => bail!("cannot find a home for verbgate: set VERBGATE_HOME or HOME"),
    }
}

// The home's private directories and files: created, written and checked
// in one place (`private_files`); re-exported here for existing callers.
pub use crate::private_files::{ensure_private_dir, write_private_file};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_config_is_closed_and_limits_default() {
        let err = toml::from_str::<FileConfig>("alow = [\"git.*\"]").unwrap_err();
        assert!(err.to_string().contains("alow"), "{err}");
        let f: FileConfig = toml::from_str("[limits]\nbatch_cap = 3").unwrap();
        assert_eq!(f.limits.batch_cap, 3);
        assert_eq!(f.limits.capture_bytes, 1 << 20);
    }

    #[test]
    fn limits_stay_within_the_operator_caps() {
        let f: FileConfig = toml::from_str("[limits]\nplugin_memory_cap_mib = 256\n[components.py-echo]\nmemory_mib = 128\ntimeout_ms = 5000").unwrap();
        check_limits(&f.limits, &f.components).unwrap();
        assert_eq!(f.components["py-echo"].memory_mib, Some(128));
        let f: FileConfig = toml::from_str(
            "[limits]\nplugin_memory_cap_mib = 256\n[components.py-echo]\nmemory_mib = 512",
        )
        .unwrap();
        let err = check_limits(&f.limits, &f.components).unwrap_err().to_string();
        assert!(
            err.contains("components.py-echo.memory_mib = 512") && err.contains("256"),
            "{err}"
        );
        let f: FileConfig = toml::from_str("[components.x]\ntimeout_ms = 999999").unwrap();
        let err = check_limits(&f.limits, &f.components).unwrap_err().to_string();
        assert!(err.contains("components.x.timeout_ms"), "{err}");
        let err = toml::from_str::<FileConfig>("[components.x]\nmemory = 3").unwrap_err();
        assert!(err.to_string().contains("memory"), "{err}");
    }

    #[test]
    fn plugin_bounds_stay_within_their_caps() {
        check_limits(&Limits::default(), &BTreeMap::new()).unwrap();
        for bad in [
            "plan_args = 0",
            "plan_args = 70000",
            "plugin_verbs = 20000",
            "plugin_error_details_bytes = 9999999",
        ] {
            let f: FileConfig = toml::from_str(&format!("[limits]\n{bad}")).unwrap();
            let err = check_limits(&f.limits, &f.components).unwrap_err().to_string();
            assert!(err.contains(bad.split(' ').next().unwrap()), "{err}");
        }
    }

    #[test]
    fn zero_exec_and_plugin_limits_are_refused() {
        let none = BTreeMap::new();
        for bad in ["capture_bytes = 0", "plugin_timeout_ms = 0", "exec_timeout_ms = 0"] {
            let f: FileConfig = toml::from_str(&format!("[limits]\n{bad}")).unwrap();
            let err = check_limits(&f.limits, &none).unwrap_err().to_string();
            assert!(err.contains(bad.split(' ').next().unwrap()), "{err}");
        }
        let f: FileConfig =
            toml::from_str("[limits]\nexec_timeout_ms = 9000\nexec_timeout_max_ms = 1000").unwrap();
        assert!(check_limits(&f.limits, &none)
            .unwrap_err()
            .to_string()
            .contains("exec_timeout_max_ms = 1000"));
    }

    #[test]
    fn job_limits_default_and_are_checked() {
        let d = Limits::default();
        assert_eq!(
            (
                d.max_running_jobs,
                d.job_output_bytes,
                d.job_timeout_ms,
                d.job_timeout_max_ms,
                d.job_retain_days,
                d.job_retain_count
            ),
            (16, 64 << 20, 3_600_000, 86_400_000, 14, 1000)
        );
        let none = BTreeMap::new();
        let f: FileConfig = toml::from_str("[limits]\nmax_running_jobs = 0").unwrap();
        assert!(check_limits(&f.limits, &none)
            .unwrap_err()
            .to_string()
            .contains("limits.max_running_jobs"));
        let f: FileConfig =
            toml::from_str("[limits]\njob_timeout_ms = 5000\njob_timeout_max_ms = 1000").unwrap();
        let err = check_limits(&f.limits, &none).unwrap_err().to_string();
        assert!(
            err.contains("limits.job_timeout_ms = 5000")
                && err.contains("job_timeout_max_ms = 1000"),
            "{err}"
        );
    }

    #[test]
    fn policy_rules_are_checked() {
        let f: FileConfig = toml::from_str("[[policy]]\nverbs = [\"git.*\"]\neffects = [\"writes_repo\", \"undeclared\"]\ndecision = \"deny\"").unwrap();
        check_policy(&f.policy).unwrap();
        assert_eq!(f.policy[0].decision, Decision::Deny);
        // An unknown effect is refused as the file is read, naming it and
        // where it is (the names are parsed once, not at every match).
        let err =
            toml::from_str::<FileConfig>("[[policy]]\neffects = [\"write\"]\ndecision = \"ask\"")
                .unwrap_err()
                .to_string();
        assert!(
            err.contains("unknown effect \"write\"")
                && err.contains("line 2")
                && err.contains("writes_repo"),
            "{err}"
        );
        for (bad, says) in [
            ("effects = []\ndecision = \"ask\"", "matches nothing"),
            ("verbs = [\"git status\"]\ndecision = \"ask\"", "not a verb pattern"),
        ] {
            let f: FileConfig = toml::from_str(&format!("[[policy]]\n{bad}")).unwrap();
            let err = check_policy(&f.policy).unwrap_err().to_string();
            assert!(err.contains(says) && err.contains("rule 1"), "{err}");
        }
        assert!(toml::from_str::<FileConfig>("[[policy]]\ndecision = \"maybe\"").is_err());
        assert!(toml::from_str::<FileConfig>("[[policy]]\nverb = [\"x\"]\ndecision = \"allow\"")
            .is_err());
    }

    #[test]
    fn git_transports_default_to_https_and_ssh_and_are_a_closed_set() {
        let f: FileConfig = toml::from_str("").unwrap();
        assert_eq!(f.git.transports, [GitTransport::Https, GitTransport::Ssh]);
        let f: FileConfig = toml::from_str("[git]\ntransports = [\"https\", \"file\"]").unwrap();
        assert_eq!(f.git.transports, [GitTransport::Https, GitTransport::File]);
        let err = toml::from_str::<FileConfig>("[git]\ntransports = [\"ext\"]").unwrap_err();
        assert!(err.to_string().contains("ext"), "{err}");
    }

    /// Every key of `verbgate.toml` with its default (`None`: worked out at
    /// start-up, so documented in words), from the real defaults. Taking
    /// `FileConfig` apart without `..` makes a new setting fail to compile
    /// here until it is listed.
    fn real_defaults() -> BTreeMap<String, Option<serde_json::Value>> {
        use serde_json::{json, to_value};
        let FileConfig {
            root,
            allow,
            plugin_dirs,
            env_allow,
            limits,
            programs,
            components,
            trusted_repos,
            policy,
            consent,
            audit,
            sandbox,
            git,
            oauth,
        } = FileConfig::default();
        assert!(oauth.is_none(), "no resource server unless configured");
        let SandboxSettings { mode, namespaces, allow: widenings } = sandbox;
        assert!(root.is_none() && allow.is_none() && plugin_dirs.is_none() && env_allow.is_none());
        assert!(
            programs.is_empty()
                && components.is_empty()
                && trusted_repos.is_empty()
                && policy.is_empty()
                && widenings.is_empty()
        );
        let mut out: BTreeMap<String, Option<serde_json::Value>> = BTreeMap::from([
            ("root".into(), None),
            ("allow".into(), None),
            ("plugin_dirs".into(), Some(json!([]))),
            ("env_allow".into(), Some(json!(DEFAULT_ENV_ALLOW))),
            ("trusted_repos".into(), Some(json!([]))),
            ("programs".into(), Some(json!({}))),
            ("components".into(), Some(json!({}))),
            ("policy".into(), Some(json!([]))),
            ("sandbox.mode".into(), Some(to_value(mode).unwrap())),
            ("sandbox.namespaces".into(), Some(json!(namespaces))),
            ("sandbox.allow".into(), Some(json!([]))),
            // `[oauth]` has no default: absent, the server is no resource
            // server. Its optional keys' defaults, when it is present:
            ("oauth.resource".into(), None),
            ("oauth.issuers".into(), None),
            ("oauth.scopes".into(), None),
            ("oauth.ca_file".into(), None),
            ("oauth.groups_claim".into(), Some(json!("groups"))),
            ("oauth.require_at_jwt".into(), Some(json!(true))),
            ("oauth.algorithms".into(), Some(json!(crate::oauth::settings::DEFAULT_ALGORITHMS))),
            ("oauth.leeway_secs".into(), Some(json!(crate::oauth::settings::DEFAULT_LEEWAY_SECS))),
            (
                "oauth.refetch_secs".into(),
                Some(json!(crate::oauth::settings::DEFAULT_REFETCH_SECS)),
            ),
            (
                "oauth.keys_max_age_secs".into(),
                Some(json!(crate::oauth::settings::DEFAULT_KEYS_MAX_AGE_SECS)),
            ),
        ]);
        let sections = [
            ("limits", to_value(limits)),
            ("consent", to_value(consent)),
            ("audit", to_value(audit)),
            ("git", to_value(git)),
        ];
        for (section, value) in sections {
            for (key, v) in value.unwrap().as_object().unwrap() {
                out.insert(format!("{section}.{key}"), Some(v.clone()));
            }
        }
        out
    }

    /// docs/configuration.md's defaults table (`| key | default | what |`):
    /// each key with its default cell.
    fn documented_defaults(text: &str) -> Vec<(String, String)> {
        let rows = text
            .lines()
            .skip_while(|l| !l.replace(' ', "").starts_with("|key|default|what|"))
            .skip(2);
        let mut out = Vec::new();
        for line in rows.take_while(|l| l.starts_with('|')) {
            let cells: Vec<&str> = line.trim_matches('|').split(" | ").map(str::trim).collect();
            let key = cells[0].strip_prefix('`').and_then(|k| k.strip_suffix('`'));
            let key = key.unwrap_or_else(|| {
                panic!("docs/configuration.md: the first cell is not a `key`: {line}")
            });
            assert!(
                cells.len() == 3 && !cells[2].is_empty(),
                "docs/configuration.md: `{key}` needs a default and what it does: {line}"
            );
            out.push((key.to_string(), cells[1].to_string()));
        }
        out
    }

    #[test]
    fn docs_configuration_md_gives_every_real_default() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/configuration.md");
        let text =
            std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"));
        let real = real_defaults();
        let documented = documented_defaults(&text);
        let mut problems = Vec::new();
        for (key, cell) in &documented {
            // A default written as one code span is a TOML value.
            let value = cell
                .strip_prefix('`')
                .and_then(|c| c.strip_suffix('`'))
                .filter(|c| !c.contains('`'));
            let value = value.map(|v| {
                toml::from_str::<toml::Table>(&format!("v = {v}"))
                    .map(|mut t| serde_json::to_value(t.remove("v")).unwrap())
            });
            match (real.get(key), value) {
                (None, _) => problems.push(format!("`{key}` is not a setting")),
                (Some(Some(want)), Some(Ok(got))) if &got == want => {}
                (Some(Some(want)), Some(Ok(got))) => problems.push(format!("`{key}`: documented {got}, the default is {want}")),
                (Some(Some(want)), _) => problems.push(format!("`{key}`: write its default {want} as one TOML value in backticks, not {cell:?}")),
                (Some(None), None) => {}
                (Some(None), Some(_)) => problems.push(format!("`{key}` has no fixed default (it is worked out at start-up); say what it is in words")),
            }
        }
        for key in real.keys() {
            if !documented.iter().any(|(k, _)| k == key) {
                problems.push(format!("`{key}` is not documented"));
            }
        }
        assert!(
            problems.is_empty(),
            "docs/configuration.md is out of step with the defaults in host/src/config.rs:\n  {}",
            problems.join("\n  ")
        );
    }

    #[test]
    fn private_files_are_0600() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("secret");
        write_private_file(&p, b"x").unwrap();
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
}
