//! The closed vocabularies of error codes ([`ErrorCode`]) and of load-time
//! codes ([`LoadCode`]), and the per-op error object.
//!
//! Codes are part of the public API: callers branch on them, so they are
//! never renamed and never inferred from message text. A plugin that reports
//! a code outside this vocabulary is reported as `plugin_error` with its own
//! code kept in `plugin_code`, which keeps the vocabulary closed.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fmt;

/// Declares a closed set of codes — the enum, its wire names, `ALL`,
/// `from_wire` and `Display` — from one list: a code cannot exist without
/// its wire name or be missing from `ALL` (and so from the checks that the
/// docs name every code and the golden files freeze them).
macro_rules! closed_codes {
    ($(#[$tdoc:meta])* $name:ident { $($(#[$doc:meta])* $variant:ident => $wire:literal,)+ }) => {
        $(#[$tdoc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[non_exhaustive]
        pub enum $name {
            $($(#[$doc])* #[serde(rename = $wire)] $variant,)+
        }

        impl $name {
            /// Every code, in documentation order (the golden list).
            pub const ALL: &'static [$name] = &[$($name::$variant,)+];

            /// The snake_case wire name.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $wire,)+
                }
            }

            /// Parse a wire name.
            pub fn from_wire(name: &str) -> Option<$name> {
                $name::ALL.iter().copied().find(|c| c.as_str() == name)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

closed_codes! {
    /// Every error code verbgate emits, request-level or per-op.
    ErrorCode {
        /// The request itself is malformed (not an object, `ops` not a list, …).
        InvalidRequest => "invalid_request",
        /// No verb (or alias) by that name is reachable.
        UnknownVerb => "unknown_verb",
        /// An argument the verb's schema does not declare.
        UnknownParam => "unknown_param",
        /// An argument has the wrong type, range or format, or is missing.
        InvalidArgs => "invalid_args",
        /// A spawn verb was called without `schema_fingerprint`.
        FingerprintRequired => "fingerprint_required",
        /// `schema_fingerprint` does not match the verb's current schema.
        FingerprintStale => "fingerprint_stale",
        /// More ops than the batch cap; nothing ran.
        BatchTooLarge => "batch_too_large",
        /// The plan would put a caller value where a program reads options, or
        /// contains NUL: refused before anything ran.
        UnsafeArgv => "unsafe_argv",
        /// The plan names a program (or working directory) the verb did not
        /// declare or may not use.
        PlanRefused => "plan_refused",
        /// The plugin trapped (panic, unreachable, stack overflow).
        PluginTrap => "plugin_trap",
        /// The plugin ran past its wall-clock deadline.
        PluginTimeout => "plugin_timeout",
        /// The plugin hit a resource limit (memory, output size).
        PluginLimit => "plugin_limit",
        /// The plugin reported an error with a code outside this vocabulary.
        PluginError => "plugin_error",
        /// The program could not be started.
        LaunchFailed => "launch_failed",
        /// The program exited non-zero.
        ExitNonzero => "exit_nonzero",
        /// The plugin's result is not JSON or does not match its result schema.
        InvalidOutput => "invalid_output",
        /// The program wrote more than the capture bound.
        OutputOverflow => "output_overflow",
        /// The program ran past its timeout and was killed.
        Timeout => "timeout",
        /// Something named by the caller does not exist.
        NotFound => "not_found",
        /// An id prefix matches more than one record.
        AmbiguousId => "ambiguous_id",
        /// The verb exists but cannot run here (missing program, no job store).
        Unavailable => "unavailable",
        /// `job.result` of a job that has not ended yet.
        JobNotFinished => "job_not_finished",
        /// An entity-aware kill (the fronted CLI's own kill) failed; the job was
        /// not signalled.
        KillFailed => "kill_failed",
        /// The repository's own config names a program git could run (a filter,
        /// diff or merge driver, signature program, …); nothing ran.
        RepoConfigRunsPrograms => "repo_config_runs_programs",
        /// The repository git would use (its git directory or work tree) is
        /// outside the root; nothing ran.
        RepoOutsideRoot => "repo_outside_root",
        /// A git verb's directory is in no repository (git would fall back to
        /// comparing plain files, `--no-index`, with any path it is given);
        /// nothing ran.
        NotARepository => "not_a_repository",
        /// Configuration a program would read from outside the root belongs to
        /// another user or is writable by others; nothing ran.
        UntrustedConfig => "untrusted_config",
        /// A file or directory verbgate would trust (its home, `cache/`,
        /// `trust/`, `state/`, `plugins/`, `keys/`, `verbgate.toml`) is owned by another
        /// user or writable by group or others: refused before anything runs.
        InsecureFile => "insecure_file",
        /// A spawn was refused: `limits.max_running_jobs` jobs are already
        /// preparing or running.
        JobLimit => "job_limit",
        /// The verb is outside an allow list (the config's or the calling
        /// token's); nothing ran. Ops answer `unknown_verb` instead, so a caller
        /// cannot learn that the verb exists.
        NotAllowed => "not_allowed",
        /// A `[[policy]]` rule (named in `rule`) denies the verb; nothing ran.
        PolicyDenied => "policy_denied",
        /// The policy asks a person first, but this client cannot be asked (no
        /// MCP elicitation capability, no terminal); nothing ran. The error names
        /// the rule and the config lines that would allow the verb.
        ConsentRequired => "consent_required",
        /// The person asked said no (or did not answer in time); nothing ran.
        ConsentDeclined => "consent_declined",
        /// The op's audit row could not be made durable before it would act
        /// (the database locked past its busy timeout, a full disk), so it did
        /// not run: no op runs unrecorded.
        AuditUnavailable => "audit_unavailable",
        /// The OS sandbox cannot enforce the program's profile here (no
        /// Landlock), so it did not run; `[sandbox] mode = "off"` is the
        /// operator's explicit way to run unconfined.
        SandboxUnavailable => "sandbox_unavailable",
        /// An HTTP request's credentials were refused (no bearer token, an
        /// invalid, expired or forged one, or a token for another audience);
        /// nothing ran. Recorded in the audit trail with why.
        Unauthenticated => "unauthenticated",
        /// An OAuth access token carries none of the scopes the server maps
        /// to verbs; nothing ran. The answer names the scopes that would.
        InsufficientScope => "insufficient_scope",
        /// A bug in verbgate; the message says what failed.
        Internal => "internal",
    }
}

closed_codes! {
    /// Why a component or verb could not be made available, or what
    /// `verbgate check` found: the `code` of `verbgate verbs`'
    /// `unavailable` entries, of the catalog's `unavailable` reasons and of
    /// `verbgate check` findings.
    LoadCode {
        /// The file is not a WebAssembly component (bad preamble, unparsable, or
        /// a core module).
        NotAComponent => "not_a_component",
        /// The component carries no signature section.
        Unsigned => "unsigned",
        /// The signature section cannot be parsed.
        MalformedSignature => "malformed_signature",
        /// The bytes (or the signature section) changed after signing.
        Tampered => "tampered",
        /// Signed, but by no key in the trust store.
        UntrustedKey => "untrusted_key",
        /// The trust store is empty, so nothing verifies.
        NoTrustedKeys => "no_trusted_keys",
        /// A plugin file or directory could not be read.
        Unreadable => "unreadable",
        /// A bundled component does not match its pinned digest.
        DigestMismatch => "digest_mismatch",
        /// The component imports something outside the allowed WASI interfaces.
        ImportOutsidePolicy => "import_outside_policy",
        /// The component exports no `verbgate:verbs/plugin`.
        NotAPlugin => "not_a_plugin",
        /// The component targets a contract version this verbgate does not
        /// support.
        UnknownWitVersion => "unknown_wit_version",
        /// wasmtime could not compile or link the component.
        LoadFailed => "load_failed",
        /// The component's `describe()` failed.
        DescribeFailed => "describe_failed",
        /// Something `describe` returns is past a bound (the bound is named).
        PluginLimit => "plugin_limit",
        /// A summary, plugin name or version holds a control character.
        ControlCharacters => "control_characters",
        /// The plugin name is not lower-case letters, digits and `-`.
        InvalidPluginName => "invalid_plugin_name",
        /// A plugin of the same name is already loaded.
        DuplicatePlugin => "duplicate_plugin",
        /// The verb name is not `namespace.verb` in lower case.
        InvalidName => "invalid_name",
        /// The verb is in a namespace reserved to verbgate.
        ReservedNamespace => "reserved_namespace",
        /// An alias breaks the naming or namespace rules.
        InvalidAlias => "invalid_alias",
        /// The plugin declares a verb twice.
        DuplicateVerb => "duplicate_verb",
        /// An alias is the name of a verb.
        AliasShadowsVerb => "alias_shadows_verb",
        /// The verb has no summary.
        MissingSummary => "missing_summary",
        /// The summary is more than one line.
        SummaryMultiline => "summary_multiline",
        /// The params schema is not an object schema.
        SchemaNotObject => "schema_not_object",
        /// An object in the params schema accepts unknown properties.
        OpenSchema => "open_schema",
        /// The params schema is not JSON or not valid JSON Schema 2020-12.
        InvalidSchema => "invalid_schema",
        /// The result schema is not JSON or not valid JSON Schema 2020-12.
        InvalidResultSchema => "invalid_result_schema",
        /// A param marked sensitive is not a top-level param of the schema.
        UnknownSensitiveParam => "unknown_sensitive_param",
        /// The declared effects contradict the verb's kind or programs.
        EffectsMismatch => "effects_mismatch",
        /// A declared program is not a bare program name.
        InvalidProgram => "invalid_program",
        /// A spawn verb declares no result schema (lint).
        MissingResultSchema => "missing_result_schema",
        /// An exec or spawn verb declares no program (lint).
        NoPrograms => "no_programs",
        /// A parameter has no description (lint).
        ParamWithoutDescription => "param_without_description",
        /// A required parameter has a default (lint).
        RequiredWithDefault => "required_with_default",
        /// The verb's name or an alias is already provided by a plugin loaded
        /// earlier.
        Collision => "collision",
        /// `verbgate check`: a verb installed here already has the name.
        VerbCollision => "verb_collision",
        /// The verb is in a namespace another plugin owns.
        NamespaceOwned => "namespace_owned",
        /// The verb is outside the allow list of verbgate.toml.
        NotAllowed => "not_allowed",
        /// A program the verb declares is not installed here.
        MissingProgram => "missing_program",
        /// `verbgate check`: planning a sample call runs a program the verb
        /// does not declare.
        UndeclaredProgram => "undeclared_program",
        /// `verbgate check`: the component's contract version cannot declare
        /// effects.
        EffectsUndeclared => "effects_undeclared",
    }
}

/// One failed op (or a failed request): a stable code, a message for a
/// person saying what went wrong and what to do, and structured details
/// (the offending `param`, `value`, `limit`, …) for a program.
#[derive(Debug, Clone, PartialEq)]
pub struct OpError {
    /// The stable code.
    pub code: ErrorCode,
    /// What went wrong and what to do about it.
    pub message: String,
    /// Extra fields, flattened into the error object on the wire.
    pub details: Map<String, Value>,
}

impl OpError {
    /// An error with no details.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        OpError { code, message: message.into(), details: Map::new() }
    }

    /// Add one detail field.
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.details.insert(key.to_string(), value.into());
        self
    }

    /// The wire form: `{"code", "message", ...details}`.
    pub fn to_json(&self) -> Value {
        let mut obj = Map::new();
        obj.insert("code".into(), Value::String(self.code.as_str().into()));
        obj.insert("message".into(), Value::String(self.message.clone()));
        for (k, v) in &self.details {
            if k != "code" && k != "message" {
                obj.insert(k.clone(), v.clone());
            }
        }
        Value::Object(obj)
    }
}

impl fmt::Display for OpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for OpError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_names_round_trip_and_match_serde() {
        for code in ErrorCode::ALL {
            assert_eq!(ErrorCode::from_wire(code.as_str()), Some(*code));
            assert_eq!(serde_json::to_value(code).unwrap(), Value::String(code.as_str().into()));
        }
        for code in LoadCode::ALL {
            assert_eq!(LoadCode::from_wire(code.as_str()), Some(*code));
            assert_eq!(serde_json::to_value(code).unwrap(), Value::String(code.as_str().into()));
        }
    }

    /// docs/errors.md.
    fn errors_md() -> String {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/errors.md");
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"))
    }

    /// Fail unless `documented` names each of `real` once and nothing else.
    fn in_step(what: &str, documented: &[String], real: &[&str]) {
        let missing: Vec<&&str> =
            real.iter().filter(|c| !documented.iter().any(|d| d == *c)).collect();
        let unknown: Vec<&String> =
            documented.iter().filter(|d| !real.contains(&d.as_str())).collect();
        let twice: Vec<&String> = documented
            .iter()
            .enumerate()
            .filter(|(i, d)| documented[..*i].contains(d))
            .map(|(_, d)| d)
            .collect();
        assert!(
            missing.is_empty() && unknown.is_empty() && twice.is_empty(),
            "{what} is out of step with host/src/error.rs:\n  codes it does not document: {missing:?}\n  \
             codes it documents that do not exist: {unknown:?}\n  codes it documents twice: {twice:?}"
        );
    }

    /// The codes of docs/errors.md's table (`| code | meaning | what to do |`),
    /// each row checked for a meaning and an action.
    fn documented_codes(text: &str) -> Vec<String> {
        let rows = text
            .lines()
            .skip_while(|l| !l.replace(' ', "").starts_with("|code|meaning|whattodo|"))
            .skip(2);
        let mut codes = Vec::new();
        for line in rows.take_while(|l| l.starts_with('|')) {
            let cells: Vec<&str> = line.trim_matches('|').split(" | ").map(str::trim).collect();
            let code =
                cells[0].strip_prefix('`').and_then(|c| c.strip_suffix('`')).unwrap_or_else(|| {
                    panic!("docs/errors.md: the first cell is not a `code`: {line}")
                });
            assert!(
                cells.len() == 3 && cells[1..].iter().all(|c| !c.is_empty()),
                "docs/errors.md: `{code}` needs a meaning and what to do: {line}"
            );
            codes.push(code.to_string());
        }
        codes
    }

    #[test]
    fn docs_errors_md_lists_every_code_and_no_other() {
        let real: Vec<&str> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
        in_step("docs/errors.md (ErrorCode)", &documented_codes(&errors_md()), &real);
    }

    /// The codes listed in docs/errors.md's "Load-time codes" section, one
    /// `- `code`: meaning` item each; any other list item there fails.
    fn documented_load_codes(text: &str) -> Vec<String> {
        let section = text
            .lines()
            .skip_while(|l| l.trim() != "## Load-time codes")
            .skip(1)
            .take_while(|l| !l.starts_with("## "));
        let mut codes = Vec::new();
        for line in section.filter(|l| l.trim_start().starts_with(['-', '*', '|'])) {
            let (code, meaning) = line
                .strip_prefix("- `")
                .and_then(|rest| rest.split_once("`: "))
                .unwrap_or_else(|| {
                    panic!(
                        "docs/errors.md, Load-time codes: not a \"- `code`: meaning\" item: {line}"
                    )
                });
            assert!(!meaning.trim().is_empty(), "docs/errors.md: `{code}` needs a meaning: {line}");
            codes.push(code.to_string());
        }
        codes
    }

    #[test]
    fn docs_errors_md_lists_every_load_code_and_no_other() {
        let real: Vec<&str> = LoadCode::ALL.iter().map(|c| c.as_str()).collect();
        in_step(
            "docs/errors.md's Load-time codes (LoadCode)",
            &documented_load_codes(&errors_md()),
            &real,
        );
    }

    #[test]
    fn details_cannot_override_code_or_message() {
        let e = OpError::new(ErrorCode::NotFound, "gone").with("code", "ok").with("id", "x");
        let j = e.to_json();
        assert_eq!(j["code"], "not_found");
        assert_eq!(j["id"], "x");
    }
}
