//! Signing and verifying components.
//!
//! The signature is embedded in the tool-conventions format: a `signature`
//! custom section placed first, holding ed25519 signatures over the SHA-256
//! of every byte after it. `wasmsign2` implements the format; this module adds
//! what it leaves to the caller:
//!
//! - the 8-byte preamble is outside the signed hash, so we require it to be
//!   exactly the component preamble (otherwise flipping a preamble byte would
//!   go unnoticed by the signature);
//! - a refusal says *why*: unsigned, changed after signing, or signed by a
//!   key the operator does not trust.
//!
//! Callers must verify the very bytes they then compile — never re-read the
//! file in between.

use std::io::Cursor;
use thiserror::Error;
use wasmsign2::{
    CustomSection, Module, PublicKey, PublicKeySet, SecretKey, Section, SignatureData,
    SignatureForHashes, SignedHashes, WSError,
};

use super::keys::key_id;
use super::store::TrustStore;
use crate::error::LoadCode;

/// The 8-byte preamble of a component (magic + layer 1, version 0x0d).
pub const COMPONENT_PREAMBLE: [u8; 8] = [0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00];

/// Who signed a verified component.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signer {
    /// `ed25519:<hex16>`.
    pub key_id: String,
    /// The operator's label for the key, if any.
    pub name: Option<String>,
}

/// Why a component was refused.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum TrustError {
    /// The bytes are not a WebAssembly component at all.
    #[error("not a WebAssembly component (bad preamble); was it changed after signing?")]
    NotAComponent,
    /// No signature section (never signed, or the signature was stripped).
    #[error("unsigned: no signature section (sign it with `verbgate sign`, or the signature was stripped)")]
    Unsigned,
    /// The signature section cannot be parsed.
    #[error("the signature section is malformed: {0}")]
    Malformed(String),
    /// The signed hash does not match the bytes: something changed after
    /// signing (a byte flipped, a section added or removed).
    #[error("tampered: the component's content changed after it was signed")]
    Tampered,
    /// The content matches what was signed, but no signature is from a key
    /// in the trust store.
    #[error("signed by a key that is not trusted (signature key ids: {0}); an operator can trust it with `verbgate trust add`")]
    UntrustedKey(String),
    /// Besides a trusted signature, the component carries a signature no
    /// trusted key verifies, or a signature whose key id names another key:
    /// bytes of the signature section changed after signing (or an
    /// untrusted party co-signed).
    #[error("tampered: the signature section carries a signature or key id that does not match a trusted key ({0})")]
    ForeignSignature(String),
    /// The signature section is not byte for byte what signing writes for
    /// the signatures it holds (an entry with an unknown algorithm, bytes
    /// after the last entry, a non-minimal number encoding, a second
    /// signature section): bytes changed after signing.
    #[error("tampered: the signature section is not exactly what signing produces ({0})")]
    NonCanonical(String),
    /// The trust store is empty, so nothing can verify.
    #[error("no trusted keys: the trust store is empty (add one with `verbgate trust add <key.pub.pem>`)")]
    NoTrustedKeys,
}

impl TrustError {
    /// A stable short name for the failure (`unsigned`, `tampered`, …).
    pub fn kind(&self) -> LoadCode {
        match self {
            TrustError::NotAComponent => LoadCode::NotAComponent,
            TrustError::Unsigned => LoadCode::Unsigned,
            TrustError::Malformed(_) => LoadCode::MalformedSignature,
            TrustError::Tampered => LoadCode::Tampered,
            TrustError::UntrustedKey(_) => LoadCode::UntrustedKey,
            TrustError::ForeignSignature(_) => LoadCode::Tampered,
            TrustError::NonCanonical(_) => LoadCode::Tampered,
            TrustError::NoTrustedKeys => LoadCode::NoTrustedKeys,
        }
    }
}

