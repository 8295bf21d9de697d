//! Running a prepared command: environment cleared to an allow list,
//! working directory confined to the root, its own process group, stdout and
//! stderr captured up to a bound (overflow is an error, never silent
//! truncation), and a timeout that kills the whole group.

use serde_json::json;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use super::argv::render_argv;
use super::confine::confine_dir;
use crate::error::{ErrorCode, OpError};
use crate::runtime::model::{Arg, Command, Outcome};

/// Bounds for one run.
#[derive(Debug, Clone, Copy)]
pub struct RunLimits {
    /// Timeout when the plan sets none.
    pub default_timeout: Duration,
    /// The most a plan may ask for.
    pub max_timeout: Duration,
    /// Capture bound per stream, bytes.
    pub capture_bytes: usize,
}

/// A command checked and resolved, ready to run (also what `dry_run` shows).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prepared {
    /// The program's declared name.
    pub name: String,
    /// Absolute path of the program.
    pub program: PathBuf,
    /// Rendered arguments (without argv[0]).
    pub argv: Vec<String>,
    /// Working directory (absolute, inside the root).
    pub cwd: PathBuf,
    /// The complete environment the program gets.
    pub env: BTreeMap<String, String>,
    /// Stdin bytes.
    pub stdin: Option<Vec<u8>>,
    /// Timeout.
    pub timeout: Duration,
    /// Truncate stdout at the capture bound instead of failing.
    pub truncate_stdout: bool,
    /// Which words of `argv` came from the caller (a value, a path or an
    /// option), position by position: the audit trail redacts a sensitive
    /// value there and only there, never in a plugin's own words.
    pub caller_words: Vec<bool>,
    /// The OS sandbox profile it runs in (`None`: unconfined, only when the
    /// operator turned the sandbox off). Set by dispatch from the verb's
    /// effects; part of what a re-check compares.
    pub sandbox: Option<crate::sandbox::Profile>,
}

impl Prepared {
    /// Check a plugin's command against what its verb declared and resolve
    /// it. `programs` maps the verb's declared names to resolved paths.
    pub fn from_command(
        cmd: &Command,
        programs: &BTreeMap<String, PathBuf>,
        root: &Path,
        env_allow: &[String],
        limits: &RunLimits,
    ) -> Result<Prepared, OpError> {
        let program = programs.get(&cmd.program).cloned().ok_or_else(|| {
            OpError::new(
                ErrorCode::PlanRefused,
                format!(
                    "the plan runs `{}`, which the verb did not declare (declared: {})",
                    cmd.program,
                    programs.keys().cloned().collect::<Vec<_>>().join(", ")
                ),
            )
            .with("program", cmd.program.as_str())
        })?;
        // The working directory first: path arguments are confined as the
        // program resolves them, relative to it.
        let cwd = confine_dir(root, cmd.cwd.as_deref())?;
        let argv = render_argv(&cmd.args, root, &cwd)?;
        // One word per typed argument (see `render_argv`).
        let caller_words = cmd
            .args
            .iter()
            .map(|a| matches!(a, Arg::Value(_) | Arg::Path(_) | Arg::Option { .. }))
            .collect();
        let mut env = BTreeMap::new();
        for name in env_allow {
            if let Ok(v) = std::env::var(name) {
                env.insert(name.clone(), v);
            }
        }
        for (name, value) in &cmd.env {
            super::env::check_plan_env(&cmd.program, name, value)?;
            env.insert(name.clone(), value.clone());
        }
        let timeout = cmd
            .timeout_ms
            .map(|ms| Duration::from_millis(ms.into()).min(limits.max_timeout))
            .unwrap_or(limits.default_timeout);
        Ok(Prepared {
            name: cmd.program.clone(),
            program,
            argv,
            cwd,
            env,
            stdin: cmd.stdin.clone(),
            timeout,
            truncate_stdout: cmd.truncate_stdout,
            caller_words,
            sandbox: None,
        })
    }

    /// The plan as `dry_run` shows it.
    pub fn to_json(&self) -> serde_json::Value {
        json!({
            "program": self.program.display().to_string(),
            "argv": self.argv,
            "cwd": self.cwd.display().to_string(),
            "timeout_ms": self.timeout.as_millis() as u64,
            "stdin_bytes": self.stdin.as_ref().map(Vec::len),
        })
    }
}

