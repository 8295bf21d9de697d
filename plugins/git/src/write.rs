//! The verbs that write the repository: `git.add`, `git.commit`,
//! `git.restore`, `git.switch`.
//!
//! Caller paths go through [`Cmd::path`] after `--` (the host confines them
//! to the root) with `--literal-pathspecs`, so a path is a file name — never
//! an option (`--force`), a glob or pathspec magic (`:(top)`). Branch and
//! revision names are values before `--` (the host refuses one that starts
//! with `-`) or `--name=value` options. The commit message travels on stdin
//! (`--file=-`), never in argv, with `--cleanup=verbatim` so its bytes are
//! recorded exactly as sent.
//!
//! Hooks do not run: the host forces `core.hooksPath=/dev/null` on every git
//! it starts, so `pre-commit`, `commit-msg`, `post-checkout` and the rest are
//! skipped (a repository's hooks are its own code). Signing is off
//! (`--no-gpg-sign`: no `gpg` program either), and so is automatic `gc`.
//!
//! Each plan is an `exec-read`: the write, then — only when it succeeded — a
//! read of the state it left, so the answer *is* that state, in machine
//! form: `git status --porcelain=v2` for add/restore/switch, the new commit
//! from `git log -1` for commit.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use verbgate_plugin_sdk::{
    errors, json, Cmd, Effect, ErrorCode, ExecRead, OpError, Outcome, OutcomeExt, Plan, Verb,
    VerbKind,
};

use crate::status::StatusResult;
use crate::{git, log, not_a_repository, status, status_cmd, Repo};

/// `git` for a write: literal pathspecs, no automatic gc or maintenance.
pub(crate) fn git_write(repo: &Repo) -> Cmd {
    git(repo)
        .env("LC_ALL", "C")
        .lit("--literal-pathspecs")
        .lit("-c")
        .lit("gc.auto=0")
        .lit("-c")
        .lit("maintenance.auto=false")
}

/// Caller paths, confined by the host, after `--`.
pub(crate) fn with_paths(mut c: Cmd, paths: &[String]) -> Cmd {
    c = c.end_of_options();
    for p in paths {
        c = c.path(p);
    }
    c
}

/// `run`, then the repository's status read back (cut at the host's
/// capture bound rather than failing a write that already happened).
pub(crate) fn then_status(run: Cmd, repo: &Repo) -> Plan {
    Plan::ExecRead(ExecRead {
        run: run.into(),
        read_back: status_cmd(repo, true, false).truncate_stdout().into(),
    })
}

/// The read-back's outcome; the write itself has succeeded by now, so a
/// failure here says so (the caller must not simply retry the write). A
/// read-back cut at the capture bound was stopped there, so its exit
/// status says nothing.
pub(crate) fn read_back(outcome: &Outcome, verb: &str) -> Result<Outcome, OpError> {
    let back = outcome.read_back().ok_or_else(|| {
        errors::invalid_output(&format!(
            "{verb} succeeded, but the host did not read the new state back"
        ))
    })?;
    if back.exit_code != Some(0) && !back.stdout_truncated {
        return Err(errors::invalid_output(&format!(
            "{verb} succeeded, but reading the new state back failed (exit {:?}): {}; do not simply retry the write",
            back.exit_code,
            back.stderr_text().trim()
        )));
    }
    Ok(back)
}

/// The status a write left, in `git.status`'s result form, and whether it
/// was cut short (then only whole records are kept).
pub(crate) fn status_after(
    outcome: &Outcome,
    verb: &str,
) -> Result<(StatusResult, ReadBackCut), OpError> {
    let back = read_back(outcome, verb)?;
    let whole = if back.stdout_truncated {
        &back.stdout[..back.stdout.iter().rposition(|b| *b == 0).map_or(0, |at| at + 1)]
    } else {
        &back.stdout[..]
    };
    Ok((
        status::parse(whole).to_result()?,
        ReadBackCut { read_back_truncated: back.stdout_truncated },
    ))
}

// Whether a write's read-back was cut (flattened into every write's
// result).
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
pub(crate) struct ReadBackCut {
    /// the read-back outgrew the host's capture bound and was cut (whole records kept)
    pub read_back_truncated: bool,
}

