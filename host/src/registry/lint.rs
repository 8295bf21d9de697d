//! Checks on a plugin's declared verbs, shared by loading (errors make a
//! verb unavailable) and by `verbgate check` (everything is reported to the
//! author). Each finding has a stable code, a location (verb + JSON pointer
//! into its schema) and a one-line fix.

use serde::Serialize;
use serde_json::Value;

use std::collections::HashSet;

use super::fence;
use super::schema::{compile, open_objects};
use crate::error::LoadCode;
use crate::json::clip;
use crate::runtime::bounds::{
    control_character, Exceeded, PluginBounds, ALIASES, NAME_BYTES, PROGRAMS, SENSITIVE,
    SUMMARY_BYTES,
};
use crate::runtime::model::{Effect, Effects, PluginInfo, VerbKind, VerbSpec};

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// The verb cannot be loaded.
    Error,
    /// Loads, but callers will have a worse time.
    Warning,
}

/// One problem with a plugin or verb.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// Stable code (`open_schema`, `reserved_namespace`, …).
    pub code: LoadCode,
    /// Error or warning.
    pub severity: Severity,
    /// The verb, if the finding is about one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verb: Option<String>,
    /// JSON pointer into the verb's params schema, if relevant.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pointer: Option<String>,
    /// What is wrong.
    pub message: String,
    /// How to fix it, in one line.
    pub fix: &'static str,
}

fn finding(
    code: LoadCode,
    severity: Severity,
    verb: Option<&str>,
    pointer: Option<String>,
    message: String,
    fix: &'static str,
) -> Finding {
    Finding { code, severity, verb: verb.map(str::to_string), pointer, message, fix }
}

/// Whether a plugin name is acceptable (lower case, digits, `-`).
pub fn plugin_name_problem(name: &str) -> Option<Finding> {
    let name = clip(name, NAME_BYTES);
    let mut c = name.chars();
    let ok = matches!(c.next(), Some(f) if f.is_ascii_lowercase())
        && c.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    (!ok).then(|| {
        finding(
            LoadCode::InvalidPluginName,
            Severity::Error,
            None,
            None,
            format!("plugin name {name:?} must be lower-case letters, digits and `-`"),
            "rename the plugin in describe()",
        )
    })
}

/// Every finding for a plugin's verbs. `is_bundled_core` opens the `job.`
/// namespace. The caller has already bounded the whole `describe`
/// ([`super::bounds::check_describe`]); every check here is linear in it.
pub fn lint_plugin(
    info: &PluginInfo,
    is_bundled_core: bool,
    bounds: &PluginBounds,
) -> Vec<Finding> {
    let mut out: Vec<Finding> = plugin_name_problem(&info.name).into_iter().collect();
    let mut seen: HashSet<&str> = HashSet::new();
    for spec in &info.verbs {
        if !seen.insert(spec.name.as_str()) {
            out.push(finding(
                LoadCode::DuplicateVerb,
                Severity::Error,
                Some(&spec.name),
                None,
                format!("`{}` is declared twice", clip(&spec.name, NAME_BYTES)),
                "declare each verb once",
            ));
        }
        out.extend(lint_verb(spec, is_bundled_core, bounds));
    }
    for spec in &info.verbs {
        for alias in &spec.aliases {
            if seen.contains(alias.as_str()) {
                out.push(finding(
                    LoadCode::AliasShadowsVerb,
                    Severity::Error,
                    Some(&spec.name),
                    None,
                    format!("alias `{alias}` is also the name of a verb"),
                    "drop the alias or rename it",
                ));
            }
        }
    }
    out
}

