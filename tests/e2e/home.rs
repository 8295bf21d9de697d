//! The home is checked before anything in it is trusted: `VERBGATE_HOME`,
//! `cache/`, `trust/`, `state/`, `plugins/`, `verbgate.toml` and
//! `tokens.json` must belong to the user and not be writable by group or
//! others, or the start fails with `insecure_file`, naming the path, the
//! problem and the fix — and a running HTTP server lets nobody in while its
//! `tokens.json` is so. (Tests run as root, so "another user" is uid 65534.)

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use verbgate_tests::Env;

fn assert_start_refused(env: &Env, path: &Path, problem: &str, fix: &str) {
    for args in [
        &["verbs"][..],
        &["request", r#"{"ops":[{"op":"job.list","args":{}}]}"#][..],
        &["trust", "list"][..],
    ] {
        let (code, out, _) = env.run(args);
        assert_ne!(code, 0, "{args:?} must fail: {out}");
        assert_eq!(out["error"]["code"], "insecure_file", "{args:?}: {out}");
        let message = out["error"]["message"].as_str().unwrap();
        assert!(message.contains(&path.display().to_string()), "names the path: {message}");
        assert!(message.contains(problem), "says the problem ({problem}): {message}");
        assert!(message.contains(fix), "says the fix ({fix}): {message}");
        assert_eq!(out["error"]["path"], path.display().to_string(), "{out}");
    }
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn a_group_writable_trust_dir_refuses_the_start() {
    let env = Env::new();
    let trust = env.home.join("trust");
    chmod(&trust, 0o770);
    assert_start_refused(&env, &trust, "mode 770", "chmod go-w");
}

#[test]
fn a_foreign_trust_dir_refuses_the_start() {
    let env = Env::new();
    let trust = env.home.join("trust");
    std::os::unix::fs::chown(&trust, Some(65534), None).unwrap();
    assert_start_refused(&env, &trust, "owned by uid 65534", "chown");
}

#[test]
fn a_foreign_or_world_writable_config_file_refuses_the_start() {
    let env = Env::new();
    let config = env.home.join("verbgate.toml");
    std::os::unix::fs::chown(&config, Some(65534), None).unwrap();
    assert_start_refused(&env, &config, "owned by uid 65534", "chown");
    std::os::unix::fs::chown(&config, Some(0), None).unwrap();
    chmod(&config, 0o666);
    assert_start_refused(&env, &config, "mode 666", "chmod go-w");
}

#[test]
fn a_writable_home_cache_state_or_plugins_dir_refuses_the_start() {
    let env = Env::new();
    env.verbs(); // creates cache/
    std::fs::create_dir_all(env.home.join("plugins")).unwrap();
    std::fs::create_dir_all(env.home.join("state")).unwrap();
    for sub in ["", "cache", "state", "plugins"] {
        let path = if sub.is_empty() { env.home.clone() } else { env.home.join(sub) };
        let before = std::fs::metadata(&path).unwrap().permissions().mode() & 0o7777;
        chmod(&path, 0o777);
        assert_start_refused(&env, &path, "mode 777", "chmod go-w");
        chmod(&path, before);
    }
    env.verbs(); // fixed: starts again
}

#[test]
fn directories_verbgate_creates_are_private() {
    let env = Env::cold();
    env.verbs();
    env.op("job.list", serde_json::json!({}));
    for sub in ["cache", "trust", "keys", "state"] {
        let mode = std::fs::metadata(env.home.join(sub)).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "{sub}");
    }
    let key =
        std::fs::metadata(env.home.join("cache/mac.key")).unwrap().permissions().mode() & 0o777;
    assert_eq!(key, 0o600);
}

/// A `verbgate serve --http 127.0.0.1:0` for the tests of `tokens.json`;
/// killed when dropped.
struct HttpServer {
    child: std::process::Child,
    addr: String,
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve_http(env: &Env) -> HttpServer {
    use std::io::BufRead;
    let mut child = env
        .cmd(&["serve", "--http", "127.0.0.1:0"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(rest) = line.split("serving MCP on http://").nth(1) {
                let _ = tx.send(rest.split('/').next().unwrap().to_string());
            }
        }
    });
    let addr = rx
        .recv_timeout(std::time::Duration::from_secs(120))
        .expect("verbgate serve --http printed its address");
    HttpServer { child, addr }
}

/// POST an MCP `initialize` with `token`: the status, and the body when
/// the gate refused the request (a refusal is a short plain-text answer).
fn initialize(addr: &str, token: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#;
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(60))).unwrap();
    write!(
        s,
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Authorization: Bearer {token}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && s.read(&mut byte).unwrap_or(0) == 1 {
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).to_string();
    let status: u16 = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status in {head:?}"));
    let mut text = String::new();
    if status != 200 {
        let _ = s.read_to_string(&mut text);
    }
    (status, text)
}

