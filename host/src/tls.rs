//! The HTTPS client set-up every outgoing connection shares (an OAuth
//! issuer's keys, an OTLP collector): rustls on ring, trusting Mozilla's
//! roots compiled in (webpki-roots) plus an operator's PEM file — no
//! platform certificate store, so nothing OS-specific to link.

use anyhow::{bail, Context, Result};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// A connector for `https://` (and plain `http://`, which each user limits
/// as it must) trusting Mozilla's roots and the CA certificates in
/// `ca_file`, named `setting` in errors (`[oauth] ca_file`).
pub fn connector(
    ca_file: Option<&Path>,
    setting: &str,
    connect_timeout: Duration,
) -> Result<HttpsConnector<HttpConnector>> {
    use rustls::pki_types::{pem::PemObject, CertificateDer};
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    if let Some(path) = ca_file {
        let mut added = 0;
        for cert in CertificateDer::pem_file_iter(path)
            .with_context(|| format!("cannot read {setting} {}", path.display()))?
        {
            let cert = cert.with_context(|| {
                format!("{setting} {} holds a malformed certificate", path.display())
            })?;
            roots.add(cert).with_context(|| {
                format!("{setting} {}: a certificate is not a CA's", path.display())
            })?;
            added += 1;
        }
        if added == 0 {
            bail!("{setting} {} holds no PEM certificate", path.display());
        }
    }
    // ring, not aws-lc-rs (rustls' default, which builds a C library and
    // would need a C cross toolchain for the macOS build): what it lacks
    // is post-quantum key exchange, which public keys and telemetry can do
    // without.
    #[allow(deprecated)]
    let provider = rustls::crypto::ring::default_provider();
    let tls = rustls::ClientConfig::builder_with_provider(Arc::new(provider))
        .with_safe_default_protocol_versions()
        .context("rustls refused its default protocol versions")?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_connect_timeout(Some(connect_timeout));
    Ok(hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_http1()
        .wrap_connector(http))
}
