//! Bearer tokens for the HTTP transport: `verbgate token add|list|revoke`.
//!
//! A token is shown once, when it is made, and stored only as the SHA-256
//! of its text, in `$VERBGATE_HOME/tokens.json` (0600, written atomically).
//! A presented token is hashed and compared against every stored digest in
//! constant time, so neither the comparison nor the scan order says how
//! much of a guess was right. The file is re-read on every check, so a
//! revoked token stops working on its very next request (a file of a few
//! tokens is cheaper to read than to watch).

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

use crate::dispatch::Caller;
use crate::json::sha256_hex;

/// The token file's name under verbgate's home.
pub const TOKENS_FILE: &str = "tokens.json";

/// What every token's text starts with (so a leaked one is recognisable
/// by secret scanners and people).
const PREFIX: &str = "vgt_";

/// One stored token: never the token itself.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct TokenRecord {
    /// The caller name requests with this token run as.
    pub name: String,
    /// Hex SHA-256 of the token text.
    pub sha256: String,
    /// Verb patterns the token reaches (`None`: all the server serves).
    pub allow: Option<Vec<String>>,
    /// When it was made (UTC, RFC 3339).
    pub created: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct TokenFile {
    tokens: Vec<TokenRecord>,
}

/// The token store: a path, read afresh on each use.
#[derive(Debug, Clone)]
pub struct TokenStore {
    path: PathBuf,
}

impl TokenStore {
    /// The store under verbgate's home.
    pub fn at_home(home: &Path) -> TokenStore {
        TokenStore { path: home.join(TOKENS_FILE) }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every stored token (an absent file is no tokens).
    pub fn list(&self) -> Result<Vec<TokenRecord>> {
        let bytes = match std::fs::read(&self.path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(vec![]),
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", self.path.display())),
        };
        let file: TokenFile = serde_json::from_slice(&bytes).with_context(|| format!("{} is not a valid token file", self.path.display()))?;
        Ok(file.tokens)
    }

    /// Make a token named `name`; returns its text (the only time it is
    /// ever available).
    pub fn add(&self, name: &str, allow: Option<Vec<String>>) -> Result<String> {
        if name.is_empty() || name.len() > 64 || !name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')) {
            bail!("`{name}` is not a valid token name (1-64 letters, digits, `-`, `_`, `.`)");
        }
        if let Some(patterns) = &allow {
            for p in patterns {
                let exact_or_ns = p.strip_suffix(".*").unwrap_or(p);
                if p != "*"
                    && crate::registry::fence::name_problem(exact_or_ns).is_some()
                    && crate::registry::fence::name_problem(&format!("{exact_or_ns}.x")).is_some()
                {
                    bail!("`{p}` is not an allow pattern (use `*`, `namespace.*` or a verb name like `git.status`)");
                }
            }
        }
        let mut tokens = self.list()?;
        if tokens.iter().any(|t| t.name == name) {
            bail!("a token named `{name}` exists; revoke it first (`verbgate token revoke {name}`) or choose another name");
        }
        let text = format!("{PREFIX}{}", hex::encode(random_bytes()?));
        tokens.push(TokenRecord { name: name.to_string(), sha256: sha256_hex(text.as_bytes()), allow, created: rfc3339_now() });
        self.save(tokens)?;
        Ok(text)
    }

    /// Remove the token named `name`; false when there is none.
    pub fn revoke(&self, name: &str) -> Result<bool> {
        let mut tokens = self.list()?;
        let before = tokens.len();
        tokens.retain(|t| t.name != name);
        if tokens.len() == before {
            return Ok(false);
        }
        self.save(tokens)?;
        Ok(true)
    }

    /// The caller a presented token authenticates as, if any. Hashes the
    /// text once and compares it with *every* stored digest without an
    /// early exit.
    pub fn authenticate(&self, presented: &str) -> Result<Option<Caller>> {
        let digest = sha256_hex(presented.as_bytes());
        let mut found = None;
        for t in self.list()? {
            if constant_time_eq(digest.as_bytes(), t.sha256.as_bytes()) && found.is_none() {
                found = Some(Caller::new(&t.name, t.allow, crate::dispatch::caller::Transport::Http));
            }
        }
        Ok(found)
    }

    fn save(&self, tokens: Vec<TokenRecord>) -> Result<()> {
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        }
        let mut text = serde_json::to_string_pretty(&TokenFile { tokens })?;
        text.push('\n');
        crate::config::write_private_file(&self.path, text.as_bytes())
    }
}

/// Equality that takes the same time wherever the inputs differ. Both
/// sides are hex SHA-256 digests (64 bytes), so the length test leaks
/// nothing about a secret.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut diff = 0u8;
    for (x, y) in a.iter().zip(b) {
        diff |= x ^ y;
    }
    // Keep the optimiser from turning the fold into an early exit.
    std::hint::black_box(diff) == 0
}

/// 32 bytes from the kernel's generator.
fn random_bytes() -> Result<[u8; 32]> {
    use std::io::Read;
    let mut buf = [0u8; 32];
    std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut buf)).context("cannot read /dev/urandom to make a token")?;
    Ok(buf)
}

/// The current time as `YYYY-MM-DDTHH:MM:SSZ`.
fn rfc3339_now() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_stored_only_as_its_hash_and_revocation_is_immediate() {
        let home = tempfile::tempdir().unwrap();
        let store = TokenStore::at_home(home.path());
        let text = store.add("ci", Some(vec!["git.*".into()])).unwrap();
        let file = std::fs::read_to_string(store.path()).unwrap();
        assert!(!file.contains(&text), "the token text must never be stored");
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(store.path()).unwrap().permissions().mode() & 0o777, 0o600);
        let caller = store.authenticate(&text).unwrap().expect("the token authenticates");
        assert_eq!((caller.name.as_str(), caller.allow), ("ci", Some(vec!["git.*".to_string()])));
        assert!(store.authenticate("vgt_wrong").unwrap().is_none());
        assert!(store.add("ci", None).is_err(), "names are unique");
        assert!(store.revoke("ci").unwrap());
        assert!(store.authenticate(&text).unwrap().is_none());
        assert!(!store.revoke("ci").unwrap());
    }

    #[test]
    fn names_and_patterns_are_checked() {
        let home = tempfile::tempdir().unwrap();
        let store = TokenStore::at_home(home.path());
        for bad in ["", "a b", "x/y", &"n".repeat(65)] {
            assert!(store.add(bad, None).is_err(), "{bad:?}");
        }
        assert!(store.add("t", Some(vec!["Git.*".into()])).is_err());
        assert!(store.add("t", Some(vec!["git.*".into(), "job.wait".into(), "*".into()])).is_ok());
    }

    #[test]
    fn constant_time_eq_is_equality() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
    }

    #[test]
    fn dates_are_rfc3339() {
        let now = rfc3339_now();
        assert_eq!(now.len(), 20, "{now}");
        assert!(now.starts_with("20") && now.ends_with('Z'), "{now}");
    }
}
