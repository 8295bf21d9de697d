//! The verbs that reach another repository: `git.fetch` and `git.push`,
//! both `network` verbs.
//!
//! - The remote is a name (`origin`), in a shape that cannot be read as a
//!   URL or an option (letters, digits, `.`, `_`, `-`, starting with a
//!   letter or digit); where it points is the repository's own
//!   configuration. Which transports git may use is the host's decision,
//!   not the plugin's: the host's git guard allows `https` and `ssh` for
//!   `fetch` and `push` (and `file` only where the operator's
//!   `[git] transports` says so) and keeps every transport off for every
//!   other git command.
//! - Refspecs are typed (`{src, dst}`): the plugin writes `src:dst`, and
//!   neither part may start with `+` (which forces) or `-` (an option), or
//!   hold a `:`. There is no `--force`; `git.push` has a typed
//!   `force_with_lease`, which overwrites the remote branch only if it is
//!   still where this repository last saw it.
//! - Results come from `--porcelain` output: fetch's `<flag> <old> <new>
//!   <ref>` lines (git 2.41+) and push's `<flag>\t<from>:<to>\t<summary>`
//!   lines — never from the human progress text.
//!
//! No hooks run (the host's `core.hooksPath=/dev/null` covers `pre-push`),
//! submodules are not recursed into, pushes are not signed, and no
//! automatic gc or maintenance starts afterwards.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use verbgate_plugin_sdk::{
    errors, json, Cmd, Effect, ErrorCode, OpError, Outcome, OutcomeExt, Plan, Verb, VerbKind,
};

use crate::write::git_write;
use crate::{not_a_repository, Repo};

/// How long a fetch or push may take (the operator's `exec_timeout_max_ms` caps it).
const TIMEOUT_MS: u32 = 300_000;

fn origin() -> String {
    "origin".to_string()
}

/// One refspec, typed.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Refspec {
    /// the source: a ref or revision here (push), a ref on the remote (fetch)
    #[schemars(length(min = 1, max = 1024), regex(pattern = r"^[^-+:\s][^:\s]*$"))]
    src: String,
    /// the destination ref (default: git's, for the src)
    #[schemars(length(min = 1, max = 1024), regex(pattern = r"^[^-+:\s][^:\s]*$"))]
    dst: Option<String>,
}

impl Refspec {
    /// `src[:dst]`. The schema already refused `+`, `-` and `:`; checked
    /// again here so that no path around the schema forces a ref.
    fn text(&self) -> Result<String, OpError> {
        for part in [Some(&self.src), self.dst.as_ref()].into_iter().flatten() {
            if part.starts_with(['+', '-'])
                || part.contains(':')
                || part.chars().any(char::is_whitespace)
            {
                return Err(errors::op_error(
                    ErrorCode::InvalidArgs,
                    &format!("the refspec part {part:?} may not start with `+` or `-` or hold `:` or spaces (use force_with_lease to overwrite)"),
                    Some(json!({ "param": "refspecs", "value": part })),
                ));
            }
        }
        Ok(match &self.dst {
            Some(d) => format!("{}:{d}", self.src),
            None => self.src.clone(),
        })
    }
}

/// The remote and refspecs, after the verb's own flags.
fn with_remote(mut c: Cmd, remote: &str, refspecs: &[Refspec]) -> Result<Cmd, OpError> {
    c = c.value(remote);
    for r in refspecs {
        // Values before any `--`: the host refuses one that starts with `-`.
        c = c.value(r.text()?);
    }
    Ok(c)
}

/// Errors a fetch or push shares: a transport the host keeps closed, a
/// remote that does not answer or refuses us.
fn transport_errors(outcome: &Outcome, remote: &str) -> Result<(), OpError> {
    not_a_repository(outcome)?;
    let err = outcome.stderr_text();
    if outcome.exit_code == Some(0) {
        return Ok(());
    }
    if let Some(rest) = err.split("transport '").nth(1) {
        let transport = rest.split('\'').next().unwrap_or_default();
        return Err(errors::op_error(
            ErrorCode::Unavailable,
            &format!(
                "remote `{remote}` uses the `{transport}` transport, which verbgate keeps closed: git.fetch and git.push use https and ssh; an operator \
                 can allow `file` with `[git] transports = [\"https\", \"ssh\", \"file\"]` in verbgate.toml"
            ),
            Some(json!({ "remote": remote, "transport": transport })),
        ));
    }
    if err.contains("does not appear to be a git repository") || err.contains("No such remote") {
        return Err(errors::op_error(
            ErrorCode::NotFound,
            &format!(
                "`{remote}` is not a remote of this repository (or its URL is no repository): {}",
                err.trim()
            ),
            Some(json!({ "remote": remote })),
        ));
    }
    Ok(())
}

