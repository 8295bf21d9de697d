//! The MCP surface through a real client session (rmcp's client) over
//! stdio: one small tool, help, the envelope, request-level errors, and
//! byte-for-byte parity with `verbgate request`.

use serde_json::{json, Value};
use verbgate_tests::mcp::Session;
use verbgate_tests::Env;

/// The advertised tool must stay under this many bytes, however many verbs.
const TOOL_BYTES_MAX: usize = 1500;

async fn session(env: &Env) -> Session {
    Session::start(env.serve_command()).await.expect("MCP session")
}

fn rt() -> tokio::runtime::Runtime {
    verbgate_tests::runtime()
}

#[test]
fn one_small_tool_however_many_verbs_are_loaded() {
    rt().block_on(async {
        let env = Env::new();
        let few = session(&env).await;
        let tools = few.tools().await.unwrap();
        assert_eq!(tools.len(), 1);
        assert_eq!(tools[0]["name"], "request");
        let small = serde_json::to_string(&tools[0]).unwrap().len();
        few.close().await.unwrap();

        env.install("fixture-many");
        env.install("fixture-echo");
        let verbs = env.verbs();
        assert!(verbs["verbs"].as_array().unwrap().len() >= 60, "{verbs}");
        let many = session(&env).await;
        let tools = many.tools().await.unwrap();
        assert_eq!(tools.len(), 1);
        let big = serde_json::to_string(&tools[0]).unwrap().len();
        assert!(small <= TOOL_BYTES_MAX && big <= TOOL_BYTES_MAX, "tool is {small} / {big} bytes");
        assert_eq!(small, big, "the advertised tool must not depend on the verbs loaded");
        many.close().await.unwrap();
    });
}

#[test]
fn help_ops_and_errors_over_mcp() {
    rt().block_on(async {
        let env = Env::new();
        env.install("fixture-echo");
        let s = session(&env).await;
        assert!(["2025-06-18", "2025-11-25"].contains(&s.protocol_version().as_str()), "{}", s.protocol_version());

        let catalog = s.request(json!({"help": true})).await.unwrap();
        assert!(!catalog.is_error);
        let sigs: Vec<&str> =
            catalog.structured["help"]["verbs"].as_object().unwrap().values().flat_map(|g| g.as_array().unwrap()).map(|v| v.as_str().unwrap()).collect();
        assert!(sigs.iter().any(|s| s.starts_with("git.log(")), "{sigs:?}");
        assert!(!sigs.iter().any(|s| s.starts_with("echo.args(")), "aliases are never listed");

        let help = s.request(json!({"help": "echo.argv"})).await.unwrap();
        assert_eq!(help.structured["help"]["params_schema"]["additionalProperties"], false);
        assert!(help.structured["help"]["schema_fingerprint"].as_str().unwrap().starts_with("sha256:"));

        let ops = s.request(json!({"ops": [{"op": "echo.argv", "args": {"word": "hi"}}, {"op": "echo.argv", "args": {"wrod": 1}}]})).await.unwrap();
        assert!(!ops.is_error, "a per-op failure is not a tool error");
        assert_eq!(ops.structured["status"], "partial");
        assert_eq!(ops.structured["results"][0]["result"]["argv"], json!(["hi"]));
        assert_eq!(ops.structured["results"][1]["error"]["code"], "unknown_param");
        // The text block carries the same JSON.
        assert_eq!(serde_json::from_str::<Value>(&ops.text).unwrap(), ops.structured);

        for (bad, code) in [
            (json!({"ops": []}), "invalid_request"),
            (json!({"ops": [{"op": "echo.argv"}], "help": true}), "invalid_request"),
            (json!({"ops": (0..9).map(|_| json!({"op": "echo.argv"})).collect::<Vec<_>>()}), "batch_too_large"),
            (json!({"help": "git.lgo"}), "unknown_verb"),
        ] {
            let r = s.request(bad.clone()).await.unwrap();
            assert!(r.is_error, "{bad} must be isError");
            assert_eq!(r.structured["error"]["code"], code, "{bad}: {}", r.structured);
        }
        // A call none of whose ops succeeded failed, for hosts keying on isError (issue 37).
        for failing in [
            json!({"ops": [{"op": "echo.argv", "args": {"wrod": 1}}]}),
            json!({"ops": [{"op": "git.lgo"}, {"op": "echo.argv", "args": {"wrod": 1}}]}),
        ] {
            let r = s.request(failing.clone()).await.unwrap();
            assert!(r.is_error, "{failing} must be isError: {}", r.structured);
            assert_eq!(r.structured["status"], "partial", "the envelope is the same: {}", r.structured);
        }
        let typo = s.request(json!({"help": "git.lgo"})).await.unwrap();
        assert_eq!(typo.structured["error"]["did_you_mean"], json!(["git.log"]));
        let cap = s.request(json!({"ops": (0..9).map(|_| json!({"op": "echo.argv"})).collect::<Vec<_>>()})).await.unwrap();
        assert_eq!(cap.structured["error"]["cap"], 8);
        s.close().await.unwrap();
    });
}

