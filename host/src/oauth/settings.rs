//! `[oauth]` in verbgate.toml: the OAuth 2.1 resource server an HTTP
//! server becomes beside its static tokens (which keep working).
//!
//! ```toml
//! [oauth]
//! resource = "https://mcp.example.com/mcp"   # the audience every token must name
//! [[oauth.issuers]]
//! issuer = "https://auth.example.com"        # jwks_uri found from its metadata
//! [oauth.scopes]
//! "verbs:read" = ["git.status", "git.log", "job.*"]
//! "verbs:all" = ["*"]
//! ```
//!
//! Checked when the config is read, so a server never starts with a
//! resource server that could not refuse what it should.

use anyhow::{bail, Result};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Signature algorithms a token may be signed with by default: every
/// asymmetric one the validator implements. Never `HS*` (a shared secret
/// is not something an authorization server publishes, and an `HS256`
/// token "signed" with the published public key is the classic forgery)
/// and never `none`.
pub const DEFAULT_ALGORITHMS: &[&str] =
    &["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA"];

/// Default clock skew allowed on `exp` and `nbf`, seconds.
pub const DEFAULT_LEEWAY_SECS: u64 = 30;

/// Default least time between two fetches of an issuer's keys caused by a
/// token naming a key the server does not know (a stream of made-up `kid`s
/// cannot make the server hammer the authorization server).
pub const DEFAULT_REFETCH_SECS: u64 = 30;

/// Default age after which an issuer's keys are fetched again on the next
/// request (a rotated-out key stops being accepted within this time).
pub const DEFAULT_KEYS_MAX_AGE_SECS: u64 = 3600;

/// `[oauth]` as written.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct OAuthSettings {
    /// The canonical URI of this MCP server (RFC 8707 / RFC 9728
    /// `resource`): every token's `aud` must name it.
    pub resource: String,
    /// The authorization servers whose tokens are accepted.
    pub issuers: Vec<IssuerSettings>,
    /// Scope → the verb patterns (`*`, `ns.*`, `ns.verb`) a token with
    /// that scope reaches. A token reaches the union of its scopes'
    /// patterns; one with none of these scopes is refused (403).
    pub scopes: BTreeMap<String, Vec<String>>,
    /// Accepted `alg` values (default [`DEFAULT_ALGORITHMS`]).
    #[serde(default = "default_algorithms")]
    pub algorithms: Vec<String>,
    /// Clock skew allowed on `exp`/`nbf`, seconds.
    #[serde(default = "default_leeway")]
    pub leeway_secs: u64,
    /// The claim holding the caller's groups (a list of strings), which
    /// `[[policy]]` rules match with `groups`.
    #[serde(default = "default_groups_claim")]
    pub groups_claim: String,
    /// Refuse a token whose header `typ` is not `at+jwt` (RFC 9068 §4).
    /// Default true; false for an authorization server that does not mark
    /// its access tokens (then an ID token it issued for this audience
    /// would pass too).
    #[serde(default = "default_true")]
    pub require_at_jwt: bool,
    /// Least seconds between key fetches for an unknown `kid`.
    #[serde(default = "default_refetch")]
    pub refetch_secs: u64,
    /// Seconds after which fetched keys are fetched again.
    #[serde(default = "default_max_age")]
    pub keys_max_age_secs: u64,
    /// PEM file of extra certificate authorities for reaching the
    /// authorization servers over HTTPS (beside Mozilla's roots).
    pub ca_file: Option<PathBuf>,
}

/// One `[[oauth.issuers]]` entry.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct IssuerSettings {
    /// The issuer identifier, exactly as tokens carry it in `iss`.
    pub issuer: String,
    /// Where its keys are; when absent, read from its metadata
    /// (`/.well-known/oauth-authorization-server`, then
    /// `/.well-known/openid-configuration`).
    pub jwks_uri: Option<String>,
}

