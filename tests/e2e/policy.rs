//! The per-op policy, consent and the audit trail, end to end: a 0.1.0
//! component (effects undeclared) beside the 0.2.0 bundled ones, the
//! default rules, operator rules, consent on the terminal's behalf
//! (`--yes`, no terminal), consent through MCP elicitation with the official
//! Python SDK, and the rows `verbgate audit` shows for all of it.

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;
use verbgate_tests::{git, target_dir, verbgate_bin, Env};

/// The fixture-echo component as built against contract 0.1.0, frozen.
fn echo_v0_1_0() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/contract-0.1.0/fixture-echo.wasm")
}

fn repo(env: &Env) {
    git(&env.root, &["init", "-q", "-b", "main"]);
    std::fs::write(env.root.join("f"), "x").unwrap();
    git(&env.root, &["add", "f"]);
    git(&env.root, &["commit", "-q", "-m", "only commit"]);
}

fn audit(env: &Env, args: &[&str]) -> Vec<Value> {
    let out = env.cmd(&[&["audit", "--json"][..], args].concat()).output().unwrap();
    assert!(
        out.status.success(),
        "verbgate audit failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn a_0_1_0_component_loads_beside_0_2_0_ones_with_effects_undeclared_and_asks() {
    let env = Env::new();
    repo(&env);
    env.install_from("fixture-echo", &echo_v0_1_0());
    let help = env.request(&json!({"help": "echo.argv"}))["help"].clone();
    assert_eq!(help["effects"], "undeclared", "{help}");
    assert_eq!(help["policy"]["decision"], "ask");
    assert_eq!(help["policy"]["rule"], "default:undeclared");
    let git_help = env.request(&json!({"help": "git.status"}))["help"].clone();
    assert_eq!(git_help["effects"], json!(["reads_repo"]), "the bundled components are 0.2.0");
    assert_eq!(git_help["policy"]["decision"], "allow");
    let catalog = env.request(&json!({"help": true}))["help"].clone();
    assert_eq!(catalog["effects"]["echo.*"], "?", "{catalog}");
    assert_eq!(catalog["effects"]["git.*"], "r", "{catalog}");
    assert!(catalog["policy"]["ask"].as_array().unwrap().contains(&json!("echo.*")), "{catalog}");

    // No terminal: nobody can be asked, and the error says how to allow it.
    let r = env.op("echo.argv", json!({"word": "hi"}));
    assert_eq!(r["error"]["code"], "consent_required", "{r}");
    assert_eq!(r["error"]["rule"], "default:undeclared");
    let msg = r["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("--yes")
            && msg.contains("verbs = [\"echo.argv\"]")
            && msg.contains("decision = \"allow\""),
        "{msg}"
    );
    // Reads run without asking, in the same world.
    assert_eq!(env.op("git.status", json!({}))["ok"], true);
    // --yes: allowed once, and recorded as such.
    let (code, out, _) = env.run(&[
        "request",
        "--yes",
        &json!({"ops": [{"op": "echo.argv", "args": {"word": "hi"}}]}).to_string(),
    ]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["results"][0]["result"]["argv"], json!(["hi"]), "{out}");

    let rows = audit(&env, &["--verb", "echo.*"]);
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(
        (rows[0]["outcome"].as_str(), rows[0]["decision"].as_str(), rows[0]["decided_by"].as_str()),
        (Some("consent_required"), Some("ask"), Some("default:undeclared"))
    );
    assert_eq!(
        (rows[1]["outcome"].as_str(), rows[1]["decided_by"].as_str(), rows[1]["answer"].as_str()),
        (Some("ok"), Some("cli_yes"), Some("allow_once"))
    );
    assert_eq!(rows[1]["transport"], "cli");
    assert!(
        rows[1]["program"].as_str().unwrap().ends_with("verbgate-fixture-cli"),
        "{:?}",
        rows[1]
    );
    assert_eq!(rows[1]["argv"], json!(["argv", "hi"]).to_string());
    assert!(
        rows[0]["program"].is_string(),
        "an ask that could not be asked still records what would have run"
    );
}

#[test]
fn operator_rules_deny_and_allow_first_match_wins_and_help_says_why() {
    let env = Env::new().with_config(
        "[[policy]]\nverbs = [\"git.log\"]\ndecision = \"deny\"\nreason = \"history is private here\"\n\n\
         [[policy]]\neffects = [\"undeclared\"]\ndecision = \"allow\"\n",
    );
    repo(&env);
    env.install_from("fixture-echo", &echo_v0_1_0());
    let r = env.op("git.log", json!({}));
    assert_eq!(r["error"]["code"], "policy_denied", "{r}");
    assert_eq!(r["error"]["rule"], "policy[1]");
    assert!(r["error"]["message"].as_str().unwrap().contains("history is private here"));
    let help = env.request(&json!({"help": "git.log"}))["help"].clone();
    assert_eq!(help["policy"]["decision"], "deny", "a denied verb is still described: {help}");
    assert!(help["policy"]["note"].as_str().unwrap().contains("cannot run"));
    let catalog = env.request(&json!({"help": true}))["help"].clone();
    assert_eq!(catalog["policy"]["deny"], json!(["git.log"]), "{catalog}");
    // The operator's rule 2 lets the 0.1.0 component run without asking.
    assert_eq!(env.op("echo.argv", json!({"word": "x"}))["ok"], true);
    assert_eq!(env.op("git.status", json!({}))["ok"], true);

    let denied = audit(&env, &["--outcome", "policy_denied"]);
    assert_eq!(denied.len(), 1, "{denied:?}");
    assert_eq!(
        (denied[0]["verb"].as_str(), denied[0]["decided_by"].as_str()),
        (Some("git.log"), Some("policy[1]"))
    );
    assert!(denied[0]["program"].is_null(), "a denied op is refused before its plan is made");
    let allowed = audit(&env, &["--verb", "echo.argv"]);
    assert_eq!(allowed[0]["decided_by"], "policy[2]");
    // The human table has a header and a row per op.
    let out = env.cmd(&["audit", "--since", "1h"]).output().unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.lines().count() >= 4
            && table.contains("policy_denied")
            && table.contains("policy[1]"),
        "{table}"
    );
}

