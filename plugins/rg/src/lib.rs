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
//! The parsers ([`search`], [`files`], [`text`]) are plain functions over
//! bytes with their own tests; this file is the verb glue.

pub mod files;
pub mod search;
pub mod text;

use verbgate_plugin_sdk::{
    cmd, errors, json, plugin_info, verb, Args, Cmd, Effect, OpError, Outcome, Param, Plan, Plugin, PluginInfo, Schema, Value, VerbKind, VerbSpecExt,
};

struct Rg;

/// Default and largest `max_total` for `rg.search`.
const MAX_TOTAL_DEFAULT: i64 = 200;
const MAX_TOTAL_MAX: i64 = 10_000;
/// Default and largest `limit` for `rg.files`.
const FILES_DEFAULT: i64 = 1000;
const FILES_MAX: i64 = 100_000;
/// Most stderr lines kept as `errors`, and their length.
const ERROR_LINES: usize = 20;
const ERROR_LINE_BYTES: usize = 500;

/// The file-selection parameters both verbs share.
fn selection(s: Schema) -> Schema {
    s.param("paths", Param::strings("files or directories to search, relative to the root (default: the root)").min_length(1).max_items(64))
        .param("globs", Param::strings("include (`*.rs`) or exclude (`!target/**`) globs, as rg --glob").max_items(64))
        .param("types", Param::strings("file types, as rg --type (`rust`, `py`, `md`; `rg --type-list`)").max_items(32))
        .param("hidden", Param::boolean("also hidden files and directories").default(json!(false)))
        .param("ignored", Param::boolean("also files .gitignore/.ignore exclude").default(json!(false)))
}

/// `rg` with what every verb shares: no config file, nothing that runs a
/// program, no symlinks followed, a stable order.
fn rg() -> Cmd {
    cmd("rg").lit("--no-config").lit("--no-pre").lit("--no-search-zip").lit("--no-follow").lit("--sort=path")
}

/// Append the shared selection: flags and `--glob`/`--type` values, then
/// `--` and the confined paths (so a path can never be read as an option).
fn select(mut c: Cmd, args: &Args) -> Result<Cmd, OpError> {
    if args.bool_or("hidden", false)? {
        c = c.lit("--hidden");
    }
    if args.bool_or("ignored", false)? {
        c = c.lit("--no-ignore");
    }
    for g in args.strs("globs")? {
        c = c.opt("glob", g);
    }
    for t in args.strs("types")? {
        c = c.opt("type", t);
    }
    Ok(c)
}

fn paths(mut c: Cmd, args: &Args) -> Result<Cmd, OpError> {
    c = c.end_of_options();
    for p in args.strs("paths")? {
        c = c.path(p);
    }
    Ok(c)
}

fn search_limits(args: &Args) -> Result<search::Limits, OpError> {
    Ok(search::Limits {
        before: args.u64("before")?.unwrap_or(0),
        after: args.u64("after")?.unwrap_or(0),
        max_total: args.u64("max_total")?.unwrap_or(MAX_TOTAL_DEFAULT as u64) as usize,
        max_per_file: args.u64("max_per_file")?,
    })
}

/// rg's stderr lines (files it could not read), bounded.
fn stderr_lines(outcome: &Outcome) -> Vec<String> {
    String::from_utf8_lossy(&outcome.stderr)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .take(ERROR_LINES)
        .map(|l| {
            let end = (0..=l.len().min(ERROR_LINE_BYTES)).rev().find(|i| l.is_char_boundary(*i)).unwrap_or(0);
            l[..end].to_string()
        })
        .collect()
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
            Some(errors::op_error("invalid_args", &format!("ripgrep refused the search: {why}"), Some(json!({ "stderr": why }))))
        }
        _ => Some(errors::exit_nonzero(outcome)),
    }
}

