//! Consent in both MCP protocol eras (issue 28), with the official Python
//! SDK 2.3's `Client` over stdio and Streamable HTTP: `mode="auto"`
//! negotiates 2026-07-28, where a question travels in an
//! `InputRequiredResult` and the answer on the retry (MRTR);
//! `mode="legacy"` does `initialize` (2025-11-25) and gets server-sent
//! elicitation. Both must give the same envelopes, codes and audit rows.

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;
use verbgate_tests::{git, target_dir, verbgate_bin, Env};

const MODES: [&str; 2] = ["auto", "legacy"];

fn echo_v0_1_0() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/contract-0.1.0/fixture-echo.wasm")
}

/// A repository with one commit and two untracked files; the 0.1.0 echo
/// component (its verbs ask: `default:undeclared`); `git.commit` allowed
/// by a rule, so a batch can mix a write that runs at once with writes
/// that ask (`git.add`, `default:writes_repo`).
fn env_with(config: &str) -> Env {
    let env = Env::new().with_config(config).allowing(&["git.commit"]);
    git(&env.root, &["init", "-q", "-b", "main"]);
    std::fs::write(env.root.join("f"), "x").unwrap();
    git(&env.root, &["add", "f"]);
    git(&env.root, &["commit", "-q", "-m", "only commit"]);
    std::fs::write(env.root.join("a.txt"), "a").unwrap();
    std::fs::write(env.root.join("b.txt"), "b").unwrap();
    env.install_from("fixture-echo", &echo_v0_1_0());
    env
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

/// Run tests/python/mcp_eras.py: (what it printed, its stderr).
fn python(scenario: &str, cfg: &Value) -> (Value, String) {
    let python = target_dir().join("py/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run `just python-env` (part of `just test`)",
        python.display()
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("python/mcp_eras.py");
    let out =
        Command::new(&python).arg(&script).arg(scenario).arg(cfg.to_string()).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "mcp_eras.py {scenario} {cfg} failed: {stdout}\n{stderr}");
    (
        serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}\n{stderr}")),
        stderr,
    )
}

fn stdio(env: &Env, mode: &str) -> Value {
    json!({"mode": mode, "stdio": [verbgate_bin(), env.home, env.root, env.plugins]})
}

type Server = verbgate_tests::HttpServer;

fn serve_http(env: &Env) -> Server {
    env.serve_http(&[])
}

fn token(env: &Env, name: &str) -> String {
    env.run_ok(&["token", "add", name])["token"].as_str().unwrap().to_string()
}

/// Two tokens, then the server (which then makes no token of its own),
/// and the script's config for it.
fn http(env: &Env, mode: &str) -> (Server, Value) {
    let (first, second) = (token(env, "first"), token(env, "second"));
    let server = serve_http(env);
    let cfg = json!({"mode": mode, "url": server.url, "token": first, "token2": second});
    (server, cfg)
}

fn code(reply: &Value, i: usize) -> &str {
    reply["body"]["results"][i]["error"]["code"].as_str().unwrap_or("ok")
}

