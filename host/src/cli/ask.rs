//! Asking on the terminal for `verbgate request`: the same question an MCP
//! client shows in its elicitation form, on stderr, answered from the
//! controlling terminal. Without a terminal nobody can be asked (the op
//! fails with `consent_required`); `--yes` answers "allow once" for scripts
//! that have decided in advance.

use std::io::{BufRead, IsTerminal, Write};

use crate::dispatch::ask::{Answer, AskFuture, Asker, Question};

/// Asks on the controlling terminal.
pub struct Terminal;

impl Asker for Terminal {
    fn unavailable(&self) -> Option<String> {
        if std::io::stderr().is_terminal() && std::fs::File::open("/dev/tty").is_ok() {
            return None;
        }
        Some("`verbgate request` has no terminal to ask on (pass --yes to allow such ops from a script)".into())
    }

    fn ask<'a>(&'a self, q: &'a Question) -> AskFuture<'a> {
        let message = q.message();
        let verb = q.verb.clone();
        Box::pin(async move {
            let read = tokio::task::spawn_blocking(move || prompt(&message, &verb));
            match tokio::time::timeout(q.timeout, read).await {
                Err(_) => Answer::Timeout,
                Ok(Ok(Some(answer))) => answer,
                Ok(_) => Answer::Decline,
            }
        })
    }
}

/// Show the question, read one line from the terminal: `o` once, `s`
/// session, anything else declines.
fn prompt(message: &str, verb: &str) -> Option<Answer> {
    let mut err = std::io::stderr().lock();
    writeln!(err, "\n{message}").ok()?;
    write!(err, "Allow {verb}? [o]nce / [s]ession / [N]o: ").ok()?;
    err.flush().ok()?;
    let tty = std::fs::File::open("/dev/tty").ok()?;
    let mut line = String::new();
    std::io::BufReader::new(tty).read_line(&mut line).ok()?;
    Some(match line.trim().to_ascii_lowercase().as_str() {
        "o" | "once" | "y" | "yes" => Answer::AllowOnce,
        "s" | "session" => Answer::AllowSession,
        _ => Answer::Decline,
    })
}

/// `--yes`: every `ask` is allowed once, recorded as decided by `cli_yes`.
pub struct Yes;

impl Asker for Yes {
    fn unavailable(&self) -> Option<String> {
        None
    }

    fn ask<'a>(&'a self, _q: &'a Question) -> AskFuture<'a> {
        Box::pin(async { Answer::AllowOnce })
    }

    fn who(&self) -> &'static str {
        "cli_yes"
    }
}
