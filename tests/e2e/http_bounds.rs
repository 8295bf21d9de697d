//! `verbgate serve --http` under attack (issue 25, items 7 and 8): what a
//! client without a token, or with one, can make the server hold —
//! connections, sessions, slow bodies, streams after a revocation — and what
//! a token can learn or reuse that is not its own. The real binary on a
//! kernel-picked loopback port, raw HTTP/1.1 from the test.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use verbgate_tests::Env;

/// A running `verbgate serve --http`; killed when dropped.
struct Server {
    child: Child,
    /// `host:port` it is bound to.
    addr: String,
    /// Every line it wrote on stderr so far.
    stderr: Arc<Mutex<Vec<String>>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// `verbgate serve --http 127.0.0.1:0 EXTRA…`, with the open-file limit
    /// lowered to `nofile` when given (as `ulimit -n` does).
    fn start(env: &Env, extra: &[&str], nofile: Option<u32>) -> Server {
        let mut args = vec!["serve", "--http", "127.0.0.1:0"];
        args.extend_from_slice(extra);
        let base = env.cmd(&args);
        let mut cmd = match nofile {
            None => base,
            Some(n) => {
                let mut c = Command::new("sh");
                c.arg("-c")
                    .arg(format!("ulimit -n {n} && exec \"$@\""))
                    .arg("sh")
                    .arg(base.get_program())
                    .args(base.get_args());
                for (k, v) in base.get_envs() {
                    match v {
                        Some(v) => c.env(k, v),
                        None => c.env_remove(k),
                    };
                }
                c
            }
        };
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start verbgate serve --http");
        let stderr = child.stderr.take().unwrap();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let seen = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(rest) = line.split("serving MCP on http://").nth(1) {
                    let _ = tx.send(rest.split('/').next().unwrap().to_string());
                }
                seen.lock().unwrap().push(line);
                // Keep draining so the server never blocks on a full pipe.
            }
        });
        let addr = rx.recv_timeout(Duration::from_secs(120)).unwrap_or_else(|_| {
            panic!("verbgate serve --http printed no address: {:?}", lines.lock().unwrap())
        });
        Server { child, addr, stderr: lines }
    }

    /// What the server said on stderr so far, one string.
    fn said(&self) -> String {
        self.stderr.lock().unwrap().join("\n")
    }
}

fn add_token(env: &Env, name: &str, allow: &[&str]) -> String {
    let mut args = vec!["token", "add", name];
    for a in allow {
        args.extend_from_slice(&["--allow", a]);
    }
    env.run_ok(&args)["token"].as_str().unwrap().to_string()
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// One whole HTTP/1.1 answer (`Connection: close`, read to its end).
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// The JSON-RPC messages of an event-stream body (or the JSON body).
    fn messages(&self) -> Vec<Value> {
        if let Ok(v) = serde_json::from_str::<Value>(&self.body) {
            return vec![v];
        }
        self.body
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str(d.trim()).ok())
            .collect()
    }
}

/// Send one request and return the socket with the status line and
/// headers read (the body, possibly an endless stream, is left unread).
fn send(
    addr: &str,
    method: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> (TcpStream, u16, Vec<(String, String)>) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut req = format!(
        "{method} /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).unwrap();
    let _ = s.write_all(body);
    let (status, headers) = verbgate_tests::read_http_head(&mut s);
    (s, status, headers)
}

/// One request, its whole answer (chunked bodies de-chunked loosely: the
/// tests read JSON lines out of them).
fn request(addr: &str, method: &str, headers: &[(&str, &str)], body: &str) -> Answer {
    let (mut s, status, headers) = send(addr, method, headers, body.as_bytes());
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    Answer { status, headers, body: String::from_utf8_lossy(&raw).to_string() }
}

fn post(addr: &str, headers: &[(&str, &str)], body: &str) -> Answer {
    request(addr, "POST", headers, body)
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// A session opened with `token` and told `initialized`: its id.
fn open_session(addr: &str, token: &str) -> String {
    let auth = bearer(token);
    let init = post(addr, &[("Authorization", &auth)], INITIALIZE);
    assert_eq!(init.status, 200, "{}", init.body);
    let id = init.header("mcp-session-id").expect("a session id").to_string();
    let done = post(
        addr,
        &[
            ("Authorization", &auth),
            ("Mcp-Session-Id", &id),
            ("MCP-Protocol-Version", "2025-06-18"),
        ],
        INITIALIZED,
    );
    assert_eq!(done.status, 202, "{}", done.body);
    id
}

/// `tools/call request ARGS` in a session: the tool's structured answer.
fn call(addr: &str, token: &str, session: &str, args: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "request", "arguments": args}}).to_string();
    let a = post(
        addr,
        &[
            ("Authorization", &bearer(token)),
            ("Mcp-Session-Id", session),
            ("MCP-Protocol-Version", "2025-06-18"),
        ],
        &body,
    );
    assert_eq!(a.status, 200, "{}", a.body);
    let reply = a
        .messages()
        .into_iter()
        .find(|m| m["id"] == 7)
        .unwrap_or_else(|| panic!("no answer to the call in {}", a.body));
    reply["result"]["structuredContent"].clone()
}