/// What every era and transport must show for the `consent` scenario.
/// `second_asked`: whether the later client is asked again (see
/// host/src/mcp/scope.rs: a new stdio connection or legacy HTTP session
/// is; the same token and client on 2026-07-28 HTTP is not).
fn check_consent(env: &Env, v: &Value, mode: &str, transport: &str, second_asked: bool) {
    let protocol = v["protocol"].as_str().unwrap();
    assert_eq!(
        protocol == "2026-07-28",
        mode == "auto",
        "auto negotiates 2026-07-28, legacy an initialize-era version: {protocol}"
    );
    let label = format!("{mode}/{transport}");
    assert_eq!(
        v["once"]["body"]["results"][0]["result"]["argv"],
        json!(["one"]),
        "{label}: allowed once, it ran: {v}"
    );
    assert_eq!(v["session"]["body"]["results"][0]["ok"], true, "{label}: {v}");
    assert_eq!(
        v["granted"]["body"]["results"][0]["result"]["argv"],
        json!(["three"]),
        "{label}: {v}"
    );
    assert_eq!(
        v["asked_after_grant"], 2,
        "{label}: the session grant means the third op is not asked about"
    );
    assert_eq!(code(&v["declined"], 0), "consent_declined", "{label}: {v}");
    assert_eq!(v["declined"]["body"]["results"][0]["error"]["answer"], "decline");
    // isError in both eras: the declined call's only op failed; the batch
    // had an op that ran, so it is not an error (docs/errors.md).
    assert_eq!(v["declined"]["is_error"], true, "{label}: nothing succeeded: {v}");
    assert_eq!(v["batch"]["is_error"], false, "{label}: one op succeeded: {v}");
    assert_eq!(code(&v["batch"], 0), "consent_declined", "{label}: {v}");
    assert_eq!(
        v["batch"]["body"]["results"][1]["ok"], true,
        "{label}: the op needing no consent ran: {v}"
    );
    // The mixed batch: the allowed commit, the read and both asked adds.
    let mixed = &v["mixed"]["body"];
    assert_eq!(mixed["status"], "success", "{label}: {v}");
    assert_eq!(
        mixed["results"][0]["result"]["commit"]["subject"], "mixed batch",
        "{label}: {mixed}"
    );
    assert_eq!(mixed["results"][2]["result"]["staged"], json!(["a.txt"]), "{label}: {mixed}");
    assert_eq!(mixed["results"][3]["result"]["staged"], json!(["b.txt"]), "{label}: {mixed}");
    assert_eq!(
        git(&env.root, &["rev-list", "--count", "HEAD"]).trim(),
        "2",
        "{label}: the allowed commit ran exactly once across the rounds"
    );
    let staged = git(&env.root, &["diff", "--cached", "--name-only"]);
    assert_eq!(
        staged.lines().collect::<Vec<_>>(),
        ["a.txt", "b.txt"],
        "{label}: both asked adds ran"
    );
    let asked = v["asked"].as_array().unwrap();
    assert_eq!(asked.len(), 6, "{label}: {asked:?}");
    let first = asked[0]["message"].as_str().unwrap();
    assert!(
        first.contains("echo.argv")
            && first.contains("effects: \"undeclared\"")
            && first.contains("verbgate-fixture-cli argv one"),
        "{label}: {first}"
    );
    assert_eq!(asked[0]["schema"]["properties"]["decision"]["oneOf"][1]["const"], "allow_session");
    assert!(
        asked[4]["message"].as_str().unwrap().contains("`git.add`")
            && asked[4]["message"].as_str().unwrap().contains("a.txt"),
        "{label}: {asked:?}"
    );
    assert_eq!(v["asked_second"], if second_asked { 1 } else { 0 }, "{label}: {v}");
    assert_eq!(v["second"]["body"]["results"][0]["ok"], true, "{label}: {v}");
    let missing = &v["no_capability"]["body"]["results"][0]["error"];
    assert_eq!(missing["code"], "consent_required", "{label}: {v}");
    let message = missing["message"].as_str().unwrap();
    assert!(
        message.contains("the MCP client `eras-mute`") && !message.contains("client this client"),
        "{label}: {message}"
    );
    if mode == "auto" {
        assert!(
            message.contains("io.modelcontextprotocol/clientCapabilities")
                && message.contains("InputRequiredResult"),
            "{label}: names what is missing: {message}"
        );
    } else {
        assert!(message.contains("`initialize`"), "{label}: {message}");
    }

    // The same audit rows in both eras.
    let rows = audit(env, &[]);
    let by = |verb: &str| rows.iter().filter(|r| r["verb"] == verb).collect::<Vec<_>>();
    let argv = by("echo.argv");
    let decided: Vec<(&str, Option<&str>, &str)> = argv
        .iter()
        .map(|r| {
            (
                r["decided_by"].as_str().unwrap(),
                r["answer"].as_str(),
                r["outcome"].as_str().unwrap(),
            )
        })
        .collect();
    let second = if second_asked {
        ("person", Some("allow_once"), "ok")
    } else {
        ("session_grant", None, "ok")
    };
    assert_eq!(
        decided,
        [
            ("person", Some("allow_once"), "ok"),
            ("person", Some("allow_session"), "ok"),
            ("session_grant", None, "ok"),
            second,
            ("default:undeclared", None, "consent_required")
        ],
        "{label}: {argv:?}"
    );
    assert!(argv.iter().all(|r| r["transport"] == transport), "{label}: {argv:?}");
    assert_eq!(
        argv[0]["client"], "eras-test/1",
        "{label}: the client's name from `initialize` or from `_meta`: {:?}",
        argv[0]
    );
    let commits = by("git.commit");
    assert_eq!(commits.len(), 1, "{label}: one commit row, run once: {commits:?}");
    assert_eq!(commits[0]["outcome"], "ok");
    let adds: Vec<(&str, Option<&str>)> = by("git.add")
        .iter()
        .map(|r| (r["outcome"].as_str().unwrap(), r["answer"].as_str()))
        .collect();
    assert_eq!(adds, [("ok", Some("allow_once")), ("ok", Some("allow_once"))], "{label}");
    assert_eq!(by("git.status").len(), 2, "{label}: each read ran once");
    let (sleep, status) = (by("echo.sleep")[0], by("git.status")[0]);
    assert!(sleep["duration_ms"].as_i64().unwrap() >= 1500, "{label}: {sleep}");
    assert!(status["duration_ms"].as_i64().unwrap() < 1500, "{label}: {status}");
}

