//! The bundled `eslint` plugin: `eslint.check`, ESLint's findings — rule,
//! severity, place, message, and whether a fix or suggestions exist —
//! from `eslint --format json-with-metadata`, never from its terminal
//! output. It never fixes: `--fix` is not in any plan, so a check changes
//! no file.
//!
//! ESLint runs the repository's code: its `eslint.config.js` and the
//! plugins that config imports. The report's `metadata.cwd` is the
//! directory ESLint ran in; file paths under it are given relative to it.
//! A report cut at the host's capture bound is read up to its last whole
//! file (its paths then stay absolute: the metadata comes last).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use verbgate_plugin_sdk::{
    cmd, errors, serde_json, Effect, OpError, Outcome, Plan, Value, Verb, VerbKind,
};

/// Findings listed; the counts cover every file read.
pub const LISTED: usize = 2000;
/// How long ESLint may take (the operator's `exec_timeout_max_ms` caps it).
const TIMEOUT_MS: u32 = 300_000;

/// `eslint.check` args.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct CheckArgs {
    /// files or directories to lint, relative to dir (default: what the config covers in dir)
    #[serde(default)]
    #[schemars(length(min = 1, max = 256), inner(length(min = 1)))]
    paths: Vec<String>,
    /// directory to run in (where eslint.config.js is found), relative to the root
    #[schemars(length(min = 1))]
    dir: Option<String>,
}

/// The per-file results of a report, and its `metadata.cwd` when the
/// report is whole. A report cut short yields the files before the cut.
pub fn results(stdout: &[u8], truncated: bool) -> Result<(Vec<Value>, Option<String>), String> {
    if !truncated {
        let v: Value = serde_json::from_slice(stdout)
            .map_err(|e| format!("ESLint's report is not JSON: {e}"))?;
        let files =
            v["results"].as_array().cloned().ok_or("ESLint's report has no results list")?;
        return Ok((files, v["metadata"]["cwd"].as_str().map(str::to_string)));
    }
    // `{"results":[{…},{…},…` — read whole elements until the cut.
    let text = stdout;
    let start = text
        .windows(12)
        .position(|w| w == b"{\"results\":[")
        .ok_or("ESLint's report does not start with its results")?
        + 12;
    let mut files = Vec::new();
    let mut at = start;
    loop {
        while at < text.len() && (text[at] == b',' || text[at].is_ascii_whitespace()) {
            at += 1;
        }
        let mut stream = serde_json::Deserializer::from_slice(&text[at..]).into_iter::<Value>();
        match stream.next() {
            Some(Ok(v)) if v.is_object() => {
                at += stream.byte_offset();
                files.push(v);
            }
            _ => break,
        }
    }
    Ok((files, None))
}

/// A path relative to `cwd` when it lies under it.
fn relative(path: &str, cwd: Option<&str>) -> String {
    cwd.and_then(|c| path.strip_prefix(c))
        .and_then(|p| p.strip_prefix('/'))
        .unwrap_or(path)
        .to_string()
}

/// `eslint.check`.
struct Check;

