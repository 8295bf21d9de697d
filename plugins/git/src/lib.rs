//! The bundled `git` plugin: read-only verbs mapped from git's machine
//! formats — `status --porcelain=v2 -z` and NUL/unit-separator `log
//! --format` — never from human text. `GIT_OPTIONAL_LOCKS=0` keeps status
//! from taking the index lock, so these verbs never write to a repository.

mod log;
mod status;
mod time;

use verbgate_plugin_sdk::{
    cmd, errors, json, plugin_info, verb, Args, OpError, Outcome, OutcomeExt, Param, Plan, Plugin, PluginInfo, Schema,
    Value, VerbKind, VerbSpecExt,
};

struct Git;

/// The most commits `git.log` returns in one call.
pub const LOG_MAX: i64 = 1000;
/// The default `git.log` limit.
pub const LOG_DEFAULT: i64 = 20;

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
                        .param("ignored", Param::boolean("include ignored files").default(json!(false))),
                )
                .programs(&["git"])
                .result_schema(status::result_schema()),
                verb(
                    "git.log",
                    VerbKind::Exec,
                    "Commits, newest first (hash, parents, author, UTC times)",
                    Schema::new()
                        .param("limit", Param::integer("most commits to return").min(1).max(LOG_MAX).default(json!(LOG_DEFAULT)))
                        .param("rev", Param::string("revision or range to list (e.g. main, HEAD~5..HEAD); default HEAD").min_length(1))
                        .param("path", Param::string("only commits touching this path (relative to the root)").min_length(1))
                        .param("body", Param::boolean("include each commit's message body").default(json!(false))),
                )
                .programs(&["git"])
                .result_schema(log::result_schema()),
            ],
        )
    }

    fn plan(verb: &str, args: &Args) -> Result<Plan, OpError> {
        match verb {
            "git.status" => {
                let untracked = if args.bool_or("untracked", true)? { "--untracked-files=all" } else { "--untracked-files=no" };
                let ignored = if args.bool_or("ignored", false)? { "--ignored=matching" } else { "--ignored=no" };
                let c = cmd("git")
                    .env("GIT_OPTIONAL_LOCKS", "0")
                    .lit("status")
                    .lit("--porcelain=v2")
                    .lit("--branch")
                    .lit("-z")
                    .lit_owned(untracked.to_string())
                    .lit_owned(ignored.to_string());
                Ok(Plan::Exec(c.into()))
            }
            "git.log" => {
                let limit = args.u64("limit")?.unwrap_or(LOG_DEFAULT as u64).clamp(1, LOG_MAX as u64);
                // Ask for one more than the limit so `truncated` is a fact,
                // not a guess.
                let mut c = cmd("git")
                    .env("GIT_OPTIONAL_LOCKS", "0")
                    .lit("log")
                    .lit("-z")
                    .lit(log::FORMAT)
                    .lit_owned(format!("--max-count={}", limit + 1));
                if let Some(rev) = args.str("rev")? {
                    c = c.value(rev);
                }
                c = c.end_of_options();
                if let Some(path) = args.str("path")? {
                    c = c.value(path);
                }
                Ok(Plan::Exec(c.into()))
            }
            other => Err(errors::unknown_verb(other)),
        }
    }

    fn map_result(verb: &str, args: &Args, outcome: &Outcome) -> Result<Value, OpError> {
        let stderr = String::from_utf8_lossy(&outcome.stderr);
        if outcome.exit_code != Some(0) && stderr.contains("not a git repository") {
            return Err(errors::not_found("the root directory is not inside a git repository"));
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
                let body = args.bool_or("body", false)?;
                log::parse(&outcome.stdout, limit, body)
            }
            other => Err(errors::unknown_verb(other)),
        }
    }
}

verbgate_plugin_sdk::plugin!(Git);
