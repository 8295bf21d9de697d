//! The HTTP rows: `verbgate serve --http` with a bearer token, driven by raw
//! HTTP/1.1 clients (one connection per request, `Connection: close`, the
//! answer read from the server's event stream), beside the same 16-op
//! batches over stdio MCP in the same run.

use anyhow::{Context, Result};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Stdio};
use std::time::Instant;

use super::{median, rss_kib, Home, Row};

/// A running `verbgate serve --http 127.0.0.1:0` and the token to reach it.
pub struct Server {
    child: Child,
    addr: SocketAddr,
    token: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// Start a server on a free loopback port with one fresh token.
    pub fn start(home: &Home) -> Result<Server> {
        static STARTS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let name = format!("bench-{}", STARTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        // The batches read a job the local user started: a token sees it
        // only when granted every job.
        let out = home.verbgate().args(["token", "add", &name, "--all-jobs"]).output()?;
        let said = || {
            format!(
                "`verbgate token add` printed {} {}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        };
        let v: Value = serde_json::from_slice(&out.stdout).with_context(said)?;
        let token = v["token"].as_str().with_context(said)?.to_string();
        let mut child = home
            .verbgate()
            .args(["serve", "--http", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()?;
        let mut err = BufReader::new(child.stderr.take().context("stderr")?);
        let mut line = String::new();
        let addr = loop {
            line.clear();
            anyhow::ensure!(
                err.read_line(&mut line)? > 0,
                "the server ended before saying where it listens"
            );
            // "verbgate: serving MCP on http://ADDR/mcp (bearer tokens required)"
            if let Some(url) =
                line.split("http://").nth(1).and_then(|u| u.split_whitespace().next())
            {
                break url.trim_end_matches("/mcp").parse::<SocketAddr>()?;
            }
        };
        // Keep draining stderr so the server never blocks on a full pipe.
        std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
        Ok(Server { child, addr, token })
    }

    /// The server's RSS, MiB.
    pub fn rss_mib(&self) -> f64 {
        rss_kib(self.child.id()) / 1024.0
    }

    /// One JSON-RPC POST: the session id the server set (if any) and the
    /// JSON-RPC messages of the answer.
    fn post(&self, session: Option<&str>, body: &Value) -> Result<(Option<String>, Vec<Value>)> {
        let body = body.to_string();
        let mut s = TcpStream::connect(self.addr)?;
        s.set_nodelay(true)?;
        let mut head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nConnection: close\r\nContent-Length: {}\r\n",
            self.addr,
            self.token,
            body.len()
        );
        if let Some(id) = session {
            head.push_str(&format!("Mcp-Session-Id: {id}\r\nMCP-Protocol-Version: 2025-06-18\r\n"));
        }
        head.push_str("\r\n");
        s.write_all(head.as_bytes())?;
        s.write_all(body.as_bytes())?;
        let mut raw = Vec::new();
        s.read_to_end(&mut raw)?;
        let split = raw.windows(4).position(|w| w == b"\r\n\r\n").context("no header end")?;
        let headers = String::from_utf8_lossy(&raw[..split]).to_string();
        let status = headers.split_whitespace().nth(1).unwrap_or_default().to_string();
        anyhow::ensure!(
            status.starts_with('2'),
            "HTTP {status}: {}",
            String::from_utf8_lossy(&raw)
        );
        let header = |name: &str| {
            headers.lines().find_map(|l| {
                l.split_once(':')
                    .filter(|(k, _)| k.trim().eq_ignore_ascii_case(name))
                    .map(|(_, v)| v.trim().to_string())
            })
        };
        let mut payload = raw[split + 4..].to_vec();
        if header("transfer-encoding").is_some_and(|t| t.eq_ignore_ascii_case("chunked")) {
            payload = dechunk(&payload)?;
        }
        let text = String::from_utf8_lossy(&payload);
        let messages = if header("content-type").is_some_and(|t| t.starts_with("text/event-stream"))
        {
            text.lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .filter_map(|d| serde_json::from_str(d.trim()).ok())
                .collect()
        } else if text.trim().is_empty() {
            Vec::new()
        } else {
            vec![serde_json::from_str(&text)?]
        };
        Ok((header("mcp-session-id"), messages))
    }
}

fn dechunk(mut b: &[u8]) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let eol = b.windows(2).position(|w| w == b"\r\n").context("chunk size")?;
        let size = usize::from_str_radix(
            String::from_utf8_lossy(&b[..eol]).split(';').next().unwrap_or("").trim(),
            16,
        )?;
        b = &b[eol + 2..];
        if size == 0 {
            return Ok(out);
        }
        out.extend_from_slice(b.get(..size).context("truncated chunk")?);
        b = b.get(size + 2..).context("truncated chunk")?;
    }
}

/// One client's MCP session over HTTP.
pub struct Session<'a> {
    server: &'a Server,
    id: String,
    next: i64,
}

impl<'a> Session<'a> {
    /// `initialize` + `notifications/initialized`.
    pub fn open(server: &'a Server) -> Result<Session<'a>> {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}});
        let (id, _) = server.post(None, &init)?;
        let id = id.context("no session id")?;
        server
            .post(Some(&id), &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
        Ok(Session { server, id, next: 1 })
    }