#[test]
fn python_sdk_consent_in_both_eras_over_stdio() {
    for mode in MODES {
        let env = env_with("");
        let (v, _) = python("consent", &stdio(&env, mode));
        check_consent(&env, &v, mode, "stdio", true);
    }
}

#[test]
fn python_sdk_consent_in_both_eras_over_http() {
    for mode in MODES {
        let env = env_with("");
        let (_server, cfg) = http(&env, mode);
        let (v, stderr) = python("consent", &cfg);
        check_consent(&env, &v, mode, "http", mode == "legacy");
        // Issue 28: closing a legacy session answered 202, which the SDK
        // logs as a failure.
        assert!(!stderr.contains("Session termination failed"), "{mode}: {stderr}");
    }
}

#[test]
fn a_late_answer_times_out_as_declined_in_both_eras() {
    for (mode, over_http) in [("auto", false), ("legacy", false), ("auto", true), ("legacy", true)]
    {
        let env = env_with("[consent]\ntimeout_ms = 400\n");
        let started = std::time::Instant::now();
        let (_server, cfg) = if over_http {
            let (server, cfg) = http(&env, mode);
            (Some(server), cfg)
        } else {
            (None, stdio(&env, mode))
        };
        let (v, _) = python("timeout", &cfg);
        let err = &v["late"]["body"]["results"][0]["error"];
        assert_eq!(
            (err["code"].as_str(), err["answer"].as_str()),
            (Some("consent_declined"), Some("timeout")),
            "{mode}: {v}"
        );
        assert!(err["message"].as_str().unwrap().contains("400 ms"), "{mode}: {err}");
        assert_eq!(v["asked"], 1);
        let rows = audit(&env, &["--verb", "echo.argv"]);
        assert_eq!(
            (rows[0]["answer"].as_str(), rows[0]["outcome"].as_str()),
            (Some("timeout"), Some("consent_declined")),
            "{mode}: {rows:?}"
        );
        assert!(
            rows[0]["duration_ms"].as_i64().unwrap() < 1800,
            "{mode}: the op did not wait for the late answer: {:?} ({:?})",
            rows[0],
            started.elapsed()
        );
    }
}