/// Findings for one verb. Its text is measured first: a verb past a bound
/// gets that one finding (`plugin_limit`), and none of its text is echoed.
pub fn lint_verb(spec: &VerbSpec, is_bundled_core: bool, bounds: &PluginBounds) -> Vec<Finding> {
    if let Some(f) = text_bound(spec, bounds) {
        return vec![f];
    }
    let v = Some(spec.name.as_str());
    let mut out = Vec::new();
    if let Some(p) = fence::name_problem(&spec.name) {
        out.push(finding(
            LoadCode::InvalidName,
            Severity::Error,
            v,
            None,
            p,
            "name verbs `namespace.verb` in lower case",
        ));
    }
    if let Some(p) = fence::namespace_problem(&spec.name, is_bundled_core) {
        out.push(finding(
            LoadCode::ReservedNamespace,
            Severity::Error,
            v,
            None,
            p,
            "choose your own namespace (e.g. your plugin's name)",
        ));
    }
    for alias in &spec.aliases {
        if let Some(p) =
            fence::name_problem(alias).or_else(|| fence::namespace_problem(alias, is_bundled_core))
        {
            out.push(finding(
                LoadCode::InvalidAlias,
                Severity::Error,
                v,
                None,
                p,
                "aliases follow the same naming rules as verbs",
            ));
        }
    }
    let summary = spec.summary.trim();
    if summary.is_empty() {
        out.push(finding(
            LoadCode::MissingSummary,
            Severity::Error,
            v,
            None,
            "the verb has no summary".into(),
            "say in one line what the verb does",
        ));
    } else if summary.contains('\n') {
        // A newline is a control character: refused, never cleaned.
        out.push(finding(
            LoadCode::SummaryMultiline,
            Severity::Error,
            v,
            None,
            "the summary is more than one line".into(),
            "keep the summary to one line; put detail in parameter descriptions",
        ));
    } else if let Some(c) = control_character(summary) {
        out.push(finding(
            LoadCode::ControlCharacters,
            Severity::Error,
            v,
            None,
            format!("the summary contains the control character {c:?} (a terminal escape?); plugin text is refused, not cleaned"),
            "remove escapes and other control characters from the summary",
        ));
    }
    match serde_json::from_str::<Value>(&spec.params_schema) {
        Err(e) => out.push(finding(
            LoadCode::InvalidSchema,
            Severity::Error,
            v,
            None,
            format!("params schema is not JSON: {e}"),
            "emit the schema with the SDK's Schema builder",
        )),
        Ok(schema) => {
            out.extend(lint_params(spec, &schema));
            out.extend(lint_sensitive(spec, &schema));
        }
    }
    out.extend(lint_effects(spec));
    if let Some(text) = &spec.result_schema {
        match serde_json::from_str::<Value>(text)
            .map_err(|e| e.to_string())
            .and_then(|s| compile(&s).map(|_| ()))
        {
            Ok(()) => {}
            Err(e) => out.push(finding(
                LoadCode::InvalidResultSchema,
                Severity::Error,
                v,
                None,
                format!("result schema is invalid: {e}"),
                "fix the result schema (JSON Schema 2020-12)",
            )),
        }
    } else if spec.kind == VerbKind::Spawn {
        out.push(finding(
            LoadCode::MissingResultSchema,
            Severity::Warning,
            v,
            None,
            "a spawn verb without a result schema gives job.result callers nothing to rely on"
                .into(),
            "declare a result schema",
        ));
    }
    if matches!(spec.kind, VerbKind::Exec | VerbKind::Spawn) && spec.programs.is_empty() {
        out.push(finding(
            LoadCode::NoPrograms,
            Severity::Warning,
            v,
            None,
            "an exec/spawn verb that declares no program cannot run anything".into(),
            "declare the programs the verb runs",
        ));
    }
    for p in &spec.programs {
        if p.is_empty() || p.contains('/') || p.contains('\0') {
            out.push(finding(
                LoadCode::InvalidProgram,
                Severity::Error,
                v,
                None,
                format!("{p:?} is not a program name"),
                "declare bare program names; operators configure paths",
            ));
        }
    }
    out
}

/// Programs whose whole job is to run code the repository controls (build
/// scripts, tests, recipes): a verb running one without declaring
/// `runs_repo_code` is misdescribing itself to the policy.
const RUNS_REPO_CODE: &[&str] = &[
    "cargo", "just", "make", "npm", "pnpm", "yarn", "python", "python3", "pytest", "tox", "nox",
    "go", "gradle", "mvn",
];

/// Declared effects that contradict what the verb's kind or programs show
/// (nothing to check for a 0.1.0 verb, whose effects are undeclared).
fn lint_effects(spec: &VerbSpec) -> Vec<Finding> {
    let Effects::Declared(_) = &spec.effects else { return Vec::new() };
    let v = Some(spec.name.as_str());
    let mut out = Vec::new();
    if spec.kind == VerbKind::Spawn && !spec.effects.may(Effect::LongRunning) {
        out.push(finding(
            LoadCode::EffectsMismatch,
            Severity::Error,
            v,
            None,
            "a spawn verb starts a background job but does not declare the `long_running` effect"
                .into(),
            "declare Effect::LongRunning (or make the verb exec)",
        ));
    }
    if let Some(p) = spec.programs.iter().find(|p| RUNS_REPO_CODE.contains(&p.as_str())) {
        if !spec.effects.may(Effect::RunsRepoCode) {
            out.push(finding(
                LoadCode::EffectsMismatch,
                Severity::Warning,
                v,
                None,
                format!("the verb runs `{p}`, which runs code the repository controls, but does not declare `runs_repo_code`"),
                "declare Effect::RunsRepoCode so the policy can ask before it runs",
            ));
        }
    }
    out
}

