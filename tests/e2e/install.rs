//! Installing without `just`: the committed bundled components
//! (`host/bundled/`) are what `cargo install --path host` embeds, so they
//! must be exactly what `plugins/` builds, and the binary says which
//! components and contract versions it carries.

use std::path::PathBuf;
use verbgate_tests::{component, verbgate_bin};

/// The bundled components, as host/build.rs embeds them.
const BUNDLED: [&str; 13] = [
    "core", "git", "cargo", "just", "rg", "pytest", "npm", "vitest", "jest", "tsc", "eslint", "go",
    "ruff",
];

#[test]
fn committed_bundled_components_equal_a_fresh_build() {
    let committed = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../host/bundled");
    for name in BUNDLED {
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
    for name in BUNDLED {
        let digest = verbgate::json::sha256_hex(&std::fs::read(component(name)).unwrap());
        assert!(
            text.contains(&format!("{name} sha256:{digest}")),
            "{name} digest missing from: {text}"
        );
    }
}

/// `verbgate <args>` in `env` with its address space limited to `kib` KiB
/// (`ulimit -v`, as an operator or a 39-bit aarch64 kernel would limit it).
fn under_address_limit(env: &verbgate_tests::Env, kib: u64, args: &[&str]) -> std::process::Output {
    let inner = env.cmd(args);
    let mut c = std::process::Command::new("sh");
    c.arg("-c")
        .arg("ulimit -v \"$0\" && exec \"$@\"")
        .arg(kib.to_string())
        .arg(inner.get_program())
        .args(inner.get_args());
    for (key, value) in inner.get_envs() {
        match value {
            Some(v) => c.env(key, v),
            None => c.env_remove(key),
        };
    }
    c.output().unwrap()
}

/// Whether this process's address space is unlimited (`ulimit -v`): the
/// test below lowers it, which needs room to lower it from.
fn address_space_unlimited() -> bool {
    let out = std::process::Command::new("sh").arg("-c").arg("ulimit -v").output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim() == "unlimited"
}

#[test]
fn a_small_address_space_shrinks_the_instance_pool_instead_of_refusing_to_start() {
    if !address_space_unlimited() {
        eprintln!("skipped: this process already runs under an address-space limit");
        return;
    }
    let env = verbgate_tests::Env::with_plugin("fixture-echo");
    let request =
        serde_json::json!({"ops": [{"op": "echo.argv", "args": {"word": "w"}}]}).to_string();
    // The default pool (256 calls, two 4 GiB memory slots each) needs about
    // 2 TiB of address space; 64 GiB holds a pool of a few calls.
    let out = under_address_limit(&env, 64 << 20, &["request", &request]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let answer: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(
        answer["results"][0]["ok"], true,
        "a plugin call runs in the smaller pool: {answer}"
    );
    let served: u32 = stderr
        .split("serving ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("the shrunk pool is reported on stderr: {stderr}"));
    assert!((1..256).contains(&served) && 256 % served == 0, "served {served} of 256");
    assert!(
        stderr.contains("limits.plugin_concurrent_calls"),
        "the warning says which setting to change: {stderr}"
    );

    // Not even one call fits: a refusal that says what to raise.
    let out = under_address_limit(&env, 4 << 20, &["request", &request]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("address space") && stdout.contains("ulimit -v"), "{stdout}");

    // Unlimited: the whole pool, and no warning (x86_64 has 128 TiB of user
    // address space; a 39-bit aarch64 kernel would shrink even this one).
    let (code, answer, stderr) = env.run(&["request", &request]);
    assert_eq!((code, &answer["results"][0]["ok"]), (0, &serde_json::json!(true)), "{answer}");
    if cfg!(target_arch = "x86_64") {
        assert!(!stderr.contains("instance pool"), "{stderr}");
    }
}

#[test]
fn a_pool_larger_than_any_address_space_is_refused_by_name() {
    let env =
        verbgate_tests::Env::new().with_config("[limits]\nplugin_concurrent_calls = 100000\n");
    let (code, answer, _) = env.run(&["request", r#"{"help":true}"#]);
    assert_ne!(code, 0, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("plugin_concurrent_calls is 100000") && message.contains("4096"),
        "{answer}"
    );
}
