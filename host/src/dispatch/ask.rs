//! Asking a person before an op runs: the seam between dispatch and the
//! transports. Dispatch decides *that* a person must be asked (the
//! policy's `ask`, in the consent stage [`super::consent`]) and *what*
//! they see (verb, args, effects, the program and argv the plan resolved
//! to); the transport decides *how*: MCP elicitation for a client that
//! declared it, the terminal for `verbgate request`. This module defines
//! the [`Asker`] seam and the transports implement it, so no dispatch code
//! speaks a protocol. A leaf: it knows no stage.

use serde_json::{json, Value};
use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::time::Duration;

pub use crate::audit::Answer;
use crate::runtime::model::Effects;
use crate::text;

/// What the person is shown.
#[derive(Debug, Clone)]
pub struct Question {
    /// The verb's canonical name.
    pub verb: String,
    /// The op's args.
    pub args: Value,
    /// The verb's declared effects.
    pub effects: Effects,
    /// The rule that asks, and why.
    pub rule: String,
    /// The rule's reason.
    pub reason: Option<String>,
    /// The plan's program (absolute path) and argv, when it runs one.
    pub program: Option<String>,
    /// The rendered argv after the program.
    pub argv: Vec<String>,
    /// Where it runs.
    pub cwd: Option<String>,
    /// An `exec-read` plan's read-back command (program, then argv), run
    /// after the first one succeeds: shown too, since the person's consent
    /// covers everything the op runs.
    pub read_back: Option<Vec<String>>,
    /// Where the read-back runs, when that is not where the first command
    /// runs.
    pub read_back_cwd: Option<String>,
    /// How long the answer may take.
    pub timeout: Duration,
}

/// Longest part of any one value a question shows — an argv word, a
/// directory, a string in the args — in bytes as shown (escapes count);
/// the rest is counted, not shown, so one long value cannot push what
/// follows out of a client's view.
pub const SHOWN_VALUE_BYTES: usize = 256;

/// Longest `runs:` (or read-back) line; words past it are counted, not
/// shown. The program and its first words always fit.
pub const SHOWN_COMMAND_BYTES: usize = 4096;

/// Longest `args:` line (after each value is cut to [`SHOWN_VALUE_BYTES`]).
pub const SHOWN_ARGS_BYTES: usize = 2048;

impl Question {
    /// The text shown to a person: one fact per line, no markup. What runs
    /// (program, argv, directory, then any read-back) comes right after
    /// the first line, before the args, so a client that shows only the
    /// start of a long question still shows it. Every value is escaped (no
    /// control, bidi or invisible character reaches the person raw, see
    /// [`crate::text`]) and cut at a bound that says how much it left out.
    pub fn message(&self) -> String {
        let why = self.reason.as_deref().unwrap_or(&self.rule);
        let mut m = format!(
            "verbgate asks before running `{}` ({}).",
            text::escape(&self.verb, SHOWN_VALUE_BYTES),
            text::escape(why, SHOWN_VALUE_BYTES)
        );
        if let Some(p) = &self.program {
            m.push_str(&format!(
                "\nruns: {}",
                command(
                    &std::iter::once(p.as_str())
                        .chain(self.argv.iter().map(String::as_str))
                        .collect::<Vec<_>>()
                )
            ));
            if let Some(cwd) = &self.cwd {
                // Quoted like the argv: a directory named "x\nruns: true"
                // must not print a line of its own.
                m.push_str(&format!("\nin: {}", text::word(cwd, SHOWN_VALUE_BYTES)));
            }
        }
        if let Some(words) = &self.read_back {
            // "runs", not "reads": the host cannot know that a command only reads.
            m.push_str(&format!(
                "\nthen runs (read-back): {}",
                command(&words.iter().map(String::as_str).collect::<Vec<_>>())
            ));
            if let Some(cwd) = &self.read_back_cwd {
                m.push_str(&format!("\nread-back in: {}", text::word(cwd, SHOWN_VALUE_BYTES)));
            }
        }
        m.push_str(&format!("\neffects: {}", self.effects.to_json()));
        m.push_str(&format!(
            "\nargs: {}",
            text::clip(&text::escape_json(&self.args, SHOWN_VALUE_BYTES), SHOWN_ARGS_BYTES)
        ));
        m
    }

