//! Embeds the bundled components and pins their SHA-256 digests into the
//! binary. The components are built by `just plugins` into
//! `target/components/`; set `VERBGATE_COMPONENTS_DIR` to build from
//! elsewhere.

use sha2::{Digest, Sha256};
use std::fmt::Write as _;
use std::path::PathBuf;

/// Components compiled into the binary, in load order.
const BUNDLED: &[&str] = &["core", "git", "cargo", "just"];

fn main() {
    println!("cargo:rerun-if-env-changed=VERBGATE_COMPONENTS_DIR");
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let dir = std::env::var_os("VERBGATE_COMPONENTS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| manifest.join("../target/components"));
    let mut out = String::from("/// Components compiled into this binary, with pinned digests.\npub const BUNDLED: &[BundledComponent] = &[\n");
    for name in BUNDLED {
        let path = dir.join(format!("{name}.wasm"));
        println!("cargo:rerun-if-changed={}", path.display());
        let bytes = std::fs::read(&path).unwrap_or_else(|e| {
            panic!("bundled component {} is missing ({e}): run `just plugins` first (or `just build`)", path.display())
        });
        let digest = hex(&Sha256::digest(&bytes));
        let abs = path.canonicalize().unwrap();
        writeln!(
            out,
            "    BundledComponent {{ name: {name:?}, bytes: include_bytes!({:?}), sha256: {digest:?} }},",
            abs.display().to_string()
        )
        .unwrap();
    }
    out.push_str("];\n");
    let dest = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("bundled.rs");
    std::fs::write(dest, out).unwrap();
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
