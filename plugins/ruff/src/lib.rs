//! The bundled `ruff` plugin: `ruff.check` (lint findings), `ruff.format_check`
//! (the files `ruff format` would change, each with its edit) and
//! `ruff.format` (the write).
//!
//! Findings come from `--output-format json` only — code, message, place,
//! and the fix ruff offers with its applicability (`safe`, `unsafe`,
//! `display-only`) — which `ruff check` and `ruff format --check` write in
//! the same shape. `ruff.check` never fixes (`--fix` is in no plan).
//! `ruff format` has no machine output of the files it rewrote, so
//! `ruff.format` reports what its exit status says
//! (`--exit-non-zero-on-format`: whether any file changed); put
//! `ruff.format_check` before it in one batch to learn which files and how
//! (a batch runs a write after the reads before it).
//!
//! `--no-cache` everywhere: no `.ruff_cache` is written into the project.
//! ruff runs no project code (its configuration is data). Paths in results
//! are as ruff reports them (absolute).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use verbgate_plugin_sdk::{
    cmd, errors, json, serde_json, Cmd, Effect, OpError, Outcome, OutcomeExt, Plan, Value, Verb,
    VerbKind,
};

/// Findings listed; `counts` covers every finding read.
pub const LISTED: usize = 2000;

/// The parameters every ruff verb shares.
#[derive(Deserialize, JsonSchema)]
struct Common {
    /// files or directories, relative to dir (default: the project ruff finds in dir)
    #[serde(default)]
    #[schemars(length(max = 256), inner(length(min = 1)))]
    paths: Vec<String>,
    /// directory to run in (where ruff looks for its configuration), relative to the root
    #[schemars(length(min = 1))]
    dir: Option<String>,
}

/// `ruff <sub>` with the shared settings.
fn ruff(common: &Common, sub: &'static str) -> Cmd {
    let mut c = cmd("ruff").env("NO_COLOR", "1").lit(sub).lit("--no-cache");
    if let Some(dir) = &common.dir {
        c = c.cwd(dir);
    }
    c
}

/// The paths, after `--` (ruff reads operands there, so a caller's path is
/// never an option), confined by the host.
fn with_paths(mut c: Cmd, common: &Common) -> Cmd {
    if common.paths.is_empty() {
        return c;
    }
    c = c.end_of_options();
    for p in &common.paths {
        c = c.path(p);
    }
    c
}

/// The elements of a JSON array in `text`, up to the last whole one when
/// the text was cut; whether it was whole.
pub fn array_prefix(text: &[u8]) -> Result<(Vec<Value>, bool), String> {
    if let Ok(Value::Array(all)) = serde_json::from_slice::<Value>(text) {
        return Ok((all, true));
    }
    let mut at =
        text.iter().position(|b| *b == b'[').ok_or("ruff's output is not a JSON list")? + 1;
    let mut items = Vec::new();
    loop {
        while at < text.len() && (text[at] == b',' || text[at].is_ascii_whitespace()) {
            at += 1;
        }
        let mut stream = serde_json::Deserializer::from_slice(&text[at..]).into_iter::<Value>();
        match stream.next() {
            Some(Ok(v)) => {
                at += stream.byte_offset();
                items.push(v);
            }
            _ => return Ok((items, false)),
        }
    }
}

