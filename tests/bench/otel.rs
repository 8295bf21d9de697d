//! What OpenTelemetry costs an op: the same 16-op batches over stdio MCP
//! to two servers of one home, one exporting traces and metrics over
//! OTLP/HTTP to a local collector stand-in (every span and metric encoded
//! and sent: a batch each 200 ms, metrics each second), one with no OTEL_*
//! set, interleaved (ABBA) so both see the same machine.

use anyhow::Result;
use serde_json::json;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use super::{median, runs, Home, Row, Stdio_};

/// A collector stand-in: reads each OTLP request and answers 200 with an
/// empty (valid) protobuf body, counting them.
fn sink() -> Result<(u16, Arc<AtomicUsize>)> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let seen = seen.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(conn.try_clone().expect("clone"));
                let mut conn = conn;
                loop {
                    let mut length = 0usize;
                    loop {
                        let mut line = String::new();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        let l = line.to_ascii_lowercase();
                        if let Some(v) = l.strip_prefix("content-length:") {
                            length = v.trim().parse().unwrap_or(0);
                        }
                        if line == "\r\n" {
                            break;
                        }
                    }
                    let mut body = vec![0; length];
                    if reader.read_exact(&mut body).is_err() {
                        return;
                    }
                    seen.fetch_add(1, Ordering::SeqCst);
                    let ok = "HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nContent-Length: 0\r\n\r\n";
                    if conn.write_all(ok.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    Ok((port, count))
}

/// The row: µs per op with telemetry exporting vs off.
pub fn overhead() -> Result<Row> {
    let home = Home::new(&["fixture-echo"], "[limits]\nbatch_cap = 16")?;
    let (port, exports) = sink()?;
    let endpoint = format!("http://127.0.0.1:{port}");
    let on_env = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
        ("OTEL_BSP_SCHEDULE_DELAY", "200"),
        ("OTEL_METRIC_EXPORT_INTERVAL", "1000"),
    ];
    let mut on = Stdio_::start_with(&home, &on_env)?;
    let mut off = Stdio_::start_with(&home, &[])?;
    on.handshake()?;
    off.handshake()?;
    let batch = json!({"ops": (0..16).map(|_| json!({"op": "job.list"})).collect::<Vec<_>>()});
    for s in [&mut on, &mut off] {
        let r = s.request(batch.clone())?;
        anyhow::ensure!(r["status"] == "success", "{r}");
    }
    let (mut with, mut without) = (Vec::new(), Vec::new());
    // ABBA order: neither server always runs first (or right after the
    // other's export burst).
    for round in 0..runs(80) {
        let mut pair = [(&mut on, &mut with), (&mut off, &mut without)];
        if round % 2 == 1 {
            pair.reverse();
        }
        for (s, out) in pair {
            let t = Instant::now();
            for _ in 0..10 {
                s.request(batch.clone())?;
            }
            out.push(t.elapsed().as_secs_f64() * 1e6 / 160.0);
        }
    }
    anyhow::ensure!(
        exports.load(Ordering::SeqCst) > 0,
        "the exporting server sent nothing to the collector"
    );
    let b = median(without);
    Ok(Row {
        figure: "op over stdio MCP, OpenTelemetry exporting (16-op job.list batches)".into(),
        value: median(with),
        unit: "µs",
        baseline_name: "same, telemetry off".into(),
        baseline: b,
        goal: Some(("<=", 1.05 * b)),
    })
}