fn default_algorithms() -> Vec<String> {
    DEFAULT_ALGORITHMS.iter().map(|s| s.to_string()).collect()
}
fn default_leeway() -> u64 {
    DEFAULT_LEEWAY_SECS
}
fn default_groups_claim() -> String {
    "groups".to_string()
}
fn default_true() -> bool {
    true
}
fn default_refetch() -> u64 {
    DEFAULT_REFETCH_SECS
}
fn default_max_age() -> u64 {
    DEFAULT_KEYS_MAX_AGE_SECS
}

/// Whether `url` is one verbgate will fetch keys from or name as a
/// resource: `https://`, or `http://` to a loopback host (a local
/// authorization server in development and tests). Anything else would
/// let whoever sits on the network hand the server its own keys.
pub fn url_problem(url: &str) -> Option<String> {
    let Some((scheme, rest)) = url.split_once("://") else {
        return Some(format!("{url:?} is not an absolute URL"));
    };
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = host.rsplit_once('@').map_or(host, |(_, h)| h);
    let name = if let Some(v6) = host.strip_prefix('[') {
        v6.split(']').next().unwrap_or("")
    } else {
        host.rsplit_once(':').map_or(host, |(h, _)| h)
    };
    if name.is_empty() {
        return Some(format!("{url:?} names no host"));
    }
    if url.contains('#') {
        return Some(format!(
            "{url:?} has a fragment (`#…`), which a resource or issuer must not have"
        ));
    }
    match scheme {
        "https" => None,
        "http" if matches!(name, "localhost" | "127.0.0.1" | "::1") => None,
        "http" => Some(format!(
            "{url:?} is plain http to a host that is not loopback: keys fetched over it could be anyone's. Use https://"
        )),
        _ => Some(format!("{url:?} is not an http(s) URL")),
    }
}

