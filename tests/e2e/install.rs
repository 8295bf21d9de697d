//! Installing without `just`: the committed bundled components
//! (`host/bundled/`) are what `cargo install --path host` embeds, so they
//! must be exactly what `plugins/` builds, and the binary says which
//! components and contract versions it carries.

use std::path::PathBuf;
use verbgate_tests::{component, verbgate_bin};

#[test]
fn committed_bundled_components_equal_a_fresh_build() {
    let committed = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../host/bundled");
    for name in ["core", "git", "cargo", "just", "rg", "pytest"] {
        let fresh = std::fs::read(component(name)).unwrap();
        let kept = std::fs::read(committed.join(format!("{name}.wasm"))).unwrap_or_default();
        assert!(
            fresh == kept,
            "host/bundled/{name}.wasm differs from what plugins/ builds ({} vs {} bytes): run `just bundle` and commit host/bundled/",
            kept.len(),
            fresh.len()
        );
    }
}

#[test]
fn version_names_the_contracts_and_the_bundled_digests() {
    let out = std::process::Command::new(verbgate_bin()).arg("--version").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with(&format!("verbgate {}", env!("CARGO_PKG_VERSION"))), "{text}");
    assert!(text.contains("verbgate:verbs@0.1.0"), "{text}");
    for name in ["core", "git", "cargo", "just", "rg", "pytest"] {
        let digest = verbgate::json::sha256_hex(&std::fs::read(component(name)).unwrap());
        assert!(text.contains(&format!("{name} sha256:{digest}")), "{name} digest missing from: {text}");
    }
}
