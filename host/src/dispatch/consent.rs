//! Asking a person before an op runs. Dispatch decides *that* a person
//! must be asked (the policy's `ask`) and *what* they see (verb, args,
//! effects, the program and argv the plan resolved to); the transport
//! decides *how*: MCP elicitation for a client that declared it, the
//! terminal for `verbgate request`. Dispatch defines the [`Asker`] seam and
//! the transports implement it, so no dispatch code speaks a protocol.

use serde_json::{json, Value};
use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::time::Duration;

use crate::runtime::model::Effects;

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

impl Question {
    /// The text shown to a person: one fact per line, no markup.
    pub fn message(&self) -> String {
        let mut m = format!("verbgate asks before running `{}` ({}).\n", self.verb, self.reason.as_deref().unwrap_or(&self.rule));
        m.push_str(&format!("effects: {}\n", self.effects.to_json()));
        m.push_str(&format!("args: {}\n", self.args));
        if let Some(p) = &self.program {
            m.push_str(&format!("runs: {}", shell_words(std::iter::once(p.as_str()).chain(self.argv.iter().map(String::as_str)))));
            if let Some(cwd) = &self.cwd {
                // Quoted like the argv: a directory named "x\nruns: true"
                // must not print a line of its own.
                m.push_str(&format!("\nin: {}", shell_words(std::iter::once(cwd.as_str()))));
            }
        }
        if let Some(words) = &self.read_back {
            // "runs", not "reads": the host cannot know that a command only reads.
            m.push_str(&format!("\nthen runs (read-back): {}", shell_words(words.iter().map(String::as_str))));
            if let Some(cwd) = &self.read_back_cwd {
                m.push_str(&format!("\nread-back in: {}", shell_words(std::iter::once(cwd.as_str()))));
            }
        }
        m
    }

    /// The question as JSON (for the audit trail and tests).
    pub fn to_json(&self) -> Value {
        json!({ "verb": self.verb, "args": self.args, "effects": self.effects.to_json(), "rule": self.rule, "program": self.program, "argv": self.argv, "cwd": self.cwd, "read_back": self.read_back, "read_back_cwd": self.read_back_cwd })
    }
}

/// Quote for display only (nothing is ever run through a shell).
fn shell_words<'a>(words: impl Iterator<Item = &'a str>) -> String {
    words
        .map(|w| if !w.is_empty() && w.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,@+%".contains(c)) { w.to_string() } else { format!("{w:?}") })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The person's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// Run this op.
    AllowOnce,
    /// Run this op and every later op of this verb in this session.
    AllowSession,
    /// Do not run it.
    Decline,
    /// No answer within the timeout.
    Timeout,
    /// The request was cancelled while waiting.
    Cancelled,
    /// The client could not show the question (the elicitation request
    /// failed): nobody was asked.
    Failed,
}

impl Answer {
    /// The wire name (audit trail, error details).
    pub fn as_str(self) -> &'static str {
        match self {
            Answer::AllowOnce => "allow_once",
            Answer::AllowSession => "allow_session",
            Answer::Decline => "decline",
            Answer::Timeout => "timeout",
            Answer::Cancelled => "cancelled",
            Answer::Failed => "failed",
        }
    }
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
            read_back: Some(vec!["/usr/bin/git".into(), "log".into(), "-1".into(), "--format=%H\n%s".into()]),
            read_back_cwd: Some("/r/other dir".into()),
            timeout: Duration::from_secs(1),
        };
        let m = q.message();
        assert!(m.contains("`git.commit` (the verb changes the repository)"), "{m}");
        assert!(
            m.ends_with("\nthen runs (read-back): /usr/bin/git log -1 \"--format=%H\\n%s\"\nread-back in: \"/r/other dir\""),
            "both commands are shown, each on one line, with the read-back's own directory: {m}"
        );
        assert!(m.contains("effects: [\"writes_repo\"]"), "{m}");
        assert!(m.contains("runs: /usr/bin/git commit -F - \"a b\""), "{m}");
        let sneaky = Question { cwd: Some("/r/x\nruns: /bin/true".into()), ..q };
        let m = sneaky.message();
        assert_eq!(m.lines().filter(|l| l.starts_with("runs:")).count(), 1, "a directory name cannot add a line: {m}");
    }

    #[test]
    fn grants_are_per_verb() {
        let g = Grants::default();
        g.grant("git.commit");
        assert!(g.has("git.commit") && !g.has("git.add"));
    }
}