/// Sign component bytes with a secret key (replacing any signature).
pub fn sign_component(bytes: &[u8], sk: &SecretKey, pk: &PublicKey) -> anyhow::Result<Vec<u8>> {
    if bytes.len() < 8 || bytes[..8] != COMPONENT_PREAMBLE {
        anyhow::bail!("not a WebAssembly component (a core module or another file?)");
    }
    let module = Module::deserialize(&mut Cursor::new(bytes))
        .map_err(|e| anyhow::anyhow!("cannot parse the component: {e}"))?;
    let key_id_bytes = key_id(pk).into_bytes();
    let signed =
        sk.sign(module, Some(&key_id_bytes)).map_err(|e| anyhow::anyhow!("signing failed: {e}"))?;
    let mut out = Vec::with_capacity(bytes.len() + 256);
    signed
        .serialize(&mut out)
        .map_err(|e| anyhow::anyhow!("cannot write the signed component: {e}"))?;
    Ok(out)
}

/// Verify component bytes against a trust store.
pub fn verify_component(bytes: &[u8], store: &TrustStore) -> Result<Signer, TrustError> {
    verify_with(bytes, &store.key_set(), |pk| {
        let id = key_id(pk);
        let name = store.find(pk).and_then(|k| k.name.clone());
        Signer { key_id: id, name }
    })
}

/// Verify component bytes against one public key (`verbgate verify --key`).
pub fn verify_with_key(bytes: &[u8], pk: &PublicKey) -> Result<Signer, TrustError> {
    let set = PublicKeySet::new([pk.clone()].into_iter().collect());
    verify_with(bytes, &set, |pk| Signer { key_id: key_id(pk), name: None })
}

fn verify_with(
    bytes: &[u8],
    keys: &PublicKeySet,
    signer: impl Fn(&PublicKey) -> Signer,
) -> Result<Signer, TrustError> {
    if bytes.len() < 8 || bytes[..8] != COMPONENT_PREAMBLE {
        return Err(TrustError::NotAComponent);
    }
    let header = read_signature_header(bytes)?;
    check_canonical(bytes, &header)?;
    if keys.is_empty() {
        return Err(TrustError::NoTrustedKeys);
    }
    match keys.verify(&mut Cursor::new(bytes), None) {
        Ok(valid) => {
            check_every_signature(bytes, &header, keys)?;
            // Several trusted keys may have signed; report a stable one.
            let mut ids: Vec<&PublicKey> = valid.into_iter().collect();
            ids.sort_by_key(|pk| key_id(pk));
            ids.first().map(|pk| signer(pk)).ok_or(TrustError::Tampered)
        }
        Err(WSError::NoSignatures) => Err(TrustError::Unsigned),
        Err(WSError::VerificationFailed) => Err(explain_failure(bytes, &header)),
        Err(e) => Err(TrustError::Malformed(e.to_string())),
    }
}

/// The parsed signature header and where the signed content starts.
struct Header {
    signed_hashes: Vec<Vec<u8>>,
    key_ids: Vec<String>,
    content_start: usize,
    data: SignatureData,
}

fn read_signature_header(bytes: &[u8]) -> Result<Header, TrustError> {
    let mut cursor = Cursor::new(bytes);
    let stream =
        Module::init_from_reader(&mut cursor).map_err(|e| TrustError::Malformed(e.to_string()))?;
    let mut sections = Module::iterate(stream).map_err(|e| TrustError::Malformed(e.to_string()))?;
    let first = match sections.next() {
        None => return Err(TrustError::Unsigned),
        Some(Err(e)) => return Err(TrustError::Malformed(e.to_string())),
        Some(Ok(s)) => s,
    };
    let custom = match first {
        Section::Custom(c) if c.is_signature_header() => c,
        _ => return Err(TrustError::Unsigned),
    };
    let content_start = cursor.position() as usize;
    let data = custom.signature_data().map_err(|e| TrustError::Malformed(e.to_string()))?;
    let mut signed_hashes = Vec::new();
    let mut key_ids = Vec::new();
    for set in data.signed_hashes_set.clone() {
        signed_hashes.extend(set.hashes);
        for sig in set.signatures {
            if let Some(id) = sig.key_id {
                key_ids.push(String::from_utf8_lossy(&id).into_owned());
            }
        }
    }
    Ok(Header { signed_hashes, key_ids, content_start, data })
}

