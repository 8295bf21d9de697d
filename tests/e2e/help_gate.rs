//! Help never runs a program for a verb the policy denies, and every
//! program help starts (a two-stage verb's target resolution) has an audit
//! row, like every op's.

use serde_json::{json, Value};
use verbgate_tests::Env;

/// A justfile that imports a file outside the root whose recipe name is a
/// secret: `just --dump` would put it into the answer.
fn importing_env(policy: &str) -> Env {
    let env = Env::new().with_config(policy);
    let outside = env.tmp.path().join("outside.just");
    std::fs::write(&outside, "# OUTSIDE-SECRET\noutside_secret_recipe:\n    echo no\n").unwrap();
    std::fs::write(
        env.root.join("justfile"),
        format!(
            "import {:?}\n\ngreet name:\n    echo {{{{name}}}}\n",
            outside.display().to_string()
        ),
    )
    .unwrap();
    env
}

fn audit_rows(env: &Env) -> Vec<Value> {
    let out = env.cmd(&["audit", "--json"]).output().unwrap();
    assert!(
        out.status.success(),
        "verbgate audit failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn help_of_a_denied_verb_runs_nothing() {
    // Seen before: with just.* denied, {"help": "just.run:<recipe>"} ran
    // `just --dump` and answered with the imported file's recipes.
    let env = importing_env("[[policy]]\nverbs = [\"just.*\"]\ndecision = \"deny\"\n");
    let listing = env.request(&json!({"help": "just.run"}));
    assert!(!listing.to_string().contains("outside_secret"), "{listing}");
    assert_eq!(listing["help"]["targets_error"]["code"], "policy_denied", "{listing}");
    assert_eq!(
        listing["help"]["policy"]["decision"], "deny",
        "the contract itself is still shown: {listing}"
    );
    let one = env.request(&json!({"help": "just.run:greet"}));
    assert!(!one.to_string().contains("outside_secret"), "{one}");
    assert_eq!(one["error"]["code"], "policy_denied", "{one}");
    assert!(
        audit_rows(&env).iter().all(|r| r["program"].is_null()),
        "no program ran: {:?}",
        audit_rows(&env)
    );
}

#[test]
fn help_never_reads_a_file_outside_the_root_through_a_justfile_import() {
    // Seen before: under the default policy (just.run asks before it runs,
    // help does not ask), `import '<outside file>'` made `just --dump` fail
    // on that file and quote its line in the help answer.
    let env = Env::new();
    let outside = env.tmp.path().join("dotenv");
    std::fs::write(&outside, "API_KEY=OUTSIDE-SECRET-VALUE\n").unwrap();
    for import in
        [format!("import {:?}", outside.display().to_string()), "import '../dotenv'".to_string()]
    {
        std::fs::write(env.root.join("justfile"), format!("{import}\n\ngreet:\n    echo hi\n"))
            .unwrap();
        let listing = env.request(&json!({"help": "just.run"}));
        assert!(!listing.to_string().contains("OUTSIDE-SECRET"), "{listing}");
        assert_eq!(listing["help"]["targets_error"]["code"], "plan_refused", "{listing}");
        let one = env.request(&json!({"help": "just.run:greet"}));
        assert!(!one.to_string().contains("OUTSIDE-SECRET"), "{one}");
    }
}

#[test]
fn programs_help_starts_are_in_the_audit_trail() {
    let env = Env::new().with_config("[[policy]]\nverbs = [\"just.*\"]\ndecision = \"allow\"\n");
    std::fs::write(env.root.join("more.just"), "# more recipes\nother:\n    echo other\n").unwrap();
    std::fs::write(
        env.root.join("justfile"),
        "import 'more.just'\n\ngreet name:\n    echo {{name}}\n",
    )
    .unwrap();
    let one = env.request(&json!({"help": "just.run:greet"}));
    assert_eq!(one["status"], "success", "{one}");
    let rows = audit_rows(&env);
    let row = rows
        .iter()
        .find(|r| r["verb"] == "just.run")
        .unwrap_or_else(|| panic!("no row for the resolution: {rows:?}"));
    assert!(row["program"].as_str().unwrap().ends_with("just"), "{row}");
    assert!(row["argv"].as_str().unwrap().contains("--dump"), "{row}");
    assert_eq!(
        serde_json::from_str::<Value>(row["args"].as_str().unwrap()).unwrap(),
        json!({"resolve_target": "greet"}),
        "{row}"
    );
    assert_eq!(
        (row["outcome"].as_str(), row["decision"].as_str()),
        (Some("ok"), Some("allow")),
        "{row}"
    );
}