/// ruff's JSON diagnostics → the result of `ruff.check` and
/// `ruff.format_check`.
fn findings(outcome: &Outcome) -> Result<Findings, OpError> {
    let (items, whole) = array_prefix(&outcome.stdout).map_err(|e| errors::invalid_output(&e))?;
    if !whole && !outcome.stdout_truncated {
        return Err(errors::invalid_output(
            "ruff's JSON output ends early although the host kept all of it",
        ));
    }
    let text = |v: &Value| v.as_str().map(str::to_string);
    let fixable = items.iter().filter(|d| d["fix"].is_object()).count();
    let listed = items
        .iter()
        .take(LISTED)
        .map(|d| Finding {
            file: text(&d["filename"]).unwrap_or_default(),
            line: d["location"]["row"].as_u64(),
            column: d["location"]["column"].as_u64(),
            end_line: d["end_location"]["row"].as_u64(),
            end_column: d["end_location"]["column"].as_u64(),
            code: text(&d["code"]),
            name: text(&d["name"]),
            message: text(&d["message"]).unwrap_or_default(),
            fix: d["fix"].is_object().then(|| Fix {
                applicability: text(&d["fix"]["applicability"]).unwrap_or_default(),
                message: text(&d["fix"]["message"]),
                edits: d["fix"]["edits"].as_array().cloned().unwrap_or_default(),
            }),
            url: text(&d["url"]),
        })
        .collect();
    Ok(Findings {
        success: outcome.exit_code == Some(0),
        exit_code: outcome.exit_code,
        counts: Counts { findings: items.len(), fixable },
        findings: listed,
        truncated: !whole || items.len() > LISTED,
    })
}

// The result of `ruff.check` and `ruff.format_check` (a plain comment, as
// on every result type: a type's doc comment would become its schema's
// description).
#[derive(Serialize, JsonSchema)]
struct Findings {
    /// nothing found (ruff's exit 0)
    success: bool,
    exit_code: Option<i32>,
    counts: Counts,
    findings: Vec<Finding>,
    /// ruff's output outgrew the host's capture bound, or more than 2000 findings: counts cover what was read
    truncated: bool,
}

// Findings read, and those with a fix.
#[derive(Serialize, JsonSchema)]
struct Counts {
    findings: usize,
    fixable: usize,
}

// One diagnostic of ruff's.
#[derive(Serialize, JsonSchema)]
struct Finding {
    /// as ruff reports it (absolute)
    file: String,
    line: Option<u64>,
    column: Option<u64>,
    end_line: Option<u64>,
    end_column: Option<u64>,
    /// the rule (F401), unformatted, or invalid-syntax
    code: Option<String>,
    name: Option<String>,
    message: String,
    /// the fix ruff offers: applicability safe (ruff --fix applies it), unsafe (--unsafe-fixes) or display-only, and its edits
    fix: Option<Fix>,
    url: Option<String>,
}

// A fix ruff offers.
#[derive(Serialize, JsonSchema)]
struct Fix {
    applicability: String,
    message: Option<String>,
    // The edits, as ruff writes them (content and locations).
    edits: Vec<Value>,
}

/// Exit 2: ruff could not do its job (a bad configuration, a path that
/// does not exist); its reason is on stderr.
fn failed(outcome: &Outcome, what: &str) -> OpError {
    let mut e = errors::exit_nonzero(outcome);
    e.message = format!("{what}: {}", e.message.trim_start_matches("the program "));
    e
}

/// `ruff.check` args.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct CheckArgs {
    /// only these rules or rule prefixes (F401, E, UP), instead of the configured ones
    #[serde(default)]
    #[schemars(length(max = 64), inner(regex(pattern = "^[A-Z]+[0-9]*$")))]
    select: Vec<String>,
    #[serde(flatten)]
    common: Common,
}

/// `ruff.check`.
struct Check;

impl Verb for Check {
    const NAME: &'static str = "ruff.check";
    const SUMMARY: &'static str = "Lint findings, fixes offered (no --fix)";
    const KIND: VerbKind = VerbKind::Exec;
    const EFFECTS: &'static [Effect] = &[Effect::ReadsRepo];
    const PROGRAMS: &'static [&'static str] = &["ruff"];
    type Args = CheckArgs;
    type Output = Findings;

    fn plan(args: &CheckArgs) -> Result<Plan, OpError> {
        let mut c = ruff(&args.common, "check").lit("--output-format=json").truncate_stdout();
        if !args.select.is_empty() {
            c = c.opt("select", args.select.join(","));
        }
        Ok(Plan::Exec(with_paths(c, &args.common).into()))
    }

    fn map(_: &CheckArgs, outcome: &Outcome) -> Result<Findings, OpError> {
        if outcome.exit_code == Some(2)
            || (outcome.exit_code != Some(0)
                && outcome.exit_code != Some(1)
                && !outcome.stdout_truncated)
        {
            return Err(failed(outcome, "ruff check could not run"));
        }
        findings(outcome)
    }
}