impl Plugin for Rg {
    fn describe() -> PluginInfo {
        let search = Schema::new()
            .param(
                "pattern",
                Param::string("a regular expression (Rust regex syntax), or a literal string with `fixed`").min_length(1).max_length(4096).required(),
            )
            .param("fixed", Param::boolean("treat the pattern as a literal string").default(json!(false)))
            .param(
                "case",
                Param::string("sensitive (default), insensitive, or smart (insensitive unless the pattern has upper case)").one_of(&[
                    "sensitive",
                    "insensitive",
                    "smart",
                ]),
            );
        let search = selection(search)
            .param("before", Param::integer("context lines before each match").min(0).max(100))
            .param("after", Param::integer("context lines after each match").min(0).max(100))
            .param("max_per_file", Param::integer("most matching lines per file").min(1).max(MAX_TOTAL_MAX))
            .param("max_total", Param::integer("most matches returned in all").min(1).max(MAX_TOTAL_MAX).default(json!(MAX_TOTAL_DEFAULT)));
        let files = selection(Schema::new()).param("limit", Param::integer("most files returned").min(1).max(FILES_MAX).default(json!(FILES_DEFAULT)));
        plugin_info(
            "rg",
            "0.1.0",
            vec![
                verb("rg.search", VerbKind::Exec, "Search files (ripgrep): matches with context, counts", search)
                    .programs(&["rg"])
                    // rg reads files; with no config, preprocessor or
                    // decompressor it runs nothing else.
                    .effects(&[Effect::ReadsRepo])
                    .result_schema(search::result_schema()),
                verb("rg.files", VerbKind::Exec, "Files ripgrep would search (honours .gitignore)", files)
                    .programs(&["rg"])
                    // rg reads files; with no config, preprocessor or
                    // decompressor it runs nothing else.
                    .effects(&[Effect::ReadsRepo])
                    .result_schema(files::result_schema()),
            ],
        )
    }

    fn plan(verb: &str, args: &Args) -> Result<Plan, OpError> {
        let c = match verb {
            "rg.search" => {
                let limits = search_limits(args)?;
                let mut c = rg().lit("--json");
                c = match args.str("case")?.unwrap_or("sensitive") {
                    "insensitive" => c.lit("--ignore-case"),
                    "smart" => c.lit("--smart-case"),
                    _ => c.lit("--case-sensitive"),
                };
                if args.bool_or("fixed", false)? {
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
                c = select(c, args)?;
                // `--regexp=<pattern>`: a pattern such as `--pre=evil` is a
                // pattern, never an option.
                c = c.opt("regexp", args.req_str("pattern")?);
                paths(c, args)?
            }
            "rg.files" => paths(select(rg().lit("--files").lit("--null"), args)?, args)?,
            other => return Err(errors::unknown_verb(other)),
        };
        // A search of a large tree can print more than the host keeps: keep
        // what fits and say `truncated`, rather than fail.
        Ok(Plan::Exec(c.truncate_stdout().into()))
    }

    fn map_result(verb: &str, args: &Args, outcome: &Outcome) -> Result<Value, OpError> {
        match verb {
            "rg.search" => {
                let s = search::parse(&outcome.stdout, search_limits(args)?, outcome.stdout_truncated).map_err(|e| errors::invalid_output(&e.0))?;
                if let Some(e) = refused(outcome, s.stats.is_some()) {
                    return Err(e);
                }
                Ok(s.to_json(&stderr_lines(outcome)))
            }
            "rg.files" => {
                if let Some(e) = refused(outcome, !outcome.stdout.is_empty()) {
                    return Err(e);
                }
                let limit = args.u64("limit")?.unwrap_or(FILES_DEFAULT as u64) as usize;
                let mut r = files::parse(&outcome.stdout, limit, outcome.stdout_truncated);
                r["errors"] = json!(stderr_lines(outcome));
                Ok(r)
            }
            other => Err(errors::unknown_verb(other)),
        }
    }
}

verbgate_plugin_sdk::plugin!(Rg);