/// `git.fetch` args.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FetchArgs {
    /// the remote, by name (its URL is the repository's config)
    #[serde(default = "origin")]
    #[schemars(length(min = 1, max = 100), regex(pattern = "^[A-Za-z0-9][A-Za-z0-9._-]*$"))]
    remote: String,
    /// what to fetch (default: the remote's configured refspecs)
    #[serde(default)]
    #[schemars(length(max = 64))]
    refspecs: Vec<Refspec>,
    /// delete remote-tracking refs the remote no longer has
    #[serde(default)]
    prune: bool,
    #[serde(flatten)]
    repo: Repo,
}

// One ref a fetch changed.
#[derive(Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct FetchedRef {
    pub status: FetchStatus,
    pub old: String,
    pub new: String,
    #[serde(rename = "ref")]
    pub local: String,
}

// What a fetch did to a ref (fetch --porcelain's flag).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FetchStatus {
    FastForward,
    Forced,
    Pruned,
    TagUpdated,
    New,
    Rejected,
    UpToDate,
}

/// Parse fetch's porcelain lines: `<flag> <old> <new> <local-ref>`.
pub fn parse_fetch(stdout: &str) -> Result<Vec<FetchedRef>, OpError> {
    let mut refs = Vec::new();
    for line in stdout.lines().filter(|l| !l.is_empty()) {
        let mut chars = line.chars();
        let flag = chars.next().unwrap_or(' ');
        let rest: Vec<&str> = chars.as_str().trim_start_matches(' ').splitn(3, ' ').collect();
        let status = match flag {
            ' ' => FetchStatus::FastForward,
            '+' => FetchStatus::Forced,
            '-' => FetchStatus::Pruned,
            't' => FetchStatus::TagUpdated,
            '*' => FetchStatus::New,
            '!' => FetchStatus::Rejected,
            '=' => FetchStatus::UpToDate,
            _ => {
                return Err(errors::invalid_output(&format!(
                    "git fetch --porcelain printed a line verbgate cannot read: {line:?}"
                )))
            }
        };
        let [old, new, local] = rest.as_slice() else {
            return Err(errors::invalid_output(&format!(
                "git fetch --porcelain printed a line verbgate cannot read: {line:?}"
            )));
        };
        refs.push(FetchedRef {
            status,
            old: old.to_string(),
            new: new.to_string(),
            local: local.to_string(),
        });
    }
    Ok(refs)
}

/// `git.fetch`.
pub struct Fetch;

impl Verb for Fetch {
    const NAME: &'static str = "git.fetch";
    const SUMMARY: &'static str = "Fetch; the refs it updated";
    const KIND: VerbKind = VerbKind::Exec;
    const EFFECTS: &'static [Effect] = &[Effect::ReadsRepo, Effect::WritesRepo, Effect::Network];
    const PROGRAMS: &'static [&'static str] = &["git"];
    type Args = FetchArgs;
    type Output = FetchResult;

    fn plan(args: &FetchArgs) -> Result<Plan, OpError> {
        let mut c = git_write(&args.repo)
            .lit("fetch")
            .lit("--porcelain")
            .lit("--no-recurse-submodules")
            .timeout_ms(TIMEOUT_MS);
        if args.prune {
            c = c.lit("--prune");
        }
        Ok(Plan::Exec(with_remote(c, &args.remote, &args.refspecs)?.into()))
    }

    fn map(args: &FetchArgs, outcome: &Outcome) -> Result<FetchResult, OpError> {
        transport_errors(outcome, &args.remote)?;
        if outcome.exit_code != Some(0)
            && outcome.stderr_text().contains("unknown option `porcelain'")
        {
            return Err(errors::unavailable(
                "git.fetch needs git 2.41 or later (fetch --porcelain)",
            ));
        }
        // A rejected ref (a non-fast-forward into a branch) makes fetch
        // exit 1 after it reported every ref.
        let refs = parse_fetch(&outcome.stdout_text())?;
        if outcome.exit_code != Some(0) && refs.is_empty() {
            outcome.success()?;
        }
        Ok(FetchResult { remote: args.remote.clone(), refs })
    }
}

