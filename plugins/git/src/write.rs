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
//! On the 0.1.0 contract a plan is one command, so these verbs cannot run a
//! second git to read the new state back: `git.commit` reads the new
//! commit's full hash from git's own one-line commit summary (run with
//! `core.abbrev=no` and `LC_ALL=C`), and each result names the read verb
//! that shows the rest (`next`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use verbgate_plugin_sdk::{errors, json, Cmd, Effect, OpError, Outcome, OutcomeExt, Plan, Value, Verb, VerbKind};

use crate::{git, not_a_repository, Repo};

/// `git` for a write: literal pathspecs, no automatic gc or maintenance.
fn git_write(repo: &Repo) -> Cmd {
    git(repo).env("LC_ALL", "C").lit("--literal-pathspecs").lit("-c").lit("gc.auto=0").lit("-c").lit("maintenance.auto=false")
}

/// Caller paths, confined by the host, after `--`.
fn with_paths(mut c: Cmd, paths: &[String]) -> Cmd {
    c = c.end_of_options();
    for p in paths {
        c = c.path(p);
    }
    c
}

/// The read op that shows what a write left behind.
fn next(op: &str, repo: &Repo) -> Value {
    match &repo.repo {
        Some(dir) => json!({ "op": op, "args": { "repo": dir } }),
        None => json!({ "op": op, "args": {} }),
    }
}

/// The errors the write verbs share: not a repository, a path git does not
/// know (a missing file, or an option-looking name taken literally), a
/// failure.
fn check(outcome: &Outcome) -> Result<(), OpError> {
    not_a_repository(outcome)?;
    let stderr = outcome.stderr_text();
    if outcome.exit_code != Some(0) {
        if let Some(rest) = stderr.split("pathspec '").nth(1) {
            let path = rest.split("' did not match").next().unwrap_or_default();
            return Err(errors::op_error(
                "not_found",
                &format!("git knows no file matching the path {path:?} (paths are literal file names, relative to the repository directory)"),
                Some(json!({ "path": path })),
            ));
        }
    }
    outcome.success()
}

fn next_schema() -> Value {
    json!({ "type": "object", "required": ["op", "args"], "description": "the read op that shows the new state" })
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
    const SUMMARY: &'static str = "Stage files (writes the index; repository hooks do not run)";
    const KIND: VerbKind = VerbKind::Exec;
    const EFFECTS: &'static [Effect] = &[Effect::ReadsRepo, Effect::WritesRepo];
    const PROGRAMS: &'static [&'static str] = &["git"];
    type Args = AddArgs;

    fn result_schema() -> Option<Value> {
        Some(json!({
            "type": "object",
            "required": ["staged", "next"],
            "properties": { "staged": { "type": "array", "items": { "type": "string" } }, "next": next_schema() }
        }))
    }

    fn plan(args: &AddArgs) -> Result<Plan, OpError> {
        Ok(Plan::Exec(with_paths(git_write(&args.repo).lit("add"), &args.paths).into()))
    }

    fn map(args: &AddArgs, outcome: &Outcome) -> Result<Value, OpError> {
        if outcome.exit_code == Some(1) && outcome.stderr_text().contains("ignored by one of your .gitignore files") {
            return Err(errors::op_error(
                "invalid_args",
                "a path is ignored by .gitignore, and git.add never forces ignored files in; nothing was staged",
                Some(json!({ "paths": args.paths, "stderr": outcome.stderr_text().trim() })),
            ));
        }
        check(outcome)?;
        Ok(json!({ "staged": args.paths, "next": next("git.status", &args.repo) }))
    }
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
    const SUMMARY: &'static str = "Commit what is staged, message via stdin, author from git config (writes the repository; hooks do not run, no signing)";
    const KIND: VerbKind = VerbKind::Exec;
    const EFFECTS: &'static [Effect] = &[Effect::ReadsRepo, Effect::WritesRepo];
    const PROGRAMS: &'static [&'static str] = &["git"];
    type Args = CommitArgs;

    fn result_schema() -> Option<Value> {
        Some(json!({
            "type": "object",
            "required": ["hash", "branch", "root_commit", "subject", "next"],
            "properties": {
                "hash": { "type": "string", "pattern": "^([0-9a-f]{40}|[0-9a-f]{64})$", "description": "the new commit" },
                "branch": { "type": ["string", "null"], "description": "the branch it is on; null on a detached HEAD" },
                "root_commit": { "type": "boolean", "description": "the repository's first commit" },
                "subject": { "type": "string" },
                "next": next_schema()
            }
        }))
    }

    fn plan(args: &CommitArgs) -> Result<Plan, OpError> {
        let mut c =
            git_write(&args.repo).lit("-c").lit("core.abbrev=no").lit("commit").lit("--no-gpg-sign").lit("--no-edit").lit("--cleanup=verbatim").lit("--file=-");
        if args.allow_empty {
            c = c.lit("--allow-empty");
        }
        Ok(Plan::Exec(c.end_of_options().stdin(args.message.as_bytes()).into()))
    }

    fn map(args: &CommitArgs, outcome: &Outcome) -> Result<Value, OpError> {
        let out = outcome.stdout_text();
        if outcome.exit_code == Some(1) && (out.contains("nothing to commit") || out.contains("no changes added to commit")) {
            return Err(errors::op_error(
                "exit_nonzero",
                "nothing is staged, so there is nothing to commit: stage changes with git.add first (or pass allow_empty: true)",
                Some(json!({ "exit_code": 1 })),
            ));
        }
        let err = outcome.stderr_text();
        if outcome.exit_code != Some(0) && (err.contains("Author identity unknown") || err.contains("Please tell me who you are")) {
            return Err(errors::op_error(
                "unavailable",
                "git has no author identity: set user.name and user.email in the repository's (or the user's) git config",
                None,
            ));
        }
        check(outcome)?;
        let summary = parse_summary(out.lines().next().unwrap_or_default())
            .ok_or_else(|| errors::invalid_output(&format!("git commit succeeded but printed no commit summary line: {:?}", out.lines().next())))?;
        Ok(json!({
            "hash": summary.hash,
            "branch": summary.branch,
            "root_commit": summary.root_commit,
            "subject": summary.subject,
            "next": next("git.show", &args.repo),
        }))
    }
}

