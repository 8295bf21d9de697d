//! `verbgate serve --http`: Streamable HTTP with bearer tokens, end to end.
//! The real binary on a loopback port picked by the kernel (`--http
//! 127.0.0.1:0`, the bound address read from stderr), the official Python
//! SDK's Streamable HTTP client for whole sessions, and raw HTTP/1.1 for the
//! gate's answers (401, 403, 413, expired sessions).

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::Duration;
use verbgate_tests::{target_dir, Env};

type Server = verbgate_tests::HttpServer;

fn serve(env: &Env, extra: &[&str]) -> Server {
    env.serve_http(extra)
}

fn add_token(env: &Env, name: &str, allow: &[&str]) -> String {
    let mut args = vec!["token", "add", name];
    for a in allow {
        args.extend_from_slice(&["--allow", a]);
    }
    let out = env.run_ok(&args);
    out["token"].as_str().unwrap().to_string()
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;

/// The status line and headers of one HTTP/1.1 POST to /mcp (the body,
/// possibly an endless event stream, is not read).
struct Head {
    status: u16,
    headers: Vec<(String, String)>,
}

impl Head {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

fn post(addr: &str, headers: &[(&str, &str)], body: &[u8]) -> Head {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut req = format!(
        "POST /mcp HTTP/1.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        req.push_str(&format!("Host: {addr}\r\n"));
    }
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).unwrap();
    // The server may answer (413) before it has read the whole body.
    let _ = s.write_all(body);
    let (status, headers) = verbgate_tests::read_http_head(&mut s);
    Head { status, headers }
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// Run tests/python/mcp_http.py and parse what it printed.
fn python(args: &[&str]) -> Value {
    let python = target_dir().join("py/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run `just python-env` (part of `just test`)",
        python.display()
    );
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("python/mcp_http.py");
    let out = Command::new(&python).arg(&script).args(args).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "python client failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

#[test]
fn a_python_sdk_session_over_http_runs_help_a_batch_a_job_and_reports_progress() {
    let env = Env::with_plugin("fixture-echo");
    let token = add_token(&env, "laptop", &[]);
    let server = serve(&env, &[]);
    let v = python(&["session", &server.url, &token]);
    assert_eq!(v["tools"], json!(["request"]), "{v}");
    assert!(
        v["catalog_verbs"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s.as_str().unwrap().starts_with("echo.job(")),
        "{v}"
    );
    // The batch: answers in order, one bad op costs only itself.
    assert_eq!(v["batch"]["status"], "partial", "{v}");
    assert_eq!(v["batch"]["results"][0]["result"]["argv"], json!(["one"]));
    assert_eq!(v["batch"]["results"][1]["result"]["argv"], json!(["two"]));
    assert_eq!(v["batch"]["results"][2]["error"]["code"], "unknown_param");
    assert_eq!(v["batch_is_error"], false);
    // Progress arrives on this client's own stream while a slow op runs.
    assert_eq!(v["slow"]["status"], "success", "{v}");
    let progress = v["progress"].as_array().unwrap();
    assert!(!progress.is_empty(), "no progress notification for a 2.5 s request: {v}");
    assert_eq!(progress[0]["total"], 1.0);
    // The spawned job ran to its end and its result came back.
    let job = &v["waited"]["results"][0]["result"];
    assert_eq!(job["all_terminal"], true, "{v}");
    assert_eq!(job["jobs"][0]["status"], "succeeded");
    assert_eq!(v["result"]["results"][0]["result"]["result"]["argv"], json!(["over-http"]), "{v}");
    // The same job is in the store `verbgate request` reads.
    let status = env.op("job.status", json!({"id": v["job_id"]}));
    assert_eq!(status["result"]["status"], "succeeded", "{status}");
}

#[test]
fn missing_wrong_and_revoked_tokens_get_401_with_a_bearer_challenge() {
    let env = Env::new();
    let token = add_token(&env, "ci", &[]);
    let server = serve(&env, &[]);
    let missing = post(&server.addr, &[], INITIALIZE.as_bytes());
    assert_eq!(missing.status, 401);
    assert!(
        missing.header("www-authenticate").unwrap().starts_with("Bearer"),
        "{:?}",
        missing.headers
    );
    let wrong = post(
        &server.addr,
        &[("Authorization", &bearer(&format!("{token}x")))],
        INITIALIZE.as_bytes(),
    );
    assert_eq!(wrong.status, 401);
    let not_bearer =
        post(&server.addr, &[("Authorization", &format!("Basic {token}"))], INITIALIZE.as_bytes());
    assert_eq!(not_bearer.status, 401);
    let good = post(&server.addr, &[("Authorization", &bearer(&token))], INITIALIZE.as_bytes());
    assert_eq!(good.status, 200, "{:?}", good.headers);
    // Revoked while the server runs: the very next request is refused.
    env.run_ok(&["token", "revoke", "ci"]);
    let revoked = post(&server.addr, &[("Authorization", &bearer(&token))], INITIALIZE.as_bytes());
    assert_eq!(revoked.status, 401);
    // The listing never shows a token, and the file holds only hashes.
    let listed = env.run_ok(&["token", "list"]);
    assert_eq!(listed["tokens"], json!([]));
    let file = std::fs::read_to_string(env.home.join("tokens.json")).unwrap();
    assert!(!file.contains(&token));
}

#[test]
fn a_session_answers_only_to_the_token_that_opened_it() {
    let env = Env::new();
    let alice = add_token(&env, "alice", &[]);
    let mallory = add_token(&env, "mallory", &[]);
    let server = serve(&env, &[]);
    let init = post(&server.addr, &[("Authorization", &bearer(&alice))], INITIALIZE.as_bytes());
    assert_eq!(init.status, 200);
    let id = init.header("mcp-session-id").expect("a session id").to_string();
    let initialized = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let session = [("Mcp-Session-Id", id.as_str()), ("MCP-Protocol-Version", "2025-06-18")];
    // Another valid token that learned the id gets what an unknown id gets.
    let stolen = post(
        &server.addr,
        &[session[0], session[1], ("Authorization", &bearer(&mallory))],
        initialized,
    );
    assert_eq!(stolen.status, 404);
    let own = post(
        &server.addr,
        &[session[0], session[1], ("Authorization", &bearer(&alice))],
        initialized,
    );
    assert_eq!(own.status, 202);
}

#[test]
fn a_foreign_origin_or_host_gets_403() {
    let env = Env::new();
    let token = add_token(&env, "ci", &[]);
    let server = serve(&env, &[]);
    let auth = bearer(&token);
    let foreign = post(
        &server.addr,
        &[("Authorization", &auth), ("Origin", "http://evil.example")],
        INITIALIZE.as_bytes(),
    );
    assert_eq!(foreign.status, 403);
    // A DNS-rebinding page reaches the loopback port under its own name.
    let rebound = post(
        &server.addr,
        &[("Authorization", &auth), ("Host", "evil.example")],
        INITIALIZE.as_bytes(),
    );
    assert_eq!(rebound.status, 403);
    let local = post(
        &server.addr,
        &[("Authorization", &auth), ("Origin", "http://localhost:3000")],
        INITIALIZE.as_bytes(),
    );
    assert_eq!(local.status, 200);
    // An origin the operator allowed.
    drop(server);
    let server =
        serve(&env, &["--allow-origin", "https://app.example:443", "--allow-host", "gate.example"]);
    let allowed = post(
        &server.addr,
        &[("Authorization", &auth), ("Origin", "https://app.example"), ("Host", "gate.example")],
        INITIALIZE.as_bytes(),
    );
    assert_eq!(allowed.status, 200);
    let other = post(
        &server.addr,
        &[("Authorization", &auth), ("Origin", "https://evil.example")],
        INITIALIZE.as_bytes(),
    );
    assert_eq!(other.status, 403);
}

#[test]
fn oversized_bodies_get_413_and_idle_sessions_expire() {
    let env = Env::new();
    let server =
        serve(&env, &["--max-body-bytes", "4096", "--session-idle-secs", "1", "--no-auth"]);
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"pad":"{}"}}}}"#,
        "x".repeat(64 * 1024)
    );
    assert_eq!(post(&server.addr, &[], big.as_bytes()).status, 413);
    // A session, then silence past the idle limit: the session is gone.
    let init = post(&server.addr, &[], INITIALIZE.as_bytes());
    assert_eq!(init.status, 200);
    let id = init.header("mcp-session-id").expect("a session id").to_string();
    let initialized = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let live = post(
        &server.addr,
        &[("Mcp-Session-Id", &id), ("MCP-Protocol-Version", "2025-06-18")],
        initialized,
    );
    assert_eq!(live.status, 202);
    // Any request is activity, so stay silent well past the limit (4x),
    // then ask once.
    std::thread::sleep(Duration::from_secs(4));
    let ping = br#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;
    let later = post(
        &server.addr,
        &[("Mcp-Session-Id", &id), ("MCP-Protocol-Version", "2025-06-18")],
        ping,
    );
    assert_eq!(later.status, 404, "the idle session is still there");
}

