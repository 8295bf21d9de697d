//! The bundled `git` plugin. Read verbs map git's machine formats —
//! `status --porcelain=v2 -z`, NUL/unit-separator `log --format`,
//! `--numstat -z`, `for-each-ref` with unit separators — never human text;
//! `blame --porcelain` ([`blame`]); the write verbs (`git.add`,
//! `git.commit`, `git.restore`, `git.switch`) are in [`write`], the stash
//! verbs in [`stash`], and `git.fetch`/`git.push`, the only ones that reach
//! another repository, in [`remote`].
//!
//! Every command runs with `GIT_OPTIONAL_LOCKS=0` (status never takes the
//! index lock) and `-c core.fsmonitor=false`, and diffs with
//! `--no-ext-diff --no-textconv`, because a repository's own config could
//! otherwise make a read start a program of its choosing. Each verb is one
//! type; its args struct is its params schema (every verb ends with the
//! shared `repo`).

mod blame;
mod branches;
mod diff;
mod log;
mod remote;
mod stash;
mod status;
mod time;
mod write;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use verbgate_plugin_sdk::{
    cmd, errors, yes, Cmd, Effect, OpError, Outcome, OutcomeExt, Plan, Verb, VerbKind,
};

/// The most commits `git.log` returns in one call.
pub const LOG_MAX: u64 = 1000;
/// The default `git.log` limit.
pub const LOG_DEFAULT: u64 = 20;

/// The repository a git verb works in (every verb has it, last).
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct Repo {
    /// repository directory, relative to the root (default: the root)
    #[schemars(length(min = 1))]
    repo: Option<String>,
}

/// `git` with the hardening every verb shares, run in the caller's `repo`.
fn git(repo: &Repo) -> Cmd {
    let c = cmd("git")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("GIT_TERMINAL_PROMPT", "0")
        .lit("-c")
        .lit("core.fsmonitor=false");
    match &repo.repo {
        Some(dir) => c.cwd(dir),
        None => c,
    }
}

/// The error every verb gives outside a repository, if that is what
/// happened.
fn not_a_repository(outcome: &Outcome) -> Result<(), OpError> {
    if outcome.exit_code != Some(0) && outcome.stderr_text().contains("not a git repository") {
        return Err(errors::not_found("the directory is not inside a git repository"));
    }
    Ok(())
}

/// `git.status` args.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct StatusArgs {
    /// include untracked files
    #[serde(default = "yes")]
    untracked: bool,
    /// include ignored files
    #[serde(default)]
    ignored: bool,
    #[serde(flatten)]
    repo: Repo,
}

/// `git.status`.
struct Status;

impl Verb for Status {
    const NAME: &'static str = "git.status";
    const SUMMARY: &'static str = "Branch, upstream, changed files";
    const KIND: VerbKind = VerbKind::Exec;
    const EFFECTS: &'static [Effect] = &[Effect::ReadsRepo];
    const PROGRAMS: &'static [&'static str] = &["git"];
    type Args = StatusArgs;
    type Output = status::StatusResult;

    fn plan(args: &StatusArgs) -> Result<Plan, OpError> {
        Ok(Plan::Exec(status_cmd(&args.repo, args.untracked, args.ignored).into()))
    }

    fn map(_: &StatusArgs, outcome: &Outcome) -> Result<status::StatusResult, OpError> {
        not_a_repository(outcome)?;
        outcome.success()?;
        status::parse(&outcome.stdout).to_result()
    }
}

/// `git status` in machine form.
fn status_cmd(repo: &Repo, untracked: bool, ignored: bool) -> Cmd {
    let untracked = if untracked { "--untracked-files=all" } else { "--untracked-files=no" };
    let ignored = if ignored { "--ignored=matching" } else { "--ignored=no" };
    git(repo)
        .lit("status")
        .lit("--porcelain=v2")
        .lit("--branch")
        .lit("-z")
        .lit_owned(untracked.into())
        .lit_owned(ignored.into())
}

fn log_default() -> u64 {
    LOG_DEFAULT
}

