//! OpenTelemetry, end to end: the real binary serves MCP on stdio with
//! `OTEL_EXPORTER_OTLP_ENDPOINT` naming a real OTLP/HTTP receiver
//! (scripts/otlp-receiver.py, decoding with the official protobuf
//! definitions `just otel-tools` installs). A `tools/call` whose `_meta`
//! carries a W3C `traceparent` becomes a SERVER span of that trace with
//! the MCP semantic-convention attributes, its ops child spans (verb,
//! decision, program, outcome), and the metrics arrive — and no op's args
//! reach the collector. Without the variables, nothing is sent.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;
use verbgate_tests::{target_dir, Env, Reaped};

/// The receiver, and the file it appends decoded lines to.
fn receiver(dir: &Path) -> (Reaped, u16, PathBuf) {
    let python = target_dir().join("py/bin/python");
    let out = dir.join("otlp.jsonl");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/otlp-receiver.py");
    let mut child = Command::new(&python)
        .arg(script)
        .arg("0")
        .arg(&out)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| panic!("{}: {e}: run `just otel-tools`", python.display()));
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let up: Value = serde_json::from_str(&line).unwrap_or_else(|e| {
        panic!("{e}: {line:?} (is opentelemetry-proto installed? `just otel-tools`)")
    });
    (Reaped(child), up["port"].as_u64().unwrap() as u16, out)
}

