//! verbgate as an OAuth 2.1 resource server, end to end: a real
//! authorization server (oauth2-mock-server, started from
//! scripts/oauth-as by `just oauth-tools`) issues RS256 access tokens from
//! its own keys; the real binary serves `--http` with `[oauth]` naming it;
//! the official Python SDK's OAuth client finds its way from the 401 alone;
//! raw HTTP sends the tokens an attacker would (another audience, expired,
//! an unknown key, `alg: none`, HS256 keyed with the published key, a
//! tampered payload, no scope that maps) and each is refused and audited.

use base64::Engine;
use serde_json::{json, Value};
use std::process::Command;
use std::time::Duration;
use verbgate_tests::oauth::{access_token, exchange, free_port, header, host_of, AuthServer};
use verbgate_tests::{target_dir, Env};

fn start_authorization_server() -> AuthServer {
    AuthServer::start(r#"{"ci-bot": ["echo:argv"]}"#)
}

/// POST an `initialize` to the server with `token`; status, headers, body.
fn initialize(addr: &str, token: Option<&str>) -> (u16, Vec<(String, String)>, String) {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;
    let auth = token.map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
    let head = format!(
        "POST /mcp HTTP/1.0\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n{auth}Content-Length: {}\r\n\r\n",
        body.len()
    );
    let (status, headers, body) = exchange(addr, &head, body.as_bytes());
    (status, headers, String::from_utf8_lossy(&body).to_string())
}

/// An environment whose server is a resource server for `auth` at
/// `http://127.0.0.1:PORT/mcp`.
fn resource_server(auth: &AuthServer) -> (Env, verbgate_tests::HttpServer, String) {
    let port = free_port();
    let resource = format!("http://127.0.0.1:{port}/mcp");
    let env = Env::with_plugin("fixture-echo").with_config(&format!(
        "[[policy]]\nverbs = [\"job.list\"]\nsubjects = [\"ci-bot\"]\ndecision = \"deny\"\nreason = \"not for bots\"\n[[policy]]\nverbs = [\"echo.argv\"]\nsubjects = [\"someone-else\"]\ndecision = \"deny\"\n[oauth]\nresource = \"{resource}\"\n[[oauth.issuers]]\nissuer = \"{}\"\n[oauth.scopes]\n\"echo:argv\" = [\"echo.argv\", \"job.*\"]\n\"verbs:all\" = [\"*\"]\n",
        auth.issuer
    ));
    let server = env.serve_http_on(&format!("127.0.0.1:{port}"), &[]);
    (env, server, resource)
}

#[test]
fn the_python_sdks_oauth_client_finds_its_way_from_the_401_and_reaches_only_its_scopes() {
    let auth = start_authorization_server();
    let (_env, server, _) = resource_server(&auth);
    let python = target_dir().join("py/bin/python");
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("python/mcp_oauth.py");
    let out = Command::new(&python)
        .arg(&script)
        .args([server.url.as_str(), auth.issuer.as_str(), "ci-bot", "echo:argv"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(v["access_token_obtained"], true, "{v}");
    assert_eq!(v["tools"], json!(["request"]));
    // The client asked for every scope the metadata lists (the SDK does);
    // the authorization server granted it `echo:argv` alone.
    assert_eq!(v["op"]["results"][0]["result"]["argv"], json!(["via-oauth"]), "{v}");
    assert_eq!(v["op_is_error"], false);
    // The token's scope reaches echo.argv and job.*; echo.sleep is as
    // absent as a verb that does not exist, in the catalog and for ops.
    assert_eq!(v["hidden"]["results"][0]["error"]["code"], "unknown_verb", "{v}");
    // A `[[policy]]` rule naming the token's subject applies to it (and
    // one naming another subject does not: echo.argv ran above).
    assert_eq!(v["jobs"]["results"][0]["error"]["code"], "policy_denied", "{v}");
    assert_eq!(v["jobs"]["results"][0]["error"]["rule"], "policy[1]", "{v}");
    let catalog = v["catalog"].to_string();
    assert!(catalog.contains("echo.argv") && catalog.contains("job.wait"), "{catalog}");
    assert!(!catalog.contains("echo.sleep") && !catalog.contains("git.status"), "{catalog}");
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn audit_rows(env: &Env) -> Vec<Value> {
    let out = env.cmd(&["audit", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn forged_expired_and_misdirected_tokens_are_refused_and_audited() {
    let auth = start_authorization_server();
    let (env, server, resource) = resource_server(&auth);
    let addr = &server.addr;
    // No token: 401 pointing at the metadata, which names the issuer.
    let (status, headers, _) = initialize(addr, None);
    assert_eq!(status, 401);
    let challenge = header(&headers, "www-authenticate").unwrap().to_string();
    let metadata_url = format!("http://{addr}/.well-known/oauth-protected-resource/mcp");
    assert!(challenge.contains(&format!("resource_metadata=\"{metadata_url}\"")), "{challenge}");
    for path in
        ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"]
    {
        let (status, _, body) =
            exchange(addr, &format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n"), b"");
        assert_eq!(status, 200, "{path}");
        let doc: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(doc["resource"], resource.as_str());
        assert_eq!(doc["authorization_servers"], json!([auth.issuer]));
    }
    // A token for this resource with a mapped scope is let in.
    let good = access_token(&auth, &[("resource", &resource), ("scope", "verbs:all")]);
    let (status, _, body) = initialize(addr, Some(&good));
    assert_eq!(status, 200, "{body}");

    let (head, payload, _) = {
        let mut parts = good.split('.');
        (
            parts.next().unwrap().to_string(),
            parts.next().unwrap().to_string(),
            parts.next().unwrap().to_string(),
        )
    };
    let claims: Value = serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(&payload).unwrap(),
    )
    .unwrap();
    // alg none: the same claims, no signature.
    let none = format!("{}.{payload}.", b64(br#"{"alg":"none","typ":"JWT"}"#));
    // HS256 keyed with the issuer's published key (the classic confusion).
    let (_, _, jwks) = exchange(
        &host_of(&auth.issuer).replace("localhost", "127.0.0.1"),
        &format!("GET /jwks HTTP/1.0\r\nHost: {}\r\n\r\n", host_of(&auth.issuer)),
        b"",
    );
    let jwks: Value = serde_json::from_slice(&jwks).unwrap();
    let published = jwks["keys"][0].to_string();
    let mut hs_header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256);
    hs_header.kid = jwks["keys"][0]["kid"].as_str().map(str::to_string);
    let hs256 = jsonwebtoken::encode(
        &hs_header,
        &claims,
        &jsonwebtoken::EncodingKey::from_secret(published.as_bytes()).unwrap(),
    )
    .unwrap();
    // A payload changed after signing (another subject, every scope).
    let mut richer = claims.clone();
    richer["sub"] = json!("admin");
    let tampered = format!(
        "{head}.{}.{}",
        b64(richer.to_string().as_bytes()),
        good.split('.').nth(2).unwrap()
    );

    let cases: Vec<(&str, String, u16, &str)> = vec![
        (
            "another audience",
            access_token(
                &auth,
                &[("resource", "https://other.example/mcp"), ("scope", "verbs:all")],
            ),
            401,
            "wrong_audience",
        ),
        (
            "expired",
            access_token(
                &auth,
                &[("resource", &resource), ("scope", "verbs:all"), ("test_exp", "-3600")],
            ),
            401,
            "expired",
        ),
        (
            "unknown kid",
            access_token(
                &auth,
                &[("resource", &resource), ("scope", "verbs:all"), ("test_kid", "not-published")],
            ),
            401,
            "unknown_key",
        ),
        (
            "typ JWT, not at+jwt (an ID token)",
            access_token(
                &auth,
                &[("resource", &resource), ("scope", "verbs:all"), ("test_typ", "JWT")],
            ),
            401,
            "not_an_access_token",
        ),
        ("alg none", none, 401, "algorithm_not_accepted"),
        ("HS256 with the public key", hs256, 401, "algorithm_not_accepted"),
        ("tampered payload", tampered, 401, "bad_signature"),
        (
            "no mapped scope",
            access_token(&auth, &[("resource", &resource), ("scope", "profile")]),
            403,
            "insufficient_scope",
        ),
    ];
    for (what, token, want, _) in &cases {
        let (status, headers, body) = initialize(addr, Some(token));
        assert_eq!(status, *want, "{what}: {body}");
        let challenge = header(&headers, "www-authenticate").unwrap_or_default();
        assert!(
            challenge.contains(&format!("resource_metadata=\"{metadata_url}\"")),
            "{what}: {challenge}"
        );
        if *want == 403 {
            assert!(
                challenge.contains("error=\"insufficient_scope\"")
                    && challenge.contains("scope=\"echo:argv verbs:all\""),
                "{what}: {challenge}"
            );
            assert!(body.contains("echo:argv") && body.contains("verbs:all"), "{what}: {body}");
        } else {
            assert!(challenge.contains("error=\"invalid_token\""), "{what}: {challenge}");
        }
    }
    // Each refusal is in the audit trail with its reason (the writer
    // thread commits rows shortly after).
    let mut reasons: Vec<String> = vec![];
    for _ in 0..100 {
        reasons = audit_rows(&env)
            .iter()
            .filter(|r| r["verb"] == "authenticate")
            .map(|r| {
                let args: Value = serde_json::from_str(r["args"].as_str().unwrap_or("{}"))
                    .unwrap_or(r["args"].clone());
                args["reason"].as_str().unwrap_or_default().to_string()
            })
            .collect();
        if reasons.len() >= cases.len() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let mut want: Vec<String> = cases.iter().map(|c| c.3.to_string()).collect();
    want.sort();
    reasons.sort();
    assert_eq!(reasons, want);
    // The good token was never refused, and no row holds a token.
    let all = audit_rows(&env).iter().map(Value::to_string).collect::<String>();
    assert!(!all.contains(&good) && !all.contains(&payload), "a token reached the audit trail");
}