/// What git's commit summary line says.
#[derive(Debug, PartialEq, Eq)]
struct Summary {
    hash: String,
    branch: Option<String>,
    root_commit: bool,
    subject: String,
}

/// `[main (root-commit) <hash>] subject` / `[detached HEAD <hash>] subject`
/// (LC_ALL=C, core.abbrev=no). Branch names cannot contain spaces, so the
/// hash is the first word that is 40 or 64 hex digits and a `]`.
fn parse_summary(line: &str) -> Option<Summary> {
    let inner = line.strip_prefix('[')?;
    let words: Vec<&str> = inner.split(' ').collect();
    let at = words
        .iter()
        .position(|w| w.strip_suffix(']').is_some_and(|h| matches!(h.len(), 40 | 64) && h.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))))?;
    let hash = words[at].trim_end_matches(']').to_string();
    let mut head: Vec<&str> = words[..at].to_vec();
    let root_commit = head.last() == Some(&"(root-commit)");
    if root_commit {
        head.pop();
    }
    let head = head.join(" ");
    let branch = (head != "detached HEAD" && !head.is_empty()).then_some(head);
    let subject = words[at + 1..].join(" ");
    Some(Summary { hash, branch, root_commit, subject })
}

/// What `git.restore` restores.
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
    const SUMMARY: &'static str = "Discard working-tree changes or unstage files (writes the repository; discarded changes are lost; hooks do not run)";
    const KIND: VerbKind = VerbKind::Exec;
    const EFFECTS: &'static [Effect] = &[Effect::ReadsRepo, Effect::WritesRepo, Effect::Destructive];
    const PROGRAMS: &'static [&'static str] = &["git"];
    type Args = RestoreArgs;

    fn result_schema() -> Option<Value> {
        Some(json!({
            "type": "object",
            "required": ["restored", "scope", "source", "next"],
            "properties": {
                "restored": { "type": "array", "items": { "type": "string" } },
                "scope": { "enum": ["worktree", "staged", "both"] },
                "source": { "type": ["string", "null"] },
                "next": next_schema()
            }
        }))
    }

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
        Ok(Plan::Exec(with_paths(c, &args.paths).into()))
    }

    fn map(args: &RestoreArgs, outcome: &Outcome) -> Result<Value, OpError> {
        check(outcome)?;
        let scope = match args.scope {
            Scope::Worktree => "worktree",
            Scope::Staged => "staged",
            Scope::Both => "both",
        };
        Ok(json!({ "restored": args.paths, "scope": scope, "source": args.source, "next": next("git.status", &args.repo) }))
    }
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
    const SUMMARY: &'static str = "Switch to a local branch, or create one (writes the working tree; refuses to overwrite local changes; hooks do not run)";
    const KIND: VerbKind = VerbKind::Exec;
    const EFFECTS: &'static [Effect] = &[Effect::ReadsRepo, Effect::WritesRepo];
    const PROGRAMS: &'static [&'static str] = &["git"];
    type Args = SwitchArgs;

    fn result_schema() -> Option<Value> {
        Some(json!({
            "type": "object",
            "required": ["branch", "created", "next"],
            "properties": { "branch": { "type": "string" }, "created": { "type": "boolean" }, "next": next_schema() }
        }))
    }

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
                return Err(errors::invalid_args("start_point needs create: true (an existing branch already has its commit)"));
            }
            c = c.value(&args.branch);
        }
        Ok(Plan::Exec(c.end_of_options().into()))
    }

    fn map(args: &SwitchArgs, outcome: &Outcome) -> Result<Value, OpError> {
        not_a_repository(outcome)?;
        let err = outcome.stderr_text();
        if outcome.exit_code != Some(0) && (err.contains("invalid reference") || err.contains("is not a valid branch name")) {
            return Err(errors::op_error(
                "not_found",
                &format!("no local branch {:?} to switch to (or not a valid branch name); git.branches lists them", args.branch),
                Some(json!({ "branch": args.branch })),
            ));
        }
        outcome.success()?;
        Ok(json!({ "branch": args.branch, "created": args.create, "next": next("git.status", &args.repo) }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Git;
    use verbgate_plugin_sdk::serde_json;
    use verbgate_plugin_sdk::Arg;

    fn exec(verb: &str, args: Value) -> verbgate_plugin_sdk::Command {
        match Git::plan(verb, &args.to_string()).unwrap() {
            Plan::Exec(c) => c,
            _ => panic!("not an exec plan"),
        }
    }

    #[test]
    fn the_message_goes_on_stdin_never_in_argv() {
        let msg = "-m \"quoted\"\n\nsecond paragraph\n";
        let c = exec("git.commit", json!({ "message": msg }));
        assert_eq!(c.stdin.as_deref(), Some(msg.as_bytes()));
        assert!(c.args.iter().all(|a| !matches!(a, Arg::Value(v) | Arg::Path(v) if v.contains("quoted"))));
        assert!(c.args.iter().any(|a| matches!(a, Arg::Literal(l) if l == "--cleanup=verbatim")));
    }

    #[test]
    fn paths_come_after_the_marker_and_branches_never_as_options() {
        let c = exec("git.add", json!({ "paths": ["--force", "a b.txt"] }));
        let marker = c.args.iter().position(|a| matches!(a, Arg::EndOfOptions)).unwrap();
        assert!(matches!(&c.args[marker + 1], Arg::Path(p) if p == "--force"));
        let c = exec("git.switch", json!({ "branch": "-D" }));
        assert!(c.args.iter().any(|a| matches!(a, Arg::Value(v) if v == "-D")), "a value the host refuses for its leading dash");
        let c = exec("git.switch", json!({ "branch": "-D", "create": true }));
        assert!(c.args.iter().any(|a| matches!(a, Arg::Option(o) if o.name == "create" && o.value == "-D")));
    }

    #[test]
    fn summaries_parse_for_branches_roots_and_detached_heads() {
        let h = "0449a9d142aed3acb342b03d79c4e50b72374a44";
        assert_eq!(
            parse_summary(&format!("[main (root-commit) {h}] -x \"q\"")),
            Some(Summary { hash: h.into(), branch: Some("main".into()), root_commit: true, subject: "-x \"q\"".into() })
        );
        assert_eq!(
            parse_summary(&format!("[detached HEAD {h}] a ] b")),
            Some(Summary { hash: h.into(), branch: None, root_commit: false, subject: "a ] b".into() })
        );
        assert_eq!(parse_summary("[main abc1234] short hash"), None);
    }

    #[test]
    fn nothing_staged_says_what_to_do() {
        let out = Outcome::exited(1, "On branch main\nnothing to commit, working tree clean\n");
        let e = Git::map_result("git.commit", r#"{"message":"x"}"#, &out).unwrap_err();
        assert!(e.message.contains("git.add"), "{}", e.message);
        let done = Outcome::exited(0, "[main 0449a9d142aed3acb342b03d79c4e50b72374a44] x\n 1 file changed\n");
        let v: Value = serde_json::from_str(&Git::map_result("git.commit", r#"{"message":"x","repo":"sub"}"#, &done).unwrap()).unwrap();
        assert_eq!(v["hash"], "0449a9d142aed3acb342b03d79c4e50b72374a44");
        assert_eq!(v["next"], json!({ "op": "git.show", "args": { "repo": "sub" } }));
    }
}
