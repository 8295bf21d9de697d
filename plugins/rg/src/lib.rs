//! The bundled `rg` plugin: `rg.search` maps ripgrep's `--json` messages
//! (never its human output) into matches with context, per-file counts and
//! rg's statistics; `rg.files` lists the files rg would search.
//!
//! rg must never run a program or read outside the root because of its
//! input or its environment, so every command carries `--no-config` (a
//! `RIPGREP_CONFIG_PATH` could otherwise add `--pre=<program>`), the
//! explicit negations `--no-pre`, `--no-search-zip` (which starts `gzip`,
//! `xz`, … per file) and `--no-follow`, and no parameter can reach any of
//! them: the pattern travels as `--regexp=<pattern>`, globs and types as
//! `--glob=`/`--type=` values, and paths after `--` as confined paths.
//!
//! Ignore files are the one thing rg reads that no parameter names, and
//! rg reads them through symlinks whatever `--no-follow` says, quoting in
//! its errors every line that is not a valid glob. So:
//!
//! - `--no-ignore-global`: no global gitignore (`core.excludesFile` from
//!   the user's git config, `$XDG_CONFIG_HOME/git/ignore`,
//!   `~/.config/git/ignore` — `HOME` reaches rg through `env_allow`): a
//!   file outside the root, which would also hide files of the root;
//! - `--no-ignore-parent`: rules from ignore files in the directories
//!   above the root do not hide files in it. rg still *reads* those files
//!   (to find repositories), so the host's rg guard checks them — and the
//!   ignore files in every directory searched, which must not be links or
//!   anything but small regular files (`plan_refused`) — before rg runs;
//! - rg's errors keep the file and line number of an ignore-file line it
//!   cannot parse, never the line itself ([`stderr_lines`]).
//!
//! The parsers ([`search`], [`files`], [`text`]) are plain functions over
//! bytes with their own tests; this file is the verb glue.

pub mod files;
pub mod search;
pub mod text;

use schemars::JsonSchema;
use serde::Deserialize;
use verbgate_plugin_sdk::{
    cmd, errors, json, Cmd, Effect, ErrorCode, OpError, Outcome, Plan, Verb, VerbKind,
};

/// Default `limit` for `rg.search`.
const MAX_TOTAL_DEFAULT: u64 = 200;
/// Default `limit` for `rg.files`.
const FILES_DEFAULT: u64 = 1000;
/// Most stderr lines kept as `errors`, and their length.
const ERROR_LINES: usize = 20;
const ERROR_LINE_BYTES: usize = 500;

/// The file-selection parameters both verbs share.
#[derive(Deserialize, JsonSchema)]
struct Selection {
    /// files or directories to search, relative to the root (default: the root)
    #[serde(default)]
    #[schemars(length(min = 1, max = 64))]
    paths: Vec<String>,
    /// include (`*.rs`) or exclude (`!target/**`) globs, as rg --glob
    #[serde(default)]
    #[schemars(length(max = 64))]
    globs: Vec<String>,
    /// file types, as rg --type (`rust`, `py`, `md`; `rg --type-list`)
    #[serde(default)]
    #[schemars(length(max = 32))]
    types: Vec<String>,
    /// also hidden files and directories
    #[serde(default)]
    hidden: bool,
    /// also files .gitignore/.ignore exclude
    #[serde(default)]
    ignored: bool,
}

/// How `rg.search` treats letter case.
#[derive(Deserialize, JsonSchema, Clone, Copy, Default)]
#[serde(rename_all = "snake_case")]
enum Case {
    // Plain comments: documented variants would become a `oneOf`.
    // rg's default.
    #[default]
    Sensitive,
    // --ignore-case.
    Insensitive,
    // Insensitive unless the pattern has upper case.
    Smart,
}