#[test]
fn bad_policy_rules_are_refused_at_start_naming_the_rule() {
    let env = Env::new();
    std::fs::write(
        env.home.join("verbgate.toml"),
        "[[policy]]\neffects = [\"writes\"]\ndecision = \"ask\"\n",
    )
    .unwrap();
    let (code, out, _) = env.run(&["request", "{\"help\": true}"]);
    assert_ne!(code, 0);
    let text = out.to_string();
    // Effect names are parsed as the file is read: the error points at the
    // line of the rule.
    assert!(
        text.contains("verbgate.toml")
            && text.contains("line 2")
            && text.contains("unknown effect \\\"writes\\\""),
        "{text}"
    );
}

#[test]
fn sensitive_params_are_redacted_in_the_audit_trail() {
    let env = Env::with_plugin("fixture-echo");
    let r = env.op("echo.argv", json!({"word": "w", "flag": "hunter2", "stdin": "hunter2"}));
    assert_eq!(r["ok"], true, "{r}");
    let rows = audit(&env, &["--verb", "echo.argv"]);
    let args = rows[0]["args"].as_str().unwrap();
    assert!(
        args.contains("<redacted>") && !args.contains("hunter2") && args.contains("\"word\":\"w\""),
        "{args}"
    );
    // `flag` reaches the program as `--flag=hunter2`: cut out of the argv too.
    assert_eq!(r["result"]["argv"][1], "--flag=hunter2", "the program itself got the value: {r}");
    let row = rows[0].to_string();
    assert!(!row.contains("hunter2"), "{row}");
    assert_eq!(rows[0]["argv"], json!(["argv", "w", "--flag=<redacted>"]).to_string(), "{row}");
}

#[test]
fn redaction_takes_only_the_callers_words_and_no_value_hides_the_others() {
    // Seen before: a secret equal to the plugin's own argv word `argv`
    // blanked that word, and a long first value (`tail`) pushed `word` out
    // of the bounded args text.
    let env = Env::with_plugin("fixture-echo");
    let long = "t".repeat(10_000);
    let r = env.op("echo.argv", json!({"tail": [long], "word": "w", "flag": "argv"}));
    assert_eq!(r["ok"], true, "{r}");
    let rows = audit(&env, &["--verb", "echo.argv"]);
    let argv: Vec<Value> = serde_json::from_str(rows[0]["argv"].as_str().unwrap()).unwrap();
    assert_eq!(argv[..3], [json!("argv"), json!("w"), json!("--flag=<redacted>")], "{}", rows[0]);
    let args = rows[0]["args"].as_str().unwrap();
    assert!(args.contains("\"word\":\"w\"") && args.contains("(10000 bytes)"), "{args}");
}