/// Read `s` until the server ends the response (EOF), at most `limit`:
/// how long it took, or `None` when it was still open.
fn ends_within(s: &mut TcpStream, limit: Duration) -> Option<Duration> {
    let started = Instant::now();
    let mut buf = [0u8; 4096];
    while started.elapsed() < limit {
        s.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
        match s.read(&mut buf) {
            Ok(0) => return Some(started.elapsed()),
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return Some(started.elapsed()),
        }
    }
    None
}

#[test]
fn silent_sockets_do_not_keep_a_token_holder_waiting() {
    // Attack (issue 25): 1,132 silent unauthenticated sockets kept a token
    // holder waiting 35 s — every descriptor the server could open was
    // held by a socket that never sent a request, so the holder's
    // connection sat unaccepted until the header timeout freed some. Here
    // the server gets 256 descriptors (`ulimit -n 256`) and 300 sockets.
    let env = Env::new();
    let token = add_token(&env, "laptop", &[]);
    let server = Server::start(&env, &[], Some(256));
    let mut silent: Vec<TcpStream> =
        (0..300).map(|_| TcpStream::connect(&server.addr).unwrap()).collect();
    let last_connected = Instant::now();
    // Let the server accept what it will.
    std::thread::sleep(Duration::from_millis(500));
    let started = Instant::now();
    let init = post(&server.addr, &[("Authorization", &bearer(&token))], INITIALIZE);
    let took = started.elapsed();
    eprintln!("a token holder behind 300 silent sockets was answered in {took:?}");
    assert_eq!(init.status, 200, "{}", init.body);
    assert!(
        took < Duration::from_secs(5),
        "300 silent sockets kept a token holder waiting {took:?}"
    );
    // The newest silent socket was kept (older ones made room); it is
    // closed when its 10 s to send a request head are up.
    let last = silent.last_mut().unwrap();
    let _ = last.write_all(b"POST /mcp HTTP/1.1\r\n");
    let closed = ends_within(last, Duration::from_secs(20)).map(|_| last_connected.elapsed());
    eprintln!("the newest silent socket was closed {closed:?} after it connected");
    assert!(
        closed.is_some_and(|t| t > Duration::from_secs(8) && t < Duration::from_secs(14)),
        "closed after {closed:?}, not 10 s"
    );
}