/// Sensitive params must be top-level params of the schema: a name that
/// matches nothing would redact nothing while promising to.
fn lint_sensitive(spec: &VerbSpec, schema: &Value) -> Vec<Finding> {
    let props = schema.get("properties").and_then(Value::as_object);
    spec.sensitive
        .iter()
        .filter(|name| !props.is_some_and(|p| p.contains_key(name.as_str())))
        .map(|name| {
            finding(
                LoadCode::UnknownSensitiveParam,
                Severity::Error,
                Some(&spec.name),
                None,
                format!(
                    "`{}` is marked sensitive but is not a top-level param of the schema",
                    clip(name, NAME_BYTES)
                ),
                "mark only params the schema declares",
            )
        })
        .collect()
}

/// The first bound one verb's text exceeds: its name, aliases, programs,
/// summary or schemas.
fn text_bound(spec: &VerbSpec, b: &PluginBounds) -> Option<Finding> {
    let name = clip(&spec.name, NAME_BYTES);
    let over = |e: Exceeded, what: &str| {
        Some(finding(
            LoadCode::PluginLimit,
            Severity::Error,
            Some(&name),
            None,
            e.describe(what),
            "keep names, summaries and schemas within the bounds in docs/configuration.md",
        ))
    };
    let longest = |items: &[String]| items.iter().map(String::len).max().unwrap_or(0);
    let checks = [
        ("verb_name_bytes", NAME_BYTES, spec.name.len(), "the verb name"),
        ("aliases", ALIASES, spec.aliases.len(), "the number of aliases"),
        ("verb_name_bytes", NAME_BYTES, longest(&spec.aliases), "an alias"),
        ("programs", PROGRAMS, spec.programs.len(), "the number of programs"),
        ("program_name_bytes", NAME_BYTES, longest(&spec.programs), "a program name"),
        ("sensitive", SENSITIVE, spec.sensitive.len(), "the number of sensitive params"),
        ("verb_name_bytes", NAME_BYTES, longest(&spec.sensitive), "a sensitive param name"),
        ("summary_bytes", SUMMARY_BYTES, spec.summary.len(), "the summary"),
        (
            "schema_bytes",
            b.schema_bytes,
            spec.params_schema.len(),
            "the params schema (limits.plugin_schema_bytes)",
        ),
        (
            "schema_bytes",
            b.schema_bytes,
            spec.result_schema.as_ref().map_or(0, String::len),
            "the result schema (limits.plugin_schema_bytes)",
        ),
    ];
    for (bound, limit, actual, what) in checks {
        if let Err(e) = Exceeded::check(bound, limit, actual) {
            return over(e, what);
        }
    }
    None
}