// `git.fetch`'s result.
#[derive(Serialize, JsonSchema)]
pub struct FetchResult {
    /// the remote's name, as given
    remote: String,
    /// every local ref the fetch changed (FETCH_HEAD for a refspec without dst)
    refs: Vec<FetchedRef>,
}

/// `git.push` args.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PushArgs {
    /// the remote, by name (its URL is the repository's config)
    #[serde(default = "origin")]
    #[schemars(length(min = 1, max = 100), regex(pattern = "^[A-Za-z0-9][A-Za-z0-9._-]*$"))]
    remote: String,
    /// what to push (default: git's push.default, usually the current branch to its upstream)
    #[serde(default)]
    #[schemars(length(max = 64))]
    refspecs: Vec<Refspec>,
    /// overwrite a remote branch only if it is still where this repository last fetched it (--force-with-lease)
    #[serde(default)]
    force_with_lease: bool,
    /// make the pushed branches track the remote ones (--set-upstream)
    #[serde(default)]
    set_upstream: bool,
    #[serde(flatten)]
    repo: Repo,
}

// One ref a push reported.
#[derive(Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct PushedRef {
    pub status: PushStatus,
    pub from: String,
    pub to: String,
    /// old..new, [new branch], [rejected], …
    pub summary: String,
    /// why a ref was rejected (non-fast-forward, stale info, …)
    pub reason: Option<String>,
}

// What a push did to a ref (push --porcelain's flag).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PushStatus {
    FastForward,
    Forced,
    Deleted,
    New,
    Rejected,
    UpToDate,
}

/// Parse push's porcelain output: `To <url>`, then `<flag>\t<from>:<to>\t<summary>[ (<reason>)]`, then `Done`.
pub fn parse_push(stdout: &str) -> Result<(Option<String>, Vec<PushedRef>), OpError> {
    let mut url = None;
    let mut refs = Vec::new();
    for line in stdout.lines().filter(|l| !l.is_empty()) {
        if let Some(u) = line.strip_prefix("To ") {
            url = Some(u.to_string());
            continue;
        }
        if line == "Done" {
            continue;
        }
        let bad = || {
            errors::invalid_output(&format!(
                "git push --porcelain printed a line verbgate cannot read: {line:?}"
            ))
        };
        let mut fields = line.splitn(3, '\t');
        let (flag, spec, summary) = (
            fields.next().ok_or_else(bad)?,
            fields.next().ok_or_else(bad)?,
            fields.next().unwrap_or_default(),
        );
        let status = match flag {
            " " => PushStatus::FastForward,
            "+" => PushStatus::Forced,
            "-" => PushStatus::Deleted,
            "*" => PushStatus::New,
            "!" => PushStatus::Rejected,
            "=" => PushStatus::UpToDate,
            _ => return Err(bad()),
        };
        let (from, to) = spec.split_once(':').ok_or_else(bad)?;
        let (summary, reason) = match summary.split_once(" (") {
            Some((s, r)) => (s, r.strip_suffix(')')),
            None => (summary, None),
        };
        refs.push(PushedRef {
            status,
            from: from.to_string(),
            to: to.to_string(),
            summary: summary.to_string(),
            reason: reason.map(str::to_string),
        });
    }
    Ok((url, refs))
}

/// `git.push`.
pub struct Push;

impl Verb for Push {
    const NAME: &'static str = "git.push";
    const SUMMARY: &'static str = "Push; each ref's outcome (no --force)";
    const KIND: VerbKind = VerbKind::Exec;
    // force_with_lease can replace a remote branch's history.
    const EFFECTS: &'static [Effect] =
        &[Effect::ReadsRepo, Effect::WritesRepo, Effect::Network, Effect::Destructive];
    const PROGRAMS: &'static [&'static str] = &["git"];
    type Args = PushArgs;
    type Output = PushResult;

    fn plan(args: &PushArgs) -> Result<Plan, OpError> {
        let mut c = git_write(&args.repo)
            .lit("push")
            .lit("--porcelain")
            .lit("--recurse-submodules=no")
            .lit("--no-signed")
            .timeout_ms(TIMEOUT_MS);
        if args.force_with_lease {
            c = c.lit("--force-with-lease");
        }
        if args.set_upstream {
            c = c.lit("--set-upstream");
        }
        Ok(Plan::Exec(with_remote(c, &args.remote, &args.refspecs)?.into()))
    }

    fn map(args: &PushArgs, outcome: &Outcome) -> Result<PushResult, OpError> {
        transport_errors(outcome, &args.remote)?;
        let (url, refs) = parse_push(&outcome.stdout_text())?;
        // A push that reached the remote reports every ref (and exits 1
        // when one was rejected); one that did not says why on stderr.
        if outcome.exit_code != Some(0) && refs.is_empty() {
            outcome.success()?;
        }
        Ok(PushResult {
            success: outcome.exit_code == Some(0),
            remote: args.remote.clone(),
            url,
            refs,
        })
    }
}