#[test]
fn sessions_are_capped_per_token_and_in_all() {
    // Attack (issue 25): 5,000 sessions took the server from 46 MB to
    // 649 MB, each living 30 minutes. One token opens 130 sessions under
    // the defaults (128 a token, 512 in all).
    let env = Env::new();
    let a = add_token(&env, "a", &[]);
    let b = add_token(&env, "b", &[]);
    let server = Server::start(&env, &[], None);
    let auth_a = bearer(&a);
    let mut ids = Vec::new();
    let mut refused = None;
    for i in 0..130 {
        let init = post(&server.addr, &[("Authorization", &auth_a)], INITIALIZE);
        if init.status != 200 {
            refused = Some((i, init));
            break;
        }
        ids.push(init.header("mcp-session-id").expect("a session id").to_string());
    }
    eprintln!("one token opened {} sessions before a refusal", ids.len());
    let (at, over) =
        refused.unwrap_or_else(|| panic!("one token opened {} sessions, none refused", ids.len()));
    assert_eq!(at, 128, "the per-token cap is 128");
    assert_eq!(over.status, 429, "{}", over.body);
    let err: Value =
        serde_json::from_str(&over.body).unwrap_or_else(|e| panic!("{e}: {}", over.body));
    assert_eq!(err["jsonrpc"], "2.0");
    assert_eq!(err["id"], 1, "the refusal answers the initialize request: {err}");
    let msg = err["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("128") && msg.contains("--max-sessions-per-token") && msg.contains("DELETE"),
        "{msg}"
    );
    assert_eq!(err["error"]["data"]["flag"], "--max-sessions-per-token", "{err}");
    // Another token is not held back by this one's sessions.
    assert_eq!(post(&server.addr, &[("Authorization", &bearer(&b))], INITIALIZE).status, 200);
    // A closed session makes room.
    let closed = request(
        &server.addr,
        "DELETE",
        &[
            ("Authorization", &auth_a),
            ("Mcp-Session-Id", &ids[0]),
            ("MCP-Protocol-Version", "2025-06-18"),
        ],
        "",
    );
    assert_eq!(
        closed.status, 204,
        "a closed session answers 204 No Content (202 read as a failure by the Python SDK): {}",
        closed.body
    );
    assert_eq!(post(&server.addr, &[("Authorization", &auth_a)], INITIALIZE).status, 200);
    drop(server);

    // All tokens together: 503 past --max-sessions.
    let server =
        Server::start(&env, &["--max-sessions", "3", "--max-sessions-per-token", "2"], None);
    for (token, want) in [(&a, 200), (&a, 200), (&a, 429), (&b, 200), (&b, 503)] {
        let init = post(&server.addr, &[("Authorization", &bearer(token))], INITIALIZE);
        assert_eq!(init.status, want, "{}", init.body);
        if want == 503 {
            let err: Value = serde_json::from_str(&init.body).unwrap();
            let msg = err["error"]["message"].as_str().unwrap();
            assert!(msg.contains("3 sessions") && msg.contains("--max-sessions "), "{msg}");
            assert_eq!(err["error"]["data"]["cap"], 3, "{err}");
        }
    }
}

#[test]
fn a_slow_authenticated_body_times_out() {
    // Attack (issue 25): a token holder sends a request head, then its
    // body one byte at a time: the request never timed out, holding its
    // connection and a task for as long as the client liked.
    let env = Env::new();
    let token = add_token(&env, "slow", &[]);
    let server = Server::start(&env, &["--body-timeout-secs", "2"], None);
    let mut s = TcpStream::connect(&server.addr).unwrap();
    write!(
        s,
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n{{",
        server.addr,
        INITIALIZE.len()
    )
    .unwrap();
    // One more byte every 300 ms, for up to 20 s, until the server answers.
    let started = Instant::now();
    s.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    while started.elapsed() < Duration::from_secs(20) {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(_) if got.is_empty() => {
                if s.write_all(b" ").is_err() {
                    break;
                }
            }
            Err(_) => break,
        }
    }
    let took = started.elapsed();
    let text = String::from_utf8_lossy(&got).to_string();
    eprintln!("a body sent a byte every 300 ms was answered after {took:?}: {text:?}");
    assert!(
        text.starts_with("HTTP/1.1 408"),
        "no 408 for a body still arriving after {took:?}: {text:?}"
    );
    assert!(text.contains("--body-timeout-secs") && text.contains("2 s"), "{text}");
    assert!(took < Duration::from_secs(6), "{took:?}");
}

#[test]
fn revoking_a_token_ends_its_streams_and_calls() {
    // Attack (issue 25): a revoked token's open event stream and its
    // in-flight call went on; only its next request was refused.
    let env = Env::with_plugin("fixture-echo");
    let token = add_token(&env, "ci", &[]);
    let _other = add_token(&env, "other", &[]);
    let server = Server::start(&env, &[], None);
    let id = open_session(&server.addr, &token);
    let auth = bearer(&token);
    let session = [
        ("Authorization", auth.as_str()),
        ("Mcp-Session-Id", id.as_str()),
        ("MCP-Protocol-Version", "2025-06-18"),
    ];
    let (mut stream, status, _) = send(
        &server.addr,
        "GET",
        &[session[0], session[1], session[2], ("Accept", "text/event-stream")],
        b"",
    );
    assert_eq!(status, 200);
    let slow = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "request", "arguments": {"ops": [{"op": "echo.sleep", "args": {"ms": 60000}}]}}});
    let (mut call, status, _) = send(&server.addr, "POST", &session, slow.to_string().as_bytes());
    assert_eq!(status, 200);
    std::thread::sleep(Duration::from_millis(500));

    env.run_ok(&["token", "revoke", "ci"]);
    let stream_end = ends_within(&mut stream, Duration::from_secs(10));
    let call_end = ends_within(&mut call, Duration::from_secs(10));
    eprintln!("after the revocation: stream ended {stream_end:?}, call ended {call_end:?}");
    assert!(
        stream_end.is_some_and(|t| t < Duration::from_secs(5)),
        "the revoked token's event stream was still open after 10 s"
    );
    assert!(
        call_end.is_some(),
        "the revoked token's in-flight call was still open after 10 s more"
    );
    assert_eq!(post(&server.addr, &session, INITIALIZED).status, 401);
}

