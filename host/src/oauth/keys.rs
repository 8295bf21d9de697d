//! An authorization server's signing keys (its JWKS), fetched when first
//! needed and kept: fetched again when older than `keys_max_age_secs`, or
//! when a token names a key not in the set — at most once per
//! `refetch_secs`, so a stream of made-up key ids cannot make the server
//! hammer the authorization server (or stall its callers).
//!
//! Only signature keys of an asymmetric type are kept: an `oct` (shared
//! secret) key in a published set is skipped, so no token can be checked
//! against a secret anyone who reads the set knows.

use jsonwebtoken::jwk::{AlgorithmParameters, Jwk, JwkSet, PublicKeyUse};
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey};
use serde_json::Value;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use super::fetch::Fetcher;
use super::settings::{url_problem, IssuerSettings};

/// One usable key of a set.
#[derive(Clone)]
pub struct Key {
    /// Its `kid`, if the set gives one.
    pub kid: Option<String>,
    /// The algorithm the set ties it to, if any.
    pub alg: Option<Algorithm>,
    /// What it can check.
    pub family: AlgorithmFamily,
    /// The key.
    pub decoding: DecodingKey,
}

/// A fetched set of keys. Each fetch makes a new one, so a result checked
/// with a set can tell whether that set is still the current one.
pub type KeySet = Arc<Vec<Key>>;

/// The keys known for one issuer, and when they were fetched.
#[derive(Clone, Default)]
struct Snapshot {
    keys: KeySet,
    fetched: Option<Instant>,
    tried: Option<Instant>,
    /// Why the last fetch failed, if it did.
    failure: Option<String>,
}

/// Why no key could be found for a token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Missing {
    /// The set (fetched) has no key by that id for that algorithm.
    UnknownKey,
    /// The keys could not be fetched (and none are known); the text says why.
    Unavailable(String),
}

/// One issuer's keys.
pub struct IssuerKeys {
    settings: IssuerSettings,
    fetcher: Fetcher,
    max_age: Duration,
    refetch: Duration,
    snapshot: RwLock<Snapshot>,
    /// One fetch at a time: callers that find the keys stale wait for it.
    fetching: tokio::sync::Mutex<()>,
}

impl IssuerKeys {
    /// The keys of `settings`' issuer (nothing fetched yet).
    pub fn new(
        settings: IssuerSettings,
        fetcher: Fetcher,
        max_age: Duration,
        refetch: Duration,
    ) -> IssuerKeys {
        IssuerKeys {
            settings,
            fetcher,
            max_age,
            refetch,
            snapshot: RwLock::default(),
            fetching: tokio::sync::Mutex::new(()),
        }
    }

    /// The issuer identifier.
    pub fn issuer(&self) -> &str {
        &self.settings.issuer
    }

