//! `verbgate check` names the problem for each broken fixture and passes the
//! real git component.

use serde_json::Value;
use verbgate_tests::{component, Env};

fn check(env: &Env, name: &str) -> (i32, Value) {
    let (code, out, _) = env.run(&["check", component(name).to_str().unwrap()]);
    (code, out)
}

fn error_codes(out: &Value) -> Vec<String> {
    out["errors"].as_array().unwrap().iter().map(|e| e["code"].as_str().unwrap().to_string()).collect()
}

#[test]
fn the_git_component_passes() {
    let env = Env::new();
    let (code, out) = check(&env, "git");
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["ok"], true);
    assert!(out["errors"].as_array().unwrap().is_empty(), "{out}");
    assert_eq!(out["wit_version"], "0.1.0");
    let verbs: Vec<&str> = out["verbs"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert!(verbs.contains(&"git.status") && verbs.contains(&"git.log"), "{out}");
}

#[test]
fn an_open_schema_is_named_with_its_location() {
    let env = Env::new();
    let (code, out) = check(&env, "fixture-open-schema");
    assert_eq!(code, 1);
    assert_eq!(out["ok"], false);
    let e = out["errors"].as_array().unwrap().iter().find(|e| e["code"] == "open_schema").unwrap_or_else(|| panic!("{out}"));
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
    let e = out["errors"].as_array().unwrap().iter().find(|e| e["code"] == "verb_collision").unwrap_or_else(|| panic!("{out}"));
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
    let code_for = |verb: &str| unavailable.iter().find(|u| u["verb"] == verb).map(|u| u["code"].as_str().unwrap().to_string());
    assert_eq!(code_for("open.thing").as_deref(), Some("open_schema"), "{verbs}");
    assert_eq!(code_for("trust.add").as_deref(), Some("reserved_namespace"), "{verbs}");
    assert_eq!(code_for("git.status").as_deref(), Some("collision"), "{verbs}");
    // The bundled git.status still belongs to git.
    let owner = verbs["verbs"].as_array().unwrap().iter().find(|v| v["verb"] == "git.status").unwrap();
    assert_eq!(owner["plugin"], "git");
    assert!(!verbs["verbs"].as_array().unwrap().iter().any(|v| v["verb"] == "trust.add" || v["verb"] == "open.thing"));
}
