//! The stash: `git.stash` (push), `git.stashes` (list), `git.stash_pop`
//! (pop, or apply with `keep`) and `git.stash_drop` — separate verbs, so a
//! policy can let an agent list stashes freely while a person is asked
//! before one is dropped.
//!
//! Entries are read from `git stash list -z` with a unit-separated
//! `--format` (the reflog selector `stash@{n}`, the commit, its time and
//! the reflog subject), never from the human listing. Stashes are named by
//! a typed index; the plugin writes `stash@{n}` itself. The writes are
//! `exec-read` plans like the other write verbs: the stash list (push,
//! drop) or the status (pop) is read back after the write.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use verbgate_plugin_sdk::{
    errors, json, Cmd, Effect, ErrorCode, ExecRead, OpError, Outcome, OutcomeExt, Plan, Verb,
    VerbKind,
};

use crate::status::StatusResult;
use crate::time::to_utc;
use crate::write::{
    check, git_write, read_back, status_after, then_status, with_paths, ReadBackCut,
};
use crate::{git, not_a_repository, Repo};

/// `git stash list` in machine form: selector, commit, committer time,
/// reflog subject; NUL after each entry.
const LIST_FORMAT: &str = "--format=%gd%x1f%H%x1f%cI%x1f%gs";

/// Entries listed at most.
pub const LISTED: usize = 1000;

fn list_cmd(repo: &Repo) -> Cmd {
    git(repo).lit("stash").lit("list").lit("-z").lit(LIST_FORMAT)
}

// One stash entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Entry {
    /// n in stash@{n}: 0 is the newest
    pub index: u64,
    pub commit: String,
    /// when it was stashed, RFC 3339 UTC
    pub time: String,
    /// git's subject for it: `On <branch>: <message>` or `WIP on <branch>: <commit>`
    pub message: String,
}

/// Parse `git stash list -z` with [`LIST_FORMAT`].
pub fn parse_list(stdout: &[u8]) -> Result<Vec<Entry>, OpError> {
    let text = String::from_utf8_lossy(stdout);
    let mut out = Vec::new();
    for rec in text.split('\0').map(|r| r.trim_start_matches('\n')).filter(|r| !r.is_empty()) {
        let f: Vec<&str> = rec.split('\u{1f}').collect();
        let index = f
            .first()
            .and_then(|s| s.strip_prefix("stash@{"))
            .and_then(|s| s.strip_suffix('}'))
            .and_then(|n| n.parse::<u64>().ok());
        let (Some(index), [_, hash, time, subject]) = (index, f.as_slice()) else {
            return Err(errors::invalid_output(&format!(
                "git stash list printed an entry verbgate cannot read: {rec:?}"
            )));
        };
        out.push(Entry {
            index,
            commit: hash.to_string(),
            time: to_utc(time),
            message: subject.to_string(),
        });
        if out.len() >= LISTED {
            break;
        }
    }
    Ok(out)
}

/// `stash@{n}`, written by the plugin from a number.
fn selector(index: u64) -> String {
    format!("stash@{{{index}}}")
}

/// The errors a stash selector can meet.
fn no_such_stash(outcome: &Outcome, index: u64) -> Result<(), OpError> {
    let err = outcome.stderr_text();
    if outcome.exit_code != Some(0)
        && (err.contains("is not a valid reference")
            || err.contains("No stash entries found")
            || err.contains("not a stash-like commit"))
    {
        return Err(errors::op_error(
            ErrorCode::NotFound,
            &format!("there is no stash {} (git.stashes lists them)", selector(index)),
            Some(json!({ "index": index })),
        ));
    }
    Ok(())
}

/// `git.stash` args.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PushArgs {
    /// a message for the stash entry
    #[schemars(length(min = 1, max = 4096))]
    message: Option<String>,
    /// only these files or directories (literal names, relative to the repository directory)
    #[serde(default)]
    #[schemars(length(max = 1000), inner(length(min = 1)))]
    paths: Vec<String>,
    /// stash untracked files too
    #[serde(default)]
    untracked: bool,
    /// leave what is staged in the index (and the working tree)
    #[serde(default)]
    keep_index: bool,
    #[serde(flatten)]
    repo: Repo,
}

/// `git.stash`: stash changes.
pub struct Push;