/// `git.log` args.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct LogArgs {
    /// most commits to return
    #[serde(default = "log_default")]
    #[schemars(range(min = 1, max = LOG_MAX))]
    limit: u64,
    /// revision or range to list (e.g. main, HEAD~5..HEAD); default HEAD
    #[schemars(length(min = 1))]
    rev: Option<String>,
    /// only commits touching this path (relative to the root)
    #[schemars(length(min = 1))]
    path: Option<String>,
    /// only commits after this date (e.g. 2024-01-31, "2 weeks ago")
    #[schemars(length(min = 1))]
    since: Option<String>,
    /// include each commit's message body
    #[serde(default)]
    body: bool,
    #[serde(flatten)]
    repo: Repo,
}

/// `git.log`.
struct Log;

impl Verb for Log {
    const NAME: &'static str = "git.log";
    const SUMMARY: &'static str = "Commits, newest first";
    const KIND: VerbKind = VerbKind::Exec;
    const EFFECTS: &'static [Effect] = &[Effect::ReadsRepo];
    const PROGRAMS: &'static [&'static str] = &["git"];
    type Args = LogArgs;
    type Output = log::LogResult;

    fn plan(args: &LogArgs) -> Result<Plan, OpError> {
        let limit = args.limit.clamp(1, LOG_MAX);
        // One more than the limit, so `truncated` is a fact, not a guess.
        let mut c = git(&args.repo)
            .lit("log")
            .lit("-z")
            .lit(log::FORMAT)
            .lit_owned(format!("--max-count={}", limit + 1));
        if let Some(since) = &args.since {
            c = c.opt("since", since);
        }
        if let Some(rev) = &args.rev {
            c = c.value(rev);
        }
        c = c.end_of_options();
        if let Some(path) = &args.path {
            c = c.path(path);
        }
        Ok(Plan::Exec(c.into()))
    }

    fn map(args: &LogArgs, outcome: &Outcome) -> Result<log::LogResult, OpError> {
        not_a_repository(outcome)?;
        // An empty repository has no HEAD to log; that is an empty
        // history, not a failure.
        if outcome.exit_code == Some(128)
            && outcome.stderr_text().contains("does not have any commits yet")
        {
            return Ok(log::LogResult { commits: Vec::new(), truncated: false });
        }
        outcome.success()?;
        log::parse(&outcome.stdout, args.limit.clamp(1, LOG_MAX) as usize, args.body)
    }
}

/// `git.diff` args.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct DiffArgs {
    /// compare the working tree (or index, with staged) against this revision
    #[schemars(length(min = 1))]
    rev: Option<String>,
    /// compare two revisions, e.g. main..HEAD
    #[schemars(length(min = 1))]
    rev_range: Option<String>,
    /// diff the index instead of the working tree
    #[serde(default)]
    staged: bool,
    /// only this path (relative to the root)
    #[schemars(length(min = 1))]
    path: Option<String>,
    /// include the patch text
    #[serde(default = "yes")]
    patch: bool,
    #[serde(flatten)]
    repo: Repo,
}

/// `git.diff`.
struct Diff;

impl Verb for Diff {
    const NAME: &'static str = "git.diff";
    const SUMMARY: &'static str = "Per-file line counts and the patch";
    const KIND: VerbKind = VerbKind::Exec;
    const EFFECTS: &'static [Effect] = &[Effect::ReadsRepo];
    const PROGRAMS: &'static [&'static str] = &["git"];
    type Args = DiffArgs;
    type Output = DiffResult;

    fn plan(args: &DiffArgs) -> Result<Plan, OpError> {
        if args.rev.is_some() && args.rev_range.is_some() {
            return Err(errors::invalid_args("give `rev` or `rev_range`, not both"));
        }
        let mut c = git(&args.repo)
            .lit("diff")
            .lit("--no-color")
            .lit("--no-ext-diff")
            .lit("--no-textconv")
            .lit("-M")
            .lit("--numstat")
            .lit("-z");
        if args.patch {
            c = c.lit("-p");
        }
        if args.staged {
            c = c.lit("--cached");
        }
        if let Some(r) = args.rev.as_ref().or(args.rev_range.as_ref()) {
            c = c.value(r);
        }
        c = c.end_of_options();
        if let Some(path) = &args.path {
            c = c.path(path);
        }
        Ok(Plan::Exec(c.truncate_stdout().into()))
    }

    fn map(args: &DiffArgs, outcome: &Outcome) -> Result<DiffResult, OpError> {
        not_a_repository(outcome)?;
        // A truncated capture was stopped by the host: its exit status is
        // the kill, not git's verdict.
        if !outcome.stdout_truncated {
            outcome.success()?;
        }
        let (files, end, cut) = diff::parse_numstat(&outcome.stdout);
        let patch = args.patch.then(|| {
            String::from_utf8_lossy(&outcome.stdout[end.min(outcome.stdout.len())..]).into_owned()
        });
        Ok(DiffResult { files, patch, truncated: outcome.stdout_truncated || cut })
    }
}