#[test]
fn a_re_minted_token_with_an_old_name_does_not_inherit_its_sessions() {
    // Attack (issue 25): sessions belonged to a token's name, so a new
    // token given a revoked token's name took over its sessions (and the
    // consent grants made in them).
    let env = Env::new();
    let old = add_token(&env, "ci", &[]);
    let _other = add_token(&env, "other", &[]);
    let server = Server::start(&env, &[], None);
    let id = open_session(&server.addr, &old);
    env.run_ok(&["token", "revoke", "ci"]);
    let new = add_token(&env, "ci", &[]);
    let reuse = post(
        &server.addr,
        &[
            ("Authorization", &bearer(&new)),
            ("Mcp-Session-Id", &id),
            ("MCP-Protocol-Version", "2025-06-18"),
        ],
        INITIALIZED,
    );
    assert_eq!(
        reuse.status, 404,
        "a new token named like a revoked one reached its session: {}",
        reuse.body
    );
    // Its own sessions work.
    let mine = open_session(&server.addr, &new);
    assert_ne!(mine, id);
}

#[test]
fn loopback_without_tokens_needs_the_generated_token_unless_no_auth_is_given() {
    // Attack (issue 25): with no token configured, a loopback server let
    // in every local user — one read a 0600 file's uncommitted change
    // through git.diff and answered a consent question itself.
    let env = Env::new();
    let server = Server::start(&env, &[], None);
    let anyone = post(&server.addr, &[], INITIALIZE);
    assert_eq!(anyone.status, 401, "a token-less loopback server served a request without a token");
    assert!(
        anyone.header("www-authenticate").is_some_and(|v| v.starts_with("Bearer")),
        "{:?}",
        anyone.headers
    );
    let said = server.said();
    let token = said
        .split_whitespace()
        .find(|w| w.starts_with("vgt_"))
        .unwrap_or_else(|| panic!("no generated token on stderr: {said}"));
    assert!(said.contains("--no-auth") && said.contains("verbgate token add"), "{said}");
    assert_eq!(post(&server.addr, &[("Authorization", &bearer(token))], INITIALIZE).status, 200);
    // Printed, never stored: tokens.json holds no token.
    assert_eq!(env.run_ok(&["token", "list"])["tokens"], json!([]));
    drop(server);
    // A new start, a new token: the old one is dead with its server.
    let server = Server::start(&env, &[], None);
    assert_eq!(post(&server.addr, &[("Authorization", &bearer(token))], INITIALIZE).status, 401);
    drop(server);

    // Asked for explicitly, on loopback only.
    let server = Server::start(&env, &["--no-auth"], None);
    assert_eq!(post(&server.addr, &[], INITIALIZE).status, 200);
    assert!(server.said().contains("no authentication"), "{}", server.said());
    assert!(!server.said().contains("vgt_"), "{}", server.said());
    drop(server);
    let out = env
        .cmd(&["serve", "--http", "0.0.0.0:0", "--no-auth"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{text}");
    assert!(
        text.contains("--no-auth") && text.contains("loopback") && text.contains("0.0.0.0"),
        "{text}"
    );
    // With tokens configured, --no-auth would silently drop them: refused.
    add_token(&env, "laptop", &[]);
    let out = env
        .cmd(&["serve", "--http", "127.0.0.1:0", "--no-auth"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{text}");
    assert!(text.contains("--no-auth") && text.contains("token revoke"), "{text}");
}

#[test]
fn a_narrowed_token_cannot_tell_a_hidden_verb_from_a_missing_one() {
    // Attack (issue 25): a token narrowed to `job.*` asked for verbs that
    // exist outside its list (`not_allowed`, naming the verb) and verbs
    // that do not (`unknown_verb`), and so learned which exist.
    let env = Env::with_plugin("fixture-echo");
    let narrow = add_token(&env, "narrow", &["job.*"]);
    let server = Server::start(&env, &[], None);
    let id = open_session(&server.addr, &narrow);
    let answer = |args: Value| call(&server.addr, &narrow, &id, args);
    // An op and a help, for a hidden verb, its alias and a missing one:
    // the same answer but for the name asked.
    let same = |hidden: &str, missing: &str, args: &dyn Fn(&str) -> Value| {
        let h = answer(args(hidden)).to_string();
        let m = answer(args(missing)).to_string();
        assert!(h.contains("unknown_verb"), "{h}");
        assert_eq!(
            h.replace(hidden, "NAME"),
            m.replace(missing, "NAME"),
            "a hidden verb answers otherwise than a missing one"
        );
    };
    let op = |name: &str| json!({"ops": [{"op": name, "args": {"word": "hi"}}]});
    let help = |name: &str| json!({"help": name});
    same("echo.argv", "echo.nope", &op);
    same("echo.args", "echo.nops", &op);
    same("echo.argv", "echo.nope", &help);
    // Suggestions come only from what the token reaches.
    let typo = answer(json!({"ops": [{"op": "job.lst"}]}));
    assert_eq!(typo["results"][0]["error"]["did_you_mean"], json!(["job.list"]), "{typo}");
    let near_hidden = answer(json!({"ops": [{"op": "echo.argx"}]}));
    assert_eq!(near_hidden["results"][0]["error"]["did_you_mean"], json!([]), "{near_hidden}");
}

#[test]
fn the_loading_list_names_files_not_paths() {
    // Attack (issue 25): the catalog's `loading` list showed absolute
    // plugin paths (the operator's home and layout) to any client.
    // The Python guest compiles for seconds after the bundled components
    // (which the catalog waits for), so it is still loading when asked.
    verbgate_tests::require_guest_tools();
    let env = Env::cold().allowing(&["pyecho.*"]);
    env.install("py-echo");
    let token = add_token(&env, "laptop", &[]);
    let server = Server::start(&env, &[], None);
    let id = open_session(&server.addr, &token);
    let catalog = &call(&server.addr, &token, &id, json!({"help": true}))["help"];
    let loading = catalog["loading"]
        .as_array()
        .unwrap_or_else(|| panic!("nothing loading in a cold start: {catalog}"));
    for entry in loading {
        let name = entry.as_str().unwrap();
        assert!(!name.contains('/') && name.ends_with(".wasm"), "the loading list shows {name:?}");
    }
    assert_eq!(loading, &vec![json!("py-echo.wasm")], "{catalog}");
}

#[test]
fn a_narrowed_token_waits_as_long_for_a_hidden_verb_as_for_a_missing_one() {
    // Attack: at a cold start, an op naming a verb outside the token's list
    // answered as soon as that verb's component joined, one naming a
    // missing verb only once every component had: the timing told a
    // narrowed token which verbs exist. Both now wait for everything.
    verbgate_tests::require_guest_tools();
    let env = Env::cold().allowing(&["pyecho.*"]);
    env.install("py-echo");
    let narrow = add_token(&env, "narrow", &["job.*"]);
    let full = add_token(&env, "full", &[]);
    let server = Server::start(&env, &[], None);
    let (narrow_id, full_id) =
        (open_session(&server.addr, &narrow), open_session(&server.addr, &full));
    // `git.status` is bundled: it joins long before the Python guest does.
    let hidden = call(&server.addr, &narrow, &narrow_id, json!({"ops": [{"op": "git.status"}]}));
    assert_eq!(hidden["results"][0]["error"]["code"], "unknown_verb", "{hidden}");
    let catalog = &call(&server.addr, &full, &full_id, json!({"help": true}))["help"];
    assert!(
        catalog.get("loading").is_none(),
        "the hidden verb answered while components were still compiling: {catalog}"
    );
}