impl Verb for Push {
    const NAME: &'static str = "git.stash";
    const SUMMARY: &'static str = "Stash changes";
    const KIND: VerbKind = VerbKind::Exec;
    const EFFECTS: &'static [Effect] = &[Effect::ReadsRepo, Effect::WritesRepo];
    const PROGRAMS: &'static [&'static str] = &["git"];
    type Args = PushArgs;
    type Output = PushResult;

    fn plan(args: &PushArgs) -> Result<Plan, OpError> {
        let mut c = git_write(&args.repo).lit("stash").lit("push");
        if args.untracked {
            c = c.lit("--include-untracked");
        }
        if args.keep_index {
            c = c.lit("--keep-index");
        }
        if let Some(m) = &args.message {
            c = c.opt("message", m);
        }
        let run = if args.paths.is_empty() { c } else { with_paths(c, &args.paths) };
        Ok(Plan::ExecRead(ExecRead {
            run: run.into(),
            read_back: list_cmd(&args.repo).truncate_stdout().into(),
        }))
    }

    fn map(_: &PushArgs, outcome: &Outcome) -> Result<PushResult, OpError> {
        check(outcome)?;
        let back = read_back(outcome, Self::NAME)?;
        let list = parse_list(&back.stdout)?;
        // git says so, and exits 0, when there is nothing to stash (LC_ALL=C).
        let stashed = !outcome.stdout_text().contains("No local changes to save");
        Ok(PushResult {
            stashed,
            stash: if stashed { list.first().cloned() } else { None },
            stashes: list,
            cut: ReadBackCut::of(&back),
        })
    }
}

// `git.stash`'s result.
#[derive(Serialize, JsonSchema)]
pub struct PushResult {
    /// false when there was nothing to stash
    stashed: bool,
    /// the new entry (stash@{0})
    stash: Option<Entry>,
    stashes: Vec<Entry>,
    #[serde(flatten)]
    cut: ReadBackCut,
}

/// `git.stashes` args.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListArgs {
    #[serde(flatten)]
    repo: Repo,
}

/// `git.stashes`: the stash entries.
pub struct List;

impl Verb for List {
    const NAME: &'static str = "git.stashes";
    const SUMMARY: &'static str = "Stash entries";
    const KIND: VerbKind = VerbKind::Exec;
    const EFFECTS: &'static [Effect] = &[Effect::ReadsRepo];
    const PROGRAMS: &'static [&'static str] = &["git"];
    type Args = ListArgs;
    type Output = ListResult;

    fn plan(args: &ListArgs) -> Result<Plan, OpError> {
        Ok(Plan::Exec(list_cmd(&args.repo).into()))
    }

    fn map(_: &ListArgs, outcome: &Outcome) -> Result<ListResult, OpError> {
        not_a_repository(outcome)?;
        outcome.success()?;
        Ok(ListResult { stashes: parse_list(&outcome.stdout)? })
    }
}

// `git.stashes`' result.
#[derive(Serialize, JsonSchema)]
pub struct ListResult {
    stashes: Vec<Entry>,
}

/// `git.stash_pop` args.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PopArgs {
    /// which stash: n in stash@{n} (0, the newest, by default)
    #[serde(default)]
    #[schemars(range(max = 100000))]
    index: u64,
    /// apply it but keep the entry (git stash apply)
    #[serde(default)]
    keep: bool,
    /// restore what was staged to the index too (--index)
    #[serde(default)]
    restore_index: bool,
    #[serde(flatten)]
    repo: Repo,
}

/// `git.stash_pop`: apply a stash (and drop it, unless `keep`).
pub struct Pop;

impl Verb for Pop {
    const NAME: &'static str = "git.stash_pop";
    const SUMMARY: &'static str = "Apply a stash, then drop it";
    const KIND: VerbKind = VerbKind::Exec;
    const EFFECTS: &'static [Effect] = &[Effect::ReadsRepo, Effect::WritesRepo];
    const PROGRAMS: &'static [&'static str] = &["git"];
    type Args = PopArgs;
    type Output = PopResult;

    fn plan(args: &PopArgs) -> Result<Plan, OpError> {
        let mut c = git_write(&args.repo).lit("stash").lit(if args.keep { "apply" } else { "pop" });
        if args.restore_index {
            c = c.lit("--index");
        }
        Ok(then_status(c.lit_owned(selector(args.index)), &args.repo))
    }

    fn map(args: &PopArgs, outcome: &Outcome) -> Result<PopResult, OpError> {
        not_a_repository(outcome)?;
        no_such_stash(outcome, args.index)?;
        let said = format!("{}{}", outcome.stdout_text(), outcome.stderr_text());
        if outcome.exit_code != Some(0) && said.contains("CONFLICT") {
            let mut e = errors::exit_nonzero(outcome);
            e.message = format!(
                "{} applied with conflicts: the conflicted files hold conflict markers and the stash was kept (git.status shows them): {}",
                selector(args.index),
                e.message.trim_start_matches("the program ")
            );
            return Err(e);
        }
        check(outcome)?;
        let (status, cut) = status_after(outcome, Self::NAME)?;
        Ok(PopResult { applied: selector(args.index), dropped: !args.keep, status, cut })
    }
}

