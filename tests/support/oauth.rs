//! A real OAuth 2.1 authorization server for the resource-server tests
//! and benchmark: scripts/oauth-as/server.mjs (oauth2-mock-server), as
//! `just oauth-tools` installs it in target/oauth-as, and the raw HTTP/1.0
//! exchanges that ask it for tokens.

use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::{target_dir, Reaped};

/// A running authorization server; stopped when dropped.
pub struct AuthServer {
    _child: Reaped,
    /// Its issuer identifier (`http://localhost:PORT`).
    pub issuer: String,
}

impl AuthServer {
    /// Start it; `grants` is `{"client": ["scope", …]}`: the scopes a
    /// client is granted whatever it asks for (as a real server grants per
    /// client), `{}` for none.
    pub fn start(grants: &str) -> AuthServer {
        let dir = target_dir().join("oauth-as");
        let node = dir.join("bin/node");
        assert!(
            node.exists(),
            "{} is missing: run `just oauth-tools` (part of `just test`)",
            node.display()
        );
        let mut child = Command::new(&node)
            .arg(dir.join("server.mjs"))
            .arg("0")
            .arg(grants)
            .current_dir(&dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the authorization server");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let up: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
        AuthServer { _child: Reaped(child), issuer: up["issuer"].as_str().unwrap().to_string() }
    }
}

/// A loopback port nobody listens on (the resource's URL names it, so the
/// server cannot pick its own).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// An HTTP/1.0 exchange (no chunking, the connection closes): status,
/// headers, body.
pub fn exchange(addr: &str, head: &str, body: &[u8]) -> (u16, Vec<(String, String)>, Vec<u8>) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body).unwrap();
    let mut all = Vec::new();
    s.read_to_end(&mut all).unwrap();
    let split = all.windows(4).position(|w| w == b"\r\n\r\n").expect("an HTTP head");
    let text = String::from_utf8_lossy(&all[..split]).to_string();
    let mut lines = text.lines();
    let status = lines.next().unwrap().split(' ').nth(1).unwrap().parse().unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    (status, headers, all[split + 4..].to_vec())
}

pub fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

pub fn host_of(url: &str) -> String {
    url.trim_start_matches("http://").split('/').next().unwrap().to_string()
}

/// An access token from the authorization server (client_credentials),
/// with `extra` form fields (the test knobs of scripts/oauth-as/server.mjs).
pub fn access_token(auth: &AuthServer, extra: &[(&str, &str)]) -> String {
    let mut form = vec![("grant_type", "client_credentials"), ("client_id", "raw-client")];
    form.extend_from_slice(extra);
    let body: String = form
        .iter()
        .map(|(k, v)| {
            format!("{k}={}", v.replace(':', "%3A").replace('/', "%2F").replace(' ', "+"))
        })
        .collect::<Vec<_>>()
        .join("&");
    let host = host_of(&auth.issuer).replace("localhost", "127.0.0.1");
    let head = format!(
        "POST /token HTTP/1.0\r\nHost: {host}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    let (status, _, answer) = exchange(&host, &head, body.as_bytes());
    let answer: Value = serde_json::from_slice(&answer).unwrap();
    assert_eq!(status, 200, "{answer}");
    answer["access_token"].as_str().unwrap().to_string()
}
