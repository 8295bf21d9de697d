//! Bounds on everything a plugin returns: what `describe` declares, the
//! plans it makes, the errors it reports. A trusted plugin with a bug (or a
//! compromised author) must not be able to flood the host's memory, the
//! caller's context or an operator's terminal, so every piece of plugin text
//! is measured here before the host does any work with it, and a plugin
//! that exceeds a bound gets `plugin_limit` naming the bound (`bound`,
//! `limit`, `actual`) — never truncation, never a sanitized copy.
//!
//! Bounds an operator may reasonably need to move are `[limits]` settings
//! (checked against the caps in `config.rs`); the rest are fixed here
//! because no real plugin comes near them.

use crate::config::Limits;
use crate::error::{ErrorCode, OpError};
use crate::runtime::model::{Arg, Command};

/// Longest verb, alias or program name, bytes (names are `[a-z0-9._-]`).
pub const NAME_BYTES: usize = 128;
/// Longest plugin name or version, bytes.
pub const PLUGIN_TEXT_BYTES: usize = 64;
/// Longest verb (or resolved target) summary, bytes: one catalog line.
pub const SUMMARY_BYTES: usize = 512;
/// Most aliases one verb may declare.
pub const ALIASES: usize = 16;
/// Most programs one verb may declare.
pub const PROGRAMS: usize = 16;
/// Most sensitive params one verb may name (WIT 0.2.0).
pub const SENSITIVE: usize = 64;
/// Longest plugin error code, bytes.
pub const ERROR_CODE_BYTES: usize = 128;

/// The bounds plugin calls are checked against (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PluginBounds {
    /// Most verbs one `describe` may declare (`limits.plugin_verbs`).
    pub verbs: usize,
    /// All of `describe`'s text together, bytes (`limits.plugin_output_bytes`).
    pub describe_bytes: usize,
    /// One params or result schema, bytes (`limits.plugin_schema_bytes`).
    pub schema_bytes: usize,
    /// Argv entries in one plan (`limits.plan_args`).
    pub plan_args: usize,
    /// Argv and environment text of one plan, bytes (`limits.plan_argv_bytes`).
    pub plan_argv_bytes: usize,
    /// Stdin of one plan, bytes (`limits.plan_stdin_bytes`).
    pub plan_stdin_bytes: usize,
    /// Environment variables one plan may set (`limits.plan_env`).
    pub plan_env: usize,
    /// One error message, bytes (`limits.plugin_error_message_bytes`).
    pub error_message_bytes: usize,
    /// One error's details JSON, bytes (`limits.plugin_error_details_bytes`).
    pub error_details_bytes: usize,
    /// A dry run's plan as JSON, bytes (`limits.plugin_output_bytes`).
    pub dry_run_bytes: usize,
}

impl From<&Limits> for PluginBounds {
    fn from(l: &Limits) -> Self {
        PluginBounds {
            verbs: l.plugin_verbs,
            describe_bytes: l.plugin_output_bytes,
            schema_bytes: l.plugin_schema_bytes,
            plan_args: l.plan_args,
            plan_argv_bytes: l.plan_argv_bytes,
            plan_stdin_bytes: l.plan_stdin_bytes,
            plan_env: l.plan_env,
            error_message_bytes: l.plugin_error_message_bytes,
            error_details_bytes: l.plugin_error_details_bytes,
            dry_run_bytes: l.plugin_output_bytes,
        }
    }
}

impl Default for PluginBounds {
    fn default() -> Self {
        PluginBounds::from(&Limits::default())
    }
}

/// A bound a plugin exceeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exceeded {
    /// Which bound (`plan_args`, `summary_bytes`, …).
    pub bound: &'static str,
    /// Its value.
    pub limit: usize,
    /// What the plugin returned.
    pub actual: usize,
}

impl Exceeded {
    /// `Err` when `actual` is past `limit`.
    pub fn check(bound: &'static str, limit: usize, actual: usize) -> Result<(), Exceeded> {
        if actual > limit {
            Err(Exceeded { bound, limit, actual })
        } else {
            Ok(())
        }
    }

    /// One sentence for a load refusal or an op error.
    pub fn describe(&self, what: &str) -> String {
        format!(
            "{what} is past the `{}` bound: {} where at most {} is allowed",
            self.bound, self.actual, self.limit
        )
    }