impl ReadBackCut {
    /// Whether `back` (a read-back) was cut.
    pub fn of(back: &Outcome) -> ReadBackCut {
        ReadBackCut { read_back_truncated: back.stdout_truncated }
    }
}

/// The errors the write verbs share: not a repository, a path git does not
/// know (a missing file, or an option-looking name taken literally), a
/// failure.
pub(crate) fn check(outcome: &Outcome) -> Result<(), OpError> {
    not_a_repository(outcome)?;
    let stderr = outcome.stderr_text();
    if outcome.exit_code != Some(0) {
        if let Some(rest) = stderr.split("pathspec '").nth(1) {
            let path = rest.split("' did not match").next().unwrap_or_default();
            return Err(errors::op_error(
                ErrorCode::NotFound,
                &format!("git knows no file matching the path {path:?} (paths are literal file names, relative to the repository directory)"),
                Some(json!({ "path": path })),
            ));
        }
    }
    outcome.success()
}

/// `git.add` args.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AddArgs {
    /// files or directories to stage, relative to the repository directory (literal names, no globs)
    #[schemars(length(min = 1, max = 1000), inner(length(min = 1)))]
    paths: Vec<String>,
    #[serde(flatten)]
    repo: Repo,
}

/// `git.add`: stage paths.
pub struct Add;

impl Verb for Add {
    const NAME: &'static str = "git.add";
    const SUMMARY: &'static str = "Stage files (no hooks)";
    const KIND: VerbKind = VerbKind::Exec;
    const EFFECTS: &'static [Effect] = &[Effect::ReadsRepo, Effect::WritesRepo];
    const PROGRAMS: &'static [&'static str] = &["git"];
    type Args = AddArgs;
    type Output = AddResult;

    fn plan(args: &AddArgs) -> Result<Plan, OpError> {
        Ok(then_status(with_paths(git_write(&args.repo).lit("add"), &args.paths), &args.repo))
    }

    fn map(args: &AddArgs, outcome: &Outcome) -> Result<AddResult, OpError> {
        if outcome.exit_code == Some(1)
            && outcome.stderr_text().contains("ignored by one of your .gitignore files")
        {
            return Err(errors::op_error(
                ErrorCode::InvalidArgs,
                "a path is ignored by .gitignore, and git.add never forces ignored files in; nothing was staged",
                Some(json!({ "paths": args.paths, "stderr": outcome.stderr_text().trim() })),
            ));
        }
        check(outcome)?;
        let (status, cut) = status_after(outcome, Self::NAME)?;
        Ok(AddResult { staged: args.paths.clone(), status, cut })
    }
}

// `git.add`'s result.
#[derive(Serialize, JsonSchema)]
pub struct AddResult {
    staged: Vec<String>,
    /// the repository's status after the write (as git.status returns it)
    status: StatusResult,
    #[serde(flatten)]
    cut: ReadBackCut,
}

/// `git.commit` args.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CommitArgs {
    /// the commit message, recorded byte for byte (passed to git on stdin, never on its command line)
    #[schemars(length(min = 1, max = 65536))]
    message: String,
    /// record a commit even when nothing is staged
    #[serde(default)]
    allow_empty: bool,
    #[serde(flatten)]
    repo: Repo,
}

/// `git.commit`: commit the index.
pub struct Commit;