#[test]
fn python_sdk_elicitation_allows_once_for_the_session_and_declines() {
    let python = target_dir().join("py/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run `just python-env` (part of `just test`)",
        python.display()
    );
    let env = Env::new();
    repo(&env);
    env.install_from("fixture-echo", &echo_v0_1_0());
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("python/mcp_consent.py");
    let out = Command::new(&python)
        .arg(&script)
        .arg(verbgate_bin())
        .arg(&env.home)
        .arg(&env.root)
        .arg(&env.plugins)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "python client failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(v["once"]["results"][0]["result"]["argv"], json!(["one"]), "{v}");
    assert_eq!(v["session"]["results"][0]["ok"], true);
    assert_eq!(v["granted"]["results"][0]["ok"], true);
    assert_eq!(
        v["asked_after_grant"], 2,
        "the session grant means the third op is not asked about"
    );
    assert_eq!(v["declined"]["results"][0]["error"]["code"], "consent_declined", "{v}");
    assert_eq!(v["declined"]["results"][0]["error"]["answer"], "decline");
    // The only op was declined: the call failed, as the Python SDK reads it (issue 37).
    assert_eq!(v["declined_is_error"], true, "{v}");
    assert_eq!(v["batch_is_error"], false, "one of two ops ran: {v}");
    assert_eq!(v["batch"]["results"][0]["error"]["code"], "consent_declined");
    assert_eq!(v["batch"]["results"][1]["ok"], true, "the op needing no consent ran: {v}");
    assert_eq!(v["no_capability"]["results"][0]["error"]["code"], "consent_required", "{v}");
    let first = v["asked"][0]["message"].as_str().unwrap();
    assert!(
        first.contains("echo.argv")
            && first.contains("effects: \"undeclared\"")
            && first.contains("verbgate-fixture-cli argv one"),
        "{first}"
    );
    assert_eq!(
        v["asked"][0]["schema"]["properties"]["decision"]["oneOf"][1]["const"],
        "allow_session"
    );
    // A write with a read-back: the person sees both commands before either runs.
    assert_eq!(v["commit"]["results"][0]["error"]["code"], "consent_declined", "{v}");
    // Dismissed (an elicitation `cancel`), said as such, not as a "no" (issue 37).
    assert_eq!(v["commit"]["results"][0]["error"]["answer"], "dismissed", "{v}");
    assert!(
        v["commit"]["results"][0]["error"]["message"].as_str().unwrap().contains("dismissed"),
        "{v}"
    );
    let commit = v["asked"][4]["message"].as_str().unwrap();
    assert!(
        commit.contains("`git.commit`") && commit.contains(" commit --no-gpg-sign"),
        "{commit}"
    );
    let then = commit
        .lines()
        .find(|l| l.starts_with("then runs (read-back): "))
        .unwrap_or_else(|| panic!("{commit}"));
    assert!(then.contains(" log -1 -z "), "{then}");
    assert_eq!(
        git(&env.root, &["rev-list", "--count", "HEAD"]).trim(),
        "1",
        "a declined commit must not run"
    );

    let rows = audit(&env, &[]);
    let by = |verb: &str| rows.iter().filter(|r| r["verb"] == verb).collect::<Vec<_>>();
    let argv = by("echo.argv");
    let decided: Vec<(&str, Option<&str>)> =
        argv.iter().map(|r| (r["decided_by"].as_str().unwrap(), r["answer"].as_str())).collect();
    assert_eq!(
        decided,
        [
            ("person", Some("allow_once")),
            ("person", Some("allow_session")),
            ("session_grant", None),
            ("default:undeclared", None)
        ],
        "{argv:?}"
    );
    assert!(argv.iter().all(|r| r["transport"] == "stdio"));
    assert!(
        argv[0]["client"].as_str().unwrap().contains('/'),
        "client name/version from initialize: {:?}",
        argv[0]
    );
    assert_eq!(by("echo.fail")[0]["answer"], "decline");
    assert_eq!(by("git.commit")[0]["answer"], "dismissed");
    // The batch: git.status finished while echo.sleep still waited for its answer.
    let (sleep, status) = (by("echo.sleep")[0], by("git.status")[0]);
    assert!(sleep["duration_ms"].as_i64().unwrap() >= 1500, "{sleep}");
    assert!(status["duration_ms"].as_i64().unwrap() < 1500, "{status}");
}

