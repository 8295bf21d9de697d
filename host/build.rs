//! Embeds the bundled components and pins their SHA-256 digests into the
//! binary.
//!
//! The components are committed in `host/bundled/` (about 200 KB each), so a
//! plain `cargo build` or `cargo install --path host` works on a fresh clone
//! without a wasm toolchain. `just` builds them from `plugins/` into
//! `target/components/` and points `VERBGATE_COMPONENTS_DIR` there, so a
//! developer's binary always embeds what `plugins/` says; a test fails when
//! the committed bytes differ from a fresh build (`just bundle` refreshes
//! them).

use sha2::{Digest, Sha256};
use std::fmt::Write as _;
use std::path::PathBuf;

/// Components compiled into the binary, in load order.
const BUNDLED: &[&str] = &[
    "core", "git", "cargo", "just", "rg", "pytest", "npm", "vitest", "jest", "tsc", "eslint", "go",
    "ruff",
];

fn main() {
    println!("cargo:rerun-if-env-changed=VERBGATE_COMPONENTS_DIR");
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let dir = std::env::var_os("VERBGATE_COMPONENTS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| manifest.join("bundled"));
    let mut out = String::from("/// Components compiled into this binary, with pinned digests.\npub const BUNDLED: &[BundledComponent] = &[\n");
    for name in BUNDLED {
        let path = dir.join(format!("{name}.wasm"));
        println!("cargo:rerun-if-changed={}", path.display());
        let bytes = std::fs::read(&path).unwrap_or_else(|e| {
            let fix = if std::env::var_os("VERBGATE_COMPONENTS_DIR").is_some() {
                "VERBGATE_COMPONENTS_DIR points there (relative to host/): run `just plugins`, or unset it to embed host/bundled/"
            } else {
                "restore host/bundled/ from git, or run `just bundle`"
            };
            panic!("bundled component {} is missing ({e}): {fix}", path.display())
        });
        let digest = hex(&Sha256::digest(&bytes));
        let abs = path.canonicalize().unwrap();
        writeln!(out, "    BundledComponent {{ name: {name:?}, bytes: include_bytes!({:?}), sha256: {digest:?} }},", abs.display().to_string()).unwrap();
    }
    out.push_str("];\n");
    let dest = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("bundled.rs");
    std::fs::write(dest, out).unwrap();
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
