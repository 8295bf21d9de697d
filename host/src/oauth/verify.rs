//! Checking an OAuth access token (a JWT, RFC 9068) as the MCP
//! authorization spec asks of a resource server: signed by a key of a
//! configured issuer with an accepted asymmetric algorithm, `iss` that
//! issuer, `aud` naming this server's resource (RFC 8707), not expired and
//! not before its time, with a subject — and carrying a scope that maps to
//! verbs. What the token reaches is the union of its scopes' patterns.

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, Validation};
use serde_json::Value;
use std::collections::BTreeSet;
use std::str::FromStr;
use std::time::Duration;

use super::cache::{self, Verdicts, VERIFIED_KEPT};
use super::fetch::Fetcher;
use super::keys::{IssuerKeys, KeySet, Missing};
use super::settings::OAuthSettings;

/// Longest access token looked at, bytes.
pub const MAX_TOKEN_BYTES: usize = 16 * 1024;

/// Why a token was refused: a closed set, recorded in the audit trail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rejection {
    /// Not a JWS compact token (three base64url parts, a JSON header).
    Malformed(String),
    /// Signed with an algorithm not accepted (`none` and `HS*` never are).
    Algorithm(String),
    /// From an issuer not configured.
    UnknownIssuer(String),
    /// Names a key its issuer's set does not hold (after a fetch).
    UnknownKey(Option<String>),
    /// The signature does not verify.
    BadSignature,
    /// Past `exp` (plus leeway).
    Expired,
    /// Before `nbf` (minus leeway).
    NotYetValid,
    /// `aud` does not name this resource.
    WrongAudience,
    /// A claim the spec requires is absent or of the wrong type.
    MissingClaim(&'static str),
    /// Its `typ` is not `at+jwt` (RFC 9068): an ID token, or another JWT.
    NotAnAccessToken(String),
    /// Valid, but none of its scopes maps to verbs.
    InsufficientScope,
    /// The issuer's keys cannot be fetched (and none are known).
    KeysUnavailable(String),
}

impl Rejection {
    /// A stable reason name (audit trail, logs).
    pub fn reason(&self) -> &'static str {
        match self {
            Rejection::Malformed(_) => "malformed",
            Rejection::Algorithm(_) => "algorithm_not_accepted",
            Rejection::UnknownIssuer(_) => "unknown_issuer",
            Rejection::UnknownKey(_) => "unknown_key",
            Rejection::BadSignature => "bad_signature",
            Rejection::Expired => "expired",
            Rejection::NotYetValid => "not_yet_valid",
            Rejection::WrongAudience => "wrong_audience",
            Rejection::MissingClaim(_) => "missing_claim",
            Rejection::NotAnAccessToken(_) => "not_an_access_token",
            Rejection::InsufficientScope => "insufficient_scope",
            Rejection::KeysUnavailable(_) => "keys_unavailable",
        }
    }

    /// What the caller is told (`error_description`): what was wrong and
    /// what to do, naming nothing secret.
    pub fn describe(&self, resource: &str) -> String {
        match self {
            Rejection::Malformed(why) => format!("the access token is not a signed JWT ({why})"),
            Rejection::Algorithm(alg) => format!("the access token is signed with {alg}, which this server does not accept (only asymmetric algorithms; never none or HS*)"),
            Rejection::UnknownIssuer(iss) => format!("the access token's issuer {iss:?} is not an authorization server this server trusts; get a token from one its metadata names"),
            Rejection::UnknownKey(Some(kid)) => format!("the access token names key {kid:?}, which its issuer does not publish"),
            Rejection::UnknownKey(None) => "the access token names no key (kid), and its issuer publishes more than one".to_string(),
            Rejection::BadSignature => "the access token's signature does not verify".to_string(),
            Rejection::Expired => "the access token has expired; get a new one".to_string(),
            Rejection::NotYetValid => "the access token is not valid yet (nbf); check the clocks".to_string(),
            Rejection::WrongAudience => format!("the access token is not for this server: its audience must name {resource} (ask for it with resource={resource})"),
            Rejection::MissingClaim(c) => format!("the access token has no valid `{c}` claim"),
            Rejection::NotAnAccessToken(typ) => format!("the token's typ is {typ:?}, not at+jwt: it is not an access token (RFC 9068)"),
            Rejection::InsufficientScope => "the access token has none of the scopes this server maps to verbs".to_string(),
            Rejection::KeysUnavailable(_) => "the server cannot fetch its authorization server's keys right now; retry shortly".to_string(),
        }
    }
}

/// Who a valid token speaks for, and what it reaches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// `iss`.
    pub issuer: String,
    /// `sub`.
    pub subject: String,
    /// The token's scopes this server maps to verbs, in order.
    pub scopes: Vec<String>,
    /// The union of those scopes' verb patterns.
    pub allow: Vec<String>,
    /// The groups claim (`[oauth] groups_claim`), its strings.
    pub groups: Vec<String>,
    /// `exp`, seconds since the epoch.
    pub expires: u64,
}

