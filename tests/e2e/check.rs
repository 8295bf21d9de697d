//! `verbgate check` names the problem for each broken fixture and passes the
//! real git component.

use serde_json::Value;
use verbgate_tests::{component, Env};

fn check(env: &Env, name: &str) -> (i32, Value) {
    let (code, out, _) = env.run(&["check", component(name).to_str().unwrap()]);
    (code, out)
}

fn error_codes(out: &Value) -> Vec<String> {
    out["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["code"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_git_component_passes() {
    let env = Env::new();
    let (code, out) = check(&env, "git");
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["ok"], true);
    assert!(out["errors"].as_array().unwrap().is_empty(), "{out}");
    assert_eq!(out["wit_version"], "0.2.0");
    let verbs: Vec<&str> =
        out["verbs"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert!(verbs.contains(&"git.status") && verbs.contains(&"git.log"), "{out}");
}

#[test]
fn an_open_schema_is_named_with_its_location() {
    let env = Env::new();
    let (code, out) = check(&env, "fixture-open-schema");
    assert_eq!(code, 1);
    assert_eq!(out["ok"], false);
    let e = out["errors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["code"] == "open_schema")
        .unwrap_or_else(|| panic!("{out}"));
    assert_eq!(e["verb"], "open.thing");
    assert_eq!(e["pointer"], "/");
    assert!(e["fix"].as_str().unwrap().contains("additionalProperties"));
}

#[test]
fn a_reserved_namespace_is_named() {
    let env = Env::new();
    let (_, out) = check(&env, "fixture-reserved");
    assert_eq!(out["ok"], false);
    assert!(error_codes(&out).contains(&"reserved_namespace".to_string()), "{out}");
}

#[test]
fn a_colliding_verb_name_is_named() {
    let env = Env::new();
    let (_, out) = check(&env, "fixture-collide");
    assert_eq!(out["ok"], false);
    let e = out["errors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["code"] == "verb_collision")
        .unwrap_or_else(|| panic!("{out}"));
    assert!(e["message"].as_str().unwrap().contains("git"), "{e}");
}

#[test]
fn broken_components_are_refused_at_load_with_reasons() {
    let env = Env::new();
    for name in ["fixture-open-schema", "fixture-reserved", "fixture-collide"] {
        env.install(name);
    }
    let verbs = env.verbs();
    let unavailable = verbs["unavailable"].as_array().unwrap();
    let code_for = |verb: &str| {
        unavailable
            .iter()
            .find(|u| u["verb"] == verb)
            .map(|u| u["code"].as_str().unwrap().to_string())
    };
    assert_eq!(code_for("open.thing").as_deref(), Some("open_schema"), "{verbs}");
    assert_eq!(code_for("trust.add").as_deref(), Some("reserved_namespace"), "{verbs}");
    assert_eq!(code_for("git.status").as_deref(), Some("collision"), "{verbs}");
    // The bundled git.status still belongs to git.
    let owner =
        verbs["verbs"].as_array().unwrap().iter().find(|v| v["verb"] == "git.status").unwrap();
    assert_eq!(owner["plugin"], "git");
    assert!(!verbs["verbs"]
        .as_array()
        .unwrap()
        .iter()
        .any(|v| v["verb"] == "trust.add" || v["verb"] == "open.thing"));
}

/// Every lint code fires on the verb of `fixture-lint` built to trigger it,
/// at the right verb, with a one-line fix; the clean verb gets none.
#[test]
fn each_lint_code_fires_on_its_fixture_verb() {
    let env = Env::new();
    let (code, out) = check(&env, "fixture-lint");
    assert_eq!(code, 1, "{out}");
    let mut findings: Vec<&Value> = out["errors"].as_array().unwrap().iter().collect();
    findings.extend(out["lint"].as_array().unwrap());
    let expect = [
        ("lint.open", "open_schema", Some("/")),
        ("lint.nosummary", "missing_summary", None),
        ("lint.multiline", "summary_multiline", None),
        ("lint.nodesc", "param_without_description", Some("/properties/x")),
        ("lint.reqdefault", "required_with_default", Some("/properties/x")),
        ("lint.shadow", "alias_shadows_verb", None),
        ("lint.spawn", "missing_result_schema", None),
        ("lint.quickspawn", "effects_mismatch", None),
        ("lint.quietcargo", "effects_mismatch", None),
        ("lint.secret", "unknown_sensitive_param", None),
        ("lint.undeclared", "undeclared_program", None),
        ("trust.lint", "reserved_namespace", None),
        ("lint.noprograms", "no_programs", None),
    ];
    for (verb, code, pointer) in expect {
        let f = findings
            .iter()
            .find(|f| f["verb"] == verb && f["code"] == code)
            .unwrap_or_else(|| panic!("no `{code}` finding for {verb}: {out}"));
        assert!(
            !f["fix"].as_str().unwrap().is_empty() && !f["fix"].as_str().unwrap().contains('\n'),
            "{f}"
        );
        if let Some(p) = pointer {
            assert_eq!(f["pointer"], p, "{f}");
        }
    }
    let undeclared = findings
        .iter()
        .find(|f| f["code"] == "undeclared_program" && f["verb"] == "lint.undeclared")
        .unwrap();
    assert!(undeclared["message"].as_str().unwrap().contains("`sh`"), "{undeclared}");
    assert!(
        !findings.iter().any(|f| f["verb"] == "lint.clean"),
        "the clean verb has findings: {out}"
    );
}

/// Components that should pass have no finding at all (errors or lint).
#[test]
fn clean_components_have_no_findings() {
    let env = Env::new();
    for name in ["fixture-echo", "git"] {
        let (_, out) = check(&env, name);
        let collisions_only =
            out["errors"].as_array().unwrap().iter().all(|e| e["code"] == "verb_collision");
        assert!(collisions_only, "{name}: {out}");
        assert!(out["lint"].as_array().unwrap().is_empty(), "{name}: {out}");
    }
}

/// A component importing `wasi:http` (which verbgate never provides) is
/// refused at load and by `check`, with the import named.
#[test]
fn a_wasi_http_import_is_refused_with_its_name() {
    let env = Env::new();
    let bytes = wat::parse_str(
        r#"(component
            (import "wasi:http/outgoing-handler@0.2.0" (instance))
            (instance $plugin)
            (export "verbgate:verbs/plugin@0.1.0" (instance $plugin)))"#,
    )
    .unwrap();
    let unsigned = env.tmp.path().join("http.wasm");
    std::fs::write(&unsigned, &bytes).unwrap();
    let (code, out, _) = env.run(&["check", unsigned.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    let e = &out["errors"][0];
    assert_eq!(e["code"], "import_outside_policy", "{out}");
    assert_eq!(e["import"], "wasi:http/outgoing-handler@0.2.0", "{out}");
    let dest = env.plugins.join("http.wasm");
    env.run_ok(&[
        "sign",
        unsigned.to_str().unwrap(),
        "--key",
        env.secret_key().to_str().unwrap(),
        "--out",
        dest.to_str().unwrap(),
    ]);
    let verbs = env.verbs();
    let refusal = verbs["unavailable"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["source"].as_str().unwrap().ends_with("http.wasm"))
        .unwrap_or_else(|| panic!("{verbs}"));
    assert_eq!(refusal["code"], "import_outside_policy", "{refusal}");
    assert!(
        refusal["reason"].as_str().unwrap().contains("wasi:http/outgoing-handler@0.2.0"),
        "{refusal}"
    );
}

/// Closed all the way down: a property typed `["object", "null"]` without
/// `additionalProperties: false` is open, and `check` says where.
#[test]
fn a_nested_open_object_is_named_with_its_pointer_and_refused_at_load() {
    let env = Env::new();
    let (code, out) = check(&env, "fixture-open-schema");
    assert_eq!(code, 1);
    let e = out["errors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["code"] == "open_schema" && e["verb"] == "open.nested")
        .unwrap_or_else(|| panic!("{out}"));
    assert_eq!(e["pointer"], "/properties/opts", "{e}");
    env.install("fixture-open-schema");
    let verbs = env.verbs();
    let refusal = verbs["unavailable"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["verb"] == "open.nested")
        .unwrap_or_else(|| panic!("{verbs}"));
    assert_eq!(refusal["code"], "open_schema", "{refusal}");
    assert!(refusal["reason"].as_str().unwrap().contains("/properties/opts"), "{refusal}");
    let typo = env.op("open.nested", serde_json::json!({"opts": {"vebrose": true}}));
    assert_eq!(typo["error"]["code"], "unknown_verb", "{typo}");
}

/// A namespace belongs to one plugin: a third-party `git.squatter` (a name no
/// one has taken) is refused, so `allow = ["git.*"]` means the bundled git.
#[test]
fn a_verb_in_a_namespace_another_plugin_owns_is_refused() {
    let env = Env::new().with_config("allow = [\"git.*\"]");
    let (_, out) = check(&env, "fixture-collide");
    let e = out["errors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["code"] == "namespace_owned")
        .unwrap_or_else(|| panic!("{out}"));
    assert_eq!(e["verb"], "git.squatter", "{e}");
    assert!(e["message"].as_str().unwrap().contains("`git`"), "{e}");
    env.install("fixture-collide");
    let verbs = env.verbs();
    let refusal = verbs["unavailable"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["verb"] == "git.squatter")
        .unwrap_or_else(|| panic!("{verbs}"));
    assert_eq!(refusal["code"], "namespace_owned", "{refusal}");
    assert_eq!(refusal["plugin"], "fixture-collide", "{refusal}");
    assert!(
        !verbs["verbs"].as_array().unwrap().iter().any(|v| v["plugin"] == "fixture-collide"),
        "{verbs}"
    );
    assert_eq!(env.op("git.squatter", serde_json::json!({}))["error"]["code"], "unknown_verb");
}

/// `check` measures `describe` as a whole first, as loading does: past a
/// bound, one finding and no per-verb work (50,000 verbs answer at once).
#[test]
fn check_refuses_a_describe_past_its_bounds_at_once() {
    let env = Env::new();
    let started = std::time::Instant::now();
    let (code, out) = check(&env, "fixture-flood");
    assert!(started.elapsed() < std::time::Duration::from_secs(20), "took {:?}", started.elapsed());
    assert_eq!(code, 1, "{out}");
    assert_eq!(error_codes(&out), ["plugin_limit"], "{out}");
    assert!(out["errors"][0]["message"].as_str().unwrap().contains("`verbs`"), "{out}");
    let (_, out) = check(&env, "fixture-garish");
    assert_eq!(error_codes(&out), ["control_characters"], "{out}");
    assert!(!out.to_string().contains('\u{1b}'), "{out}");
}

/// Programs a machine lacks are one INFO line at start, not a WARN per verb
/// (13 of them, shown verbatim by MCP Inspector: issue 37); a configured
/// path that is not a program stays a warning.
#[test]
fn missing_programs_are_one_info_line_and_a_wrong_configured_path_a_warning() {
    let env = Env::new().with_program("cargo", "/nonexistent/cargo");
    let start = |log: Option<&str>| {
        let mut c = env.cmd(&["request", r#"{"help": true}"#]);
        c.env("PATH", env.tmp.path().join("empty-path"));
        if let Some(l) = log {
            c.env("VERBGATE_LOG", l);
        }
        let out = c.output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stderr).to_string()
    };
    let quiet = start(None);
    let warnings: Vec<&str> = quiet.lines().filter(|l| l.contains("WARN")).collect();
    assert!(
        !warnings.is_empty() && warnings.iter().all(|w| w.contains("programs.cargo")),
        "only the wrong configured path warns: {quiet}"
    );
    let info = start(Some("info"));
    let summary: Vec<&str> = info.lines().filter(|l| l.contains("not installed")).collect();
    assert_eq!(summary.len(), 1, "{info}");
    assert!(
        summary[0].contains("git (git.") && summary[0].contains("programs.<name>"),
        "each missing program with its verbs: {}",
        summary[0]
    );
    assert!(!info.contains("was not found on PATH"), "no line per verb: {info}");
}