impl OAuthSettings {
    /// Refuse a setting that could not do what its author meant.
    pub fn check(&self) -> Result<()> {
        let at = "[oauth] in verbgate.toml";
        if let Some(p) = url_problem(&self.resource) {
            bail!("{at}: resource: {p}");
        }
        if self.issuers.is_empty() {
            bail!("{at}: name at least one authorization server (`[[oauth.issuers]]` with `issuer = \"https://…\"`)");
        }
        for (i, iss) in self.issuers.iter().enumerate() {
            if let Some(p) = url_problem(&iss.issuer) {
                bail!("{at}: issuers[{}].issuer: {p}", i + 1);
            }
            if let Some(p) = iss.jwks_uri.as_deref().and_then(url_problem) {
                bail!("{at}: issuers[{}].jwks_uri: {p}", i + 1);
            }
            if self.issuers[..i].iter().any(|o| o.issuer == iss.issuer) {
                bail!("{at}: issuer {:?} is named twice", iss.issuer);
            }
        }
        if self.scopes.is_empty() {
            bail!("{at}: `[oauth.scopes]` is empty, so no token could reach any verb; map at least one scope to verb patterns (`\"verbs:all\" = [\"*\"]`)");
        }
        for (scope, patterns) in &self.scopes {
            if scope.is_empty()
                || !scope.bytes().all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\\')
            {
                bail!("{at}: scope {scope:?} is not a scope token (RFC 6749: printable ASCII, no spaces, quotes or backslashes)");
            }
            if patterns.is_empty() {
                bail!("{at}: scope {scope:?} maps to no verb patterns");
            }
            for p in patterns {
                if !crate::registry::fence::is_pattern(p) {
                    bail!("{at}: scope {scope:?}: {p:?} is not a verb pattern (`*`, `ns.*` or `ns.verb`)");
                }
            }
        }
        if self.algorithms.is_empty() {
            bail!("{at}: `algorithms = []` accepts no token; leave it out for the default");
        }
        for a in &self.algorithms {
            if !DEFAULT_ALGORITHMS.contains(&a.as_str()) {
                bail!(
                    "{at}: algorithm {a:?} is not accepted; choose among {} (symmetric `HS*` and `none` never are)",
                    DEFAULT_ALGORITHMS.join(", ")
                );
            }
        }
        if self.groups_claim.is_empty() {
            bail!("{at}: `groups_claim` is empty; leave it out for `groups`");
        }
        if self.leeway_secs > 300 {
            bail!(
                "{at}: `leeway_secs = {}` is more than 300 s of clock skew; fix the clocks instead",
                self.leeway_secs
            );
        }
        if self.keys_max_age_secs == 0 {
            bail!("{at}: `keys_max_age_secs` must be at least 1");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(extra: &str) -> Result<OAuthSettings> {
        let text = format!(
            "resource = \"https://mcp.example.com/mcp\"\n{extra}\n[[issuers]]\nissuer = \"https://as.example.com\"\n[scopes]\n\"verbs:all\" = [\"*\"]\n"
        );
        let s: OAuthSettings = toml::from_str(&text)?;
        s.check()?;
        Ok(s)
    }

    #[test]
    fn defaults_accept_only_asymmetric_algorithms() {
        let s = settings("").unwrap();
        assert!(
            s.algorithms.iter().all(|a| !a.starts_with("HS") && a != "none"),
            "{:?}",
            s.algorithms
        );
        assert_eq!(s.leeway_secs, DEFAULT_LEEWAY_SECS);
        for bad in ["HS256", "none", "rs256"] {
            let err = settings(&format!("algorithms = [\"{bad}\"]")).unwrap_err().to_string();
            assert!(err.contains(bad) && err.contains("not accepted"), "{err}");
        }
    }

    #[test]
    fn urls_must_be_https_or_loopback() {
        assert_eq!(url_problem("https://as.example.com"), None);
        assert_eq!(url_problem("http://127.0.0.1:8080/mcp"), None);
        assert_eq!(url_problem("http://localhost:9/x"), None);
        assert_eq!(url_problem("http://[::1]:9/x"), None);
        for bad in [
            "http://as.example.com",
            "http://localhost.evil.com/",
            "http://user@10.0.0.1/",
            "ftp://x",
            "as.example.com",
            "https://x/#f",
            "https:///x",
        ] {
            assert!(url_problem(bad).is_some(), "{bad}");
        }
        // `userinfo@` cannot smuggle a loopback name past the check.
        assert!(url_problem("http://localhost@evil.example/").is_some());
    }

    #[test]
    fn bad_scope_maps_and_issuers_are_refused() {
        let base = "resource = \"https://m/mcp\"\n";
        let cases = [
            (format!("{base}issuers = []\n[scopes]\na = [\"*\"]"), "at least one authorization server"),
            (format!("{base}[[issuers]]\nissuer = \"https://a\"\n[scopes]"), "is empty"),
            (format!("{base}[[issuers]]\nissuer = \"https://a\"\n[scopes]\na = []"), "no verb patterns"),
            (format!("{base}[[issuers]]\nissuer = \"https://a\"\n[scopes]\na = [\"Git.*\"]"), "not a verb pattern"),
            (format!("{base}[[issuers]]\nissuer = \"https://a\"\n[scopes]\n\"a b\" = [\"*\"]"), "not a scope token"),
            (format!("{base}[[issuers]]\nissuer = \"http://a\"\n[scopes]\na = [\"*\"]"), "plain http"),
            (format!("{base}[[issuers]]\nissuer = \"https://a\"\n[[issuers]]\nissuer = \"https://a\"\n[scopes]\na = [\"*\"]"), "named twice"),
        ];
        for (text, want) in cases {
            let err = toml::from_str::<OAuthSettings>(&text)
                .map_err(anyhow::Error::from)
                .and_then(|s| s.check())
                .unwrap_err();
            assert!(err.to_string().contains(want), "{text}: {err}");
        }
    }
}
