//! Components compiled into the binary. They need no signature: each is
//! pinned by a SHA-256 digest computed at build time, and checked again
//! against the embedded bytes when loaded.

/// One embedded component.
#[derive(Debug)]
pub struct BundledComponent {
    /// Plugin file name (without `.wasm`).
    pub name: &'static str,
    /// The component.
    pub bytes: &'static [u8],
    /// Its pinned SHA-256, hex.
    pub sha256: &'static str,
}

include!(concat!(env!("OUT_DIR"), "/bundled.rs"));