#[test]
fn a_tokens_file_others_could_write_is_refused_everywhere_it_is_read() {
    // Attack (issue 25): with tokens.json at mode 666, another local user
    // appended a record with their own token's hash and no allow list, and
    // the running server accepted it as a full-rights caller.
    let env = Env::new();
    let mine = env.run_ok(&["token", "add", "laptop"])["token"].as_str().unwrap().to_string();
    let tokens = env.home.join("tokens.json");
    let server = serve_http(&env);
    assert_eq!(initialize(&server.addr, &mine).0, 200);

    // The intruder mints a token in a home of their own and plants its record.
    let elsewhere = Env::new();
    let theirs =
        elsewhere.run_ok(&["token", "add", "intruder"])["token"].as_str().unwrap().to_string();
    let planted: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(elsewhere.home.join("tokens.json")).unwrap())
            .unwrap();
    chmod(&tokens, 0o666);
    let mut file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&tokens).unwrap()).unwrap();
    file["tokens"].as_array_mut().unwrap().push(planted["tokens"][0].clone());
    std::fs::write(&tokens, file.to_string()).unwrap();
    assert_eq!(std::fs::metadata(&tokens).unwrap().permissions().mode() & 0o777, 0o666);

    // Every request is refused, the intruder's and the owner's alike, with
    // a message naming the file, its mode and the fix.
    for token in [&theirs, &mine] {
        let (status, text) = initialize(&server.addr, token);
        assert_eq!(
            status, 500,
            "a token file others could write must not authenticate anyone: {text}"
        );
        assert!(
            text.contains("tokens.json") && text.contains("mode 666") && text.contains("chmod 600"),
            "{text}"
        );
    }
    // The token commands and a new server refuse it too.
    for args in [
        &["token", "list"][..],
        &["token", "add", "more"][..],
        &["token", "revoke", "intruder"][..],
        &["serve", "--http", "127.0.0.1:0"][..],
    ] {
        let (code, out, _) = env.run(args);
        assert_ne!(code, 0, "{args:?}: {out}");
        assert_eq!(out["error"]["code"], "insecure_file", "{args:?}: {out}");
        assert_eq!(out["error"]["path"], tokens.display().to_string(), "{args:?}: {out}");
        assert!(out["error"]["message"].as_str().unwrap().contains("mode 666"), "{args:?}: {out}");
        assert!(out["error"]["fix"].as_str().unwrap().contains("chmod 600"), "{args:?}: {out}");
    }
    assert!(
        std::fs::read_to_string(&tokens).unwrap().contains("intruder"),
        "a refusal never rewrites the file"
    );

    // Group-writable, or owned by another user: the same.
    chmod(&tokens, 0o620);
    assert_eq!(initialize(&server.addr, &mine).0, 500);
    chmod(&tokens, 0o600);
    std::os::unix::fs::chown(&tokens, Some(65534), None).unwrap();
    let (status, text) = initialize(&server.addr, &mine);
    assert_eq!(status, 500, "{text}");
    assert!(text.contains("owned by uid 65534"), "{text}");
    let (_, out, _) = env.run(&["token", "list"]);
    assert_eq!(out["error"]["code"], "insecure_file", "{out}");

    // Fixed by its owner: served again (the owner removes the intruder).
    std::os::unix::fs::chown(&tokens, Some(0), None).unwrap();
    env.run_ok(&["token", "revoke", "intruder"]);
    assert_eq!(initialize(&server.addr, &mine).0, 200);
    assert_eq!(initialize(&server.addr, &theirs).0, 401);
}
