//! The on-disk cache of compiled components, so a warm start never
//! recompiles. Entries are keyed by the component's SHA-256 *and* the
//! engine's compatibility hash (compiled code is only valid for the engine
//! settings that produced it), stored 0600 in a 0700 directory.
//!
//! An entry is native code that wasmtime maps without further checks, so
//! it is never trusted for its name alone (the digests of bundled
//! components are public, so anyone could name a file right):
//!
//! - a component is looked up only after its original bytes were verified
//!   (signature or pinned digest), and the key is the digest of those bytes;
//! - the entry is opened without following symlinks and without blocking,
//!   and must be a regular file owned by the user and not writable by group
//!   or others;
//! - it carries an HMAC-SHA256 tag, under a per-home secret key
//!   (`cache/mac.key`, 0600), over the component digest, the engine key and
//!   the compiled code: a planted or swapped entry, or one copied from
//!   another home, does not authenticate.
//!
//! An entry that fails any check is never loaded: it is removed and the
//! component is recompiled from its verified bytes.

use anyhow::Result;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use wasmtime::component::Component;
use wasmtime::Engine;

use crate::private_files::{
    create_private_file_once, ensure_private_dir, random_bytes, read_regular_capped,
    write_private_file, ReadRefusal,
};

/// Largest cache entry read back (compiled code is a few times the size of
/// the component; an 18 MB Python guest stays far below this).
const ENTRY_CAP: u64 = 1 << 30;
/// The secret MAC key's file name inside the cache directory.
const KEY_FILE: &str = "mac.key";
/// Length of the MAC key and of the tag that starts every entry.
const TAG_LEN: usize = 32;
/// Domain separation: a tag for another purpose or format never matches.
const DOMAIN: &[u8] = b"verbgate compile cache v1\0";

/// Whether a load used the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CacheStatus {
    /// Loaded precompiled code from the cache.
    Hit,
    /// Compiled now (and stored).
    Compiled,
}

/// A directory of compiled components for one engine configuration.
#[derive(Debug, Clone)]
pub struct CompileCache {
    dir: Option<PathBuf>,
    engine_key: String,
}

impl CompileCache {
    /// A cache in `dir` (created 0700 on first store); `None` disables it.
    pub fn new(engine: &Engine, dir: Option<PathBuf>) -> Self {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut h);
        CompileCache { dir, engine_key: format!("{:016x}", h.finish()) }
    }

    fn path_for(&self, dir: &Path, digest: &str) -> PathBuf {
        dir.join(format!("{digest}-{}.cwasm", self.engine_key))
    }

    /// Make (or check, and replace if it fails) the cache's key now, once:
    /// loads on several threads then all find the same key, instead of
    /// racing to replace a bad one (which costs them their entries).
    pub fn prepare_key(&self) {
        if let Some(dir) = &self.dir {
            if let Err(e) = mac_key(dir) {
                tracing::warn!(dir = %dir.display(), error = %format!("{e:#}"), "compile cache unusable: compiling without it");
            }
        }
    }

    /// Whether compiled code for `digest` is stored as a regular file (a
    /// load would be a hit unless the entry fails its checks).
    pub fn is_cached(&self, digest: &str) -> bool {
        self.dir.as_ref().is_some_and(|d| {
            std::fs::symlink_metadata(self.path_for(d, digest)).is_ok_and(|m| m.is_file())
        })
    }

    /// The component for already-verified `bytes` whose SHA-256 is `digest`.
    pub fn load(
        &self,
        engine: &Engine,
        bytes: &[u8],
        digest: &str,
    ) -> Result<(Component, CacheStatus)> {
        let Some(dir) = &self.dir else {
            return Ok((Component::new(engine, bytes)?, CacheStatus::Compiled));
        };
        let path = self.path_for(dir, digest);
        let key = match mac_key(dir) {
            Ok(k) => Some(k),
            Err(e) => {
                tracing::warn!(dir = %dir.display(), error = %format!("{e:#}"), "compile cache unusable: compiling without it");
                None
            }
        };
        if let Some(key) = &key {
            if let Some(component) = self.load_entry(engine, key, &path, digest) {
                return Ok((component, CacheStatus::Hit));
            }
        }
        let compiled = engine.precompile_component(bytes)?;
        if let Some(key) = &key {
            let mut entry = Vec::with_capacity(TAG_LEN + compiled.len());
            entry.extend_from_slice(&self.tag(key, digest, &compiled));
            entry.extend_from_slice(&compiled);
            if let Err(e) = write_private_file(&path, &entry) {
                tracing::warn!(path = %path.display(), error = %format!("{e:#}"), "cannot store compiled component");
            }
        }
        // SAFETY: these bytes were produced by `precompile_component` on this
        // very engine a moment ago.
        let component = unsafe { Component::deserialize(engine, &compiled)? };
        Ok((component, CacheStatus::Compiled))
    }

    /// The cached component at `path`, if the entry passes every check; a
    /// failing entry is removed (and reported) so it is recompiled.
    fn load_entry(
        &self,
        engine: &Engine,
        key: &[u8; TAG_LEN],
        path: &Path,
        digest: &str,
    ) -> Option<Component> {
        let why = match read_regular_capped(path, ENTRY_CAP) {
            Err(ReadRefusal::Missing) => return None,
            Err(ReadRefusal::Refused(why)) => why,
            Ok(entry) if entry.len() > TAG_LEN && self.authenticates(key, digest, &entry) => {
                // SAFETY: `deserialize` trusts its input to be compiled code
                // from a compatible engine. This entry is a regular file
                // owned by us, not writable by others, and its tag proves
                // that this home stored exactly these bytes for exactly this
                // verified component and engine; wasmtime still checks the
                // header and engine compatibility.
                match unsafe { Component::deserialize(engine, &entry[TAG_LEN..]) } {
                    Ok(c) => return Some(c),
                    Err(e) => format!("cannot be loaded ({e})"),
                }
            }
            Ok(_) => {
                "does not authenticate (planted, swapped, copied from another home, or corrupt)"
                    .to_string()
            }
        };
        tracing::warn!(path = %path.display(), "refusing compile cache entry: it {why}; recompiling from the verified component");
        if let Err(e) = std::fs::remove_file(path) {
            tracing::warn!(path = %path.display(), error = %e, "cannot remove the refused cache entry");
        }
        None
    }

    /// HMAC-SHA256 over the domain, the component digest, the engine key and
    /// the compiled code.
    fn tag(&self, key: &[u8; TAG_LEN], digest: &str, code: &[u8]) -> [u8; TAG_LEN] {
        self.mac(key, digest, code).finalize().into_bytes().into()
    }

    /// Whether `entry` starts with the tag of the code that follows it,
    /// compared in constant time (`verify_slice`), so the time taken does
    /// not say how much of a forged tag was right.
    fn authenticates(&self, key: &[u8; TAG_LEN], digest: &str, entry: &[u8]) -> bool {
        let (tag, code) = entry.split_at(TAG_LEN);
        self.mac(key, digest, code).verify_slice(tag).is_ok()
    }

    fn mac(&self, key: &[u8; TAG_LEN], digest: &str, code: &[u8]) -> HmacSha256 {
        hmac_sha256(
            key,
            &[DOMAIN, digest.as_bytes(), b"\0", self.engine_key.as_bytes(), b"\0", code],
        )
    }
}

