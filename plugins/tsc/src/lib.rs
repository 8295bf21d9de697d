//! The bundled `tsc` plugin: `tsc.check`, the TypeScript compiler's
//! diagnostics for a project, without emitting anything.
//!
//! `tsc --pretty false` writes one diagnostic per line in the compiler's
//! fixed machine format — `file(line,col): error TS2322: message`, or
//! `error TS5058: message` for one with no place — and continues a
//! multi-line message (a chain of "because" lines) on lines that start
//! with spaces. That format is all that is read ([`parse`]); a line in no
//! such shape is counted, never guessed at.
//!
//! Nothing is written to the repository: `--noEmit`, and the incremental
//! build state a project may ask for goes to `/dev/null`
//! (`--tsBuildInfoFile /dev/null`). tsc loads no code from the repository
//! (a tsconfig's `plugins` serve editors, not the compiler).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use verbgate_plugin_sdk::{
    cmd, errors, Effect, OpError, Outcome, OutcomeExt, Plan, Verb, VerbKind,
};

/// Diagnostics listed; the counts cover all of them.
pub const LISTED: usize = 2000;
/// How long tsc may take (the operator's `exec_timeout_max_ms` caps it).
const TIMEOUT_MS: u32 = 300_000;

/// `tsc.check` args.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct CheckArgs {
    /// the tsconfig file (or its directory) to check, relative to dir (default: tsc's own search from dir)
    #[schemars(length(min = 1))]
    project: Option<String>,
    /// directory to run in, relative to the root
    #[schemars(length(min = 1))]
    dir: Option<String>,
}

// One diagnostic (a plain comment, as on every result type: a type's doc
// comment would become its schema's description).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Diagnostic {
    /// as tsc prints it: relative to dir; null for a diagnostic with no place (a config error)
    pub file: Option<String>,
    // 1-based line and column, with `file`.
    pub line: Option<u64>,
    pub column: Option<u64>,
    pub category: Category,
    /// the TS number (2322 for TS2322)
    pub code: u64,
    // The message, continuation lines joined with newlines.
    pub message: String,
}

// A diagnostic's category, as tsc prints it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    Error,
    Warning,
    Suggestion,
    Message,
}

impl Category {
    fn of(word: &str) -> Option<Category> {
        Some(match word {
            "error" => Category::Error,
            "warning" => Category::Warning,
            "suggestion" => Category::Suggestion,
            "message" => Category::Message,
            _ => return None,
        })
    }
}

/// `category TS1234: message` → its parts.
fn head(text: &str) -> Option<(Category, u64, &str)> {
    let (category, rest) = text.split_once(' ')?;
    let category = Category::of(category)?;
    let rest = rest.strip_prefix("TS")?;
    let (code, message) = rest.split_once(": ")?;
    Some((category, code.parse().ok()?, message))
}

/// `file(line,col): rest` → its parts.
fn place(line: &str) -> Option<(&str, u64, u64, &str)> {
    let close = line.find("): ")?;
    let open = line[..close].rfind('(')?;
    let (l, c) = line[open + 1..close].split_once(',')?;
    Some((&line[..open], l.parse().ok()?, c.parse().ok()?, &line[close + 3..]))
}

/// Parse tsc's `--pretty false` output: the diagnostics, and how many
/// lines were in no known shape.
pub fn parse(stdout: &str) -> (Vec<Diagnostic>, usize) {
    let mut out: Vec<Diagnostic> = Vec::new();
    let mut unknown = 0;
    for line in stdout.lines() {
        if line.trim().is_empty() {
            continue;
        }
        if line.starts_with(' ') {
            match out.last_mut() {
                Some(d) => {
                    d.message.push('\n');
                    d.message.push_str(line.trim_end());
                }
                None => unknown += 1,
            }
            continue;
        }
        let parsed = match place(line)
            .and_then(|(f, l, c, rest)| head(rest).map(|h| (Some((f, l, c)), h)))
        {
            Some(p) => Some(p),
            None => head(line).map(|h| (None, h)),
        };
        match parsed {
            Some((at, (category, code, message))) => out.push(Diagnostic {
                file: at.map(|(f, _, _)| f.to_string()),
                line: at.map(|(_, l, _)| l),
                column: at.map(|(_, _, c)| c),
                category,
                code,
                message: message.to_string(),
            }),
            None => unknown += 1,
        }
    }
    (out, unknown)
}

/// `tsc.check`.
struct Check;