// `git.stash_pop`'s result.
#[derive(Serialize, JsonSchema)]
pub struct PopResult {
    /// the stash applied (stash@{n})
    applied: String,
    dropped: bool,
    /// the repository's status after the write (as git.status returns it)
    status: StatusResult,
    #[serde(flatten)]
    cut: ReadBackCut,
}

/// `git.stash_drop` args.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DropArgs {
    /// which stash: n in stash@{n}
    #[schemars(range(max = 100000))]
    index: u64,
    #[serde(flatten)]
    repo: Repo,
}

/// `git.stash_drop`: delete a stash entry.
pub struct Drop;

impl Verb for Drop {
    const NAME: &'static str = "git.stash_drop";
    const SUMMARY: &'static str = "Drop a stash";
    const KIND: VerbKind = VerbKind::Exec;
    const EFFECTS: &'static [Effect] =
        &[Effect::ReadsRepo, Effect::WritesRepo, Effect::Destructive];
    const PROGRAMS: &'static [&'static str] = &["git"];
    type Args = DropArgs;
    type Output = DropResult;

    fn plan(args: &DropArgs) -> Result<Plan, OpError> {
        let run = git_write(&args.repo).lit("stash").lit("drop").lit_owned(selector(args.index));
        Ok(Plan::ExecRead(ExecRead {
            run: run.into(),
            read_back: list_cmd(&args.repo).truncate_stdout().into(),
        }))
    }

    fn map(args: &DropArgs, outcome: &Outcome) -> Result<DropResult, OpError> {
        not_a_repository(outcome)?;
        no_such_stash(outcome, args.index)?;
        check(outcome)?;
        let back = read_back(outcome, Self::NAME)?;
        Ok(DropResult {
            dropped: selector(args.index),
            stashes: parse_list(&back.stdout)?,
            cut: ReadBackCut::of(&back),
        })
    }
}

// `git.stash_drop`'s result.
#[derive(Serialize, JsonSchema)]
pub struct DropResult {
    dropped: String,
    stashes: Vec<Entry>,
    #[serde(flatten)]
    cut: ReadBackCut,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_entries_parse_and_odd_ones_are_refused() {
        let out =
            "stash@{0}\u{1f}abc\u{1f}2024-01-02T03:04:05+02:00\u{1f}On main: wip\0stash@{1}\u{1f}def\u{1f}2024-01-01T00:00:00+00:00\u{1f}WIP on main: 123 x\0";
        let l = parse_list(out.as_bytes()).unwrap();
        assert_eq!(
            l[0],
            Entry {
                index: 0,
                commit: "abc".into(),
                time: "2024-01-02T01:04:05Z".into(),
                message: "On main: wip".into()
            }
        );
        assert_eq!(l[1].index, 1);
        assert!(parse_list(b"stash@{x}\x1fa\x1fb\x1fc\0").is_err());
    }

    #[test]
    fn stashes_are_named_by_number_and_a_missing_one_is_not_found() {
        use verbgate_plugin_sdk::Arg;
        let Plan::ExecRead(p) =
            crate::Git::plan("git.stash_pop", r#"{"index":2,"keep":true}"#).unwrap()
        else {
            panic!("not exec-read")
        };
        assert!(p.run.args.iter().any(|a| matches!(a, Arg::Literal(l) if l == "apply")));
        assert!(matches!(p.run.args.last(), Some(Arg::Literal(l)) if l == "stash@{2}"));
        let o = Outcome::exited(1, "").with_stderr("error: stash@{7} is not a valid reference");
        assert_eq!(
            crate::Git::map_result("git.stash_drop", r#"{"index":7}"#, &o).unwrap_err().code,
            "not_found"
        );
        let Plan::ExecRead(p) =
            crate::Git::plan("git.stash", r#"{"message":"-m evil","paths":["a"]}"#).unwrap()
        else {
            panic!("not exec-read")
        };
        assert!(
            p.run.args.iter().any(
                |a| matches!(a, Arg::Option(o) if o.name == "message" && o.value == "-m evil")
            ),
            "a message is an option value"
        );
    }

    #[test]
    fn nothing_to_stash_is_reported_not_invented() {
        let back = Outcome::exited(
            0,
            "stash@{0}\u{1f}old\u{1f}2024-01-01T00:00:00+00:00\u{1f}On main: older\0",
        );
        let o = Outcome::exited(0, "No local changes to save\n").with_read_back(back);
        let v: verbgate_plugin_sdk::Value = verbgate_plugin_sdk::serde_json::from_str(
            &crate::Git::map_result("git.stash", "{}", &o).unwrap(),
        )
        .unwrap();
        assert_eq!(
            (v["stashed"].as_bool(), v["stash"].clone(), v["stashes"][0]["commit"].as_str()),
            (Some(false), verbgate_plugin_sdk::Value::Null, Some("old"))
        );
    }
}