/// `rg.search` args.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SearchArgs {
    /// a regular expression (Rust regex syntax), or a literal string with `fixed`
    #[schemars(length(min = 1, max = 4096))]
    pattern: String,
    /// treat the pattern as a literal string
    #[serde(default)]
    fixed: bool,
    /// sensitive (default), insensitive, or smart (insensitive unless the pattern has upper case)
    case: Option<Case>,
    #[serde(flatten)]
    select: Selection,
    /// context lines before each match
    #[schemars(range(max = 100))]
    before: Option<u64>,
    /// context lines after each match
    #[schemars(range(max = 100))]
    after: Option<u64>,
    /// most matching lines per file
    #[schemars(range(min = 1, max = 10000))]
    per_file: Option<u64>,
    /// most matches returned in all (default 200)
    #[schemars(range(min = 1, max = 10000))]
    limit: Option<u64>,
}

/// `rg.files` args.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct FilesArgs {
    #[serde(flatten)]
    select: Selection,
    /// most files returned (default 1000)
    #[schemars(range(min = 1, max = 100000))]
    limit: Option<u64>,
}

/// `rg` with what every verb shares: no config file, nothing that runs a
/// program, no symlinks followed, no ignore rules from outside the root
/// (the global gitignore, the directories above), a stable order.
fn rg() -> Cmd {
    cmd("rg")
        .lit("--no-config")
        .lit("--no-pre")
        .lit("--no-search-zip")
        .lit("--no-follow")
        .lit("--no-ignore-global")
        .lit("--no-ignore-parent")
        .lit("--sort=path")
}

/// Append the shared selection: flags and `--glob`/`--type` values.
fn select(mut c: Cmd, s: &Selection) -> Cmd {
    if s.hidden {
        c = c.lit("--hidden");
    }
    if s.ignored {
        c = c.lit("--no-ignore");
    }
    for g in &s.globs {
        c = c.opt("glob", g);
    }
    for t in &s.types {
        c = c.opt("type", t);
    }
    c
}

/// `--` and the confined paths, so a path can never be read as an option.
fn paths(mut c: Cmd, s: &Selection) -> Cmd {
    c = c.end_of_options();
    for p in &s.paths {
        c = c.path(p);
    }
    c
}

fn search_limits(args: &SearchArgs) -> search::Limits {
    search::Limits {
        before: args.before.unwrap_or(0),
        after: args.after.unwrap_or(0),
        max_total: args.limit.unwrap_or(MAX_TOTAL_DEFAULT) as usize,
        max_per_file: args.per_file,
    }
}

/// rg's stderr lines (files it could not read), bounded, without the
/// ignore-file lines rg quotes ([`withhold_ignore_line`]).
fn stderr_lines(outcome: &Outcome) -> Vec<String> {
    String::from_utf8_lossy(&outcome.stderr)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .take(ERROR_LINES)
        .map(|l| {
            let l = withhold_ignore_line(l);
            let end = (0..=l.len().min(ERROR_LINE_BYTES))
                .rev()
                .find(|i| l.is_char_boundary(*i))
                .unwrap_or(0);
            l[..end].to_string()
        })
        .collect()
}

/// What rg writes for an ignore-file line that is not a valid glob:
/// `<file>: line <n>: error parsing glob '<the line>': <why>`. An ignore
/// file rg reads may lie outside the root (above it, or where a `.git`
/// file points), so the line itself is dropped: the file and line number
/// are enough to fix a typo. A bad `--glob` (the caller's own text, with
/// no `line <n>:`) is kept as it is.
fn withhold_ignore_line(line: &str) -> String {
    const MARK: &str = "error parsing glob";
    let Some(at) = line.find(MARK) else { return line.to_string() };
    let before = &line[..at];
    let numbered = before
        .strip_suffix(": ")
        .and_then(|b| b.rsplit_once(": line "))
        .is_some_and(|(_, n)| !n.is_empty() && n.bytes().all(|c| c.is_ascii_digit()));
    if !numbered {
        return line.to_string();
    }
    format!("{before}{MARK} (the line is not shown: ignore files may lie outside the root)")
}