/// The home's secret cache key, created (0600) on first use. A key file
/// that fails the checks is replaced, which invalidates every entry.
fn mac_key(dir: &Path) -> Result<[u8; TAG_LEN]> {
    ensure_private_dir(dir)?;
    let path = dir.join(KEY_FILE);
    for _ in 0..3 {
        match read_regular_capped(&path, TAG_LEN as u64) {
            Ok(bytes) if bytes.len() == TAG_LEN => {
                return Ok(bytes.try_into().expect("length checked"))
            }
            Ok(_) => {
                tracing::warn!(path = %path.display(), "the cache key has the wrong length; replacing it");
                let _ = std::fs::remove_file(&path);
            }
            Err(ReadRefusal::Missing) => {}
            Err(ReadRefusal::Refused(why)) => {
                tracing::warn!(path = %path.display(), "the cache key {why}; replacing it (every cache entry will be recompiled)");
                let _ = std::fs::remove_file(&path);
            }
        }
        // Another process may create it at the same time: whoever links
        // first wins and both read that one.
        create_private_file_once(&path, &random_bytes(TAG_LEN)?)?;
    }
    anyhow::bail!("cannot set up the cache key {}", path.display())
}

/// HMAC-SHA256 (RFC 2104), from RustCrypto's `hmac`.
type HmacSha256 = Hmac<Sha256>;

/// An HMAC-SHA256 over the concatenation of `parts`, ready to finalize or
/// verify.
fn hmac_sha256(key: &[u8; TAG_LEN], parts: &[&[u8]]) -> HmacSha256 {
    let mut mac =
        <HmacSha256 as KeyInit>::new_from_slice(key).expect("HMAC takes a key of any length");
    for p in parts {
        mac.update(p);
    }
    mac
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_matches_rfc_4231_case_2_shape() {
        // RFC 4231 test case 2 uses a 4-byte key ("Jefe"), zero-padded to
        // the block like any key shorter than it: our 32-byte key with the
        // same zero padding gives the same MAC.
        let mut key = [0u8; TAG_LEN];
        key[..4].copy_from_slice(b"Jefe");
        let expected = "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843";
        let tag =
            hmac_sha256(&key, &[b"what do ya want ", b"for nothing?"]).finalize().into_bytes();
        assert_eq!(hex::encode(tag), expected);
        // Verification takes the right tag and nothing else.
        let mut tag = hex::decode(expected).unwrap();
        assert!(hmac_sha256(&key, &[b"what do ya want for nothing?"]).verify_slice(&tag).is_ok());
        tag[31] ^= 1;
        assert!(hmac_sha256(&key, &[b"what do ya want for nothing?"]).verify_slice(&tag).is_err());
        assert!(hmac_sha256(&key, &[b"what do ya want for nothing?"])
            .verify_slice(&tag[..31])
            .is_err());
    }

    #[test]
    fn the_key_is_private_stable_and_replaced_when_unsafe() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("cache");
        let k1 = mac_key(&cache).unwrap();
        assert_eq!(mac_key(&cache).unwrap(), k1);
        let key_path = cache.join(KEY_FILE);
        assert_eq!(std::fs::metadata(&key_path).unwrap().permissions().mode() & 0o777, 0o600);
        std::fs::set_permissions(&key_path, std::fs::Permissions::from_mode(0o666)).unwrap();
        assert_ne!(mac_key(&cache).unwrap(), k1, "a world-writable key is not used");
    }
}