/// Kills a process group when dropped, unless disarmed: a cancelled or
/// failed run never leaves its processes behind.
struct GroupGuard(Option<i32>);

impl GroupGuard {
    fn kill(&mut self) {
        if let Some(pgid) = self.0.take() {
            // SAFETY: killpg only sends a signal; pgid is the group our
            // child leads (process_group(0)), never 0 or 1.
            unsafe {
                libc::killpg(pgid, libc::SIGKILL);
            }
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Run a prepared command to completion (confined by its sandbox profile,
/// with a private `TMPDIR` removed after it).
pub async fn run_command(p: &Prepared, capture_bytes: usize) -> Result<Outcome, OpError> {
    let mut std_cmd = std::process::Command::new(&p.program);
    std::os::unix::process::CommandExt::process_group(
        std_cmd.args(&p.argv).env_clear().envs(&p.env).current_dir(&p.cwd),
        0,
    );
    // The temporary directory is removed when the run is over, whatever
    // happened; the confinement (its ruleset descriptor) must outlive the
    // spawn.
    let confined = match &p.sandbox {
        Some(profile) => {
            let tmp = crate::sandbox::RunTmp::new()?;
            let confinement = crate::sandbox::Confinement::new(profile, tmp.path())?;
            std_cmd.env("TMPDIR", tmp.path());
            Some((tmp, confinement))
        }
        None => None,
    };
    let mut cmd = tokio::process::Command::from(std_cmd);
    cmd.stdin(if p.stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let spawned = match &confined {
        Some((_, confinement)) => confinement.spawn(&mut cmd),
        None => cmd.spawn(),
    };
    let _tmp = confined.map(|(tmp, _)| tmp);
    let mut child = spawned.map_err(|e| {
        let confined = if p.sandbox.is_some() { " (in its sandbox)" } else { "" };
        OpError::new(
            ErrorCode::LaunchFailed,
            format!("cannot start {}{confined}: {e}", p.program.display()),
        )
        .with("program", p.program.display().to_string())
    })?;
    let mut guard = GroupGuard(child.id().map(|id| id as i32).filter(|id| *id > 1));

    if let (Some(bytes), Some(mut stdin)) = (p.stdin.clone(), child.stdin.take()) {
        tokio::spawn(async move {
            // A program that exits without reading its input is not an error.
            let _ = stdin.write_all(&bytes).await;
        });
    }
    let stdout = child.stdout.take().expect("stdout is piped");
    let stderr = child.stderr.take().expect("stderr is piped");

    let pgid = guard.0;
    let truncate = p.truncate_stdout;
    let mut truncated = false;
    let work = async {
        let read_stdout = async {
            match read_bounded(stdout, capture_bytes).await {
                Err(Capture::Overflow(kept)) if truncate => {
                    // Keep what fits and stop the program: it would block
                    // on a pipe nobody reads any more.
                    if let Some(pgid) = pgid {
                        // SAFETY: as in GroupGuard::kill.
                        unsafe {
                            libc::killpg(pgid, libc::SIGKILL);
                        }
                    }
                    truncated = true;
                    Ok(kept)
                }
                other => other,
            }
        };
        let (out, err) = tokio::join!(read_stdout, read_bounded(stderr, capture_bytes));
        (out, err, child.wait().await)
    };
    let (out, err, status) = match tokio::time::timeout(p.timeout, work).await {
        Ok(r) => r,
        Err(_) => {
            guard.kill();
            return Err(OpError::new(
                ErrorCode::Timeout,
                format!(
                    "`{}` ran longer than {} ms and was killed (with its process group)",
                    p.name,
                    p.timeout.as_millis()
                ),
            )
            .with("timeout_ms", p.timeout.as_millis() as u64));
        }
    };
    for (stream, r) in [("stdout", &out), ("stderr", &err)] {
        if let Err(Capture::Read(e)) = r {
            guard.kill();
            return Err(OpError::new(
                ErrorCode::Internal,
                format!("reading `{}`'s {stream} failed: {e}; the output is incomplete, so nothing was mapped", p.name),
            )
            .with("stream", stream));
        }
        if let Err(Capture::Overflow(_)) = r {
            guard.kill();
            return Err(OpError::new(
                ErrorCode::OutputOverflow,
                format!("`{}` wrote more than {capture_bytes} bytes to {stream}; narrow the request (fewer items, a path) so the output fits", p.name),
            )
            .with("stream", stream)
            .with("limit_bytes", capture_bytes));
        }
    }
    let status = status.map_err(|e| {
        OpError::new(ErrorCode::Internal, format!("cannot wait for `{}`: {e}", p.name))
    })?;
    // The program ended normally; whatever it left running in its group is
    // its own business (it may be a legitimate daemon), so disarm.
    guard.0 = None;
    use std::os::unix::process::ExitStatusExt;
    Ok(Outcome {
        exit_code: status.code(),
        signal: status.signal(),
        stdout: out.unwrap_or_default(),
        stderr: err.unwrap_or_default(),
        host_result: None,
        running: false,
        stdout_truncated: truncated,
        read_back: None,
    })
}

/// Why a stream's capture stopped before its end.
#[derive(Debug)]
enum Capture {
    /// The stream produced more than the bound; holds the first `bound` bytes.
    Overflow(Vec<u8>),
    /// Reading failed: what was read is incomplete and must not pass as
    /// the whole output.
    Read(String),
}

async fn read_bounded(mut r: impl AsyncRead + Unpin, cap: usize) -> Result<Vec<u8>, Capture> {
    let mut buf = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        match r.read(&mut chunk).await {
            Ok(0) => return Ok(buf),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Capture::Read(e.to_string())),
            Ok(n) => {
                if buf.len() + n > cap {
                    let fits = cap - buf.len();
                    buf.extend_from_slice(&chunk[..fits]);
                    return Err(Capture::Overflow(buf));
                }
                buf.extend_from_slice(&chunk[..n]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prepared(program: &str, argv: &[&str], timeout_ms: u64) -> Prepared {
        Prepared {
            name: program.rsplit('/').next().unwrap().into(),
            program: program.into(),
            argv: argv.iter().map(|s| s.to_string()).collect(),
            cwd: std::env::temp_dir(),
            env: BTreeMap::new(),
            stdin: None,
            timeout: Duration::from_millis(timeout_ms),
            truncate_stdout: false,
            caller_words: vec![],
            sandbox: None,
        }
    }

    #[tokio::test]
    async fn captures_exit_code_and_output() {
        let o =
            run_command(&prepared("/bin/sh", &["-c", "echo hi; echo err >&2; exit 3"], 5000), 1024)
                .await
                .unwrap();
        assert_eq!(o.exit_code, Some(3));
        assert_eq!(o.stdout, b"hi\n");
        assert_eq!(o.stderr, b"err\n");
    }

    #[tokio::test]
    async fn overflow_is_an_error_not_truncation() {
        let e = run_command(&prepared("/bin/sh", &["-c", "head -c 5000 /dev/zero"], 5000), 1000)
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::OutputOverflow);
        assert_eq!(e.details["stream"], "stdout");
    }

    #[tokio::test]
    async fn timeout_kills_the_process_group() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("survived");
        // The grandchild would write the marker after 1 s if it survived.
        let script = format!("(sleep 1; touch {}) & sleep 30", marker.display());
        let e = run_command(&prepared("/bin/sh", &["-c", &script], 200), 1024).await.unwrap_err();
        assert_eq!(e.code, ErrorCode::Timeout);
        tokio::time::sleep(Duration::from_millis(1500)).await;
        assert!(!marker.exists(), "a process of the group outlived the timeout");
    }

    #[tokio::test]
    async fn truncation_when_asked_keeps_the_bound_and_says_so() {
        let mut p = prepared("/bin/sh", &["-c", "head -c 5000000 /dev/zero; echo done >&2"], 10000);
        p.truncate_stdout = true;
        let o = run_command(&p, 1000).await.unwrap();
        assert!(o.stdout_truncated);
        assert_eq!(o.stdout.len(), 1000);
    }

    #[tokio::test]
    async fn launch_failure_is_explicit() {
        let e = run_command(&prepared("/nonexistent/prog", &[], 1000), 1024).await.unwrap_err();
        assert_eq!(e.code, ErrorCode::LaunchFailed);
    }
}