#[test]
fn cli_and_mcp_give_byte_identical_json() {
    rt().block_on(async {
        let env = Env::new();
        env.install("fixture-echo");
        // Compile it into the cache first: a server compiles uncached
        // components in the background and lists them under `loading`
        // meanwhile, which a one-shot CLI run never does.
        env.verbs();
        let s = session(&env).await;
        for request in [
            json!({"help": true}),
            json!({"help": "echo.argv"}),
            json!({"ops": [{"op": "echo.argv", "args": {"word": "x", "tail": ["-c"]}, "dry_run": true}, {"op": "echo.argv", "args": {"limt": 1}}, {"op": "nope.nope"}]}),
            json!({"ops": [{"op": "echo.argv", "args": {"word": "--upload-pack=x"}}]}),
            json!({"ops": []}),
        ] {
            let mcp = s.request(request.clone()).await.unwrap();
            let cli = env.cmd(&["request", &request.to_string()]).output().unwrap();
            let cli_text = String::from_utf8(cli.stdout).unwrap();
            assert_eq!(cli_text.trim_end(), mcp.text, "parity for {request}");
        }
        s.close().await.unwrap();
    });
}

#[test]
fn long_requests_report_progress_when_asked() {
    rt().block_on(async {
        let env = Env::new();
        env.install("fixture-echo");
        let s = session(&env).await;
        let started = std::time::Instant::now();
        let quick =
            s.request_with_progress(json!({"ops": [{"op": "echo.argv"}]}), 7).await.unwrap();
        let took = started.elapsed();
        assert_eq!(quick.structured["status"], "success");
        // Only a request that did finish within the interval can be held to
        // it (on a machine busy compiling, echo.argv may take longer).
        if took < std::time::Duration::from_secs(1) {
            assert!(s.progress().is_empty(), "a request under a second sends no progress");
        }
        let before = s.progress().len();
        let slow = s
            .request_with_progress(
                json!({"ops": [{"op": "echo.sleep", "args": {"ms": 2300}}, {"op": "echo.argv"}]}),
                8,
            )
            .await
            .unwrap();
        assert_eq!(slow.structured["status"], "success", "{}", slow.structured);
        let progress = s.progress().split_off(before);
        assert!(!progress.is_empty(), "a 2.3 s request must report progress");
        for p in &progress {
            assert_eq!(
                p["progressToken"], progress[0]["progressToken"],
                "one token per request: {p}"
            );
            assert_eq!(p["total"], 2.0, "{p}");
        }
        s.close().await.unwrap();
    });
}

#[test]
fn the_catalog_stays_compact_per_verb() {
    let env = Env::new();
    env.install("fixture-many");
    let out = env.request(&json!({"help": true}));
    let count: usize = out["help"]["verbs"]
        .as_object()
        .unwrap()
        .values()
        .map(|g| g.as_array().unwrap().len())
        .sum();
    assert!(count >= 62, "{count}");
    let bytes = serde_json::to_string(&out["help"]["verbs"]).unwrap().len();
    let per_verb = bytes / count;
    assert!(per_verb <= 120, "catalog is {per_verb} bytes per verb");
    // The spawn group is the one that needs fingerprints.
    assert!(out["help"]["verbs"]["spawn"]
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s.as_str().unwrap().starts_with("cargo.test(")));
    assert_eq!(out["help"]["fingerprint_required"], json!(["spawn"]));
}

#[test]
fn the_rg_and_pytest_catalog_lines_stay_compact() {
    // The bundled catalog as a whole is meant to stay near 120 bytes a
    // verb; the rg and pytest verbs must not be what pushes it over.
    for tool in verbgate_tests::TEST_TOOLS {
        verbgate_tests::require_test_tool(tool);
    }
    let env = Env::new();
    let out = env.request(&json!({"help": true}));
    let lines: Vec<&Value> = out["help"]["verbs"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|g| g.as_array().unwrap())
        .filter(|s| s.as_str().is_some_and(|s| s.starts_with("rg.") || s.starts_with("pytest.")))
        .collect();
    assert_eq!(lines.len(), 3, "{out}");
    let bytes: usize = lines.iter().map(|s| s.to_string().len() + 1).sum();
    assert!(
        bytes / lines.len() <= 120,
        "the rg and pytest catalog lines take {} bytes a verb: {lines:?}",
        bytes / lines.len()
    );
}

