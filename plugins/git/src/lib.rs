//! The bundled `git` plugin: read-only verbs mapped from git's machine
//! formats — `status --porcelain=v2 -z`, NUL/unit-separator `log --format`,
//! `--numstat -z`, `for-each-ref` with unit separators — never from human
//! text.
//!
//! Every command runs with `GIT_OPTIONAL_LOCKS=0` (status never takes the
//! index lock) and `-c core.fsmonitor=false`, and diffs with
//! `--no-ext-diff --no-textconv`, because a repository's own config could
//! otherwise make a read start a program of its choosing.

mod branches;
mod diff;
mod log;
mod status;
mod time;

use verbgate_plugin_sdk::{
    cmd, errors, json, plugin_info, verb, Args, Cmd, Effect, OpError, Outcome, OutcomeExt, Param, Plan, Plugin, PluginInfo, Schema, Value, VerbKind,
    VerbSpecExt,
};

struct Git;

/// The most commits `git.log` returns in one call.
pub const LOG_MAX: i64 = 1000;
/// The default `git.log` limit.
pub const LOG_DEFAULT: i64 = 20;

fn repo_param() -> Param {
    Param::string("repository directory, relative to the root (default: the root)").min_length(1)
}

/// `git` with the hardening every verb shares, run in the caller's `repo`.
fn git(args: &Args) -> Result<Cmd, OpError> {
    let mut c = cmd("git").env("GIT_OPTIONAL_LOCKS", "0").env("GIT_TERMINAL_PROMPT", "0").lit("-c").lit("core.fsmonitor=false");
    if let Some(repo) = args.str("repo")? {
        c = c.cwd(repo);
    }
    Ok(c)
}

impl Plugin for Git {
    fn describe() -> PluginInfo {
        plugin_info(
            "git",
            "0.1.0",
            vec![
                verb(
                    "git.status",
                    VerbKind::Exec,
                    "Branch, upstream and changed files of the working tree",
                    Schema::new()
                        .param("untracked", Param::boolean("include untracked files").default(json!(true)))
                        .param("ignored", Param::boolean("include ignored files").default(json!(false)))
                        .param("repo", repo_param()),
                )
                .programs(&["git"])
                .effects(&[Effect::ReadsRepo])
                .result_schema(status::result_schema()),
                verb(
                    "git.log",
                    VerbKind::Exec,
                    "Commits, newest first (hash, parents, author, UTC times)",
                    Schema::new()
                        .param("limit", Param::integer("most commits to return").min(1).max(LOG_MAX).default(json!(LOG_DEFAULT)))
                        .param("rev", Param::string("revision or range to list (e.g. main, HEAD~5..HEAD); default HEAD").min_length(1))
                        .param("path", Param::string("only commits touching this path (relative to the root)").min_length(1))
                        .param("since", Param::string("only commits after this date (e.g. 2024-01-31, \"2 weeks ago\")").min_length(1))
                        .param("body", Param::boolean("include each commit's message body").default(json!(false)))
                        .param("repo", repo_param()),
                )
                .programs(&["git"])
                .effects(&[Effect::ReadsRepo])
                .result_schema(log::result_schema()),
                verb(
                    "git.diff",
                    VerbKind::Exec,
                    "Changes as per-file line counts plus the patch (bounded)",
                    Schema::new()
                        .param("rev", Param::string("compare the working tree (or index, with staged) against this revision").min_length(1))
                        .param("rev_range", Param::string("compare two revisions, e.g. main..HEAD").min_length(1))
                        .param("staged", Param::boolean("diff the index instead of the working tree").default(json!(false)))
                        .param("path", Param::string("only this path (relative to the root)").min_length(1))
                        .param("patch", Param::boolean("include the patch text").default(json!(true)))
                        .param("repo", repo_param()),
                )
                .programs(&["git"])
                .effects(&[Effect::ReadsRepo])
                .result_schema(json!({
                    "type": "object",
                    "required": ["files", "patch", "truncated"],
                    "properties": {
                        "files": { "type": "array", "items": diff::file_schema() },
                        "patch": { "type": ["string", "null"] },
                        "truncated": { "type": "boolean", "description": "the output was cut at the host's capture bound; files and patch are incomplete" }
                    }
                })),
                verb(
                    "git.show",
                    VerbKind::Exec,
                    "One commit with its changed files",
                    Schema::new()
                        .param("rev", Param::string("the commit (default HEAD)").min_length(1))
                        .param("body", Param::boolean("include the message body").default(json!(true)))
                        .param("repo", repo_param()),
                )
                .programs(&["git"])
                .effects(&[Effect::ReadsRepo])
                .result_schema(json!({
                    "type": "object",
                    "required": ["commit", "files"],
                    "properties": { "commit": log::commit_schema(), "files": { "type": "array", "items": diff::file_schema() } }
                })),
                verb(
                    "git.branches",
                    VerbKind::Exec,
                    "Local and remote branches with upstream and last commit",
                    Schema::new().param("remote", Param::boolean("include remote-tracking branches").default(json!(true))).param("repo", repo_param()),
                )
                .programs(&["git"])
                .effects(&[Effect::ReadsRepo])
                .result_schema(branches::result_schema()),
            ],
        )
    }