fn lint_params(spec: &VerbSpec, schema: &Value) -> Vec<Finding> {
    let v = Some(spec.name.as_str());
    let mut out = Vec::new();
    if schema.get("type") != Some(&Value::String("object".into())) {
        out.push(finding(
            LoadCode::SchemaNotObject,
            Severity::Error,
            v,
            Some("/type".into()),
            "the params schema must be `\"type\": \"object\"`".into(),
            "describe args as an object",
        ));
    }
    for pointer in open_objects(schema) {
        out.push(finding(
            LoadCode::OpenSchema,
            Severity::Error,
            v,
            Some(pointer.clone()),
            format!("the object at {pointer} accepts unknown properties, so typos would be silently ignored"),
            "add \"additionalProperties\": false (the SDK's Schema builder always does)",
        ));
    }
    if let Err(e) = compile(schema) {
        out.push(finding(
            LoadCode::InvalidSchema,
            Severity::Error,
            v,
            None,
            format!("params schema is invalid: {e}"),
            "fix the schema (JSON Schema 2020-12)",
        ));
    }
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (name, p) in props {
            let pointer = Some(format!("/properties/{name}"));
            if p.get("description").and_then(Value::as_str).is_none_or(|d| d.trim().is_empty()) {
                out.push(finding(
                    LoadCode::ParamWithoutDescription,
                    Severity::Warning,
                    v,
                    pointer.clone(),
                    format!("parameter `{name}` has no description"),
                    "describe every parameter; callers read it in help",
                ));
            }
            if required.contains(&name.as_str()) && p.get("default").is_some() {
                out.push(finding(
                    LoadCode::RequiredWithDefault,
                    Severity::Warning,
                    v,
                    pointer,
                    format!("parameter `{name}` is required but has a default"),
                    "make it optional or drop the default",
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str, summary: &str) -> VerbSpec {
        VerbSpec {
            name: name.into(),
            summary: summary.into(),
            kind: VerbKind::Read,
            params_schema: r#"{"type":"object","properties":{},"additionalProperties":false}"#
                .into(),
            result_schema: None,
            aliases: vec![],
            programs: vec![],
            two_stage: false,
            effects: crate::runtime::model::Effects::Undeclared,
            sensitive: vec![],
        }
    }

    fn codes(spec: &VerbSpec) -> Vec<&'static str> {
        lint_verb(spec, false, &PluginBounds::default())
            .into_iter()
            .filter(|f| f.severity == Severity::Error)
            .map(|f| f.code.as_str())
            .collect()
    }

    #[test]
    fn verb_text_past_a_bound_is_one_finding_that_echoes_nothing() {
        assert!(codes(&spec("a.b", "fine")).is_empty());
        let long = format!("a.{}", "b".repeat(1 << 20));
        let found = lint_verb(&spec(&long, "fine"), false, &PluginBounds::default());
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].code, LoadCode::PluginLimit);
        assert!(
            found[0].message.contains("verb_name_bytes")
                && found[0].verb.as_ref().unwrap().len() < 200,
            "{:?}",
            found[0]
        );
        assert_eq!(codes(&spec("a.b", &"s".repeat(SUMMARY_BYTES + 1))), ["plugin_limit"]);
        let mut many = spec("a.b", "fine");
        many.aliases = (0..=ALIASES).map(|i| format!("a.b{i}")).collect();
        assert_eq!(codes(&many), ["plugin_limit"]);
        let mut big = spec("a.b", "fine");
        big.params_schema = " ".repeat(PluginBounds::default().schema_bytes + 1);
        assert_eq!(codes(&big), ["plugin_limit"]);
    }

    #[test]
    fn misdeclared_effects_and_sensitive_params_are_named_at_their_verb_with_their_severity() {
        let found = |spec: &VerbSpec| -> Vec<(LoadCode, Severity, Option<String>)> {
            lint_verb(spec, false, &PluginBounds::default())
                .into_iter()
                .map(|f| (f.code, f.severity, f.verb))
                .collect()
        };
        let verb = Some("a.b".to_string());
        // A spawn verb that does not say it is long-running: an error, so it does not load.
        let mut spawn = spec("a.b", "fine");
        spawn.kind = VerbKind::Spawn;
        spawn.programs = vec!["x".into()];
        spawn.result_schema = Some(r#"{"type":"object"}"#.into());
        spawn.effects = Effects::declared(vec![Effect::ReadsRepo]);
        assert_eq!(found(&spawn), [(LoadCode::EffectsMismatch, Severity::Error, verb.clone())]);
        // A verb running cargo that does not say it runs repository code: a warning.
        let mut quiet = spec("a.b", "fine");
        quiet.kind = VerbKind::Exec;
        quiet.programs = vec!["cargo".into()];
        quiet.effects = Effects::declared(vec![Effect::ReadsRepo]);
        assert_eq!(found(&quiet), [(LoadCode::EffectsMismatch, Severity::Warning, verb.clone())]);
        quiet.effects = Effects::declared(vec![Effect::ReadsRepo, Effect::RunsRepoCode]);
        assert!(found(&quiet).is_empty());
        // A sensitive param the schema does not have: an error.
        let mut secret = spec("a.b", "fine");
        secret.sensitive = vec!["token".into()];
        assert_eq!(found(&secret), [(LoadCode::UnknownSensitiveParam, Severity::Error, verb)]);
    }

    #[test]
    fn control_characters_in_a_summary_are_refused_not_cleaned() {
        assert_eq!(codes(&spec("a.b", "red \u{1b}[31malert")), ["control_characters"]);
        assert_eq!(codes(&spec("a.b", "two\nlines")), ["summary_multiline"]);
        // Surrounding whitespace is trimmed, as the catalog shows it.
        assert!(codes(&spec("a.b", "  one line\n")).is_empty());
    }
}