    fn snapshot(&self) -> Snapshot {
        self.snapshot.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The current set, if it is younger than `keys_max_age_secs` (a
    /// stale one is fetched again by the next full check, not reused).
    pub fn fresh_set(&self) -> Option<KeySet> {
        let snap = self.usable_snapshot();
        snap.fetched.is_some_and(|t| t.elapsed() < self.max_age).then_some(snap.keys)
    }

    /// The key that checks a token with header `kid` and `alg`, and the set
    /// it came from, fetching the set when it is stale or lacks the key
    /// (within the bounds above).
    pub async fn key_for(
        &self,
        kid: Option<&str>,
        alg: Algorithm,
    ) -> Result<(Key, KeySet), Missing> {
        let snap = self.usable_snapshot();
        let fresh = snap.fetched.is_some_and(|t| t.elapsed() < self.max_age);
        if fresh {
            if let Some(k) = pick(&snap.keys, kid, alg) {
                return Ok((k, snap.keys));
            }
        }
        // Stale keys and unknown ids alike fetch at most once per
        // `refetch`: while the server cannot be reached, the keys it last
        // gave keep checking tokens (and a fetch is tried again later).
        let may_fetch = snap.tried.is_none_or(|t| t.elapsed() >= self.refetch);
        // One fetch at a time, and no request waits for a fetch another
        // started: while an issuer is slow, requests answer from what is
        // known at once instead of each holding a connection for it.
        if may_fetch {
            if let Ok(_one) = self.fetching.try_lock() {
                if self.snapshot().tried == snap.tried {
                    self.refresh().await;
                }
            }
        }
        let snap = self.usable_snapshot();
        if let Some(k) = pick(&snap.keys, kid, alg) {
            return Ok((k, snap.keys));
        }
        match (snap.fetched, snap.failure) {
            (None, Some(why)) => Err(Missing::Unavailable(why)),
            _ => Err(Missing::UnknownKey),
        }
    }

    /// The snapshot, without keys older than twice `max_age`: while the
    /// issuer cannot be reached its last keys keep working for a while, not
    /// for ever (a key removed from the set must stop working even if the
    /// fetch can be made to fail).
    fn usable_snapshot(&self) -> Snapshot {
        let mut snap = self.snapshot();
        if snap.fetched.is_some_and(|t| t.elapsed() >= self.max_age * 2) {
            snap.keys = Arc::default();
            snap.fetched = None;
            snap.failure.get_or_insert_with(|| "its keys are too old to use".to_string());
        }
        snap
    }

    /// Fetch the set now (discovery and keys within one
    /// [`super::fetch::FETCH_TIMEOUT`]), keeping the old one if it fails.
    async fn refresh(&self) {
        let result = tokio::time::timeout(super::fetch::FETCH_TIMEOUT, self.fetch())
            .await
            .unwrap_or_else(|_| {
                Err(anyhow::anyhow!(
                    "fetching the keys took more than {} s",
                    super::fetch::FETCH_TIMEOUT.as_secs()
                ))
            });
        let mut snap = self.snapshot.write().unwrap_or_else(|e| e.into_inner());
        snap.tried = Some(Instant::now());
        match result {
            Ok(keys) => {
                tracing::info!(issuer = %self.settings.issuer, keys = keys.len(), "fetched the authorization server's keys");
                snap.keys = Arc::new(keys);
                snap.fetched = snap.tried;
                snap.failure = None;
            }
            Err(e) => {
                let why = format!("{e:#}");
                tracing::warn!(issuer = %self.settings.issuer, error = %why, "cannot fetch the authorization server's keys");
                snap.failure = Some(why);
            }
        }
    }

    async fn fetch(&self) -> anyhow::Result<Vec<Key>> {
        let uri = match &self.settings.jwks_uri {
            Some(u) => u.clone(),
            None => self.discover().await?,
        };
        let doc = self.fetcher.get_json(&uri).await?;
        let set: JwkSet = serde_json::from_value(strip_unusable(doc))
            .map_err(|e| anyhow::anyhow!("{uri} is not a JWK set: {e}"))?;
        let keys: Vec<Key> = set.keys.iter().filter_map(usable).collect();
        if keys.is_empty() {
            anyhow::bail!("{uri} holds no asymmetric signature key verbgate can use");
        }
        Ok(keys)
    }

    /// The issuer's `jwks_uri`, from its RFC 8414 metadata (or its OpenID
    /// configuration), which must name the same issuer.
    async fn discover(&self) -> anyhow::Result<String> {
        let issuer = self.settings.issuer.trim_end_matches('/');
        let mut failures = vec![];
        // RFC 8414 puts the well-known segment before the issuer's path;
        // OpenID Connect appends it. Try both, in that order.
        let (origin, path) = split_origin(issuer);
        let candidates = [
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{origin}/.well-known/openid-configuration{path}"),
            format!("{issuer}/.well-known/openid-configuration"),
        ];
        for url in candidates
            .iter()
            .enumerate()
            .filter(|(i, u)| candidates[..*i].iter().all(|c| c != *u))
            .map(|(_, u)| u)
        {
            match self.fetcher.get_json(url).await {
                Ok(meta) => {
                    let named = meta.get("issuer").and_then(Value::as_str).unwrap_or("");
                    if named != self.settings.issuer {
                        anyhow::bail!("{url} names issuer {named:?}, not {:?} (RFC 8414 §3.3: metadata of another issuer is refused)", self.settings.issuer);
                    }
                    let Some(jwks) = meta.get("jwks_uri").and_then(Value::as_str) else {
                        anyhow::bail!("{url} names no jwks_uri; set `jwks_uri` for this issuer in [[oauth.issuers]]");
                    };
                    if let Some(p) = url_problem(jwks) {
                        anyhow::bail!("{url} names jwks_uri {p}");
                    }
                    // Loopback HTTP is for a local issuer: a remote one's
                    // metadata pointing at a local port would let whoever
                    // binds that port on this machine serve the keys.
                    if jwks.starts_with("http://") && !issuer.starts_with("http://") {
                        anyhow::bail!("{url} names jwks_uri {jwks:?}: plain http to loopback, from an issuer that is not itself local");
                    }
                    return Ok(jwks.to_string());
                }
                Err(e) => failures.push(format!("{e:#}")),
            }
        }
        anyhow::bail!(
            "cannot read the metadata of issuer {}: {}",
            self.settings.issuer,
            failures.join("; ")
        )
    }
}

/// `https://host:port` and the rest (`/tenant`, or empty) of an issuer.
fn split_origin(issuer: &str) -> (&str, &str) {
    let after = issuer.find("://").map_or(0, |i| i + 3);
    match issuer[after..].find('/') {
        Some(i) => issuer.split_at(after + i),
        None => (issuer, ""),
    }
}

/// The set without entries the JWK parser would refuse the whole set for
/// (an unknown `kty` or `alg`, such as a post-quantum key beside the RSA
/// one): those keys are not usable here, the others still are.
fn strip_unusable(mut doc: Value) -> Value {
    if let Some(keys) = doc.get_mut("keys").and_then(Value::as_array_mut) {
        keys.retain(|k| serde_json::from_value::<Jwk>(k.clone()).is_ok());
    }
    doc
}

/// A key of the set verbgate may check signatures with.
fn usable(jwk: &Jwk) -> Option<Key> {
    if matches!(jwk.common.public_key_use, Some(ref u) if *u != PublicKeyUse::Signature) {
        return None;
    }
    let family = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => AlgorithmFamily::Rsa,
        AlgorithmParameters::EllipticCurve(_) => AlgorithmFamily::Ec,
        AlgorithmParameters::OctetKeyPair(_) => AlgorithmFamily::Ed,
        // A shared secret published in a key set is no secret.
        AlgorithmParameters::OctetKey(_) | AlgorithmParameters::Other(_) => return None,
        _ => return None,
    };
    let alg = match jwk.common.key_algorithm {
        Some(a) => Some(<Algorithm as std::str::FromStr>::from_str(&a.to_string()).ok()?),
        None => None,
    };
    if alg.is_some_and(|a| a.family() != family) {
        return None;
    }
    let decoding = DecodingKey::from_jwk(jwk).ok()?;
    Some(Key { kid: jwk.common.key_id.clone(), alg, family, decoding })
}

/// The key for a token: by `kid` when it names one; without one, only
/// when the set holds exactly one key that fits `alg`.
fn pick(keys: &[Key], kid: Option<&str>, alg: Algorithm) -> Option<Key> {
    let fits = |k: &&Key| k.family == alg.family() && k.alg.is_none_or(|a| a == alg);
    match kid {
        Some(kid) => keys.iter().filter(fits).find(|k| k.kid.as_deref() == Some(kid)).cloned(),
        None => {
            let mut fitting = keys.iter().filter(fits);
            let one = fitting.next()?;
            fitting.next().is_none().then(|| one.clone())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn set(keys: Value) -> Vec<Key> {
        let set: JwkSet = serde_json::from_value(strip_unusable(json!({"keys": keys}))).unwrap();
        set.keys.iter().filter_map(usable).collect()
    }

    const N: &str = "sXchDaQebHnPiGvyDOAT4saGEUetSyo9MKLOoWFsueri23bOdgWp4Dy1WlUzewbgBHod5pcM9H95GQRV3JDXboIRROSBigeC5yjU1hGzHHyXss8UDprecbAYxknTcQkhslANGRUZmdTOQ5qTRsLAt6BTYuyvVRdhS8exSZEy_c4gs_7svlJJQ4H9_NxsiIoLwAEk7-Q3UXERGYw_75IDrGA84-lA_-Ct4eTlXHBIY2EaV7t7LjJaynVJCpkv4LKjTTAumiGUIuQhrNhZLuF_RJLqHpM2kgWFLU7-VTdL1VbC2tejvcI2BlMkEpk1BzBZI0KQB0GaDWFLN-aEAw3vRw";

    #[test]
    fn shared_secrets_and_keys_for_other_uses_are_not_kept() {
        let keys = set(json!([
            {"kty": "oct", "k": "c2VjcmV0", "kid": "hmac"},
            {"kty": "RSA", "n": N, "e": "AQAB", "kid": "enc", "use": "enc"},
            {"kty": "RSA", "n": N, "e": "AQAB", "kid": "sig", "use": "sig", "alg": "RS256"},
            {"kty": "RSA", "n": N, "e": "AQAB", "kid": "mismatch", "alg": "ES256"},
            {"kty": "ML-DSA", "kid": "future"},
        ]));
        let kids: Vec<_> = keys.iter().map(|k| k.kid.as_deref().unwrap()).collect();
        assert_eq!(kids, ["sig"], "only the RSA signature key whose alg fits its type");
    }

    #[test]
    fn a_key_is_picked_by_kid_and_algorithm_family() {
        let keys = set(json!([
            {"kty": "RSA", "n": N, "e": "AQAB", "kid": "a", "alg": "RS256"},
            {"kty": "RSA", "n": N, "e": "AQAB", "kid": "b"},
        ]));
        assert!(pick(&keys, Some("a"), Algorithm::RS256).is_some());
        assert!(pick(&keys, Some("a"), Algorithm::PS256).is_none(), "the set ties `a` to RS256");
        assert!(pick(&keys, Some("b"), Algorithm::PS256).is_some());
        assert!(
            pick(&keys, Some("b"), Algorithm::ES256).is_none(),
            "an RSA key checks no EC signature"
        );
        assert!(pick(&keys, Some("HS256"), Algorithm::RS256).is_none());
        assert!(pick(&keys, None, Algorithm::RS256).is_none(), "two keys fit: no kid is ambiguous");
        assert!(pick(&keys, None, Algorithm::RS384).is_some(), "only `b` fits RS384");
        assert!(pick(&keys[..1], None, Algorithm::RS256).is_some());
    }

    #[test]
    fn issuer_paths_split_for_rfc_8414() {
        assert_eq!(split_origin("https://as.example.com"), ("https://as.example.com", ""));
        assert_eq!(
            split_origin("https://as.example.com/tenant/1"),
            ("https://as.example.com", "/tenant/1")
        );
    }
}