impl Verb for Commit {
    const NAME: &'static str = "git.commit";
    const SUMMARY: &'static str = "Commit the index (no hooks, no signing)";
    const KIND: VerbKind = VerbKind::Exec;
    const EFFECTS: &'static [Effect] = &[Effect::ReadsRepo, Effect::WritesRepo];
    const PROGRAMS: &'static [&'static str] = &["git"];
    type Args = CommitArgs;
    type Output = CommitResult;

    fn plan(args: &CommitArgs) -> Result<Plan, OpError> {
        let mut c = git_write(&args.repo)
            .lit("-c")
            .lit("core.abbrev=no")
            .lit("commit")
            .lit("--no-gpg-sign")
            .lit("--no-edit")
            .lit("--cleanup=verbatim")
            .lit("--file=-");
        if args.allow_empty {
            c = c.lit("--allow-empty");
        }
        // The new commit, read back with the refs pointing at it (`%D`:
        // `HEAD -> main, …`, or `HEAD` alone when detached). `--decorate-refs`
        // overrides the repository's own `log.excludeDecoration`, which
        // could otherwise hide the branch.
        let back = git(&args.repo)
            .lit("log")
            .lit("-1")
            .lit("-z")
            .lit("--decorate-refs=HEAD")
            .lit("--decorate-refs=refs/heads/")
            .lit(log::FORMAT_WITH_REFS)
            .lit("HEAD")
            .end_of_options()
            .truncate_stdout();
        Ok(Plan::ExecRead(ExecRead {
            run: c.end_of_options().stdin(args.message.as_bytes()).into(),
            read_back: back.into(),
        }))
    }

    fn map(_: &CommitArgs, outcome: &Outcome) -> Result<CommitResult, OpError> {
        let out = outcome.stdout_text();
        if outcome.exit_code == Some(1)
            && (out.contains("nothing to commit")
                || out.contains("nothing added to commit")
                || out.contains("no changes added to commit"))
        {
            return Err(errors::op_error(
                ErrorCode::ExitNonzero,
                "nothing is staged, so there is nothing to commit: stage changes with git.add first (or pass allow_empty: true)",
                Some(json!({ "exit_code": 1 })),
            ));
        }
        let err = outcome.stderr_text();
        if outcome.exit_code != Some(0)
            && (err.contains("Author identity unknown")
                || err.contains("Please tell me who you are"))
        {
            return Err(errors::unavailable("git has no author identity: set user.name and user.email in the repository's (or the user's) git config"));
        }
        check(outcome)?;
        let back = read_back(outcome, Self::NAME)?;
        let text = back.stdout_text();
        let rec = text.trim_start_matches('\n').trim_end_matches('\0');
        let (refs, rec) = rec
            .split_once('\u{1f}')
            .ok_or_else(|| errors::invalid_output("the new commit, read back, has no ref field"))?;
        let commit = log::commit(rec, true)?;
        // Ops of a batch run at once: another write may have moved HEAD
        // between the commit and its read-back. git's own summary line
        // names the commit it made (full hash: `core.abbrev=no`).
        if let Some(made) = made_hash(&out) {
            if commit.hash != made {
                return Err(errors::invalid_output(&format!(
                    "git.commit made commit {made}, but HEAD had moved on to {:?} when it was read back (another write ran at the same time); git.show {made} shows the commit made",
                    commit.hash
                )));
            }
        }
        let root_commit = commit.parents.is_empty();
        Ok(CommitResult {
            branch: head_branch(refs),
            root_commit,
            commit,
            cut: ReadBackCut::of(&back),
        })
    }
}

// `git.commit`'s result.
#[derive(Serialize, JsonSchema)]
pub struct CommitResult {
    commit: log::Commit,
    /// the branch it is on; null on a detached HEAD
    branch: Option<String>,
    /// the repository's first commit
    root_commit: bool,
    #[serde(flatten)]
    cut: ReadBackCut,
}