    /// The question as JSON (for the audit trail and tests).
    pub fn to_json(&self) -> Value {
        json!({ "verb": self.verb, "args": self.args, "effects": self.effects.to_json(), "rule": self.rule, "program": self.program, "argv": self.argv, "cwd": self.cwd, "read_back": self.read_back, "read_back_cwd": self.read_back_cwd })
    }
}

/// A command for display only (nothing is ever run through a shell): each
/// word as [`text::word`] shows it, up to [`SHOWN_COMMAND_BYTES`], then how
/// many words were left out.
fn command(words: &[&str]) -> String {
    let mut line = String::new();
    for (i, w) in words.iter().enumerate() {
        let shown = text::word(w, SHOWN_VALUE_BYTES);
        if i > 0 && line.len() + 1 + shown.len() > SHOWN_COMMAND_BYTES {
            line.push_str(&format!(" …(+{} more words not shown)", words.len() - i));
            break;
        }
        if i > 0 {
            line.push(' ');
        }
        line.push_str(&shown);
    }
    line
}

/// A boxed future, so the trait stays object-safe.
pub type AskFuture<'a> = Pin<Box<dyn Future<Output = Answer> + Send + 'a>>;

/// A way to ask a person, provided by the transport.
pub trait Asker: Send + Sync {
    /// Why this caller cannot be asked (no elicitation capability, no
    /// terminal), or `None` when it can.
    fn unavailable(&self) -> Option<String>;
    /// Ask, waiting at most `question.timeout`.
    fn ask<'a>(&'a self, question: &'a Question) -> AskFuture<'a>;
    /// Who answers, for the audit trail's `decided_by` (`person`, or
    /// `cli_yes` for `verbgate request --yes`).
    fn who(&self) -> &'static str {
        "person"
    }
}

/// Verbs a person allowed for the rest of a session (one MCP session, one
/// `verbgate request` process).
#[derive(Debug, Default)]
pub struct Grants {
    verbs: Mutex<HashSet<String>>,
}

impl Grants {
    /// Whether `verb` was allowed for the session.
    pub fn has(&self, verb: &str) -> bool {
        self.verbs.lock().unwrap_or_else(|e| e.into_inner()).contains(verb)
    }