/// rg exits 0 (found), 1 (nothing found) or 2 (an error). With exit 2 and
/// nothing searched — a bad regex, an unknown type, a bad glob — the
/// caller's arguments are at fault; anything else that is not a clean exit
/// is the program failing.
fn refused(outcome: &Outcome, searched: bool) -> Option<OpError> {
    if outcome.stdout_truncated {
        // The host stopped rg at its capture bound: the exit is the stop.
        return None;
    }
    match outcome.exit_code {
        Some(0 | 1) => None,
        Some(2) if searched => None,
        Some(2) => {
            let why = stderr_lines(outcome).join("; ");
            Some(errors::op_error(
                ErrorCode::InvalidArgs,
                &format!("ripgrep refused the search: {why}"),
                Some(json!({ "stderr": why })),
            ))
        }
        _ => Some(errors::exit_nonzero(outcome)),
    }
}

/// `rg.search`.
struct Search;

impl Verb for Search {
    const NAME: &'static str = "rg.search";
    const SUMMARY: &'static str = "ripgrep: matches with context";
    const KIND: VerbKind = VerbKind::Exec;
    const PROGRAMS: &'static [&'static str] = &["rg"];
    // rg reads files; with no config, preprocessor or decompressor it runs
    // nothing else.
    const EFFECTS: &'static [Effect] = &[Effect::ReadsRepo];
    type Args = SearchArgs;
    type Output = search::SearchResult;

    fn plan(args: &SearchArgs) -> Result<Plan, OpError> {
        let limits = search_limits(args);
        let mut c = rg().lit("--json");
        c = match args.case.unwrap_or_default() {
            Case::Sensitive => c.lit("--case-sensitive"),
            Case::Insensitive => c.lit("--ignore-case"),
            Case::Smart => c.lit("--smart-case"),
        };
        if args.fixed {
            c = c.lit("--fixed-strings");
        }
        if limits.before > 0 {
            c = c.lit_owned(format!("--before-context={}", limits.before));
        }
        if limits.after > 0 {
            c = c.lit_owned(format!("--after-context={}", limits.after));
        }
        if let Some(n) = limits.max_per_file {
            c = c.lit_owned(format!("--max-count={n}"));
        }
        // `--regexp=<pattern>`: a pattern such as `--pre=evil` is a pattern,
        // never an option.
        c = select(c, &args.select).opt("regexp", &args.pattern);
        // A search of a large tree can print more than the host keeps: keep
        // what fits and say `truncated`, rather than fail.
        Ok(Plan::Exec(paths(c, &args.select).truncate_stdout().into()))
    }

    fn map(args: &SearchArgs, outcome: &Outcome) -> Result<search::SearchResult, OpError> {
        let s = search::parse(&outcome.stdout, search_limits(args), outcome.stdout_truncated)
            .map_err(|e| errors::invalid_output(&e.0))?;
        if let Some(e) = refused(outcome, s.stats.is_some()) {
            return Err(e);
        }
        Ok(s.into_result(stderr_lines(outcome)))
    }
}

/// `rg.files`.
struct Files;

impl Verb for Files {
    const NAME: &'static str = "rg.files";
    const SUMMARY: &'static str = "List files (ripgrep)";
    const KIND: VerbKind = VerbKind::Exec;
    const PROGRAMS: &'static [&'static str] = &["rg"];
    const EFFECTS: &'static [Effect] = &[Effect::ReadsRepo];
    type Args = FilesArgs;
    type Output = files::FilesResult;

    fn plan(args: &FilesArgs) -> Result<Plan, OpError> {
        let c = select(rg().lit("--files").lit("--null"), &args.select);
        Ok(Plan::Exec(paths(c, &args.select).truncate_stdout().into()))
    }

    fn map(args: &FilesArgs, outcome: &Outcome) -> Result<files::FilesResult, OpError> {
        if let Some(e) = refused(outcome, !outcome.stdout.is_empty()) {
            return Err(e);
        }
        let r = files::parse(
            &outcome.stdout,
            args.limit.unwrap_or(FILES_DEFAULT) as usize,
            outcome.stdout_truncated,
        );
        Ok(files::FilesResult { errors: stderr_lines(outcome), ..r })
    }
}

verbgate_plugin_sdk::plugin!(Rg { name: "rg", version: "0.1.0", verbs: [Search, Files] });

#[cfg(test)]
mod tests {
    use super::*;
    use verbgate_plugin_sdk::serde_json;