/// The full hash in git's commit summary line (`[main (root-commit)
/// <hash>] subject`, `LC_ALL=C`, `core.abbrev=no`): the first word that is
/// 40 or 64 hex digits and a `]` (branch names contain no spaces).
fn made_hash(stdout: &str) -> Option<&str> {
    let line = stdout.lines().next()?.strip_prefix('[')?;
    line.split(' ').filter_map(|w| w.strip_suffix(']')).find(|h| {
        matches!(h.len(), 40 | 64)
            && h.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// The branch HEAD points to, from `%D` (`HEAD -> main, tag: v1`); `None`
/// when HEAD is detached. Ref names contain neither spaces nor commas.
fn head_branch(refs: &str) -> Option<String> {
    refs.split(", ").find_map(|r| r.strip_prefix("HEAD -> ")).map(str::to_string)
}

// What `git.restore` restores.
#[derive(Deserialize, Serialize, JsonSchema, Clone, Copy, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    // Plain comments, not doc comments: schemars would turn documented
    // variants into a `oneOf` of consts instead of a plain `enum`.
    // The working tree (discards unstaged changes).
    #[default]
    Worktree,
    // The index (unstages).
    Staged,
    // Both.
    Both,
}

/// `git.restore` args.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RestoreArgs {
    /// files or directories to restore, relative to the repository directory (literal names, no globs)
    #[schemars(length(min = 1, max = 1000), inner(length(min = 1)))]
    paths: Vec<String>,
    /// what to restore: the working tree (discarding unstaged changes), the index (unstaging), or both
    #[serde(default)]
    scope: Scope,
    /// restore from this commit (default: the index for the working tree, HEAD for the index)
    #[schemars(length(min = 1))]
    source: Option<String>,
    #[serde(flatten)]
    repo: Repo,
}

/// `git.restore`: discard or unstage changes.
pub struct Restore;

impl Verb for Restore {
    const NAME: &'static str = "git.restore";
    const SUMMARY: &'static str = "Discard or unstage changes";
    const KIND: VerbKind = VerbKind::Exec;
    const EFFECTS: &'static [Effect] =
        &[Effect::ReadsRepo, Effect::WritesRepo, Effect::Destructive];
    const PROGRAMS: &'static [&'static str] = &["git"];
    type Args = RestoreArgs;
    type Output = RestoreResult;

    fn plan(args: &RestoreArgs) -> Result<Plan, OpError> {
        let mut c = git_write(&args.repo).lit("restore");
        if args.scope != Scope::Worktree {
            c = c.lit("--staged");
        }
        if args.scope != Scope::Staged {
            c = c.lit("--worktree");
        }
        if let Some(source) = &args.source {
            c = c.opt("source", source);
        }
        Ok(then_status(with_paths(c, &args.paths), &args.repo))
    }

    fn map(args: &RestoreArgs, outcome: &Outcome) -> Result<RestoreResult, OpError> {
        check(outcome)?;
        let (status, cut) = status_after(outcome, Self::NAME)?;
        Ok(RestoreResult {
            restored: args.paths.clone(),
            scope: args.scope,
            source: args.source.clone(),
            status,
            cut,
        })
    }
}

// `git.restore`'s result.
#[derive(Serialize, JsonSchema)]
pub struct RestoreResult {
    restored: Vec<String>,
    scope: Scope,
    source: Option<String>,
    /// the repository's status after the write (as git.status returns it)
    status: StatusResult,
    #[serde(flatten)]
    cut: ReadBackCut,
}

/// `git.switch` args.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SwitchArgs {
    /// the branch to switch to (or to create, with create)
    #[schemars(length(min = 1, max = 255))]
    branch: String,
    /// create the branch (from start_point, default HEAD) instead of switching to an existing one
    #[serde(default)]
    create: bool,
    /// with create: the commit the new branch starts at
    #[schemars(length(min = 1))]
    start_point: Option<String>,
    #[serde(flatten)]
    repo: Repo,
}

/// `git.switch`: change branches.
pub struct Switch;

impl Verb for Switch {
    const NAME: &'static str = "git.switch";
    const SUMMARY: &'static str = "Switch to or create a branch";
    const KIND: VerbKind = VerbKind::Exec;
    const EFFECTS: &'static [Effect] = &[Effect::ReadsRepo, Effect::WritesRepo];
    const PROGRAMS: &'static [&'static str] = &["git"];
    type Args = SwitchArgs;
    type Output = SwitchResult;

    fn plan(args: &SwitchArgs) -> Result<Plan, OpError> {
        // `--no-guess`: an existing local branch only, never one made up
        // from a remote-tracking branch of the same name.
        let mut c = git_write(&args.repo).lit("switch").lit("--no-guess");
        if args.create {
            // `--create=<name>`: one word, so the name is never an option;
            // git itself refuses names that are not valid branch names.
            c = c.opt("create", &args.branch);
            if let Some(start) = &args.start_point {
                c = c.value(start);
            }
        } else {
            if args.start_point.is_some() {
                return Err(errors::invalid_args(
                    "start_point needs create: true (an existing branch already has its commit)",
                ));
            }
            c = c.value(&args.branch);
        }
        Ok(then_status(c.end_of_options(), &args.repo))
    }

    fn map(args: &SwitchArgs, outcome: &Outcome) -> Result<SwitchResult, OpError> {
        not_a_repository(outcome)?;
        let err = outcome.stderr_text();
        if outcome.exit_code != Some(0)
            && (err.contains("invalid reference") || err.contains("is not a valid branch name"))
        {
            return Err(errors::op_error(
                ErrorCode::NotFound,
                &format!("no local branch {:?} to switch to (or not a valid branch name); git.branches lists them", args.branch),
                Some(json!({ "branch": args.branch })),
            ));
        }
        outcome.success()?;
        let (status, cut) = status_after(outcome, Self::NAME)?;
        Ok(SwitchResult { branch: args.branch.clone(), created: args.create, status, cut })
    }
}

