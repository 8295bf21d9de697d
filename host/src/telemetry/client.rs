//! The HTTP client the OTLP exporters send with: our hyper client (the
//! one the OAuth key fetches use, [`crate::tls`]), not reqwest. The SDK's
//! batch processor and metric reader export from their own OS threads,
//! which have no tokio reactor, so each export is spawned onto the
//! server's runtime and awaited from there.

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use opentelemetry_http::{HttpClient, HttpError, Request, Response};
use std::path::Path;
use std::time::Duration;

/// Largest collector answer read (an OTLP response is a few bytes; a
/// partial-success message a few KiB).
const MAX_RESPONSE_BYTES: usize = 64 * 1024;

/// An OTLP/HTTP client on the server's runtime.
#[derive(Clone)]
pub struct OtlpClient {
    client: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
    runtime: tokio::runtime::Handle,
    timeout: Duration,
}

impl std::fmt::Debug for OtlpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OtlpClient").field("timeout", &self.timeout).finish()
    }
}

impl OtlpClient {
    /// A client trusting Mozilla's roots and `ca_file`
    /// (`OTEL_EXPORTER_OTLP_CERTIFICATE`), each export bounded by
    /// `timeout`. Call from within the runtime (its handle is kept).
    pub fn new(ca_file: Option<&Path>, timeout: Duration) -> anyhow::Result<OtlpClient> {
        let https = crate::tls::connector(ca_file, "OTEL_EXPORTER_OTLP_CERTIFICATE", timeout)?;
        Ok(OtlpClient {
            client: Client::builder(TokioExecutor::new()).build(https),
            runtime: tokio::runtime::Handle::current(),
            timeout,
        })
    }
}

#[async_trait::async_trait]
impl HttpClient for OtlpClient {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let (client, timeout) = (self.client.clone(), self.timeout);
        let (parts, body) = request.into_parts();
        let request = Request::from_parts(parts, Full::new(body));
        let task = self.runtime.spawn(async move {
            let exchange = async move {
                let response = client.request(request).await?;
                let (parts, body) = response.into_parts();
                let body = Limited::new(body, MAX_RESPONSE_BYTES).collect().await?.to_bytes();
                Ok::<_, HttpError>(Response::from_parts(parts, body))
            };
            tokio::time::timeout(timeout, exchange).await.map_err(|_| -> HttpError {
                format!("the OTLP export took more than {} s", timeout.as_secs()).into()
            })?
        });
        task.await?
    }
}