impl Verb for Check {
    const NAME: &'static str = "eslint.check";
    const SUMMARY: &'static str = "ESLint findings (no --fix)";
    const KIND: VerbKind = VerbKind::Exec;
    // The config (eslint.config.js) and its plugins are repository code.
    const EFFECTS: &'static [Effect] = &[Effect::ReadsRepo, Effect::RunsRepoCode];
    const PROGRAMS: &'static [&'static str] = &["eslint"];
    type Args = CheckArgs;
    type Output = CheckResult;

    fn plan(args: &CheckArgs) -> Result<Plan, OpError> {
        let mut c = cmd("eslint")
            .lit("--format")
            .lit("json-with-metadata")
            .lit("--no-color")
            .timeout_ms(TIMEOUT_MS)
            .truncate_stdout();
        if let Some(dir) = &args.dir {
            c = c.cwd(dir);
        }
        // No `--` marker: the host's refusal of a path starting with `-`
        // keeps each one a path.
        for p in &args.paths {
            c = c.path(p);
        }
        Ok(Plan::Exec(c.into()))
    }

    fn map(_: &CheckArgs, outcome: &Outcome) -> Result<CheckResult, OpError> {
        // Exit 2: ESLint could not lint (no config, a pattern matching no
        // file, a crash); its reason is on stderr.
        if outcome.exit_code == Some(2) || (outcome.stdout.is_empty() && !outcome.stdout_truncated)
        {
            let mut e = errors::exit_nonzero(outcome);
            e.message =
                format!("ESLint did not lint: {}", e.message.trim_start_matches("the program "));
            return Err(e);
        }
        let (files, cwd) = results(&outcome.stdout, outcome.stdout_truncated)
            .map_err(|e| errors::invalid_output(&e))?;
        let mut findings = Vec::new();
        let mut counts = [0u64; 5];
        let mut total = 0usize;
        for f in &files {
            let file = relative(f["filePath"].as_str().unwrap_or_default(), cwd.as_deref());
            for (i, key) in [
                "errorCount",
                "warningCount",
                "fixableErrorCount",
                "fixableWarningCount",
                "fatalErrorCount",
            ]
            .iter()
            .enumerate()
            {
                counts[i] += f[key].as_u64().unwrap_or(0);
            }
            for m in f["messages"].as_array().map(Vec::as_slice).unwrap_or_default() {
                total += 1;
                if findings.len() >= LISTED {
                    continue;
                }
                findings.push(Finding {
                    file: file.clone(),
                    line: m["line"].as_u64(),
                    column: m["column"].as_u64(),
                    end_line: m["endLine"].as_u64(),
                    end_column: m["endColumn"].as_u64(),
                    rule: m["ruleId"].as_str().map(str::to_string),
                    severity: if m["severity"] == 2 { Severity::Error } else { Severity::Warning },
                    message: m["message"].as_str().unwrap_or_default().to_string(),
                    fixable: m.get("fix").is_some_and(Value::is_object),
                    suggestions: m["suggestions"].as_array().map_or(0, Vec::len),
                    fatal: m["fatal"] == true,
                });
            }
        }
        let [errors, warnings, fixable_errors, fixable_warnings, fatal] = counts;
        Ok(CheckResult {
            success: outcome.exit_code == Some(0),
            exit_code: outcome.exit_code,
            counts: Counts { errors, warnings, fixable_errors, fixable_warnings, fatal },
            findings,
            files: files.len(),
            truncated: outcome.stdout_truncated || total > LISTED,
        })
    }
}

// `eslint.check`'s result (a plain comment, as on every result type: a
// type's doc comment would become its schema's description).
#[derive(Serialize, JsonSchema)]
struct CheckResult {
    /// no errors (ESLint's exit 0)
    success: bool,
    exit_code: Option<i32>,
    counts: Counts,
    findings: Vec<Finding>,
    /// files linted
    files: usize,
    /// ESLint's report outgrew the host's capture bound (the files before the cut are read), or more than 2000 findings
    truncated: bool,
}

// ESLint's per-file counts, summed.
#[derive(Serialize, JsonSchema)]
struct Counts {
    errors: u64,
    warnings: u64,
    fixable_errors: u64,
    fixable_warnings: u64,
    fatal: u64,
}

// One message of ESLint's.
#[derive(Serialize, JsonSchema)]
struct Finding {
    /// relative to dir when under it, else as ESLint reports it
    file: String,
    line: Option<u64>,
    column: Option<u64>,
    end_line: Option<u64>,
    end_column: Option<u64>,
    /// null for a parse error or an ignored-file notice
    rule: Option<String>,
    severity: Severity,
    message: String,
    /// eslint --fix would fix it
    fixable: bool,
    /// how many suggested edits ESLint offers
    suggestions: usize,
    /// a parse error: the file was not linted
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    fatal: bool,
}

// ESLint's severity 2 and 1.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Severity {
    Error,
    Warning,
}