    /// Remember that `verb` is allowed for the session.
    pub fn grant(&self, verb: &str) {
        self.verbs.lock().unwrap_or_else(|e| e.into_inner()).insert(verb.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_shows_what_will_run_quoted_for_a_person() {
        let q = Question {
            verb: "git.commit".into(),
            args: json!({"message": "fix: it's done"}),
            effects: Effects::declared(vec![crate::runtime::model::Effect::WritesRepo]),
            rule: "default:writes_repo".into(),
            reason: Some("the verb changes the repository".into()),
            program: Some("/usr/bin/git".into()),
            argv: vec!["commit".into(), "-F".into(), "-".into(), "a b".into()],
            cwd: None,
            read_back: Some(vec![
                "/usr/bin/git".into(),
                "log".into(),
                "-1".into(),
                "--format=%H\n%s".into(),
            ]),
            read_back_cwd: Some("/r/other dir".into()),
            timeout: Duration::from_secs(1),
        };
        let m = q.message();
        let lines: Vec<&str> = m.lines().collect();
        assert_eq!(
            lines,
            [
                "verbgate asks before running `git.commit` (the verb changes the repository).",
                "runs: /usr/bin/git commit -F - \"a b\"",
                "then runs (read-back): /usr/bin/git log -1 \"--format=%H\\n%s\"",
                "read-back in: \"/r/other dir\"",
                "effects: [\"writes_repo\"]",
                "args: {\"message\":\"fix: it's done\"}",
            ],
            "what runs comes first, both commands each on one line, with the read-back's own directory: {m}"
        );
        let sneaky = Question { cwd: Some("/r/x\nruns: /bin/true".into()), ..q };
        let m = sneaky.message();
        assert_eq!(
            m.lines().filter(|l| l.starts_with("runs:")).count(),
            1,
            "a directory name cannot add a line: {m}"
        );
    }

    fn echo(args: Value, argv: Vec<String>) -> Question {
        Question {
            verb: "echo.argv".into(),
            args,
            effects: Effects::Undeclared,
            rule: "default:undeclared".into(),
            reason: None,
            program: Some("/bin/echo".into()),
            argv,
            cwd: Some("/r".into()),
            read_back: None,
            read_back_cwd: None,
            timeout: Duration::from_secs(1),
        }
    }

    #[test]
    fn hidden_characters_are_escaped_on_every_line() {
        // Issue 25: the `args:` line showed these raw while `runs:` escaped them.
        let value = "\u{202e}gnp.exe\u{200b}\u{2066}\u{feff}\u{1b}[2J";
        let q = echo(json!({ "word": value, "\u{202e}key": 1 }), vec![value.into()]);
        let m = q.message();
        assert!(!m.chars().any(|c| c != '\n' && crate::text::hidden(c)), "{m:?}");
        let runs = m.lines().nth(1).unwrap();
        assert_eq!(
            runs,
            "runs: /bin/echo \"\\u{202e}gnp.exe\\u{200b}\\u{2066}\\u{feff}\\u{1b}[2J\""
        );
        let args = m.lines().last().unwrap();
        assert!(
            args.starts_with("args: {")
                && args.contains(r"\u202egnp.exe\u200b\u2066\ufeff\u001b[2J")
                && args.contains(r"\u202ekey"),
            "{args}"
        );
        let json: Value = serde_json::from_str(args.strip_prefix("args: ").unwrap())
            .expect("the args line is JSON");
        assert_eq!(json["word"], value, "and exact");
    }

    #[test]
    fn a_long_value_is_cut_and_cannot_push_what_runs_out_of_view() {
        // Issue 25: a 20 kB value made a 40 kB question with the program after it.
        let long = "y".repeat(20_000);
        let q = echo(
            json!({ "word": long, "list": vec!["z".repeat(300); 100] }),
            vec![long.clone(), "--then".into()],
        );
        let m = q.message();
        assert!(m.len() < 8192, "{} bytes", m.len());
        let lines: Vec<&str> = m.lines().collect();
        assert!(
            lines[1].starts_with("runs: /bin/echo \"yyy")
                && lines[1].ends_with("…(+19744 bytes not shown)\" --then"),
            "{}",
            lines[1]
        );
        assert_eq!(lines[2], "in: /r");
        let args = lines.last().unwrap();
        assert!(
            args.contains("…(+19744 bytes not shown)")
                && args.len() <= "args: ".len() + SHOWN_ARGS_BYTES + 40,
            "{args}"
        );
        assert!(args.ends_with("bytes not shown)"), "the args line says it was cut: {args}");
        // Many words: the line stops at its bound and counts the rest.
        let q = echo(json!({}), (0..2000).map(|i| format!("w{i}")).collect());
        let runs = q.message().lines().nth(1).unwrap().to_string();
        assert!(
            runs.len() <= "runs: ".len() + SHOWN_COMMAND_BYTES + 40
                && runs.starts_with("runs: /bin/echo w0 w1 w2"),
            "{runs}"
        );
        assert!(runs.ends_with("more words not shown)"), "{runs}");
    }

    #[test]
    fn grants_are_per_verb() {
        let g = Grants::default();
        g.grant("git.commit");
        assert!(g.has("git.commit") && !g.has("git.add"));
    }
}