// `git.push`'s result.
#[derive(Serialize, JsonSchema)]
pub struct PushResult {
    /// every ref was accepted
    success: bool,
    /// the remote's name, as given
    remote: String,
    /// where git pushed, as it reports it
    url: Option<String>,
    refs: Vec<PushedRef>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use verbgate_plugin_sdk::serde_json::to_value as value;
    use verbgate_plugin_sdk::{Arg, Value};

    fn to_value(v: &impl Serialize) -> Value {
        value(v).unwrap()
    }

    #[test]
    fn porcelain_lines_parse() {
        let f = parse_fetch("* 0000000000000000000000000000000000000000 a3746d0f refs/remotes/origin/main\n  1111 2222 refs/remotes/origin/dev\n- 3333 0000 refs/remotes/origin/gone\n").unwrap();
        assert_eq!(
            to_value(&f[0]),
            json!({ "status": "new", "old": "0000000000000000000000000000000000000000", "new": "a3746d0f", "ref": "refs/remotes/origin/main" })
        );
        assert_eq!((f[1].status, f[2].status), (FetchStatus::FastForward, FetchStatus::Pruned));
        let (url, p) = parse_push("To file:///tmp/bare.git\n*\trefs/heads/a:refs/heads/a\t[new branch]\n!\trefs/heads/b:refs/heads/b\t[rejected] (non-fast-forward)\n \trefs/heads/c:refs/heads/c\t1a2b..3c4d\nDone\n").unwrap();
        assert_eq!(url.as_deref(), Some("file:///tmp/bare.git"));
        assert_eq!(
            to_value(&p[1]),
            json!({ "status": "rejected", "from": "refs/heads/b", "to": "refs/heads/b", "summary": "[rejected]", "reason": "non-fast-forward" })
        );
        assert_eq!((p[2].status, p[2].summary.as_str()), (PushStatus::FastForward, "1a2b..3c4d"));
        assert!(parse_push("?\tx\ty\n").is_err());
    }

    #[test]
    fn refspecs_are_typed_and_never_force() {
        let Plan::Exec(c) = crate::Git::plan(
            "git.push",
            r#"{"refspecs":[{"src":"HEAD","dst":"refs/heads/topic"}],"force_with_lease":true}"#,
        )
        .unwrap() else {
            panic!("not exec")
        };
        let values: Vec<&str> = c
            .args
            .iter()
            .filter_map(|a| if let Arg::Value(v) = a { Some(v.as_str()) } else { None })
            .collect();
        assert_eq!(values, ["origin", "HEAD:refs/heads/topic"]);
        assert!(c.args.iter().any(|a| matches!(a, Arg::Literal(l) if l == "--force-with-lease")));
        assert!(!c
            .args
            .iter()
            .any(|a| matches!(a, Arg::Literal(l) if l == "--force" || l == "-f")));
        for bad in [
            r#"{"src":"+main"}"#,
            r#"{"src":"--force"}"#,
            r#"{"src":"a:b"}"#,
            r#"{"src":"main","dst":"-x"}"#,
        ] {
            let r: Refspec = verbgate_plugin_sdk::serde_json::from_str(bad).unwrap();
            assert_eq!(r.text().unwrap_err().code, "invalid_args", "{bad}");
        }
    }

    #[test]
    fn a_closed_transport_names_the_setting() {
        let o = Outcome::exited(128, "").with_stderr("fatal: transport 'file' not allowed\n");
        let e = crate::Git::map_result("git.fetch", "{}", &o).unwrap_err();
        assert_eq!(e.code, "unavailable");
        assert!(
            e.message.contains("[git] transports") && e.message.contains("`file`"),
            "{}",
            e.message
        );
        let o = Outcome::exited(
            1,
            "To /x\n!\trefs/heads/main:refs/heads/main\t[rejected] (fetch first)\nDone\n",
        );
        let v: Value = verbgate_plugin_sdk::serde_json::from_str(
            &crate::Git::map_result("git.push", "{}", &o).unwrap(),
        )
        .unwrap();
        assert_eq!(
            (v["success"].as_bool(), v["refs"][0]["reason"].as_str()),
            (Some(false), Some("fetch first"))
        );
    }
}