/// The signature section must be exactly what signing writes for the
/// signatures it holds, and the only one. `wasmsign2`'s parser skips
/// entries with an unknown algorithm, ignores bytes after the last entry
/// and accepts non-minimal LEB128 numbers, and the section itself is
/// outside the signed hash — so without this check those bytes could
/// change after signing and the component would still load. Re-serializing
/// what was parsed and comparing bytes closes every such gap at once.
fn check_canonical(bytes: &[u8], header: &Header) -> Result<(), TrustError> {
    let payload = header.data.serialize().map_err(|e| TrustError::Malformed(e.to_string()))?;
    let mut expected = Vec::with_capacity(payload.len() + 16);
    Section::Custom(CustomSection::new("signature".to_string(), payload))
        .serialize(&mut expected)
        .map_err(|e| TrustError::Malformed(e.to_string()))?;
    if bytes.get(COMPONENT_PREAMBLE.len()..header.content_start) != Some(&expected[..]) {
        return Err(TrustError::NonCanonical("it holds an entry with an unknown algorithm, bytes after its last entry, or a non-minimal encoding".into()));
    }
    if let Some(at) = second_signature_section(bytes, header.content_start) {
        return Err(TrustError::NonCanonical(format!("a second `signature` section at byte {at}")));
    }
    Ok(())
}

/// The offset of a top-level custom section named `signature` after the
/// first section, if any. A walk over section headers only (no copies);
/// a malformed tail stops the walk (the compiler refuses it later).
fn second_signature_section(bytes: &[u8], mut pos: usize) -> Option<usize> {
    fn leb(bytes: &[u8], pos: &mut usize) -> Option<usize> {
        let mut value = 0usize;
        for shift in (0..35).step_by(7) {
            let b = *bytes.get(*pos)?;
            *pos += 1;
            value |= ((b & 0x7f) as usize) << shift;
            if b & 0x80 == 0 {
                return Some(value);
            }
        }
        None
    }
    while pos < bytes.len() {
        let start = pos;
        let id = bytes[pos];
        pos += 1;
        let size = leb(bytes, &mut pos)?;
        let end = pos.checked_add(size)?;
        if id == 0 {
            let mut p = pos;
            let name_len = leb(bytes, &mut p)?;
            if bytes.get(p..p.checked_add(name_len)?) == Some(b"signature".as_slice()) {
                return Some(start);
            }
        }
        pos = end;
    }
    None
}

/// `wasmsign2` accepts a component when *some* signature verifies, and treats
/// key ids as unauthenticated hints — so a changed key id, or a signature
/// added beside a valid one, would go unnoticed. We require every signature
/// to verify on its own against a trusted key, and its key id (if any) to
/// name that key: then no byte of the signature section can change either.
fn check_every_signature(
    bytes: &[u8],
    header: &Header,
    keys: &PublicKeySet,
) -> Result<(), TrustError> {
    let content = &bytes[header.content_start..];
    for set in &header.data.signed_hashes_set {
        for sig in &set.signatures {
            let alone = SignatureData {
                specification_version: header.data.specification_version,
                content_type: header.data.content_type,
                hash_function: header.data.hash_function,
                signed_hashes_set: vec![SignedHashes {
                    hashes: set.hashes.clone(),
                    signatures: vec![SignatureForHashes {
                        key_id: None,
                        alg_id: sig.alg_id,
                        signature: sig.signature.clone(),
                    }],
                }],
            };
            let payload = alone.serialize().map_err(|e| TrustError::Malformed(e.to_string()))?;
            let mut one = COMPONENT_PREAMBLE.to_vec();
            Section::Custom(CustomSection::new("signature".to_string(), payload))
                .serialize(&mut one)
                .map_err(|e| TrustError::Malformed(e.to_string()))?;
            one.extend_from_slice(content);
            let matched =
                keys.items().iter().find(|pk| pk.verify(&mut Cursor::new(&one), None).is_ok());
            let Some(pk) = matched else {
                return Err(TrustError::ForeignSignature(
                    "a signature no trusted key verifies".into(),
                ));
            };
            if let Some(id) = &sig.key_id {
                let ours = key_id(pk).into_bytes();
                let theirs =
                    pk.clone().attach_default_key_id().key_id().cloned().unwrap_or_default();
                if *id != ours && *id != theirs {
                    return Err(TrustError::ForeignSignature(format!(
                        "key id {:?} does not name the key that signed",
                        String::from_utf8_lossy(id)
                    )));
                }
            }
        }
    }
    Ok(())
}

