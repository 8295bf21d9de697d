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
use std::sync::Arc;
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
        use rustls::pki_types::{pem::PemObject, CertificateDer};
        let mut roots = rustls::RootCertStore::empty();
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        if let Some(path) = ca_file {
            let mut added = 0;
            for cert in CertificateDer::pem_file_iter(path)
                .with_context(|| format!("cannot read [oauth] ca_file {}", path.display()))?
            {
                let cert = cert.with_context(|| {
                    format!("[oauth] ca_file {} holds a malformed certificate", path.display())
                })?;
                roots.add(cert).with_context(|| {
                    format!("[oauth] ca_file {}: a certificate is not a CA's", path.display())
                })?;
                added += 1;
            }
            if added == 0 {
                bail!("[oauth] ca_file {} holds no PEM certificate", path.display());
            }
        }
        // ring, not aws-lc-rs (rustls' default, which builds a C library and
        // would need a C cross toolchain for the macOS build): what it lacks
        // is post-quantum key exchange, which fetching public keys can do
        // without (a recorded session reveals only public documents).
        #[allow(deprecated)]
        let provider = rustls::crypto::ring::default_provider();
        let tls = rustls::ClientConfig::builder_with_provider(Arc::new(provider))
            .with_safe_default_protocol_versions()
            .context("rustls refused its default protocol versions")?
            .with_root_certificates(roots)
            .with_no_client_auth();
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_connect_timeout(Some(FETCH_TIMEOUT));
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .wrap_connector(http);
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