/// One stdio session: initialize, a tools/call carrying `meta`, tools/list;
/// then stdin closes and the server exits (flushing what it holds).
fn session(env: &Env, otel: &[(&str, String)], meta: Value) -> Vec<Value> {
    let mut cmd = env.cmd(&["serve"]);
    for (k, v) in otel {
        cmd.env(k, v);
    }
    let mut child =
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut send = |v: Value| writeln!(stdin, "{v}").unwrap();
    let mut answers = vec![];
    let read = |stdout: &mut BufReader<_>| loop {
        let mut line = String::new();
        assert!(stdout.read_line(&mut line).unwrap() > 0, "the server ended early");
        let v: Value = serde_json::from_str(&line).unwrap();
        if v.get("id").is_some() {
            return v;
        }
    };
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "otel-test", "version": "1"}}}),
    );
    answers.push(read(&mut stdout));
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "request", "arguments": {"ops": [{"op": "echo.argv", "args": {"word": "secret-word-7"}}, {"op": "no.such"}]}, "_meta": meta}}),
    );
    answers.push(read(&mut stdout));
    send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {}}));
    answers.push(read(&mut stdout));
    // A tool name a client made up: refused, and one metric bucket.
    send(
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "made-up-tool-17", "arguments": {}}}),
    );
    answers.push(read(&mut stdout));
    drop(stdin);
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    answers
}

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn a_tools_call_is_a_server_span_of_the_clients_trace_with_op_children_and_metrics() {
    let env = Env::with_plugin("fixture-echo")
        .with_config("[[policy]]\nverbs = [\"echo.*\"]\ndecision = \"allow\"\n");
    let dir = tempfile::tempdir().unwrap();
    let (_rx, port, out) = receiver(dir.path());
    let otel = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", format!("http://127.0.0.1:{port}")),
        ("OTEL_EXPORTER_OTLP_HEADERS", "x-test-header=from%20env".to_string()),
        ("OTEL_SERVICE_NAME", "verbgate-under-test".to_string()),
    ];
    let trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let answers = session(
        &env,
        &otel,
        json!({"traceparent": format!("00-{trace}-00f067aa0ba902b7-01"), "tracestate": "vendor=abc"}),
    );
    let result = &answers[1]["result"];
    assert_eq!(result["structuredContent"]["results"][0]["ok"], true, "{result}");
    // The server flushed at exit: everything is at the receiver already.
    let got = lines(&out);
    let spans: Vec<&Value> = got.iter().filter(|l| l["signal"] == "span").collect();
    let call = spans
        .iter()
        .find(|s| s["attributes"]["mcp.method.name"] == "tools/call")
        .unwrap_or_else(|| panic!("no tools/call span in {got:#?}"));
    assert_eq!(call["name"], "tools/call request");
    assert_eq!(call["kind"], 2, "SERVER");
    assert_eq!(call["trace_id"], trace, "the client's trace");
    assert_eq!(call["parent_span_id"], "00f067aa0ba902b7");
    assert_eq!(call["trace_state"], "vendor=abc");
    let a = &call["attributes"];
    assert_eq!(a["gen_ai.tool.name"], "request");
    assert_eq!(a["gen_ai.operation.name"], "execute_tool");
    assert_eq!(a["jsonrpc.request.id"], "2");
    assert_eq!(a["mcp.protocol.version"], "2025-11-25");
    assert_eq!(a["network.transport"], "pipe");
    assert_eq!(a["error.type"], Value::Null, "one op ran: not every op failed, not isError");
    assert_eq!(call["resource"]["service.name"], "verbgate-under-test");
    assert_eq!(call["header"], "from env", "OTEL_EXPORTER_OTLP_HEADERS reach the collector");
    // Each op is a child of the call.
    let ops: Vec<&&Value> =
        spans.iter().filter(|s| s["name"].as_str().unwrap().starts_with("op ")).collect();
    assert_eq!(ops.len(), 2, "{spans:#?}");
    for op in &ops {
        assert_eq!(op["trace_id"], trace);
        assert_eq!(op["parent_span_id"], call["span_id"]);
        assert!(op["start_ns"].as_u64() <= op["end_ns"].as_u64());
    }
    let echo = ops.iter().find(|s| s["name"] == "op echo.argv").expect("the echo op");
    assert_eq!(echo["attributes"]["verbgate.decision"], "allow");
    assert_eq!(echo["attributes"]["verbgate.outcome"], "ok");
    assert!(echo["attributes"]["process.executable.path"]
        .as_str()
        .is_some_and(|p| p.starts_with('/')));
    let unknown = ops.iter().find(|s| s["name"] == "op unknown").expect("the op naming no verb");
    assert_eq!(unknown["attributes"]["error.type"], "unknown_verb");
    assert_eq!(unknown["attributes"]["verbgate.op"], "no.such");
    assert!(spans.iter().any(|s| s["attributes"]["mcp.method.name"] == "tools/list"));
    // Metrics: the request duration and the per-verb counts.
    let metric = |name: &'static str| -> Vec<&Value> {
        got.iter().filter(|l| l["signal"] == "metric" && l["name"] == name).collect()
    };
    let durations = metric("mcp.server.operation.duration");
    assert!(
        durations.iter().any(|d| d["unit"] == "s"
            && d["attributes"]["mcp.method.name"] == "tools/call"
            && d["count"].as_u64() >= Some(1)),
        "{durations:#?}"
    );
    assert!(
        durations.iter().all(|d| d["attributes"]["gen_ai.tool.name"] != "made-up-tool-17"),
        "a made-up tool name is no metric series: {durations:#?}"
    );
    assert!(durations.iter().any(|d| d["attributes"]["gen_ai.tool.name"] == "unknown"
        && d["attributes"]["error.type"] == "-32602"));
    let counts = metric("verbgate.ops");
    assert!(
        counts.iter().any(|c| c["attributes"]["verbgate.verb"] == "echo.argv" && c["value"] == 1),
        "{counts:#?}"
    );
    assert!(counts.iter().any(|c| c["attributes"]["verbgate.verb"] == "unknown"));
    // An op's args never leave the machine.
    let all = std::fs::read_to_string(&out).unwrap();
    assert!(!all.contains("secret-word-7"), "args reached the collector");

    // No variables: nothing is sent.
    std::fs::remove_file(&out).ok();
    session(&env, &[], json!({"traceparent": format!("00-{trace}-00f067aa0ba902b7-01")}));
    std::thread::sleep(Duration::from_millis(300));
    assert!(lines(&out).is_empty(), "telemetry is off by default");
}

#[test]
fn a_protocol_verbgate_does_not_speak_stops_the_start_saying_so() {
    let env = Env::with_plugin("fixture-echo");
    let out = env
        .cmd(&["serve"])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4317")
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let said =
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(
        said.contains("OTEL_EXPORTER_OTLP_PROTOCOL") && said.contains("http/protobuf"),
        "{said}"
    );
}