// `git.diff`'s result.
#[derive(Serialize, JsonSchema)]
struct DiffResult {
    files: Vec<diff::FileStat>,
    patch: Option<String>,
    /// the output was cut at the host's capture bound; files and patch are incomplete
    truncated: bool,
}

/// `git.show` args.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ShowArgs {
    /// the commit (default HEAD)
    #[schemars(length(min = 1))]
    rev: Option<String>,
    /// include the message body
    #[serde(default = "yes")]
    body: bool,
    #[serde(flatten)]
    repo: Repo,
}

/// `git.show`.
struct Show;

impl Verb for Show {
    const NAME: &'static str = "git.show";
    const SUMMARY: &'static str = "One commit and its files";
    const KIND: VerbKind = VerbKind::Exec;
    const EFFECTS: &'static [Effect] = &[Effect::ReadsRepo];
    const PROGRAMS: &'static [&'static str] = &["git"];
    type Args = ShowArgs;
    type Output = ShowResult;

    fn plan(args: &ShowArgs) -> Result<Plan, OpError> {
        let c = git(&args.repo)
            .lit("show")
            .lit("--no-color")
            .lit("--no-ext-diff")
            .lit("--no-textconv")
            .lit("-z")
            .lit("-M")
            .lit("--numstat")
            .lit("--diff-merges=first-parent")
            .lit(log::FORMAT);
        Ok(Plan::Exec(c.value(args.rev.as_deref().unwrap_or("HEAD")).end_of_options().into()))
    }

    fn map(args: &ShowArgs, outcome: &Outcome) -> Result<ShowResult, OpError> {
        not_a_repository(outcome)?;
        outcome.success()?;
        let header_end =
            outcome.stdout.iter().position(|b| *b == 0).unwrap_or(outcome.stdout.len());
        let header = String::from_utf8_lossy(&outcome.stdout[..header_end]);
        let commit = log::commit(header.trim_start_matches('\n'), args.body)?;
        let rest = outcome.stdout.get(header_end + 1..).unwrap_or_default();
        let (files, _, _) = diff::parse_numstat(rest);
        Ok(ShowResult { commit, files })
    }
}

// `git.show`'s result.
#[derive(Serialize, JsonSchema)]
struct ShowResult {
    commit: log::Commit,
    files: Vec<diff::FileStat>,
}

/// `git.branches` args.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct BranchesArgs {
    /// include remote-tracking branches
    #[serde(default = "yes")]
    remote: bool,
    #[serde(flatten)]
    repo: Repo,
}

/// `git.branches`.
struct Branches;

impl Verb for Branches {
    const NAME: &'static str = "git.branches";
    const SUMMARY: &'static str = "Branches, upstreams, last commits";
    const KIND: VerbKind = VerbKind::Exec;
    const EFFECTS: &'static [Effect] = &[Effect::ReadsRepo];
    const PROGRAMS: &'static [&'static str] = &["git"];
    type Args = BranchesArgs;
    type Output = branches::BranchesResult;

    fn plan(args: &BranchesArgs) -> Result<Plan, OpError> {
        let c = git(&args.repo).lit("for-each-ref").lit(branches::FORMAT).lit("refs/heads");
        Ok(Plan::Exec(if args.remote { c.lit("refs/remotes") } else { c }.into()))
    }

    fn map(_: &BranchesArgs, outcome: &Outcome) -> Result<branches::BranchesResult, OpError> {
        not_a_repository(outcome)?;
        outcome.success()?;
        Ok(branches::BranchesResult { branches: branches::parse(&outcome.stdout) })
    }
}

verbgate_plugin_sdk::plugin!(Git {
    name: "git",
    version: "0.1.0",
    verbs: [
        Status,
        Log,
        Diff,
        Show,
        Branches,
        blame::Blame,
        stash::List,
        write::Add,
        write::Commit,
        write::Restore,
        write::Switch,
        stash::Push,
        stash::Pop,
        stash::Drop,
        remote::Fetch,
        remote::Push
    ],
});
