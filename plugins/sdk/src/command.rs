//! Typed argv. A [`Cmd`] keeps plugin-authored literals, caller-derived
//! values and `--name=value` options apart all the way to the host, which
//! renders them and refuses any caller value that could be read as an option.
//! There is deliberately no way to splice a caller string in as a literal.

use crate::{Arg, Command, LongOption};

/// Start a command for a declared program.
pub fn cmd(program: &str) -> Cmd {
    Cmd(Command {
        program: program.to_string(),
        args: Vec::new(),
        cwd: None,
        env: Vec::new(),
        stdin: None,
        timeout_ms: None,
        truncate_stdout: false,
    })
}

/// A command under construction; turn it into a [`Command`] with `.into()`.
#[derive(Debug, Clone)]
pub struct Cmd(Command);

impl Cmd {
    /// Plugin-authored text, passed as is (`status`, `--porcelain=v2`).
    /// Only ever pass `&'static str` constants here, never caller input.
    pub fn lit(mut self, text: &'static str) -> Self {
        self.0.args.push(Arg::Literal(text.to_string()));
        self
    }

    /// Plugin-authored text built at run time from trusted parts (a number
    /// the plugin formatted, say). Never caller text.
    pub fn lit_owned(mut self, text: String) -> Self {
        self.0.args.push(Arg::Literal(text));
        self
    }

    /// A caller-derived positional value. The host refuses it if it starts
    /// with `-` or `@` (unless after [`Cmd::end_of_options`]) or contains
    /// NUL.
    pub fn value(mut self, value: impl Into<String>) -> Self {
        self.0.args.push(Arg::Value(value.into()));
        self
    }

    /// A caller-derived option, rendered `--name=value` by the host.
    pub fn opt(mut self, name: &str, value: impl Into<String>) -> Self {
        self.0.args.push(Arg::Option(LongOption { name: name.to_string(), value: value.into() }));
        self
    }

    /// A caller-derived path relative to the root; the host refuses escapes
    /// (`..`, absolute paths, symlinks out of the root, also in the file
    /// part of a compound id `file.py::test`) and, like a value, a leading
    /// `-` or `@` before [`Cmd::end_of_options`].
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.0.args.push(Arg::Path(path.into()));
        self
    }

    /// Keep stdout up to the host's capture bound and stop the program
    /// there, instead of failing the op (`Outcome::stdout_truncated` says so).
    pub fn truncate_stdout(mut self) -> Self {
        self.0.truncate_stdout = true;
        self
    }

    /// The `--` marker; values after it may start with `-` or `@`.
    pub fn end_of_options(mut self) -> Self {
        self.0.args.push(Arg::EndOfOptions);
        self
    }

    /// Working directory, relative to the host's root.
    pub fn cwd(mut self, dir: impl Into<String>) -> Self {
        self.0.cwd = Some(dir.into());
        self
    }

    /// An extra environment variable for the program.
    pub fn env(mut self, name: &str, value: &str) -> Self {
        self.0.env.push((name.to_string(), value.to_string()));
        self
    }

    /// Bytes for the program's stdin.
    pub fn stdin(mut self, bytes: impl Into<Vec<u8>>) -> Self {
        self.0.stdin = Some(bytes.into());
        self
    }

    /// A wall-clock limit in milliseconds.
    pub fn timeout_ms(mut self, ms: u32) -> Self {
        self.0.timeout_ms = Some(ms);
        self
    }

    /// The finished command.
    pub fn build(self) -> Command {
        self.0
    }
}

impl From<Cmd> for Command {
    fn from(c: Cmd) -> Command {
        c.0
    }
}
