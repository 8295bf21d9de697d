//! Running a prepared command: environment cleared to an allow list,
//! working directory confined to the root, its own process group, stdout and
//! stderr captured up to a bound (overflow is an error, never silent
//! truncation), and a timeout that kills the whole group.

use serde_json::json;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use super::argv::render_argv;
use super::child::{self, Bounds, Failure, Group};
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

/// Abandons a run when dropped before its end: a cancelled op never
/// leaves its processes behind.
struct Abandon(Option<std::sync::Arc<Group>>);

impl Abandon {
    /// The run ended: nothing is left to abandon.
    fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for Abandon {
    fn drop(&mut self) {
        if let Some(group) = self.0.take() {
            group.abandon();
        }
    }
}

/// Run a prepared command to completion (confined by its sandbox profile,
/// with a private `TMPDIR` removed after it).
pub async fn run_command(p: &Prepared, capture_bytes: usize) -> Result<Outcome, OpError> {
    Launch::new(p)?.run(capture_bytes).await
}

/// A prepared command made ready to start: its private `TMPDIR` made and
/// its sandbox built, nothing started. Dispatch makes it while the op's
/// audit row is being committed (the row must be durable before the
/// program starts, not before its directory exists); dropped unstarted, it
/// removes the directory.
pub struct Launch<'a> {
    p: &'a Prepared,
    cmd: std::process::Command,
    confined: Option<(crate::sandbox::RunTmp, crate::sandbox::Confinement)>,
}