#[test]
fn an_unanswered_question_times_out_as_declined() {
    let python = target_dir().join("py/bin/python");
    let env = Env::new().with_config("[consent]\ntimeout_ms = 400\n");
    env.install_from("fixture-echo", &echo_v0_1_0());
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("python/mcp_consent.py");
    let started = std::time::Instant::now();
    let out = Command::new(&python)
        .arg(&script)
        .arg(verbgate_bin())
        .arg(&env.home)
        .arg(&env.root)
        .arg(&env.plugins)
        .arg("slow")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "python client failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_str(stdout.trim()).unwrap();
    let err = &v["late"]["results"][0]["error"];
    assert_eq!(
        (err["code"].as_str(), err["answer"].as_str()),
        (Some("consent_declined"), Some("timeout")),
        "{v}"
    );
    assert!(err["message"].as_str().unwrap().contains("400 ms"), "{err}");
    // The question was withdrawn on the client (notifications/cancelled):
    // a later "Allow" there would have allowed nothing (issue 37).
    assert_eq!(v["late_cancelled"], true, "the client's question stayed open: {v}");
    let rows = audit(&env, &["--verb", "echo.argv"]);
    assert_eq!(rows[0]["answer"], "timeout");
    assert!(
        rows[0]["duration_ms"].as_i64().unwrap() < 4000,
        "the op did not wait for the late answer: {:?} (run took {:?})",
        rows[0],
        started.elapsed()
    );
}

#[test]
fn check_says_a_0_1_0_component_cannot_declare_effects() {
    let env = Env::new();
    let (_, out, _) = env.run(&["check", echo_v0_1_0().to_str().unwrap()]);
    assert_eq!(out["wit_version"], "0.1.0", "{out}");
    assert!(
        out["warnings"].as_array().unwrap().iter().any(|w| w["code"] == "effects_undeclared"),
        "{out}"
    );
    let (_, current, _) =
        env.run(&["check", verbgate_tests::component("fixture-echo").to_str().unwrap()]);
    assert_eq!(current["wit_version"], "0.2.0", "{current}");
    assert!(
        !current["warnings"].as_array().unwrap().iter().any(|w| w["code"] == "effects_undeclared"),
        "{current}"
    );
}

#[test]
fn a_rule_naming_an_alias_decides_for_the_verb_under_every_name() {
    // Attack (issue 25): `deny` on an alias loaded without a word and the
    // alias ran, because rules matched canonical names only.
    let env = Env::with_plugin("fixture-echo").with_config(
        "[[policy]]\nverbs = [\"echo.args\"]\ndecision = \"deny\"\nreason = \"no echo here\"\n",
    );
    for name in ["echo.args", "echo.argv"] {
        let r = env.op(name, json!({"word": "x"}));
        assert_eq!(r["error"]["code"], "policy_denied", "{name}: {r}");
        assert_eq!(r["error"]["rule"], "policy[1]", "{name}: {r}");
    }
    let help = env.request(&json!({"help": "echo.args"}))["help"].clone();
    assert_eq!(help["policy"]["decision"], "deny", "help reports the rule for the alias: {help}");
    let catalog = env.request(&json!({"help": true}))["help"].clone();
    assert!(
        catalog["policy"]["deny"].as_array().unwrap().contains(&json!("echo.argv")),
        "{catalog}"
    );
    let denied = audit(&env, &["--outcome", "policy_denied"]);
    assert_eq!(denied.len(), 2, "{denied:?}");
    assert!(
        denied.iter().all(|r| r["verb"] == "echo.argv" && r["decided_by"] == "policy[1]"),
        "{denied:?}"
    );
    // An allow rule naming the alias allows the verb (before: the alias in
    // an allow rule matched nothing, so the verb kept asking).
    let env = Env::new().with_config("[[policy]]\nverbs = [\"echo.args\"]\ndecision = \"allow\"\n");
    env.install_from("fixture-echo", &echo_v0_1_0());
    for name in ["echo.args", "echo.argv"] {
        let r = env.op(name, json!({"word": "x"}));
        assert_eq!(r["ok"], true, "{name}: {r}");
    }
}