/// `ruff.format_check` and `ruff.format` args.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct FormatArgs {
    #[serde(flatten)]
    common: Common,
}

/// `ruff.format_check`.
struct FormatCheck;

impl Verb for FormatCheck {
    const NAME: &'static str = "ruff.format_check";
    const SUMMARY: &'static str = "What ruff.format would change";
    const KIND: VerbKind = VerbKind::Exec;
    const EFFECTS: &'static [Effect] = &[Effect::ReadsRepo];
    const PROGRAMS: &'static [&'static str] = &["ruff"];
    type Args = FormatArgs;
    type Output = Findings;

    fn plan(args: &FormatArgs) -> Result<Plan, OpError> {
        let c = ruff(&args.common, "format")
            .lit("--check")
            .lit("--output-format=json")
            .truncate_stdout();
        Ok(Plan::Exec(with_paths(c, &args.common).into()))
    }

    fn map(_: &FormatArgs, outcome: &Outcome) -> Result<Findings, OpError> {
        // Exit 1: some file would change; 2: some file does not parse
        // (listed as invalid-syntax) — or ruff could not run, with nothing
        // on stdout.
        if outcome.exit_code == Some(2) && outcome.stdout_text().trim().is_empty() {
            return Err(failed(outcome, "ruff format --check could not run"));
        }
        findings(outcome)
    }
}

/// `ruff.format`.
struct Format;

impl Verb for Format {
    const NAME: &'static str = "ruff.format";
    const SUMMARY: &'static str = "Format files; whether any changed";
    const KIND: VerbKind = VerbKind::Exec;
    const EFFECTS: &'static [Effect] = &[Effect::ReadsRepo, Effect::WritesRepo];
    const PROGRAMS: &'static [&'static str] = &["ruff"];
    type Args = FormatArgs;
    type Output = Formatted;

    fn plan(args: &FormatArgs) -> Result<Plan, OpError> {
        Ok(Plan::Exec(
            with_paths(ruff(&args.common, "format").lit("--exit-non-zero-on-format"), &args.common)
                .into(),
        ))
    }

    fn map(_: &FormatArgs, outcome: &Outcome) -> Result<Formatted, OpError> {
        match outcome.exit_code {
            Some(0) => Ok(Formatted { changed: false }),
            Some(1) => Ok(Formatted { changed: true }),
            _ => {
                // Exit 2: a file did not parse (ruff still formatted the
                // others), or ruff could not run at all.
                let mut e = failed(outcome, "ruff format did not format every file (files it could parse may have been rewritten)");
                e.details = Some(json!({ "exit_code": outcome.exit_code, "stderr": outcome.stderr_text().trim(), "wrote": "possibly" }).to_string());
                Err(e)
            }
        }
    }
}

// `ruff.format`'s result.
#[derive(Serialize, JsonSchema)]
struct Formatted {
    /// ruff rewrote at least one file (its exit status under --exit-non-zero-on-format); ruff.format_check before it in the batch lists which
    changed: bool,
}

verbgate_plugin_sdk::plugin!(Ruff {
    name: "ruff",
    version: "0.1.0",
    verbs: [Check, FormatCheck, Format]
});

#[cfg(test)]
mod tests {
    use super::*;
    use verbgate_plugin_sdk::Arg;