// `git.switch`'s result.
#[derive(Serialize, JsonSchema)]
pub struct SwitchResult {
    branch: String,
    created: bool,
    /// the repository's status after the write (as git.status returns it)
    status: StatusResult,
    #[serde(flatten)]
    cut: ReadBackCut,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Git;
    use verbgate_plugin_sdk::serde_json;
    use verbgate_plugin_sdk::{Arg, Value};

    /// The write command of a verb's `exec-read` plan.
    fn exec(verb: &str, args: Value) -> verbgate_plugin_sdk::Command {
        match Git::plan(verb, &args.to_string()).unwrap() {
            Plan::ExecRead(p) => p.run,
            _ => panic!("not an exec-read plan"),
        }
    }

    #[test]
    fn the_message_goes_on_stdin_never_in_argv() {
        let msg = "-m \"quoted\"\n\nsecond paragraph\n";
        let c = exec("git.commit", json!({ "message": msg }));
        assert_eq!(c.stdin.as_deref(), Some(msg.as_bytes()));
        assert!(c
            .args
            .iter()
            .all(|a| !matches!(a, Arg::Value(v) | Arg::Path(v) if v.contains("quoted"))));
        assert!(c.args.iter().any(|a| matches!(a, Arg::Literal(l) if l == "--cleanup=verbatim")));
    }

    #[test]
    fn paths_come_after_the_marker_and_branches_never_as_options() {
        let c = exec("git.add", json!({ "paths": ["--force", "a b.txt"] }));
        let marker = c.args.iter().position(|a| matches!(a, Arg::EndOfOptions)).unwrap();
        assert!(matches!(&c.args[marker + 1], Arg::Path(p) if p == "--force"));
        let c = exec("git.switch", json!({ "branch": "-D" }));
        assert!(
            c.args.iter().any(|a| matches!(a, Arg::Value(v) if v == "-D")),
            "a value the host refuses for its leading dash"
        );
        let c = exec("git.switch", json!({ "branch": "-D", "create": true }));
        assert!(c
            .args
            .iter()
            .any(|a| matches!(a, Arg::Option(o) if o.name == "create" && o.value == "-D")));
    }

    #[test]
    fn the_branch_is_where_head_points() {
        assert_eq!(head_branch("HEAD -> main, tag: v1, other"), Some("main".into()));
        assert_eq!(head_branch("tag: v1, HEAD -> feature/x"), Some("feature/x".into()));
        assert_eq!(head_branch("HEAD"), None, "detached");
        assert_eq!(head_branch("HEAD, main"), None, "detached at a branch's commit");
    }