/// Tell "changed after signing" from "signed by someone we don't trust":
/// if the content's hash is among the signed hashes, the bytes are intact
/// and only the key is wrong.
fn explain_failure(bytes: &[u8], header: &Header) -> TrustError {
    use sha2::{Digest, Sha256};
    let content = bytes.get(header.content_start..).unwrap_or_default();
    let hash = Sha256::digest(content).to_vec();
    if header.signed_hashes.contains(&hash) {
        let ids = if header.key_ids.is_empty() {
            "none recorded".to_string()
        } else {
            header.key_ids.join(", ")
        };
        TrustError::UntrustedKey(ids)
    } else {
        TrustError::Tampered
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trust::TrustStore;

    fn component() -> &'static [u8] {
        crate::registry::bundled::BUNDLED[0].bytes
    }

    /// The standard `wasmsign2` CLI writes raw 33-byte key files and signs
    /// with the same library calls, without a key id; such a component
    /// must verify once its raw public key is trusted.
    #[test]
    fn components_signed_the_wasmsign2_cli_way_verify() {
        let dir = tempfile::tempdir().unwrap();
        let kp = wasmsign2::KeyPair::generate();
        let pk_file = dir.path().join("pk.key");
        kp.pk.to_file(&pk_file).unwrap();
        let trust_dir = dir.path().join("trust");
        TrustStore::add(&trust_dir, &pk_file, None).unwrap();
        let store = TrustStore::load(&trust_dir).unwrap();
        let module = Module::deserialize(&mut Cursor::new(component())).unwrap();
        let mut signed = Vec::new();
        kp.sk.sign(module, None).unwrap().serialize(&mut signed).unwrap();
        let signer = verify_component(&signed, &store).unwrap();
        assert_eq!(signer.key_id, key_id(&kp.pk));
        // And ours verifies with the library's own check too.
        let ours = sign_component(component(), &kp.sk, &kp.pk).unwrap();
        kp.pk.verify(&mut Cursor::new(&ours), None).unwrap();
    }

    #[test]
    fn key_ids_the_wasmsign2_way_are_accepted_and_forged_ones_refused() {
        let dir = tempfile::tempdir().unwrap();
        let kp = wasmsign2::KeyPair::generate();
        let pk_file = dir.path().join("pk.key");
        kp.pk.to_file(&pk_file).unwrap();
        let trust_dir = dir.path().join("trust");
        TrustStore::add(&trust_dir, &pk_file, None).unwrap();
        let store = TrustStore::load(&trust_dir).unwrap();
        let sign_with = |id: Option<Vec<u8>>| {
            let module = Module::deserialize(&mut Cursor::new(component())).unwrap();
            let mut out = Vec::new();
            kp.sk.sign(module, id.as_ref()).unwrap().serialize(&mut out).unwrap();
            out
        };
        let default_id = kp.pk.clone().attach_default_key_id().key_id().cloned();
        assert!(verify_component(&sign_with(default_id), &store).is_ok());
        let forged = sign_with(Some(b"someone else".to_vec()));
        assert_eq!(verify_component(&forged, &store).unwrap_err().kind(), LoadCode::Tampered);
    }

    #[test]
    fn an_empty_trust_store_says_so() {
        let kp = wasmsign2::KeyPair::generate();
        let signed = sign_component(component(), &kp.sk, &kp.pk).unwrap();
        assert_eq!(
            verify_component(&signed, &TrustStore::default()),
            Err(TrustError::NoTrustedKeys)
        );
        assert_eq!(
            verify_component(component(), &TrustStore::default()),
            Err(TrustError::Unsigned)
        );
    }
}