impl<'a> Launch<'a> {
    /// Make `p` ready to start.
    pub fn new(p: &'a Prepared) -> Result<Launch<'a>, OpError> {
        // The confinement (its ruleset descriptor) must outlive the start.
        let confined = match &p.sandbox {
            Some(profile) => {
                let tmp = crate::sandbox::RunTmp::new()?;
                let confinement = crate::sandbox::Confinement::new(profile, tmp.path())?;
                Some((tmp, confinement))
            }
            None => None,
        };
        let mut cmd = match &confined {
            Some((_, c)) => c.command(&p.program),
            None => std::process::Command::new(&p.program),
        };
        std::os::unix::process::CommandExt::process_group(
            cmd.args(&p.argv).env_clear().envs(&p.env).current_dir(&p.cwd),
            0,
        );
        cmd.stdin(if p.stdin.is_some() { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some((tmp, _)) = &confined {
            cmd.env("TMPDIR", tmp.path());
        }
        Ok(Launch { p, cmd, confined })
    }

    /// Start the program and run it to its end, capturing up to
    /// `capture_bytes` a stream.
    ///
    /// Its whole life is spent on a blocking thread ([`super::child`]);
    /// this task only awaits its end. That thread removes the private
    /// `TMPDIR` after handing the outcome over, off the op's path (an
    /// `rmdir` costs about 0.1 ms on ext4), and only once the program is
    /// reaped.
    pub async fn run(self, capture_bytes: usize) -> Result<Outcome, OpError> {
        let p = self.p;
        let (_, outcome) = run_after(p, capture_bytes, || Ok(self), || Ok(())).await?;
        outcome
    }
}

/// Run `first` on the thread that will run `p`, and then — only if it
/// succeeded — `p` itself, made ready by `launch` on this task meanwhile
/// (after the thread was handed `first`, so the two overlap).
/// What `first` gave comes back with the program's outcome; if `first`
/// failed, nothing ran and its error is returned.
///
/// Dispatch commits the op's audit row as `first`: the row is durable
/// before the program starts, its commit overlaps making the program's
/// directory and sandbox, and no thread hop lies between the two.
pub async fn run_after<'a, T: Send + 'static>(
    p: &'a Prepared,
    capture_bytes: usize,
    launch: impl FnOnce() -> Result<Launch<'a>, OpError>,
    first: impl FnOnce() -> Result<T, OpError> + Send + 'static,
) -> Result<(T, Result<Outcome, OpError>), OpError> {
    let bounds =
        Bounds { capture: capture_bytes, truncate_stdout: p.truncate_stdout, timeout: p.timeout };
    let group = std::sync::Arc::new(Group::default());
    // Armed until the program's end is known: dropped before (the op was
    // cancelled) or with the runner gone, it kills the program.
    let abandon = Abandon(Some(group.clone()));
    let (ready_tx, ready_rx) = std::sync::mpsc::sync_channel::<Option<Ready>>(1);
    let (first_tx, first_rx) = tokio::sync::oneshot::channel();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let stdin = p.stdin.clone();
    on_runner_thread(&p.name, move || {
        match first() {
            Ok(t) => {
                let _ = first_tx.send(Ok(t));
            }
            Err(e) => {
                let _ = first_tx.send(Err(e));
                return;
            }
        }
        // `None`: making the launch failed (the task reports why), or the
        // op was dropped; either way nothing starts.
        let Some(Ready { mut cmd, confined }) = ready_rx.recv().ok().flatten() else {
            let _ = tx.send(None);
            return;
        };
        let (tmp, confinement) = match confined {
            Some((tmp, c)) => (Some(tmp), Some(c)),
            None => (None, None),
        };
        let start = || match &confinement {
            Some(c) => c.spawn(&mut cmd),
            None => cmd.spawn(),
        };
        let _ = tx.send(Some(child::run(start, stdin, &bounds, &group)));
        drop(tmp);
        // After the answer is on its way: end what the program left
        // running outside its group.
        super::orphans::sweep_soon();
    })?;
    let not_made = match launch() {
        Ok(l) => {
            let _ = ready_tx.send(Some(Ready { cmd: l.cmd, confined: l.confined }));
            None
        }
        Err(e) => {
            let _ = ready_tx.send(None);
            Some(e)
        }
    };
    let gone =
        || OpError::new(ErrorCode::Internal, format!("the thread running `{}` panicked", p.name));
    let t = first_rx.await.map_err(|_| gone())??;
    let outcome = match (rx.await, not_made) {
        (Ok(Some(finished)), _) => {
            abandon.disarm();
            finished.map(outcome).map_err(|f| failed(p, capture_bytes, f))
        }
        (Ok(None), Some(e)) => Err(e),
        (Ok(None), None) => Err(OpError::new(
            ErrorCode::Internal,
            format!("`{}` was made ready but never started; please report it", p.name),
        )),
        // The runner died with the program perhaps running: `abandon`
        // kills it as it is dropped here.
        (Err(_), _) => Err(gone()),
    };
    Ok((t, outcome))
}

/// Runs of programs on tokio's blocking pool at once. The pool also
/// serves the stdio transport and the audit trail; past this share, a run
/// gets a thread of its own, so long programs cannot starve them.
const POOLED_RUNS: usize = 64;

/// Run `f` (a program's whole life) on a thread that may block: a pooled
/// one when few runs hold the pool, else a new one.
fn on_runner_thread(name: &str, f: impl FnOnce() + Send + 'static) -> Result<(), OpError> {
    static POOLED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    /// Gives the pool's share back however `f` ends.
    struct Share;
    impl Drop for Share {
        fn drop(&mut self) {
            POOLED.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
        }
    }
    if POOLED.fetch_add(1, std::sync::atomic::Ordering::SeqCst) < POOLED_RUNS {
        let share = Share;
        tokio::task::spawn_blocking(move || {
            let _share = share;
            f();
        });
        return Ok(());
    }
    drop(Share);
    std::thread::Builder::new().name("verbgate-run".into()).spawn(f).map(drop).map_err(|e| {
        OpError::new(
            ErrorCode::LaunchFailed,
            format!("cannot start `{name}`: no thread to run it on ({e})"),
        )
    })
}

/// What the thread that starts a program needs of its [`Launch`].
struct Ready {
    cmd: std::process::Command,
    confined: Option<(crate::sandbox::RunTmp, crate::sandbox::Confinement)>,
}

/// The outcome of a program that ran to its end.
fn outcome(finished: child::Finished) -> Outcome {
    use std::os::unix::process::ExitStatusExt;
    Outcome {
        exit_code: finished.status.code(),
        signal: finished.status.signal(),
        stdout: finished.stdout,
        stderr: finished.stderr,
        host_result: None,
        running: false,
        stdout_truncated: finished.truncated,
        read_back: None,
    }
}

/// The op's error for a run that ended without a whole output.
fn failed(p: &Prepared, capture_bytes: usize, failure: Failure) -> OpError {
    match failure {
        Failure::Start(e) => {
            let confined = if p.sandbox.is_some() { " (in its sandbox)" } else { "" };
            OpError::new(
                ErrorCode::LaunchFailed,
                format!("cannot start {}{confined}: {e}", p.program.display()),
            )
            .with("program", p.program.display().to_string())
        }
        Failure::Timeout => OpError::new(
            ErrorCode::Timeout,
            format!(
                "`{}` ran longer than {} ms and was killed (with its process group)",
                p.name,
                p.timeout.as_millis()
            ),
        )
        .with("timeout_ms", p.timeout.as_millis() as u64),
        Failure::Read(stream, e) => OpError::new(
            ErrorCode::Internal,
            format!("reading `{}`'s {stream} failed: {e}; the output is incomplete, so nothing was mapped", p.name),
        )
        .with("stream", stream),
        Failure::Overflow(stream) => OpError::new(
            ErrorCode::OutputOverflow,
            format!("`{}` wrote more than {capture_bytes} bytes to {stream}; narrow the request (fewer items, a path) so the output fits", p.name),
        )
        .with("stream", stream)
        .with("limit_bytes", capture_bytes),
        Failure::Wait(e) => {
            OpError::new(ErrorCode::Internal, format!("cannot wait for `{}`: {e}", p.name))
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
    async fn a_cancelled_run_kills_its_process_group() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("survived");
        let script =
            format!("(sleep 1; touch {}) & sleep 1; touch {}", marker.display(), marker.display());
        let p = prepared("/bin/sh", &["-c", &script], 10_000);
        // The op is dropped (its request cancelled) while the program runs.
        let dropped = tokio::time::timeout(Duration::from_millis(200), run_command(&p, 1024)).await;
        assert!(dropped.is_err(), "the run should still have been going");
        tokio::time::sleep(Duration::from_millis(1500)).await;
        assert!(!marker.exists(), "a process of a cancelled run outlived it");
    }

    #[tokio::test]
    async fn a_program_that_leaves_its_group_still_dies_at_its_deadline() {
        // Seen before the fix: a program that moves itself into another
        // process group (here, the test's own) escaped the group kill, and
        // the run waited for it for ever.
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pid");
        let script = format!(
            "import os, time\nopen({:?}, 'w').write(str(os.getpid()))\nos.setpgid(0, os.getpgid(os.getppid()))\nos.close(1); os.close(2)\ntime.sleep(30)",
            pid_file.display().to_string()
        );
        let p = prepared("/usr/bin/python3", &["-c", &script], 500);
        let ran = tokio::time::timeout(Duration::from_secs(20), run_command(&p, 1024)).await;
        let e = ran.expect("the run must end at its deadline").unwrap_err();
        assert_eq!(e.code, ErrorCode::Timeout);
        let pid = std::fs::read_to_string(&pid_file).unwrap();
        assert!(
            !std::path::Path::new(&format!("/proc/{pid}")).exists(),
            "the program outlived its deadline"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn more_runs_at_once_than_the_pool_share_all_finish() {
        let mut runs = tokio::task::JoinSet::new();
        for _ in 0..POOLED_RUNS + 8 {
            runs.spawn(async {
                let p = prepared("/bin/sh", &["-c", "sleep 0.3; echo done"], 20_000);
                run_command(&p, 1024).await
            });
        }
        let mut done = 0;
        while let Some(r) = runs.join_next().await {
            assert_eq!(r.unwrap().unwrap().stdout, b"done\n");
            done += 1;
        }
        assert_eq!(done, POOLED_RUNS + 8);
    }

    #[tokio::test]
    async fn a_program_that_closes_its_streams_still_meets_its_deadline() {
        let started = std::time::Instant::now();
        let p = prepared("/bin/sh", &["-c", "exec >&- 2>&-; sleep 30"], 300);
        let e = run_command(&p, 1024).await.unwrap_err();
        assert_eq!(e.code, ErrorCode::Timeout);
        assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    }

    #[tokio::test]
    async fn stdin_is_given_and_both_streams_are_read_together() {
        let mut p =
            prepared("/bin/sh", &["-c", "cat; head -c 200000 /dev/zero >&2; echo end"], 5000);
        p.stdin = Some(b"given".to_vec());
        let o = run_command(&p, 1 << 20).await.unwrap();
        assert_eq!(o.stdout, b"givenend\n");
        assert_eq!(o.stderr.len(), 200_000);
        assert_eq!(o.exit_code, Some(0));
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
