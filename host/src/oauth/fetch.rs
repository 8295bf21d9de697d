//! Fetching an authorization server's documents (its metadata, its keys):
//! a GET over HTTPS — or plain HTTP to loopback, see
//! [`super::settings::url_problem`] — bounded in time and size, with no
//! redirects followed (a redirect could lead anywhere the check did not
//! look).

use anyhow::{bail, Context, Result};
use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Limited};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use std::path::Path;
use std::time::Duration;

use super::settings::url_problem;

/// Largest document read, bytes (a key set of hundreds of keys).
pub const MAX_DOCUMENT_BYTES: usize = 256 * 1024;

/// How long one fetch may take, connection included.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// A client for the authorization servers' documents.
#[derive(Clone)]
pub struct Fetcher {
    client: Client<hyper_rustls::HttpsConnector<HttpConnector>, Empty<Bytes>>,
}

impl std::fmt::Debug for Fetcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Fetcher")
    }
}

impl Fetcher {
    /// A client trusting Mozilla's roots and, when given, the PEM
    /// certificates in `ca_file`.
    pub fn new(ca_file: Option<&Path>) -> Result<Fetcher> {
        let https = crate::tls::connector(ca_file, "[oauth] ca_file", FETCH_TIMEOUT)?;
        Ok(Fetcher { client: Client::builder(TokioExecutor::new()).build(https) })
    }

    /// GET `url` and parse it as JSON. Refuses a URL that is neither
    /// HTTPS nor loopback HTTP, an answer other than 200, one larger than
    /// [`MAX_DOCUMENT_BYTES`] and one slower than [`FETCH_TIMEOUT`].
    pub async fn get_json(&self, url: &str) -> Result<serde_json::Value> {
        if let Some(p) = url_problem(url) {
            bail!("refusing to fetch {p}");
        }
        let uri: http::Uri = url.parse().with_context(|| format!("{url:?} is not a URL"))?;
        let req = http::Request::get(uri)
            .header(http::header::ACCEPT, "application/json")
            .header(http::header::USER_AGENT, concat!("verbgate/", env!("CARGO_PKG_VERSION")))
            .body(Empty::new())?;
        let fetch = async {
            let resp =
                self.client.request(req).await.with_context(|| format!("cannot reach {url}"))?;
            let status = resp.status();
            if status != http::StatusCode::OK {
                bail!("{url} answered {status}, not 200 (redirects are not followed)");
            }
            let body = Limited::new(resp.into_body(), MAX_DOCUMENT_BYTES)
                .collect()
                .await
                .map_err(|e| anyhow::anyhow!("cannot read {url}: {e}"))?
                .to_bytes();
            serde_json::from_slice(&body).with_context(|| format!("{url} did not answer JSON"))
        };
        tokio::time::timeout(FETCH_TIMEOUT, fetch).await.map_err(|_| {
            anyhow::anyhow!("{url} did not answer within {} s", FETCH_TIMEOUT.as_secs())
        })?
    }
}