    #[test]
    fn nothing_staged_says_what_to_do() {
        let out = Outcome::exited(1, "On branch main\nnothing to commit, working tree clean\n");
        let e = Git::map_result("git.commit", r#"{"message":"x"}"#, &out).unwrap_err();
        assert!(e.message.contains("git.add"), "{}", e.message);
    }

    #[test]
    fn a_commit_answers_with_the_commit_read_back() {
        let h = "0449a9d142aed3acb342b03d79c4e50b72374a44";
        let rec = format!("HEAD -> main\u{1f}{h}\u{1f}\u{1f}A U\u{1f}a@x\u{1f}2026-12-03T10:00:00+01:00\u{1f}A U\u{1f}a@x\u{1f}2026-12-03T10:00:00+01:00\u{1f}-x \"q\"\u{1f}body\n\n\0");
        let done = Outcome::exited(0, "[main (root-commit) 0449a9d] -x\n")
            .with_read_back(Outcome::exited(0, rec));
        let v: Value = serde_json::from_str(
            &Git::map_result("git.commit", r#"{"message":"x"}"#, &done).unwrap(),
        )
        .unwrap();
        assert_eq!(v["commit"]["hash"], h);
        assert_eq!(v["commit"]["subject"], "-x \"q\"");
        assert_eq!(v["commit"]["body"], "body");
        assert_eq!(v["commit"]["author"]["time"], "2026-12-03T09:00:00Z");
        assert_eq!((v["branch"].as_str(), v["root_commit"].as_bool()), (Some("main"), Some(true)));
        // Another write moved HEAD before the read-back: never report its commit.
        let other = "1111111111111111111111111111111111111111";
        let raced = Outcome::exited(0, format!("[main {other}] x\n")).with_read_back(Outcome::exited(
            0,
            format!("HEAD -> main\u{1f}{h}\u{1f}\u{1f}A\u{1f}a\u{1f}2026-12-03T10:00:00Z\u{1f}C\u{1f}c\u{1f}2026-12-03T10:00:00Z\u{1f}s\u{1f}\0"),
        ));
        let e = Git::map_result("git.commit", r#"{"message":"x"}"#, &raced).unwrap_err();
        assert!(e.message.contains(&format!("made commit {other}")), "{}", e.message);
        let same = Outcome::exited(0, format!("[main {h}] x\n")).with_read_back(Outcome::exited(
            0,
            format!("HEAD -> main\u{1f}{h}\u{1f}\u{1f}A\u{1f}a\u{1f}2026-12-03T10:00:00Z\u{1f}C\u{1f}c\u{1f}2026-12-03T10:00:00Z\u{1f}s\u{1f}\0"),
        ));
        assert!(Git::map_result("git.commit", r#"{"message":"x"}"#, &same).is_ok());
        // The commit was made but could not be read: say so, never "failed".
        let unread = Outcome::exited(0, "")
            .with_read_back(Outcome::exited(128, "").with_stderr("fatal: bad object HEAD"));
        let e = Git::map_result("git.commit", r#"{"message":"x"}"#, &unread).unwrap_err();
        assert_eq!(e.code, "invalid_output");
        assert!(
            e.message.contains("git.commit succeeded, but reading the new state back failed"),
            "{}",
            e.message
        );
    }

    #[test]
    fn add_answers_with_the_status_read_back() {
        let plan = Git::plan("git.add", r#"{"paths":["a.txt"]}"#).unwrap();
        let Plan::ExecRead(p) = plan else { panic!("not an exec-read plan") };
        assert!(p
            .read_back
            .args
            .iter()
            .any(|a| matches!(a, Arg::Literal(l) if l == "--porcelain=v2")));
        let status = "# branch.oid 0449a9d142aed3acb342b03d79c4e50b72374a44\0# branch.head main\01 A. N... 000000 100644 100644 0000000000000000000000000000000000000000 e69de29bb2d1d6434b8b29ae775ad8c2e48c5391 a.txt\0";
        let done = Outcome::exited(0, "").with_read_back(Outcome::exited(0, status));
        let v: Value = serde_json::from_str(
            &Git::map_result("git.add", r#"{"paths":["a.txt"]}"#, &done).unwrap(),
        )
        .unwrap();
        assert_eq!(v["staged"], json!(["a.txt"]));
        assert_eq!(v["status"]["branch"]["head"], "main");
        assert_eq!(v["status"]["entries"][0]["path"], "a.txt", "{v}");
        assert_eq!(v["read_back_truncated"], false);
        // Cut at the capture bound: whole records only, and said so.
        let mut stopped = Outcome::killed(9).truncated();
        stopped.stdout = status.as_bytes()[..status.len() - 10].to_vec();
        let cut = Outcome::exited(0, "").with_read_back(stopped);
        let v: Value = serde_json::from_str(
            &Git::map_result("git.add", r#"{"paths":["a.txt"]}"#, &cut).unwrap(),
        )
        .unwrap();
        assert_eq!(
            (v["read_back_truncated"].as_bool(), v["status"]["entries"].as_array().map(Vec::len)),
            (Some(true), Some(0)),
            "{v}"
        );
        assert_eq!(v["status"]["branch"]["head"], "main");
    }
}
