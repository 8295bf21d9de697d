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
