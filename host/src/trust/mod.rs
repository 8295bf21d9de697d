//! Trust: who may put code in front of an agent.
//!
//! - [`keys`]: ed25519 key pairs in PEM (the format `wasmsign2` reads and
//!   writes; raw 33-byte `wasmsign2` key files are read too).
//! - [`store`]: the operator's trust store, a directory of public keys.
//! - [`verify`]: the embedded signature (WebAssembly tool-conventions format,
//!   via `wasmsign2`) checked against the store, with a reason for refusal
//!   that names what failed.
//!
//! What a signature proves: the component's bytes are exactly what the key's
//! holder signed. It does not prove the code is harmless — that is what the
//! sandbox and the fence are for.

pub mod keys;
pub mod store;
pub mod verify;

pub use keys::{key_id, KeyPairFiles};
pub use store::TrustStore;
pub use verify::{sign_component, verify_component, Signer, TrustError};