    const OUT: &str = r#"[{"cell":null,"code":"F401","end_location":{"column":10,"row":1},"filename":"/r/pkg/a.py","fix":{"applicability":"safe","edits":[{"content":"","end_location":{"column":1,"row":2},"location":{"column":1,"row":1}}],"message":"Remove unused import: `os`"},"location":{"column":8,"row":1},"message":"`os` imported but unused","name":"unused-import","noqa_row":1,"severity":"error","url":"https://docs.astral.sh/ruff/rules/unused-import"},
{"cell":null,"code":"E711","end_location":{"column":19,"row":5},"filename":"/r/pkg/a.py","fix":null,"location":{"column":15,"row":5},"message":"Comparison to `None` should be `cond is None`","name":"none-comparison","noqa_row":5,"severity":"error","url":null}]"#;

    #[test]
    fn findings_carry_code_place_and_fix_applicability() {
        let v: Value = serde_json::from_str(
            &Ruff::map_result("ruff.check", "{}", &Outcome::exited(1, OUT)).unwrap(),
        )
        .unwrap();
        assert_eq!(v["counts"], json!({ "findings": 2, "fixable": 1 }));
        let f = &v["findings"][0];
        assert_eq!(
            (
                f["code"].as_str(),
                f["line"].as_u64(),
                f["column"].as_u64(),
                f["fix"]["applicability"].as_str()
            ),
            (Some("F401"), Some(1), Some(8), Some("safe"))
        );
        assert_eq!(v["findings"][1]["fix"], Value::Null);
        assert_eq!((v["success"].as_bool(), v["truncated"].as_bool()), (Some(false), Some(false)));
    }

    #[test]
    fn a_cut_list_keeps_its_whole_findings() {
        let cut = &OUT.as_bytes()[..OUT.find("{\"cell\":null,\"code\":\"E711\"").unwrap() + 30];
        let v: Value = serde_json::from_str(
            &Ruff::map_result("ruff.check", "{}", &Outcome::exited(1, cut.to_vec()).truncated())
                .unwrap(),
        )
        .unwrap();
        assert_eq!(
            (v["counts"]["findings"].as_u64(), v["truncated"].as_bool()),
            (Some(1), Some(true))
        );
        let e =
            Ruff::map_result("ruff.check", "{}", &Outcome::exited(1, cut.to_vec())).unwrap_err();
        assert_eq!(e.code, "invalid_output");
    }

    #[test]
    fn format_reports_its_exit_status_and_a_failure_says_files_may_have_changed() {
        assert_eq!(
            Ruff::map_result("ruff.format", "{}", &Outcome::exited(1, "")).unwrap(),
            r#"{"changed":true}"#
        );
        assert_eq!(
            Ruff::map_result("ruff.format", "{}", &Outcome::exited(0, "")).unwrap(),
            r#"{"changed":false}"#
        );
        let e = Ruff::map_result(
            "ruff.format",
            "{}",
            &Outcome::exited(2, "").with_stderr("error: Failed to parse pkg/bad.py:1:5"),
        )
        .unwrap_err();
        assert_eq!(e.code, "exit_nonzero");
        assert!(
            e.message.contains("may have been rewritten") && e.message.contains("Failed to parse"),
            "{}",
            e.message
        );
        let e = Ruff::map_result(
            "ruff.check",
            "{}",
            &Outcome::exited(2, "").with_stderr("error: unknown rule selector"),
        )
        .unwrap_err();
        assert!(e.message.contains("unknown rule selector"), "{}", e.message);
    }

    #[test]
    fn paths_follow_the_marker_and_rules_are_one_option() {
        let Plan::Exec(c) =
            Ruff::plan("ruff.check", r#"{"paths":["-weird.py","src"],"select":["F","E711"]}"#)
                .unwrap()
        else {
            panic!("not exec")
        };
        let marker = c.args.iter().position(|a| matches!(a, Arg::EndOfOptions)).expect("--");
        assert!(matches!(&c.args[marker + 1], Arg::Path(p) if p == "-weird.py"));
        assert!(c
            .args
            .iter()
            .any(|a| matches!(a, Arg::Option(o) if o.name == "select" && o.value == "F,E711")));
        assert!(!format!("{:?}", c.args).contains("--fix"));
    }
}