/// The resource server: settings and each issuer's keys.
pub struct ResourceServer {
    settings: OAuthSettings,
    algorithms: Vec<Algorithm>,
    issuers: Vec<IssuerKeys>,
    /// Tokens already verified (see [`super::cache`]).
    verdicts: Verdicts<Verified>,
}

impl std::fmt::Debug for ResourceServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResourceServer").field("resource", &self.settings.resource).finish()
    }
}

impl ResourceServer {
    /// A resource server for checked `settings` (keys fetched when first
    /// needed).
    pub fn new(settings: OAuthSettings) -> anyhow::Result<ResourceServer> {
        let fetcher = Fetcher::new(settings.ca_file.as_deref())?;
        let algorithms = settings
            .algorithms
            .iter()
            .map(|a| {
                Algorithm::from_str(a).map_err(|e| anyhow::anyhow!("[oauth] algorithm {a:?}: {e}"))
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        let issuers = settings
            .issuers
            .iter()
            .map(|i| {
                IssuerKeys::new(
                    i.clone(),
                    fetcher.clone(),
                    Duration::from_secs(settings.keys_max_age_secs),
                    Duration::from_secs(settings.refetch_secs),
                )
            })
            .collect();
        Ok(ResourceServer { settings, algorithms, issuers, verdicts: Verdicts::new(VERIFIED_KEPT) })
    }

    /// The settings it was made from.
    pub fn settings(&self) -> &OAuthSettings {
        &self.settings
    }

    /// What `token` speaks for, or why not: from the cache of verified
    /// tokens while its result still holds, else [`Self::check`]ed in full
    /// (and the result kept).
    pub async fn verify(&self, token: &str) -> Result<Verified, Rejection> {
        let digest = cache::digest(token);
        let current = |i: usize| self.issuers.get(i).and_then(IssuerKeys::fresh_set);
        if let Some(v) = self.verdicts.get(&digest, now(), current) {
            return Ok(v);
        }
        let (verified, issuer, keys) = self.check_with_keys(token).await?;
        let expires = verified.expires;
        self.verdicts.put(digest, verified.clone(), expires, issuer, keys, now(), current);
        Ok(verified)
    }

    /// Check `token` completely, cache aside: what it speaks for, or why not.
    pub async fn check(&self, token: &str) -> Result<Verified, Rejection> {
        self.check_with_keys(token).await.map(|(v, _, _)| v)
    }

    /// [`Self::check`], with the issuer's index and the key set that
    /// verified the signature.
    async fn check_with_keys(&self, token: &str) -> Result<(Verified, usize, KeySet), Rejection> {
        if token.len() > MAX_TOKEN_BYTES {
            return Err(Rejection::Malformed(format!("longer than {MAX_TOKEN_BYTES} bytes")));
        }
        if token.split('.').count() != 3 {
            return Err(Rejection::Malformed("not three dot-separated parts".into()));
        }
        let header = jsonwebtoken::decode_header(token).map_err(|e| match header_alg(token) {
            Some(alg) => Rejection::Algorithm(alg),
            None => Rejection::Malformed(format!("its header: {e}")),
        })?;
        if !self.algorithms.contains(&header.alg) {
            return Err(Rejection::Algorithm(format!("{:?}", header.alg)));
        }
        // RFC 9068 §4: an access token says it is one, so an ID token (or
        // any other JWT) the same issuer signed cannot stand in for it.
        if self.settings.require_at_jwt {
            let typ = header.typ.as_deref().unwrap_or("").to_ascii_lowercase();
            if typ != "at+jwt" && typ != "application/at+jwt" {
                return Err(Rejection::NotAnAccessToken(clip(
                    header.typ.as_deref().unwrap_or("none"),
                )));
            }
        }
        // The issuer picks the keys; the signature check below then binds
        // the token to that issuer (`iss` is validated again by the crate).
        let claims: Value = jsonwebtoken::dangerous::insecure_decode_claims(token)
            .map_err(|e| Rejection::Malformed(format!("its claims: {e}")))?;
        let iss =
            claims.get("iss").and_then(Value::as_str).ok_or(Rejection::MissingClaim("iss"))?;
        let (index, keys) = self
            .issuers
            .iter()
            .enumerate()
            .find(|(_, k)| k.issuer() == iss)
            .ok_or_else(|| Rejection::UnknownIssuer(clip(iss)))?;
        let (key, set) =
            keys.key_for(header.kid.as_deref(), header.alg).await.map_err(|m| match m {
                Missing::UnknownKey => Rejection::UnknownKey(header.kid.as_deref().map(clip)),
                Missing::Unavailable(why) => Rejection::KeysUnavailable(why),
            })?;
        let mut validation = Validation::new(header.alg);
        validation.algorithms = vec![header.alg];
        validation.leeway = self.settings.leeway_secs;
        validation.validate_nbf = true;
        validation.set_issuer(&[iss]);
        validation.set_audience(&[&self.settings.resource]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        let data = jsonwebtoken::decode::<Value>(token, &key.decoding, &validation).map_err(
            |e| match e.kind() {
                ErrorKind::ExpiredSignature => Rejection::Expired,
                ErrorKind::ImmatureSignature => Rejection::NotYetValid,
                ErrorKind::InvalidAudience => Rejection::WrongAudience,
                ErrorKind::InvalidIssuer => Rejection::UnknownIssuer(clip(iss)),
                ErrorKind::InvalidSignature => Rejection::BadSignature,
                ErrorKind::InvalidAlgorithm => Rejection::Algorithm(format!("{:?}", header.alg)),
                ErrorKind::MissingRequiredClaim(c) => Rejection::MissingClaim(match c.as_str() {
                    "exp" => "exp",
                    "aud" => "aud",
                    "iss" => "iss",
                    _ => "sub",
                }),
                other => Rejection::Malformed(format!("{other:?}")),
            },
        )?;
        let claims = data.claims;
        let subject = claims
            .get("sub")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .ok_or(Rejection::MissingClaim("sub"))?
            .to_string();
        let expires =
            claims.get("exp").and_then(Value::as_u64).ok_or(Rejection::MissingClaim("exp"))?;
        let scopes: Vec<String> = token_scopes(&claims)
            .into_iter()
            .filter(|s| self.settings.scopes.contains_key(s))
            .collect();
        if scopes.is_empty() {
            return Err(Rejection::InsufficientScope);
        }
        let allow: BTreeSet<String> =
            scopes.iter().flat_map(|s| self.settings.scopes[s].iter().cloned()).collect();
        let groups = claims
            .get(&self.settings.groups_claim)
            .and_then(Value::as_array)
            .map(|g| g.iter().filter_map(Value::as_str).map(str::to_string).collect())
            .unwrap_or_default();
        let verified = Verified {
            issuer: iss.to_string(),
            subject,
            scopes,
            allow: allow.into_iter().collect(),
            groups,
            expires,
        };
        Ok((verified, index, set))
    }
}

/// Seconds since the epoch.
fn now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// The token's scopes: RFC 9068's space-separated `scope`, or the `scp`
/// list some servers send instead.
fn token_scopes(claims: &Value) -> Vec<String> {
    let mut out: Vec<String> = vec![];
    if let Some(s) = claims.get("scope").and_then(Value::as_str) {
        out.extend(s.split(' ').filter(|s| !s.is_empty()).map(str::to_string));
    }
    match claims.get("scp") {
        Some(Value::Array(list)) => {
            out.extend(list.iter().filter_map(Value::as_str).map(str::to_string))
        }
        // Entra sends `scp` as one space-separated string.
        Some(Value::String(s)) => {
            out.extend(s.split(' ').filter(|s| !s.is_empty()).map(str::to_string))
        }
        _ => {}
    }
    let mut seen = BTreeSet::new();
    out.retain(|s| seen.insert(s.clone()));
    out
}

/// The `alg` a header names when the JWT crate cannot parse it (`none`,
/// an unknown name): so the refusal can say which.
fn header_alg(token: &str) -> Option<String> {
    use base64::Engine;
    let head = token.split('.').next()?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(head).ok()?;
    let v: Value = serde_json::from_slice(&bytes).ok()?;
    v.get("alg").and_then(Value::as_str).map(clip)
}

/// A value from a token, short enough for a message and a log line.
fn clip(s: &str) -> String {
    let mut out: String = s.chars().filter(|c| !c.is_control()).take(100).collect();
    if s.chars().count() > 100 {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn scopes_come_from_scope_or_scp_once_each() {
        assert_eq!(token_scopes(&json!({"scope": "a b  a"})), ["a", "b"]);
        assert_eq!(token_scopes(&json!({"scp": ["x", 3, "y"], "scope": "x"})), ["x", "y"]);
        assert!(token_scopes(&json!({"scope": 5})).is_empty());
        assert_eq!(token_scopes(&json!({"scp": "a b"})), ["a", "b"]);
    }

    #[test]
    fn a_header_the_crate_refuses_still_names_its_alg() {
        use base64::Engine;
        let b64 = |v: Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
        let none = format!("{}.{}.", b64(json!({"alg": "none", "typ": "JWT"})), b64(json!({})));
        assert_eq!(header_alg(&none).as_deref(), Some("none"));
        assert_eq!(header_alg("not-base64!.x.y"), None);
    }
}