#[test]
fn binding_all_interfaces_without_tokens_refuses_to_start() {
    let env = Env::new();
    let out = env.cmd(&["serve", "--http", "0.0.0.0:0"]).stdin(Stdio::null()).output().unwrap();
    assert!(!out.status.success());
    let text =
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(
        text.contains("without authentication") && text.contains("verbgate token add"),
        "{text}"
    );
    // With a token it starts (and demands it).
    let token = add_token(&env, "remote", &[]);
    let mut child = env
        .cmd(&["serve", "--http", "0.0.0.0:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stderr.take().unwrap()).read_line(&mut line).unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        line.contains("serving MCP on http://0.0.0.0:") && line.contains("bearer tokens required"),
        "{line}"
    );
    assert!(!token.is_empty());
}

#[test]
fn one_tokens_allow_list_is_enforced_while_anothers_is_not() {
    let env = Env::with_plugin("fixture-echo");
    let narrow = add_token(&env, "narrow", &["job.*"]);
    let wide = add_token(&env, "wide", &[]);
    let server = serve(&env, &[]);
    let n = python(&["probe", &server.url, &narrow]);
    let catalog: Vec<&str> =
        n["catalog_verbs"].as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
    assert!(catalog.iter().all(|s| s.starts_with("job.")), "the narrow catalog lists {catalog:?}");
    assert!(catalog.iter().any(|s| s.starts_with("job.list(")), "{catalog:?}");
    // A verb outside the list answers as one that does not exist
    // (e2e/http_bounds.rs compares the two).
    assert_eq!(n["help_echo_is_error"], true, "{n}");
    assert_eq!(n["help_echo"]["error"]["code"], "unknown_verb", "{n}");
    let ops = &n["ops"]["results"];
    assert_eq!(ops[0]["error"]["code"], "unknown_verb", "{n}");
    assert_eq!(ops[0]["error"]["did_you_mean"], json!([]), "{n}");
    // An alias of a refused verb is refused too.
    assert_eq!(ops[1]["error"]["code"], "unknown_verb", "{n}");
    assert_eq!(ops[1]["error"]["verb"], "echo.args");
    assert_eq!(ops[2]["ok"], true, "{n}");
    let w = python(&["probe", &server.url, &wide]);
    assert!(
        w["catalog_verbs"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s.as_str().unwrap().starts_with("echo.argv(")),
        "{w}"
    );
    assert_eq!(w["help_echo_is_error"], false, "{w}");
    let ops = &w["ops"]["results"];
    assert_eq!(
        (ops[0]["ok"].clone(), ops[1]["ok"].clone(), ops[2]["ok"].clone()),
        (json!(true), json!(true), json!(true)),
        "{w}"
    );
    assert_eq!(ops[1]["result"]["argv"], json!(["alias"]));
}

#[test]
fn jobs_belong_to_the_token_that_started_them() {
    // Seen before: any token allowed `job.*` could list, read and kill the
    // jobs another token started.
    let env = Env::with_plugin("fixture-echo");
    let (alice, mallory) = (add_token(&env, "alice", &[]), add_token(&env, "mallory", &[]));
    let server = serve(&env, &[]);
    let fp = env.request(&json!({"help": "echo.job"}))["help"]["schema_fingerprint"].clone();
    let spawn =
        json!({"ops": [{"op": "echo.job", "args": {"sleep_ms": 30000}, "schema_fingerprint": fp}]})
            .to_string();
    let started = python(&["request", &server.url, &alice, &spawn]);
    let id = started["results"][0]["result"]["job"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{started}"))
        .to_string();
    let probe = json!({"ops": [{"op": "job.list"}, {"op": "job.status", "args": {"id": &id}}, {"op": "job.kill", "args": {"id": &id}}]}).to_string();
    let m = python(&["request", &server.url, &mallory, &probe]);
    assert_eq!(
        m["results"][0]["result"]["jobs"],
        json!([]),
        "another token's job is not listed: {m}"
    );
    assert_eq!(m["results"][1]["error"]["code"], "not_found", "{m}");
    assert_eq!(m["results"][2]["error"]["code"], "not_found", "nor killed: {m}");
    let listed = python(&[
        "request",
        &server.url,
        &alice,
        &json!({"ops": [{"op": "job.status", "args": {"id": &id}}]}).to_string(),
    ]);
    assert_eq!(listed["results"][0]["result"]["status"], "running", "{listed}");
    // A token granted every job (and the local user) sees and stops it.
    let out = env.run_ok(&["token", "add", "ops", "--all-jobs"]);
    let ops = out["token"].as_str().unwrap().to_string();
    let o = python(&[
        "request",
        &server.url,
        &ops,
        &json!({"ops": [{"op": "job.kill", "args": {"id": &id}}]}).to_string(),
    ]);
    assert_eq!(o["results"][0]["ok"], true, "{o}");
    assert_eq!(env.op("job.status", json!({"id": &id}))["result"]["status"], "killed");
}

#[test]
fn fifty_clients_twenty_requests_each_without_errors_share_one_job_store() {
    let env = Env::with_plugin("fixture-echo");
    let token = add_token(&env, "load", &[]);
    let server = serve(&env, &[]);
    let v = python(&["load", &server.url, &token, "50", "20"]);
    eprintln!("load over HTTP: {v}");
    assert_eq!(v["error_count"], 0, "{v}");
    assert_eq!(v["requests"], 1000, "{v}");
    // The job one client spawned is visible to every other client.
    assert_eq!(v["seen_by_others"], 50, "{v}");
}

#[test]
fn the_mcp_inspector_cli_lists_the_tool_and_calls_it() {
    let inspector = target_dir().join("inspector/node_modules/.bin/mcp-inspector");
    assert!(
        inspector.exists(),
        "{} is missing: run `just inspector` (part of `just test`)",
        inspector.display()
    );
    // Inspector 0.15.0's CLI cannot send headers, so this is the loopback
    // configuration without authentication (`--no-auth`).
    let env = Env::new().with_config("[[policy]]\nverbs = [\"job.list\"]\ndecision = \"deny\"\n");
    verbgate_tests::git(&env.root, &["init", "-q"]);
    std::fs::write(env.root.join("a.txt"), "a\n").unwrap();
    let server = serve(&env, &["--no-auth"]);
    let run = |extra: &[&str]| -> Value {
        let out = Command::new(&inspector)
            .args(["--cli", &server.url, "--transport", "http"])
            .args(extra)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "inspector failed: {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"))
    };
    let tools = run(&["--method", "tools/list"]);
    assert_eq!(tools["tools"].as_array().unwrap().len(), 1, "{tools}");
    assert_eq!(tools["tools"][0]["name"], "request");
    // The inspector sends tool arguments as strings: ask for one verb's help.
    let called =
        run(&["--method", "tools/call", "--tool-name", "request", "--tool-arg", "help=job.list"]);
    assert_eq!(called["structuredContent"]["status"], "success", "{called}");
    assert_eq!(called["structuredContent"]["help"]["verb"], "job.list", "{called}");
    // A denied op and one that needs consent the inspector cannot give: the
    // structured error comes through (array arguments are sent as JSON).
    let ops = r#"ops=[{"op":"job.list"},{"op":"git.add","args":{"paths":["a.txt"]}}]"#;
    let called = run(&["--method", "tools/call", "--tool-name", "request", "--tool-arg", ops]);
    let results = &called["structuredContent"]["results"];
    assert_eq!(results[0]["error"]["code"], "policy_denied", "{called}");
    assert_eq!(results[0]["error"]["rule"], "policy[1]");
    assert_eq!(results[1]["error"]["code"], "consent_required", "{called}");
    assert_eq!(results[1]["error"]["rule"], "default:writes_repo");
}