#[test]
fn cancelling_a_request_stops_the_observation_not_the_work() {
    rt().block_on(async {
        let env = Env::new();
        env.install("fixture-echo");
        let fp = env.request(&json!({"help": "echo.job"}))["help"]["schema_fingerprint"].clone();
        let s = session(&env).await;
        // A slow exec op keeps the request open; the spawn op beside it
        // starts a job. Cancel while the request is still open.
        s.request_then_cancel(
            json!({"ops": [{"op": "echo.sleep", "args": {"ms": 1500}}, {"op": "echo.job", "args": {"word": "kept"}, "schema_fingerprint": fp}]}),
            std::time::Duration::from_millis(500),
        )
        .await
        .unwrap();
        // The server keeps serving, and the job the cancelled request started lives on.
        let listed = s.request(json!({"ops": [{"op": "job.list", "args": {"verb": "echo.job"}}]})).await.unwrap();
        let jobs = listed.structured["results"][0]["result"]["jobs"].as_array().unwrap().clone();
        assert_eq!(jobs.len(), 1, "{}", listed.structured);
        let id = jobs[0]["id"].as_str().unwrap();
        let w = s.request(json!({"ops": [{"op": "job.wait", "args": {"ids": [id], "max_wait_seconds": 20}}]})).await.unwrap();
        assert_eq!(w.structured["results"][0]["result"]["jobs"][0]["status"], "succeeded", "{}", w.structured);
        s.close().await.unwrap();
    });
}

/// Raw JSON-RPC over the server's stdio, for inputs no well-behaved client
/// would send.
fn raw_session(
    env: &Env,
) -> (std::process::Child, std::process::ChildStdin, std::sync::mpsc::Receiver<Value>) {
    use std::io::BufRead;
    let mut child = env
        .cmd(&["serve"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Ok(v) = serde_json::from_str::<Value>(&line) {
                let _ = tx.send(v);
            }
        }
    });
    (child, stdin, rx)
}

#[test]
fn garbage_arguments_get_structured_errors_and_the_server_keeps_answering() {
    use std::io::Write;
    let env = Env::new();
    let (mut child, mut stdin, rx) = raw_session(&env);
    let mut send = |text: String| {
        stdin.write_all(text.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    };
    let reply = |id: i64| -> Value {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let v = rx.recv_timeout(left).unwrap_or_else(|_| panic!("no reply to request {id}"));
            if v["id"] == id {
                return v;
            }
        }
    };
    send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}).to_string());
    assert_eq!(reply(1)["result"]["protocolVersion"], "2025-06-18");
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string());
    let call = |id: i64, args: Value| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "request", "arguments": args}}).to_string()
    };
    // 1 MB of nesting: beyond any JSON depth limit.
    let deep = format!("{}{}", "[".repeat(500_000), "]".repeat(500_000));
    send(format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"request","arguments":{{"ops":{deep}}}}}}}"#
    ));
    for (id, args, code) in [
        (3, json!({"ops": "git.log"}), "invalid_request"),
        (4, json!({"ops": [{"op": 42}]}), "invalid_request"),
        (5, json!({"ops": [[[[{"op": "git.log"}]]]]}), "invalid_request"),
        (6, json!({"help": {"x": 1}}), "invalid_request"),
    ] {
        send(call(id, args));
        let r = reply(id);
        assert_eq!(r["result"]["isError"], true, "{r}");
        assert_eq!(r["result"]["structuredContent"]["error"]["code"], code, "{r}");
    }
    send(call(7, json!({"help": true})));
    assert_eq!(reply(7)["result"]["structuredContent"]["status"], "success");
    child.kill().unwrap();
    let _ = child.wait();
}

#[test]
fn eight_slow_ops_run_concurrently_and_answer_in_order() {
    let env = Env::new();
    env.install("fixture-echo");
    // Warm the compile cache so the timing below is the ops, not start-up.
    env.verbs();
    let ops: Vec<Value> =
        (0..8).map(|i| json!({"op": "echo.sleep", "args": {"ms": 400 + i}})).collect();
    let start = std::time::Instant::now();
    let out = env.request(&json!({ "ops": ops }));
    let took = start.elapsed();
    let slept: Vec<i64> = out["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["result"]["slept_ms"].as_i64().unwrap())
        .collect();
    assert_eq!(slept, (0..8).map(|i| 400 + i).collect::<Vec<_>>(), "{out}");
    // Sequentially this is 3.2 s of sleeping alone.
    assert!(took < std::time::Duration::from_millis(2000), "8 × 400 ms ops took {took:?}");
}