    /// One `request` tool call; its structured result.
    pub fn request(&mut self, args: &Value) -> Result<Value> {
        let id = self.next;
        self.next += 1;
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "request", "arguments": args}});
        let (_, messages) = self.server.post(Some(&self.id), &call)?;
        let answer = messages.into_iter().find(|m| m["id"] == id).context("no answer")?;
        Ok(answer["result"]["structuredContent"].clone())
    }
}

fn percentile(mut v: Vec<f64>, p: f64) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v.get(((v.len() as f64 - 1.0) * p).round() as usize).copied().unwrap_or(f64::NAN)
}

/// `clients` sessions each sending `per_client` batches at once: ops/s and
/// every request's latency (ms).
fn drive(
    server: &Server,
    batch: &Value,
    clients: usize,
    per_client: usize,
) -> Result<(f64, Vec<f64>)> {
    let t = Instant::now();
    let latencies = std::thread::scope(|s| {
        let handles: Vec<_> = (0..clients)
            .map(|_| {
                s.spawn(|| -> Result<Vec<f64>> {
                    let mut session = Session::open(server)?;
                    let mut lat = Vec::with_capacity(per_client);
                    for _ in 0..per_client {
                        let t = Instant::now();
                        let r = session.request(batch)?;
                        lat.push(t.elapsed().as_secs_f64() * 1e3);
                        anyhow::ensure!(r["status"] == "success", "{r}");
                    }
                    Ok(lat)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("client thread")).collect::<Result<Vec<_>>>()
    })?;
    let ops = (clients * per_client * 16) as f64 / t.elapsed().as_secs_f64();
    Ok((ops, latencies.into_iter().flatten().collect()))
}

/// A Node client's per-call latencies (ms): `tests/bench/node_client.mjs`,
/// global fetch over one kept-alive connection, `calls` sequential calls.
/// Node answers ACKs late: without `TCP_NODELAY` on the server, every
/// other call waited ~40 ms for an answer's second write.
fn node_latencies(server: &Server, batch: &Value, calls: usize) -> Result<Vec<f64>> {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/node_client.mjs");
    let out = std::process::Command::new("node")
        .arg(&script)
        .arg(format!("http://{}/mcp", server.addr))
        .arg(&server.token)
        .arg(calls.to_string())
        .arg(batch.to_string())
        .output()
        .context("cannot run node (the HTTP rows need it)")?;
    anyhow::ensure!(
        out.status.success(),
        "the node client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout)?;
    v["latencies_ms"]
        .as_array()
        .context("no latencies")?
        .iter()
        .map(|l| l.as_f64().context("a latency is not a number"))
        .collect()
}

/// The HTTP rows, beside `stdio_ops` (the same batches over stdio MCP,
/// measured in this run) and the stdio request latency.
pub fn rows(home: &Home, batch: &Value, stdio_ops: f64, stdio_ms: f64) -> Result<Vec<Row>> {
    let server = Server::start(home)?;
    Session::open(&server)?.request(batch)?;
    let (one, one_lat) = drive(&server, batch, 1, 200)?;
    let (fifty, lat) = drive(&server, batch, 50, 20)?;
    let node = node_latencies(&server, batch, 200)?;
    let one_p50 = median(one_lat.clone());
    drop(server);
    // Memory on a fresh server (sessions are never closed by these clients,
    // so the one above holds 52): one session that answered a call, then
    // 50 sessions open, each having answered one call.
    let server = Server::start(home)?;
    let mut first = Session::open(&server)?;
    first.request(batch)?;
    let idle = server.rss_mib();
    let mut open = vec![first];
    for _ in 1..50 {
        let mut s = Session::open(&server)?;
        s.request(batch)?;
        open.push(s);
    }
    let held = server.rss_mib();
    drop(open);
    let row = |figure: &str,
               value: f64,
               unit: &'static str,
               baseline_name: &str,
               baseline: f64,
               goal: Option<(&'static str, f64)>| Row {
        figure: figure.into(),
        value,
        unit,
        baseline_name: baseline_name.into(),
        baseline,
        goal,
    };
    Ok(vec![
        row(
            "16-op job.status batches over HTTP, 1 client",
            one,
            "ops/s",
            "same batches over stdio MCP",
            stdio_ops,
            None,
        ),
        row(
            "16-op job.status batches over HTTP, 50 clients",
            fifty,
            "ops/s",
            "same batches over stdio MCP",
            stdio_ops,
            None,
        ),
        row(
            "HTTP request latency p50, 1 client",
            median(one_lat),
            "ms",
            "stdio request latency p50",
            stdio_ms,
            None,
        ),
        row(
            "HTTP request latency p50, 50 clients",
            percentile(lat.clone(), 0.5),
            "ms",
            "stdio request latency p50",
            stdio_ms,
            None,
        ),
        row(
            "HTTP request latency p99, 50 clients",
            percentile(lat, 0.99),
            "ms",
            "stdio request latency p50",
            stdio_ms,
            None,
        ),
        row(
            "HTTP request latency p90, Node client (fetch, kept alive)",
            percentile(node, 0.9),
            "ms",
            "raw HTTP client p50, 1 client",
            one_p50,
            Some(("<=", 5.0)),
        ),
        row(
            "RSS with 50 open HTTP sessions",
            held,
            "MiB",
            "the same server with one session",
            idle,
            None,
        ),
    ])
}