verbgate_plugin_sdk::plugin!(Eslint { name: "eslint", version: "0.1.0", verbs: [Check] });

#[cfg(test)]
mod tests {
    use super::*;
    use verbgate_plugin_sdk::json;

    const REPORT: &str = r#"{"results":[{"filePath":"/r/web/src/a.js","messages":[
        {"ruleId":"no-var","severity":1,"message":"Unexpected var.","line":1,"column":1,"endLine":1,"endColumn":11,"fix":{"range":[0,10],"text":"let x = 1;"}},
        {"ruleId":"no-unused-vars","severity":2,"message":"'u' is unused.","line":3,"column":7,"endLine":3,"endColumn":8,"suggestions":[{"desc":"Remove","fix":{"range":[1,2],"text":""}}]}],
        "errorCount":1,"fatalErrorCount":0,"warningCount":1,"fixableErrorCount":0,"fixableWarningCount":1,"source":"var x = 1;"},
      {"filePath":"/r/web/src/bad.js","messages":[{"ruleId":null,"fatal":true,"severity":2,"message":"Parsing error: Unexpected token =","line":1,"column":7}],
        "errorCount":1,"fatalErrorCount":1,"warningCount":0,"fixableErrorCount":0,"fixableWarningCount":0}],
      "metadata":{"cwd":"/r/web","rulesMeta":{}}}"#;

    #[test]
    fn findings_carry_rule_severity_place_and_fix_availability() {
        let v: Value = serde_json::from_str(
            &Eslint::map_result("eslint.check", "{}", &Outcome::exited(1, REPORT)).unwrap(),
        )
        .unwrap();
        assert_eq!(
            v["counts"],
            json!({ "errors": 2, "warnings": 1, "fixable_errors": 0, "fixable_warnings": 1, "fatal": 1 })
        );
        let f = v["findings"].as_array().unwrap();
        assert_eq!(
            (
                f[0]["file"].as_str(),
                f[0]["rule"].as_str(),
                f[0]["severity"].as_str(),
                f[0]["fixable"].as_bool()
            ),
            (Some("src/a.js"), Some("no-var"), Some("warning"), Some(true))
        );
        assert_eq!(
            (f[1]["fixable"].as_bool(), f[1]["suggestions"].as_u64()),
            (Some(false), Some(1))
        );
        assert_eq!(
            (f[2]["rule"].clone(), f[2]["fatal"].clone(), f[2]["end_line"].clone()),
            (Value::Null, json!(true), Value::Null)
        );
        assert_eq!((v["success"].as_bool(), v["files"].as_u64()), (Some(false), Some(2)));
    }

    #[test]
    fn a_cut_report_yields_its_whole_files() {
        let cut =
            &REPORT.as_bytes()[..REPORT.find("{\"filePath\":\"/r/web/src/bad.js\"").unwrap() + 20];
        let (files, cwd) = results(cut, true).unwrap();
        assert_eq!((files.len(), cwd), (1, None));
        let v: Value = serde_json::from_str(
            &Eslint::map_result(
                "eslint.check",
                "{}",
                &Outcome::exited(1, cut.to_vec()).truncated(),
            )
            .unwrap(),
        )
        .unwrap();
        assert_eq!(
            (v["truncated"].as_bool(), v["findings"][0]["file"].as_str()),
            (Some(true), Some("/r/web/src/a.js"))
        );
    }

    #[test]
    fn eslint_failing_to_lint_is_an_error_and_no_plan_fixes() {
        let e = Eslint::map_result(
            "eslint.check",
            "{}",
            &Outcome::exited(2, "").with_stderr("No files matching the pattern \"x\" were found."),
        )
        .unwrap_err();
        assert_eq!(e.code, "exit_nonzero");
        assert!(e.message.contains("No files matching"), "{}", e.message);
        let Plan::Exec(c) = Eslint::plan("eslint.check", r#"{"paths":["src"]}"#).unwrap() else {
            panic!("not exec")
        };
        assert!(!format!("{:?}", c.args).contains("fix"), "{:?}", c.args);
    }
}