    fn argv(plan: Plan) -> Vec<String> {
        let Plan::Exec(c) = plan else { panic!("an exec plan") };
        c.args
            .into_iter()
            .map(|a| match a {
                verbgate_plugin_sdk::Arg::Literal(s)
                | verbgate_plugin_sdk::Arg::Value(s)
                | verbgate_plugin_sdk::Arg::Path(s) => s,
                verbgate_plugin_sdk::Arg::Option(o) => format!("--{}={}", o.name, o.value),
                verbgate_plugin_sdk::Arg::EndOfOptions => "--".into(),
            })
            .collect()
    }

    #[test]
    fn caller_text_is_never_an_option() {
        let args: SearchArgs = serde_json::from_value(
            json!({"pattern": "--pre=evil", "globs": ["--pre=x"], "paths": ["--pre=y"]}),
        )
        .unwrap();
        let a = argv(Search::plan(&args).unwrap());
        assert_eq!(
            &a[..7],
            [
                "--no-config",
                "--no-pre",
                "--no-search-zip",
                "--no-follow",
                "--no-ignore-global",
                "--no-ignore-parent",
                "--sort=path"
            ]
        );
        let end = a.iter().position(|x| x == "--").unwrap();
        assert!(
            a.contains(&"--regexp=--pre=evil".to_string())
                && a.contains(&"--glob=--pre=x".to_string())
        );
        assert_eq!(&a[end + 1..], ["--pre=y"], "paths only after --");
    }

    #[test]
    fn exit_two_without_a_summary_is_the_callers_mistake() {
        let args: SearchArgs = serde_json::from_value(json!({"pattern": "("})).unwrap();
        let bad = Outcome::exited(2, "")
            .with_stderr("rg: regex parse error:\n    (\n    ^\nerror: unclosed group\n");
        let e = Search::map(&args, &bad).unwrap_err();
        assert_eq!(e.code, "invalid_args");
        assert!(e.message.contains("unclosed group"), "{}", e.message);
        let none = Search::map(&args, &Outcome::exited(1, "")).unwrap();
        assert!(none.matches.is_empty());
    }

    #[test]
    fn both_verbs_read_no_ignore_rules_from_outside_the_root() {
        let search: SearchArgs = serde_json::from_value(json!({"pattern": "x"})).unwrap();
        let files: FilesArgs = serde_json::from_value(json!({})).unwrap();
        for a in [argv(Search::plan(&search).unwrap()), argv(Files::plan(&files).unwrap())] {
            let end = a.iter().position(|x| x == "--").unwrap();
            for flag in ["--no-ignore-global", "--no-ignore-parent", "--no-follow", "--no-config"] {
                assert!(a[..end].contains(&flag.to_string()), "{flag} in {a:?}");
            }
        }
    }

    #[test]
    fn ignore_file_lines_rg_quotes_are_withheld() {
        let stderr = "rg: ./.gitignore: line 1: error parsing glob 'SECRET-{': unclosed alternate group; missing '}'\n\
                      /home/u/.ignore: line 22: error parsing glob 'SECRET-[z-a]': invalid range; 'z' > 'a'\n\
                      rg: error parsing glob 'a{': unclosed alternate group\n\
                      rg: ./x: Permission denied (os error 13)\n";
        let args: SearchArgs = serde_json::from_value(json!({"pattern": "x"})).unwrap();
        let r = serde_json::to_value(
            Search::map(&args, &Outcome::exited(1, "").with_stderr(stderr)).unwrap(),
        )
        .unwrap();
        let errors = r["errors"].as_array().unwrap();
        assert!(!r.to_string().contains("SECRET"), "{r}");
        assert!(
            errors[0]
                .as_str()
                .unwrap()
                .starts_with("rg: ./.gitignore: line 1: error parsing glob (the line is not shown"),
            "{r}"
        );
        assert!(
            errors[1]
                .as_str()
                .unwrap()
                .starts_with("/home/u/.ignore: line 22: error parsing glob (the line is not shown"),
            "{r}"
        );
        assert_eq!(
            errors[2], "rg: error parsing glob 'a{': unclosed alternate group",
            "the caller's own glob is shown"
        );
        assert_eq!(errors[3], "rg: ./x: Permission denied (os error 13)");
    }
}