impl Verb for Check {
    const NAME: &'static str = "tsc.check";
    const SUMMARY: &'static str = "Type errors (no emit)";
    const KIND: VerbKind = VerbKind::Exec;
    const EFFECTS: &'static [Effect] = &[Effect::ReadsRepo];
    const PROGRAMS: &'static [&'static str] = &["tsc"];
    type Args = CheckArgs;

    type Output = CheckResult;

    fn plan(args: &CheckArgs) -> Result<Plan, OpError> {
        let mut c = cmd("tsc")
            .lit("--noEmit")
            .lit("--pretty")
            .lit("false")
            .lit("--tsBuildInfoFile")
            .lit("/dev/null")
            .timeout_ms(TIMEOUT_MS)
            .truncate_stdout();
        if let Some(dir) = &args.dir {
            c = c.cwd(dir);
        }
        if let Some(p) = &args.project {
            c = c.lit("--project").path(p);
        }
        Ok(Plan::Exec(c.into()))
    }

    fn map(_: &CheckArgs, outcome: &Outcome) -> Result<CheckResult, OpError> {
        let text = outcome.stdout_text();
        // A capture cut at the bound ends mid-line: drop that line.
        let whole = if outcome.stdout_truncated {
            text.rsplit_once('\n').map_or("", |(w, _)| w)
        } else {
            &text
        };
        let (diags, unknown) = parse(whole);
        // tsc exits 1 or 2 when it found diagnostics; anything else with
        // none found is tsc failing (a crash, a killed run).
        if !outcome.stdout_truncated && outcome.exit_code != Some(0) && diags.is_empty() {
            let mut e = errors::exit_nonzero(outcome);
            e.message = format!(
                "tsc reported no diagnostics but {}",
                e.message.trim_start_matches("the program ")
            );
            return Err(e);
        }
        let count = |c: Category| diags.iter().filter(|d| d.category == c).count();
        let counts = Counts {
            error: count(Category::Error),
            warning: count(Category::Warning),
            suggestion: count(Category::Suggestion),
            message: count(Category::Message),
        };
        let truncated = outcome.stdout_truncated || diags.len() > LISTED;
        Ok(CheckResult {
            success: counts.error == 0 && !outcome.stdout_truncated && outcome.exit_code == Some(0),
            exit_code: outcome.exit_code,
            counts,
            diagnostics: diags.into_iter().take(LISTED).collect(),
            truncated,
            unparsed_lines: unknown,
        })
    }
}

// `tsc.check`'s result.
#[derive(Serialize, JsonSchema)]
struct CheckResult {
    /// no error diagnostics
    success: bool,
    exit_code: Option<i32>,
    counts: Counts,
    diagnostics: Vec<Diagnostic>,
    /// the output outgrew the host's capture bound, or more than 2000 diagnostics: counts cover what was read
    truncated: bool,
    /// lines of tsc's output in no diagnostic shape (a version banner, say)
    unparsed_lines: usize,
}

// Diagnostics by category.
#[derive(Serialize, JsonSchema)]
struct Counts {
    error: usize,
    warning: usize,
    suggestion: usize,
    message: usize,
}

verbgate_plugin_sdk::plugin!(Tsc { name: "tsc", version: "0.1.0", verbs: [Check] });

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placed_unplaced_and_continued_diagnostics_parse() {
        let out = "src/a.ts(4,7): error TS2322: Type 'number' is not assignable to type 'string'.\n\
                   src/b (1).ts(10,3): error TS2345: Argument of type '{ a: number; }' is not assignable.\n  \
                   Property 'b' is missing in type '{ a: number; }'.\n\
                   error TS5058: The specified path does not exist: 'nope.json'.\n\
                   Version 5.9.3\n";
        let (d, unknown) = parse(out);
        assert_eq!(unknown, 1);
        assert_eq!(d.len(), 3);
        assert_eq!(
            (d[0].file.as_deref(), d[0].line, d[0].column, d[0].code),
            (Some("src/a.ts"), Some(4), Some(7), 2322)
        );
        assert_eq!(d[1].file.as_deref(), Some("src/b (1).ts"));
        assert!(
            d[1].message.ends_with("\n  Property 'b' is missing in type '{ a: number; }'."),
            "{:?}",
            d[1].message
        );
        assert_eq!((d[2].file.as_deref(), d[2].category, d[2].code), (None, Category::Error, 5058));
    }

    #[test]
    fn exit_two_with_errors_is_a_result_and_a_silent_failure_an_error() {
        let out = Outcome::exited(2, "src/a.ts(1,1): error TS1005: ';' expected.\n");
        let v: verbgate_plugin_sdk::Value = verbgate_plugin_sdk::serde_json::from_str(
            &Tsc::map_result("tsc.check", "{}", &out).unwrap(),
        )
        .unwrap();
        assert_eq!((v["success"].as_bool(), v["counts"]["error"].as_u64()), (Some(false), Some(1)));
        let e = Tsc::map_result(
            "tsc.check",
            "{}",
            &Outcome::exited(1, "").with_stderr("node: not found"),
        )
        .unwrap_err();
        assert_eq!(e.code, "exit_nonzero");
        let clean: verbgate_plugin_sdk::Value = verbgate_plugin_sdk::serde_json::from_str(
            &Tsc::map_result("tsc.check", "{}", &Outcome::exited(0, "")).unwrap(),
        )
        .unwrap();
        assert_eq!(clean["success"], true);
    }

    #[test]
    fn the_project_is_a_confined_path_and_nothing_is_emitted() {
        let Plan::Exec(c) = Tsc::plan("tsc.check", r#"{"project":"tsconfig.build.json"}"#).unwrap()
        else {
            panic!("not exec")
        };
        use verbgate_plugin_sdk::Arg;
        assert!(c.args.iter().any(|a| matches!(a, Arg::Literal(l) if l == "--noEmit")));
        assert!(matches!(c.args.last(), Some(Arg::Path(p)) if p == "tsconfig.build.json"));
    }
}
