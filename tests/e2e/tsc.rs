//! The bundled `tsc.check` verb against the real TypeScript compiler (`just
//! test-tools`), on `tests/fixtures/ts-project`: diagnostics with file,
//! line, column, code and category from `tsc --pretty false`, and nothing
//! written to the project.

use serde_json::json;
use std::path::Path;
use verbgate_tests::{copy_tree, require_test_tool, Env};

fn project_env() -> Env {
    require_test_tool("tsc");
    let env = Env::new();
    copy_tree(&Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/ts-project"), &env.root);
    env
}

#[test]
fn type_errors_come_with_place_code_and_category() {
    let env = project_env();
    let r = env.op("tsc.check", json!({}));
    assert_eq!(r["ok"], true, "{r}");
    let r = &r["result"];
    assert_eq!(
        (r["success"].clone(), r["exit_code"].clone(), r["counts"]["error"].clone()),
        (json!(false), json!(2), json!(3)),
        "{r}"
    );
    let d = r["diagnostics"].as_array().unwrap();
    let places: Vec<(&str, u64, u64, u64)> = d
        .iter()
        .map(|d| {
            (
                d["file"].as_str().unwrap(),
                d["line"].as_u64().unwrap(),
                d["column"].as_u64().unwrap(),
                d["code"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        places,
        [("src/bad.ts", 3, 7, 2322), ("src/bad.ts", 4, 19, 2345), ("src/bad.ts", 7, 32, 2353)],
        "{r}"
    );
    assert!(d.iter().all(|d| d["category"] == "error"));
    assert!(d[0]["message"].as_str().unwrap().contains("not assignable to type 'string'"), "{r}");
    assert_eq!(r["unparsed_lines"], 0);
    // --noEmit, and the build info went to /dev/null.
    let written: Vec<String> = std::fs::read_dir(&env.root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        !written.iter().any(|f| f.ends_with(".js") || f.ends_with(".tsbuildinfo")),
        "{written:?}"
    );
}

#[test]
fn a_clean_project_succeeds_and_a_missing_project_is_a_diagnostic() {
    let env = project_env();
    std::fs::remove_file(env.root.join("src/bad.ts")).unwrap();
    let r = env.op("tsc.check", json!({}));
    assert_eq!(
        (r["result"]["success"].clone(), r["result"]["diagnostics"].clone()),
        (json!(true), json!([])),
        "{r}"
    );
    let r = env.op("tsc.check", json!({"project": "nope.json"}));
    let d = &r["result"]["diagnostics"][0];
    assert_eq!(
        (d["file"].clone(), d["code"].clone()),
        (json!(null), json!(5058)),
        "a diagnostic with no place: {r}"
    );
    let r = env.op("tsc.check", json!({"project": "../elsewhere/tsconfig.json"}));
    assert_eq!(r["error"]["code"], "plan_refused", "{r}");
}

#[test]
fn a_missing_program_names_the_setting() {
    let env = Env::new().with_program("tsc", "/nonexistent/bin/tsc");
    let r = env.op("tsc.check", json!({}));
    assert_eq!(r["error"]["code"], "unavailable", "{r}");
    assert!(
        r["error"]["message"].as_str().unwrap().contains("programs.tsc"),
        "names the config key: {r}"
    );
    let catalog = env.request(&json!({"help": true}));
    assert!(
        catalog["help"]["unavailable"]["tsc.check"].as_str().unwrap().contains("programs.tsc"),
        "{catalog}"
    );
}