    /// The per-op error: `plugin_limit` with `bound`, `limit`, `actual`.
    pub fn to_op_error(&self, plugin: &str, what: &str) -> OpError {
        OpError::new(
            ErrorCode::PluginLimit,
            format!("plugin `{plugin}`: {}; the plugin must return less", self.describe(what)),
        )
        .with("plugin", plugin)
        .with("bound", self.bound)
        .with("limit", self.limit)
        .with("actual", self.actual)
    }
}

/// Check a command a plugin planned, before anything is prepared from it:
/// argv entries, environment variables, argv and environment bytes (as the
/// kernel counts them against `ARG_MAX`), stdin bytes.
pub fn check_command(cmd: &Command, b: &PluginBounds) -> Result<(), Exceeded> {
    Exceeded::check("plan_args", b.plan_args, cmd.args.len())?;
    Exceeded::check("plan_env", b.plan_env, cmd.env.len())?;
    let argv: usize = cmd
        .args
        .iter()
        .map(|a| match a {
            Arg::Literal(s) | Arg::Value(s) | Arg::Path(s) => s.len() + 1,
            Arg::Option { name, value } => name.len() + value.len() + 4,
            Arg::EndOfOptions => 3,
        })
        .sum();
    let env: usize = cmd.env.iter().map(|(k, v)| k.len() + v.len() + 2).sum();
    let text = argv + env + cmd.program.len() + cmd.cwd.as_ref().map_or(0, String::len);
    Exceeded::check("plan_argv_bytes", b.plan_argv_bytes, text)?;
    Exceeded::check("plan_stdin_bytes", b.plan_stdin_bytes, cmd.stdin.as_ref().map_or(0, Vec::len))
}

/// The first control character in `text` (a newline, a terminal escape,
/// a NUL, DEL, C1 controls), if any. Plugin text that a person or an agent
/// reads is refused with one rather than cleaned.
pub fn control_character(text: &str) -> Option<char> {
    text.chars().find(|c| c.is_control())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command(args: usize, env: usize, stdin: usize) -> Command {
        Command {
            program: "p".into(),
            args: (0..args).map(|_| Arg::Literal("x".into())).collect(),
            cwd: None,
            env: (0..env).map(|i| (format!("LC_{i}"), "v".into())).collect(),
            stdin: Some(vec![0; stdin]),
            timeout_ms: None,
            truncate_stdout: false,
        }
    }

    #[test]
    fn plans_are_measured_bound_by_bound() {
        let b = PluginBounds::default();
        assert_eq!(check_command(&command(10, 2, 10), &b), Ok(()));
        assert_eq!(
            check_command(&command(b.plan_args + 1, 0, 0), &b).unwrap_err().bound,
            "plan_args"
        );
        assert_eq!(
            check_command(&command(1, b.plan_env + 1, 0), &b).unwrap_err().bound,
            "plan_env"
        );
        assert_eq!(
            check_command(&command(0, 0, b.plan_stdin_bytes + 1), &b).unwrap_err().bound,
            "plan_stdin_bytes"
        );
        let mut big = command(1, 0, 0);
        big.args = vec![Arg::Option { name: "o".into(), value: "v".repeat(b.plan_argv_bytes) }];
        let e = check_command(&big, &b).unwrap_err();
        assert_eq!((e.bound, e.limit), ("plan_argv_bytes", b.plan_argv_bytes));
        assert!(e.actual > e.limit);
    }

    #[test]
    fn limit_errors_name_the_bound_and_both_numbers() {
        let e = Exceeded { bound: "plan_args", limit: 3, actual: 9 }
            .to_op_error("p", "the plan's argv");
        assert_eq!(e.code, ErrorCode::PluginLimit);
        assert_eq!(
            (
                e.details["bound"].as_str(),
                e.details["limit"].as_u64(),
                e.details["actual"].as_u64()
            ),
            (Some("plan_args"), Some(3), Some(9))
        );
    }

    #[test]
    fn control_characters_are_found() {
        assert_eq!(control_character("plain text — ünïcode"), None);
        for bad in ["a\nb", "\u{1b}[31m", "bell\u{7}", "nul\0", "del\u{7f}", "c1\u{9b}"] {
            assert!(control_character(bad).is_some(), "{bad:?}");
        }
    }
}
