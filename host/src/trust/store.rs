//! The operator's trust store: a directory (`$VERBGATE_HOME/trust`) of
//! public key files, one key per file, named `<key-id-hex>.pub.pem`.
//! Managing it is a terminal-only operation (`verbgate trust …`), never a
//! verb: an agent must not be able to grant itself trust.

use anyhow::{bail, Context, Result};
use serde::Serialize;
use std::io::Read;
use std::path::{Path, PathBuf};
use wasmsign2::{PublicKey, PublicKeySet};

use super::keys::{key_id, parse_public_key};
use crate::private_files::{
    ensure_private_dir, read_regular_capped, write_private_file, ReadRefusal,
};

/// Largest key file read (a PEM public key is about 110 bytes; OpenSSH and
/// raw forms are smaller).
pub const KEY_FILE_CAP: u64 = 4096;
/// Largest name label read or written.
pub const NAME_CAP: u64 = 256;

/// One trusted key.
#[derive(Debug, Clone, Serialize)]
pub struct TrustedKey {
    /// `ed25519:<hex16>`.
    pub key_id: String,
    /// The operator's label for it (from `trust add --name`), if any.
    pub name: Option<String>,
    /// The file holding it.
    pub path: PathBuf,
    #[serde(skip)]
    key: PublicKey,
}

/// A file in the trust directory that is not a usable key (reported by
/// `trust list`, never silently trusted or dropped).
#[derive(Debug, Clone, Serialize)]
pub struct BadKeyFile {
    /// The file.
    pub path: PathBuf,
    /// Why it was skipped.
    pub reason: String,
}

/// The loaded trust store.
#[derive(Debug, Clone, Default)]
pub struct TrustStore {
    keys: Vec<TrustedKey>,
    bad: Vec<BadKeyFile>,
}

impl TrustStore {
    /// Load every key file in `dir` (a missing directory is an empty store).
    ///
    /// Never blocks and never reads much: each key file (and its name
    /// label) is opened without following symlinks and without blocking,
    /// and must be a regular file, ours, not writable by others and under
    /// its size cap. Anything else is skipped with the reason (see
    /// [`TrustStore::bad_files`]), never trusted and never fatal.
    pub fn load(dir: &Path) -> Result<TrustStore> {
        let mut store = TrustStore::default();
        let entries = match std::fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(store),
            Err(e) => {
                return Err(e).with_context(|| format!("cannot read trust store {}", dir.display()))
            }
        };
        let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        paths.sort();
        for path in paths {
            let Some(file) = path.file_name().and_then(|n| n.to_str()) else { continue };
            if !file.ends_with(".pub.pem") {
                continue;
            }
            let key = read_regular_capped(&path, KEY_FILE_CAP)
                .map_err(|why| format!("skipped: the key file {why}"))
                .and_then(|b| {
                    parse_public_key(&b)
                        .map_err(|e| format!("skipped: not an ed25519 public key ({e:#})"))
                });
            let key = match key {
                Ok(k) => k,
                Err(reason) => {
                    store.bad.push(BadKeyFile { path, reason });
                    continue;
                }
            };
            let label = path.with_extension("name");
            let name = match read_regular_capped(&label, NAME_CAP) {
                Ok(b) => Some(String::from_utf8_lossy(&b).trim().to_string())
                    .filter(|s| !s.is_empty() && !s.chars().any(char::is_control)),
                Err(ReadRefusal::Missing) => None,
                Err(why) => {
                    // The key is still trusted (the label is only a
                    // label); the bad label is reported.
                    store.bad.push(BadKeyFile {
                        path: label,
                        reason: format!("skipped: the key's name label {why}"),
                    });
                    None
                }
            };
            store.keys.push(TrustedKey { key_id: key_id(&key), name, path, key });
        }
        Ok(store)
    }

    /// The trusted keys.
    pub fn keys(&self) -> &[TrustedKey] {
        &self.keys
    }

    /// Files that were skipped (not a regular file, a symlink, too big, not
    /// ours, writable by others, not a key), each with the reason.
    pub fn bad_files(&self) -> &[BadKeyFile] {
        &self.bad
    }

    /// The keys as a `wasmsign2` set, for verification.
    pub fn key_set(&self) -> PublicKeySet {
        PublicKeySet::new(self.keys.iter().map(|k| k.key.clone()).collect())
    }

    /// The id of a key in the store, if it is one.
    pub fn find(&self, pk: &PublicKey) -> Option<&TrustedKey> {
        let id = key_id(pk);
        self.keys.iter().find(|k| k.key_id == id)
    }

    /// Add a public key file to the trust directory. Returns the new entry.
    pub fn add(dir: &Path, key_file: &Path, name: Option<&str>) -> Result<TrustedKey> {
        let mut bytes = Vec::new();
        std::fs::File::open(key_file)
            .and_then(|f| f.take(KEY_FILE_CAP + 1).read_to_end(&mut bytes))
            .with_context(|| format!("cannot read {}", key_file.display()))?;
        if bytes.len() as u64 > KEY_FILE_CAP {
            bail!("{} is larger than a key file can be ({KEY_FILE_CAP} bytes)", key_file.display());
        }
        let key = parse_public_key(&bytes)
            .with_context(|| format!("{} is not an ed25519 public key", key_file.display()))?;
        if let Some(n) = name {
            if n.trim().is_empty() || n.chars().any(char::is_control) || n.len() as u64 > NAME_CAP {
                bail!("a key name must be one non-empty line of at most {NAME_CAP} bytes, without control characters");
            }
        }
        ensure_private_dir(dir)?;
        let id = key_id(&key);
        let stem = id.trim_start_matches("ed25519:");
        let path = dir.join(format!("{stem}.pub.pem"));
        write_private_file(&path, key.to_pem().as_bytes())?;
        if let Some(n) = name {
            write_private_file(&path.with_extension("name"), n.as_bytes())?;
        }
        Ok(TrustedKey { key_id: id, name: name.map(str::to_string), path, key })
    }

    /// Remove the key whose id (`ed25519:<hex>`, or a unique prefix of the
    /// hex) or name matches. Returns the removed entry.
    pub fn remove(dir: &Path, which: &str) -> Result<TrustedKey> {
        let store = TrustStore::load(dir)?;
        let needle = which.trim_start_matches("ed25519:");
        let hits: Vec<&TrustedKey> = store
            .keys
            .iter()
            .filter(|k| {
                k.key_id.trim_start_matches("ed25519:").starts_with(needle)
                    || k.name.as_deref() == Some(which)
            })
            .collect();
        match hits.as_slice() {
            [] => bail!("no trusted key matches `{which}` (see `verbgate trust list`)"),
            [one] => {
                std::fs::remove_file(&one.path)
                    .with_context(|| format!("cannot remove {}", one.path.display()))?;
                let _ = std::fs::remove_file(one.path.with_extension("name"));
                Ok((*one).clone())
            }
            many => {
                bail!(
                    "`{which}` matches {} keys ({}); give more of the id",
                    many.len(),
                    many.iter().map(|k| k.key_id.as_str()).collect::<Vec<_>>().join(", ")
                )
            }
        }
    }
}