fn check_state(v: &Value, transport: &str) {
    assert_eq!(v["first"]["input_required"], true, "{transport}: {v}");
    assert!(
        v["first_message"].as_str().unwrap().contains("verbgate-fixture-cli argv held"),
        "{transport}: {v}"
    );
    let refused = |what: &str, reason: &str| {
        // A JSON-RPC error (invalid params, as SEP-2322 requires), not a
        // tool result: it was `isError` before (issue 37).
        let r = &v[what]["jsonrpc_error"];
        assert_eq!(r["code"], -32602, "{transport} {what}: {v}");
        assert_eq!(r["message"], r["data"]["message"], "{transport} {what}: {v}");
        let e = &r["data"];
        assert_eq!(
            (e["code"].as_str(), e["request_state"].as_str()),
            (Some("invalid_request"), Some(reason)),
            "{transport} {what}: {e}"
        );
        assert!(
            e["message"].as_str().unwrap().contains("without requestState"),
            "says what to do: {e}"
        );
        assert!(e["given"].as_str().is_some_and(|g| !g.is_empty()), "quotes the value: {e}");
    };
    refused("altered", "not_issued");
    refused("other_args", "other_arguments");
    refused("other_client", "not_issued");
    if transport == "http" {
        refused("other_token", "not_issued");
    }
    assert_eq!(
        v["answered"]["body"]["results"][0]["result"]["argv"],
        json!(["held"]),
        "{transport}: the refused tries did not spend the state: {v}"
    );
    refused("replayed", "used");
}

#[test]
fn an_altered_foreign_or_replayed_request_state_is_refused() {
    let env = env_with("");
    let (v, _) = python("state", &stdio(&env, "auto"));
    check_state(&v, "stdio");
    let rows = audit(&env, &[]);
    let ran: Vec<&Value> = rows.iter().filter(|r| r["verb"] == "echo.argv").collect();
    assert_eq!(ran.len(), 1, "the op ran once, for the one good retry: {rows:?}");
    let refusals =
        rows.iter().filter(|r| r["verb"] == "request" && r["outcome"] == "invalid_request").count();
    assert_eq!(refusals, 4, "each refused retry is in the trail: {rows:?}");

    let env = env_with("");
    let (_server, cfg) = http(&env, "auto");
    let (v, _) = python("state", &cfg);
    check_state(&v, "http");
}

#[test]
fn allow_for_the_session_covers_one_token_and_client_over_http() {
    for mode in MODES {
        let env = env_with("");
        let (_server, cfg) = http(&env, mode);
        let (v, _) = python("scope", &cfg);
        assert_eq!(v["granted_by"]["body"]["results"][0]["ok"], true, "{mode}: {v}");
        // 2026-07-28: the same token and client keep the grant across
        // requests and connections; legacy: a new session is asked again.
        let same = if mode == "auto" { 0 } else { 1 };
        assert_eq!(v["same_client"]["asked"], same, "{mode}: {v}");
        assert_eq!(
            v["other_client"]["asked"], 1,
            "{mode}: another client of the token is asked: {v}"
        );
        assert_eq!(v["other_token"]["asked"], 1, "{mode}: another token is asked: {v}");
        for k in ["same_client", "other_client", "other_token"] {
            assert_eq!(v[k]["result"]["body"]["results"][0]["ok"], true, "{mode} {k}: {v}");
        }
    }
}

/// A retry whose answer is unusable — an `accept` of a choice the form
/// does not offer, or no answer at all — is asked again with a message
/// saying what was wrong, and a right answer then runs the op. Before
/// (issue 37) it used up the batch and blamed the client's elicitation.
#[test]
fn an_unusable_answer_is_asked_again_saying_why() {
    let env = env_with("");
    let (v, _) = python("again", &stdio(&env, "auto"));
    for (what, says) in [("wrong", "chose \"yes\""), ("missing", "no answer for `consent_2`")] {
        assert_eq!(v[what]["input_required"], true, "{what}: {v}");
        let message = v[format!("{what}_messages")][0].as_str().unwrap_or_default();
        assert!(message.contains(says) && message.contains("asks again"), "{what}: {message}");
        assert!(
            message.contains("verbgate-fixture-cli argv again"),
            "the question itself: {message}"
        );
        assert_eq!(
            message.matches("asks again").count(),
            1,
            "one note, not one per round: {message}"
        );
    }
    assert_eq!(v["answered"]["body"]["results"][0]["result"]["argv"], json!(["again"]), "{v}");
}