    fn plan(verb: &str, args: &Args) -> Result<Plan, OpError> {
        let c = match verb {
            "git.status" => {
                let untracked = if args.bool_or("untracked", true)? { "--untracked-files=all" } else { "--untracked-files=no" };
                let ignored = if args.bool_or("ignored", false)? { "--ignored=matching" } else { "--ignored=no" };
                git(args)?.lit("status").lit("--porcelain=v2").lit("--branch").lit("-z").lit_owned(untracked.into()).lit_owned(ignored.into())
            }
            "git.log" => {
                let limit = args.u64("limit")?.unwrap_or(LOG_DEFAULT as u64).clamp(1, LOG_MAX as u64);
                // One more than the limit, so `truncated` is a fact, not a guess.
                let mut c = git(args)?.lit("log").lit("-z").lit(log::FORMAT).lit_owned(format!("--max-count={}", limit + 1));
                if let Some(since) = args.str("since")? {
                    c = c.opt("since", since);
                }
                if let Some(rev) = args.str("rev")? {
                    c = c.value(rev);
                }
                c = c.end_of_options();
                if let Some(path) = args.str("path")? {
                    c = c.path(path);
                }
                c
            }
            "git.diff" => {
                let (rev, range) = (args.str("rev")?, args.str("rev_range")?);
                if rev.is_some() && range.is_some() {
                    return Err(errors::invalid_args("give `rev` or `rev_range`, not both"));
                }
                let mut c = git(args)?.lit("diff").lit("--no-color").lit("--no-ext-diff").lit("--no-textconv").lit("-M").lit("--numstat").lit("-z");
                if args.bool_or("patch", true)? {
                    c = c.lit("-p");
                }
                if args.bool_or("staged", false)? {
                    c = c.lit("--cached");
                }
                if let Some(r) = rev.or(range) {
                    c = c.value(r);
                }
                c = c.end_of_options();
                if let Some(path) = args.str("path")? {
                    c = c.path(path);
                }
                c.truncate_stdout()
            }
            "git.show" => {
                let c = git(args)?
                    .lit("show")
                    .lit("--no-color")
                    .lit("--no-ext-diff")
                    .lit("--no-textconv")
                    .lit("-z")
                    .lit("-M")
                    .lit("--numstat")
                    .lit("--diff-merges=first-parent")
                    .lit(log::FORMAT);
                c.value(args.str("rev")?.unwrap_or("HEAD")).end_of_options()
            }
            "git.branches" => {
                let c = git(args)?.lit("for-each-ref").lit(branches::FORMAT).lit("refs/heads");
                if args.bool_or("remote", true)? {
                    c.lit("refs/remotes")
                } else {
                    c
                }
            }
            other => return Err(errors::unknown_verb(other)),
        };
        Ok(Plan::Exec(c.into()))
    }

    fn map_result(verb: &str, args: &Args, outcome: &Outcome) -> Result<Value, OpError> {
        let stderr = String::from_utf8_lossy(&outcome.stderr);
        if outcome.exit_code != Some(0) && stderr.contains("not a git repository") {
            return Err(errors::not_found("the directory is not inside a git repository"));
        }
        match verb {
            "git.status" => {
                outcome.success()?;
                Ok(status::parse(&outcome.stdout).to_json())
            }
            "git.log" => {
                // An empty repository has no HEAD to log; that is an empty
                // history, not a failure.
                if outcome.exit_code == Some(128) && stderr.contains("does not have any commits yet") {
                    return Ok(json!({ "commits": [], "truncated": false }));
                }
                outcome.success()?;
                let limit = args.u64("limit")?.unwrap_or(LOG_DEFAULT as u64) as usize;
                log::parse(&outcome.stdout, limit, args.bool_or("body", false)?)
            }
            "git.diff" => {
                // A truncated capture was stopped by the host: its exit
                // status is the kill, not git's verdict.
                if !outcome.stdout_truncated {
                    outcome.success()?;
                }
                let (files, end, cut) = diff::parse_numstat(&outcome.stdout);
                let patch = args.bool_or("patch", true)?.then(|| String::from_utf8_lossy(&outcome.stdout[end.min(outcome.stdout.len())..]).into_owned());
                Ok(json!({
                    "files": files.iter().map(diff::FileStat::to_json).collect::<Vec<_>>(),
                    "patch": patch,
                    "truncated": outcome.stdout_truncated || cut,
                }))
            }
            "git.show" => {
                outcome.success()?;
                let header_end = outcome.stdout.iter().position(|b| *b == 0).unwrap_or(outcome.stdout.len());
                let header = String::from_utf8_lossy(&outcome.stdout[..header_end]);
                let commit = log::commit(header.trim_start_matches('\n'), args.bool_or("body", true)?)?;
                let rest = outcome.stdout.get(header_end + 1..).unwrap_or_default();
                let (files, _, _) = diff::parse_numstat(rest);
                Ok(json!({ "commit": commit, "files": files.iter().map(diff::FileStat::to_json).collect::<Vec<_>>() }))
            }
            "git.branches" => {
                outcome.success()?;
                Ok(json!({ "branches": branches::parse(&outcome.stdout) }))
            }
            other => Err(errors::unknown_verb(other)),
        }
    }
}

verbgate_plugin_sdk::plugin!(Git);
