//! Bearer tokens for the HTTP transport: `verbgate token add|list|revoke`.
//!
//! A token is shown once, when it is made, and stored only as the SHA-256
//! of its text, in `$VERBGATE_HOME/tokens.json` (0600, written atomically).
//! A presented token is hashed and compared against every stored digest in
//! constant time, so neither the comparison nor the scan order says how
//! much of a guess was right. The file is re-read on every check, so a
//! revoked token stops working on its very next request (a file of a few
//! tokens is cheaper to read than to watch).
//!
//! The file decides who a server lets in, so it is trusted only as every
//! file in the home is ([`crate::private_files`]): owned by the user
//! running verbgate and not writable by group or others. Otherwise another
//! local user could add a record with their own token's hash and no allow
//! list. The check runs on the open descriptor at every read — the server's
//! per-request read included — and a refusal lets nobody in (fail closed):
//! the server answers every request with the problem and the fix, and the
//! `verbgate token` commands refuse with `insecure_file`.

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

use crate::json::sha256_hex;

pub use crate::private_files::TOKENS_FILE;

/// Largest token file read, bytes (thousands of tokens; a bigger file is
/// not one verbgate wrote).
const TOKENS_FILE_BYTES: u64 = 1 << 20;

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
    /// Whether it sees and acts on every job, not only the ones it started
    /// (`verbgate token add --all-jobs`). Default false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub all_jobs: bool,
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

    /// Refuse the file unless it is the user's and not writable by group
    /// or others (an absent file is fine: no tokens). Follows a symlink,
    /// as the home check does for the config: what matters is who can
    /// write what it leads to.
    pub fn check(&self) -> Result<()> {
        crate::private_files::check_token_file(&self.path)
    }

    /// The file's bytes, `None` when it does not exist: opened without
    /// blocking (a FIFO cannot hang a request), then checked on the open
    /// descriptor (regular, the user's, not writable by others, at most
    /// [`TOKENS_FILE_BYTES`]) so the file checked is the file read.
    fn read(&self) -> Result<Option<Vec<u8>>> {
        use std::io::Read;
        use std::os::unix::fs::OpenOptionsExt;
        let file = match std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOCTTY)
            .open(&self.path)
        {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                return Err(e).with_context(|| format!("cannot read {}", self.path.display()))
            }
        };
        let meta =
            file.metadata().with_context(|| format!("cannot check {}", self.path.display()))?;
        if !meta.is_file() {
            bail!("{} is not a regular file; remove it and make tokens again with `verbgate token add`", self.path.display());
        }
        crate::private_files::check_token_meta(&self.path, &meta)?;
        if meta.len() > TOKENS_FILE_BYTES {
            bail!("{} is {} bytes, more than the {TOKENS_FILE_BYTES}-byte cap for a token file; verbgate did not write it", self.path.display(), meta.len());
        }
        let mut bytes = Vec::with_capacity(meta.len() as usize);
        file.take(TOKENS_FILE_BYTES + 1)
            .read_to_end(&mut bytes)
            .with_context(|| format!("cannot read {}", self.path.display()))?;
        if bytes.len() as u64 > TOKENS_FILE_BYTES {
            bail!(
                "{} grew past the {TOKENS_FILE_BYTES}-byte cap for a token file while being read",
                self.path.display()
            );
        }
        Ok(Some(bytes))
    }

    /// Every stored token (an absent file is no tokens). Refused, with
    /// [`crate::private_files::InsecureFile`], when the file is not the
    /// user's or others could write it.
    pub fn list(&self) -> Result<Vec<TokenRecord>> {
        let Some(bytes) = self.read()? else { return Ok(vec![]) };
        let file: TokenFile = serde_json::from_slice(&bytes)
            .with_context(|| format!("{} is not a valid token file", self.path.display()))?;
        Ok(file.tokens)
    }

    /// Make a token named `name`; returns its text (the only time it is
    /// ever available).
    pub fn add(&self, name: &str, allow: Option<Vec<String>>) -> Result<String> {
        self.add_with(name, allow, false)
    }

    /// [`TokenStore::add`], choosing whether the token sees every job.
    pub fn add_with(
        &self,
        name: &str,
        allow: Option<Vec<String>>,
        all_jobs: bool,
    ) -> Result<String> {
        if name.is_empty()
            || name.len() > 64
            || !name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        {
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
        let text = generate()?;
        tokens.push(TokenRecord {
            name: name.to_string(),
            sha256: sha256_hex(text.as_bytes()),
            allow,
            created: rfc3339_now(),
            all_jobs,
        });
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

    /// The stored record of a presented token, if any. Hashes the text
    /// once and compares it with *every* stored digest without an early
    /// exit. The record's `sha256` is the token's identity: a token made
    /// later under the same name has another.
    pub fn find(&self, presented: &str) -> Result<Option<TokenRecord>> {
        let digest = sha256_hex(presented.as_bytes());
        let mut found = None;
        for t in self.list()? {
            if constant_time_eq(digest.as_bytes(), t.sha256.as_bytes()) && found.is_none() {
                found = Some(t);
            }
        }
        Ok(found)
    }

    fn save(&self, tokens: Vec<TokenRecord>) -> Result<()> {
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
        let mut text = serde_json::to_string_pretty(&TokenFile { tokens })?;
        text.push('\n');
        crate::config::write_private_file(&self.path, text.as_bytes())
    }
}

/// A new token's text: the prefix and 32 bytes from the kernel's
/// generator, in hex. Stored nowhere; keep only its [`sha256_hex`].
pub fn generate() -> Result<String> {
    Ok(format!("{PREFIX}{}", hex::encode(crate::private_files::random_bytes(32)?)))
}

/// Equality that takes the same time wherever the inputs differ
/// (RustCrypto's `ctutils`). Both sides are hex SHA-256 digests (64 bytes),
/// so the length test leaks nothing about a secret.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    use ctutils::CtEq;
    a.ct_eq(b).to_bool()
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
        let caller = store.find(&text).unwrap().expect("the token authenticates");
        assert_eq!((caller.name.as_str(), caller.allow), ("ci", Some(vec!["git.*".to_string()])));
        assert!(store.find("vgt_wrong").unwrap().is_none());
        assert!(store.add("ci", None).is_err(), "names are unique");
        assert!(store.revoke("ci").unwrap());
        assert!(store.find(&text).unwrap().is_none());
        assert!(!store.revoke("ci").unwrap());
    }

    #[test]
    fn a_file_others_could_write_authenticates_nobody() {
        use std::os::unix::fs::PermissionsExt;
        let home = tempfile::tempdir().unwrap();
        let store = TokenStore::at_home(home.path());
        let text = store.add("ci", None).unwrap();
        for mode in [0o666, 0o620, 0o602] {
            std::fs::set_permissions(store.path(), std::fs::Permissions::from_mode(mode)).unwrap();
            for err in [
                store.find(&text).unwrap_err(),
                store.list().unwrap_err(),
                store.add("x", None).unwrap_err(),
                store.check().unwrap_err(),
            ] {
                let insecure = err
                    .downcast_ref::<crate::private_files::InsecureFile>()
                    .unwrap_or_else(|| panic!("{mode:o}: {err:#}"));
                assert!(insecure.problem.contains(&format!("mode {mode:o}")), "{insecure}");
                assert!(
                    insecure.fix.contains("chmod 600")
                        && insecure.fix.contains("verbgate token list"),
                    "{insecure}"
                );
            }
        }
        // Readable by others is not a danger (only hashes are stored).
        std::fs::set_permissions(store.path(), std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(store.find(&text).unwrap().is_some());
    }

    #[test]
    fn a_fifo_or_a_huge_token_file_is_refused_without_hanging() {
        let home = tempfile::tempdir().unwrap();
        let store = TokenStore::at_home(home.path());
        let c = std::ffi::CString::new(store.path().to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(store.list().unwrap_err().to_string().contains("not a regular file"));
        std::fs::remove_file(store.path()).unwrap();
        crate::config::write_private_file(
            store.path(),
            &vec![b' '; (TOKENS_FILE_BYTES + 1) as usize],
        )
        .unwrap();
        assert!(store.list().unwrap_err().to_string().contains("cap"));
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
