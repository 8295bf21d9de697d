//! Key files. Secret keys are PEM (PKCS#8, `BEGIN PRIVATE KEY`), written
//! 0600; public keys are PEM (SPKI, `BEGIN PUBLIC KEY`). Keys made by the
//! standard `wasmsign2 keygen` (raw bytes) and OpenSSH ed25519 keys are read
//! too, so users can bring the keys they already have.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use wasmsign2::{KeyPair, PublicKey, SecretKey};

use crate::private_files::{ensure_private_dir, write_file_atomic, write_private_file};

/// The short, stable id of a public key: `ed25519:` + the first 16 hex
/// digits of the SHA-256 of its raw bytes. Shown wherever a signer is named.
pub fn key_id(pk: &PublicKey) -> String {
    let raw = pk.to_bytes();
    // wasmsign2 prefixes the 32 key bytes with a one-byte algorithm id.
    let key = if raw.len() == 33 { &raw[1..] } else { &raw[..] };
    format!("ed25519:{}", &crate::json::sha256_hex(key)[..16])
}

/// Where `keygen` wrote a key pair.
#[derive(Debug, Clone)]
pub struct KeyPairFiles {
    /// The secret key (0600).
    pub secret: PathBuf,
    /// The public key, to hand to operators for `verbgate trust add`.
    pub public: PathBuf,
    /// The public key's id.
    pub key_id: String,
}

/// Generate a key pair and write it as `<dir>/<name>.sk.pem` (0600) and
/// `<dir>/<name>.pk.pem`. Refuses to overwrite an existing key unless
/// `force`, because losing a signing key strands every component it signed.
pub fn generate(dir: &Path, name: &str, force: bool) -> Result<KeyPairFiles> {
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
        bail!("key name `{name}` must be letters, digits, `-` or `_`");
    }
    ensure_private_dir(dir)?;
    let secret = dir.join(format!("{name}.sk.pem"));
    let public = dir.join(format!("{name}.pk.pem"));
    if !force && (secret.exists() || public.exists()) {
        bail!(
            "a key named `{name}` already exists in {} (use --force to replace it; components it signed will no longer verify against a new key)",
            dir.display()
        );
    }
    let kp = KeyPair::generate();
    write_private_file(&secret, kp.sk.to_pem().as_bytes())?;
    // The public key is meant to be handed out: 0644, written the same
    // exclusive way.
    write_file_atomic(&public, kp.pk.to_pem().as_bytes(), 0o644)?;
    Ok(KeyPairFiles { secret, public, key_id: key_id(&kp.pk) })
}

/// Read a secret key file (PEM, DER, raw or OpenSSH).
pub fn read_secret_key(path: &Path) -> Result<SecretKey> {
    let bytes = std::fs::read(path)
        .with_context(|| format!("cannot read secret key {}", path.display()))?;
    SecretKey::from_any(&bytes)
        .map_err(|e| anyhow::anyhow!("{} is not an ed25519 secret key: {e}", path.display()))
}

/// Read a public key file (PEM, DER, raw or OpenSSH).
pub fn read_public_key(path: &Path) -> Result<PublicKey> {
    let bytes = std::fs::read(path)
        .with_context(|| format!("cannot read public key {}", path.display()))?;
    parse_public_key(&bytes)
        .with_context(|| format!("{} is not an ed25519 public key", path.display()))
}

/// Parse public key bytes in any supported format.
pub fn parse_public_key(bytes: &[u8]) -> Result<PublicKey> {
    PublicKey::from_any(bytes).map_err(|e| anyhow::anyhow!("{e}"))
}

/// The public key matching a secret key.
pub fn public_of(sk: &SecretKey) -> Result<PublicKey> {
    let raw = sk.to_bytes();
    // Raw wasmsign2 secret keys are 1 id byte + 64 bytes (seed ‖ public).
    let pk_bytes = &raw[raw.len() - 32..];
    let mut with_id = vec![0x01];
    with_id.extend_from_slice(pk_bytes);
    PublicKey::from_bytes(&with_id)
        .map_err(|e| anyhow::anyhow!("cannot derive the public key: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_keys_round_trip_and_secret_is_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let files = generate(dir.path(), "author", false).unwrap();
        let mode = std::fs::metadata(&files.secret).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let sk = read_secret_key(&files.secret).unwrap();
        let pk = read_public_key(&files.public).unwrap();
        assert_eq!(key_id(&public_of(&sk).unwrap()), key_id(&pk));
        assert_eq!(files.key_id, key_id(&pk));
        assert!(generate(dir.path(), "author", false).is_err(), "must not overwrite");
        assert!(generate(dir.path(), "../x", false).is_err());
    }
}
