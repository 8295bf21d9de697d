//! The plugin contract as plain Rust types, independent of any WIT version.
//! Each `since_v*` binding module converts its generated types into these,
//! so the rest of the host is written once against the latest contract.

use serde::Serialize;

/// What calling a verb does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum VerbKind {
    /// Reads state, no side effects.
    Read,
    /// Runs a program now.
    Exec,
    /// Starts a background job (fingerprint-gated).
    Spawn,
    /// Changes something running.
    Control,
}

impl VerbKind {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            VerbKind::Read => "read",
            VerbKind::Exec => "exec",
            VerbKind::Spawn => "spawn",
            VerbKind::Control => "control",
        }
    }
}

/// One effect a verb can have (the WIT 0.2.0 `effect`), a closed set the
/// policy matches on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Effect {
    /// Reads the repository.
    ReadsRepo,
    /// Changes the repository's files, index or refs.
    WritesRepo,
    /// Runs code the repository controls (build scripts, tests, hooks).
    RunsRepoCode,
    /// Starts work that outlives the call.
    LongRunning,
    /// Talks to the network.
    Network,
    /// Discards data that cannot be recovered.
    Destructive,
}

impl Effect {
    /// Every effect, in declaration order.
    pub const ALL: [Effect; 6] = [
        Effect::ReadsRepo,
        Effect::WritesRepo,
        Effect::RunsRepoCode,
        Effect::LongRunning,
        Effect::Network,
        Effect::Destructive,
    ];

    /// The wire name (also the name in `[[policy]] effects`).
    pub fn as_str(self) -> &'static str {
        match self {
            Effect::ReadsRepo => "reads_repo",
            Effect::WritesRepo => "writes_repo",
            Effect::RunsRepoCode => "runs_repo_code",
            Effect::LongRunning => "long_running",
            Effect::Network => "network",
            Effect::Destructive => "destructive",
        }
    }

    /// The one-letter mark in the compact catalog.
    pub fn letter(self) -> char {
        match self {
            Effect::ReadsRepo => 'r',
            Effect::WritesRepo => 'w',
            Effect::RunsRepoCode => 'x',
            Effect::LongRunning => 'l',
            Effect::Network => 'n',
            Effect::Destructive => 'd',
        }
    }

    /// Parse a wire name.
    pub fn parse(name: &str) -> Option<Effect> {
        Effect::ALL.into_iter().find(|e| e.as_str() == name)
    }
}

/// What a verb says it can do. A component built against a contract without
/// effects (0.1.0) says nothing, and the policy treats that as the most
/// privileged verb there is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effects {
    /// The component's contract cannot declare effects.
    Undeclared,
    /// The declared set, sorted and without repeats (may be empty: the verb
    /// touches only the host's own state).
    Declared(Vec<Effect>),
}

impl Effects {
    /// A declared set, normalised.
    pub fn declared(mut effects: Vec<Effect>) -> Effects {
        effects.sort();
        effects.dedup();
        Effects::Declared(effects)
    }

    /// Whether the verb may have `effect` (always, when undeclared).
    pub fn may(&self, effect: Effect) -> bool {
        match self {
            Effects::Undeclared => true,
            Effects::Declared(set) => set.contains(&effect),
        }
    }

    /// As JSON for `help`: the list of names, or `"undeclared"`.
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Effects::Undeclared => serde_json::Value::from("undeclared"),
            Effects::Declared(set) => set.iter().map(|e| e.as_str()).collect::<Vec<_>>().into(),
        }
    }

    /// The compact catalog mark: one letter per effect (`"rx"`), `"?"` when
    /// undeclared, empty when none.
    pub fn letters(&self) -> String {
        match self {
            Effects::Undeclared => "?".to_string(),
            Effects::Declared(set) => set.iter().map(|e| e.letter()).collect(),
        }
    }
}

/// One verb as a plugin declares it (schemas still as text).
#[derive(Debug, Clone)]
pub struct VerbSpec {
    /// `namespace.verb`.
    pub name: String,
    /// One line.
    pub summary: String,
    /// Kind.
    pub kind: VerbKind,
    /// Params JSON Schema, as text.
    pub params_schema: String,
    /// Result JSON Schema, as text, if declared.
    pub result_schema: Option<String>,
    /// Accepted synonyms.
    pub aliases: Vec<String>,
    /// Program names plans may run.
    pub programs: Vec<String>,
    /// Whether the verb resolves a target (two-stage).
    pub two_stage: bool,
    /// What running it can do.
    pub effects: Effects,
    /// Top-level params whose values the audit trail redacts.
    pub sensitive: Vec<String>,
}

/// A resolved target of a two-stage verb.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// Closed params schema for the target, as text.
    pub params_schema: String,
    /// One line.
    pub summary: String,
    /// What was resolved, as JSON text.
    pub identity: String,
}

/// What `describe` returns.
#[derive(Debug, Clone)]
pub struct PluginInfo {
    /// Plugin name.
    pub name: String,
    /// Plugin version.
    pub version: String,
    /// Its verbs.
    pub verbs: Vec<VerbSpec>,
}

/// One typed argv element (see the WIT `arg`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Arg {
    /// Plugin-authored text.
    Literal(String),
    /// A caller-derived value.
    Value(String),
    /// A caller-derived `--name=value`.
    Option {
        /// Option name without dashes.
        name: String,
        /// Its value.
        value: String,
    },
    /// `--`.
    EndOfOptions,
    /// A caller-derived path, confined to the root.
    Path(String),
}

/// A program invocation as planned by a plugin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    /// A declared program name.
    pub program: String,
    /// Typed argv.
    pub args: Vec<Arg>,
    /// Working directory relative to the root.
    pub cwd: Option<String>,
    /// Extra environment.
    pub env: Vec<(String, String)>,
    /// Stdin bytes.
    pub stdin: Option<Vec<u8>>,
    /// Timeout, ms.
    pub timeout_ms: Option<u32>,
    /// Truncate stdout at the capture bound instead of failing.
    pub truncate_stdout: bool,
}

/// A native host operation requested by a plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostCall {
    /// Operation name.
    pub name: String,
    /// JSON args, as text.
    pub args: String,
}

/// What a plugin asks the host to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// Run now and map.
    Exec(Command),
    /// Start a job.
    Spawn(Command),
    /// A host operation.
    Host(HostCall),
    /// Run `run`; when it succeeds, run `read_back`; map both outcomes.
    ExecRead {
        /// The command that does the work.
        run: Command,
        /// The command that reads the new state back.
        read_back: Command,
    },
}

/// What happened when a plan ran, handed back to `map-result`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Exit code.
    pub exit_code: Option<i32>,
    /// Terminating signal.
    pub signal: Option<i32>,
    /// Captured stdout.
    pub stdout: Vec<u8>,
    /// Captured stderr.
    pub stderr: Vec<u8>,
    /// Host call result JSON.
    pub host_result: Option<String>,
    /// The job is still running (entity extraction; see the WIT).
    pub running: bool,
    /// Stdout was cut at the capture bound.
    pub stdout_truncated: bool,
    /// An `exec-read` plan's read-back, when it ran.
    pub read_back: Option<Box<Outcome>>,
}

/// An error a plugin returned from `plan` or `map-result`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginOpError {
    /// The plugin's code.
    pub code: String,
    /// The plugin's message.
    pub message: String,
    /// Optional JSON details, as text.
    pub details: Option<String>,
}
