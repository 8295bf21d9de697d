//! What checking an OAuth access token costs a request, keys cached: a
//! real RS256 token from the authorization server of tests/e2e/oauth.rs,
//! verified by the server's own `ResourceServer` — as a request does
//! (`verify`: the verified-token cache, the full check on a miss) and in
//! full every time (`check`: signature, issuer, audience, times, scopes) —
//! against the static token's per-request check (the token file read and
//! hashed) measured in the same run.

use anyhow::Result;
use serde_json::json;
use std::time::Instant;
use verbgate::oauth::settings::OAuthSettings;
use verbgate::oauth::ResourceServer;
use verbgate::tokens::TokenStore;
use verbgate_tests::oauth::{access_token, AuthServer};

use super::{median, Row};

/// The rows: median µs per request's check and per full check, over a few
/// thousand.
pub async fn jwt_validation() -> Result<Vec<Row>> {
    let auth = AuthServer::start("{}");
    let resource = "http://127.0.0.1:8765/mcp";
    let settings: OAuthSettings = serde_json::from_value(json!({
        "resource": resource,
        "issuers": [{"issuer": auth.issuer}],
        "scopes": {"verbs:all": ["*"]},
    }))?;
    settings.check()?;
    let rs = ResourceServer::new(settings)?;
    let token = access_token(&auth, &[("resource", resource), ("scope", "verbs:all")]);
    // The first check fetches the keys; every later one uses them.
    rs.verify(&token).await.map_err(|r| anyhow::anyhow!("{r:?}"))?;
    let home = tempfile::tempdir()?;
    let store = TokenStore::at_home(home.path());
    let static_token = store.add("bench", None)?;
    let (mut jwt, mut full, mut file) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..2000 {
        let t = Instant::now();
        let v = rs.verify(&token).await;
        jwt.push(t.elapsed().as_secs_f64() * 1e6);
        anyhow::ensure!(v.is_ok(), "{v:?}");
        let t = Instant::now();
        let v = rs.check(&token).await;
        full.push(t.elapsed().as_secs_f64() * 1e6);
        anyhow::ensure!(v.is_ok(), "{v:?}");
        let t = Instant::now();
        let found = store.find(&static_token)?;
        file.push(t.elapsed().as_secs_f64() * 1e6);
        anyhow::ensure!(found.is_some());
    }
    let file = median(file);
    let baseline_name = "static token check (file read + SHA-256)";
    Ok(vec![
        Row {
            figure: "OAuth access token check per request (RS256, keys and result cached)".into(),
            value: median(jwt),
            unit: "µs",
            baseline_name: baseline_name.into(),
            baseline: file,
            goal: Some(("<=", 20.0)),
        },
        Row {
            figure: "OAuth access token full check (RS256, keys cached, first use)".into(),
            value: median(full),
            unit: "µs",
            baseline_name: baseline_name.into(),
            baseline: file,
            goal: None,
        },
    ])
}