/// Inspector's 1.x CLI sends headers (issue 37: the docs said it could
/// not): with `--header "Authorization: Bearer …"` it lists the tool and
/// calls it on a server with tokens; without, it is refused.
#[test]
fn the_inspector_1_cli_authenticates_with_a_header() {
    let cli = target_dir().join("inspector-1/node_modules/.bin/mcp-inspector");
    assert!(
        cli.exists(),
        "{} is missing: run `just inspector` (part of `just test`)",
        cli.display()
    );
    let env = Env::new();
    let token = add_token(&env, "inspector", &[]);
    let server = serve(&env, &[]);
    let run = |extra: &[&str]| {
        Command::new(&cli)
            .args(["--cli", &server.url, "--transport", "http"])
            .args(extra)
            .output()
            .unwrap()
    };
    let bearer = format!("Authorization: Bearer {token}");
    let out = run(&["--header", &bearer, "--method", "tools/list"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let tools: Value =
        serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(tools["tools"][0]["name"], "request", "{tools}");
    let out = run(&[
        "--header",
        &bearer,
        "--method",
        "tools/call",
        "--tool-name",
        "request",
        "--tool-arg",
        "help=job.list",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let called: Value =
        serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(called["structuredContent"]["help"]["verb"], "job.list", "{called}");
    let refused = run(&["--method", "tools/list"]);
    assert!(
        !refused.status.success(),
        "no header, no session: {}",
        String::from_utf8_lossy(&refused.stdout)
    );
}
