//! Verb authors: `verbgate new` scaffolds a project in each language that
//! builds offline, signs, passes `verbgate check`, loads and answers its
//! example verb over MCP; `verbgate dev` is the inner loop (build, sign with
//! a dev key created on first use, install, check, catalog line).

use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use verbgate_tests::mcp::Session;
use verbgate_tests::{guest_tools, target_dir, verbgate_bin, Env};

/// Scaffold `name` in `lang` under the test's temp dir.
fn scaffold(env: &Env, name: &str, lang: &str) -> PathBuf {
    let dir = env.tmp.path().join(name);
    let out = env.run_ok(&["new", name, "--lang", lang, "--dir", dir.to_str().unwrap()]);
    assert_eq!(out["verb"], format!("{name}.hello"), "{out}");
    dir
}

/// The environment a project's scripts build in: offline, our binary, the
/// guest toolchains from `scripts/guest-tools.sh`.
///
/// A Rust project builds in `just plugins`' own target dir with its flags:
/// the vendored SDK has the same dependencies, features and release profile
/// as our plugins, so cargo reuses their compiled dependencies instead of
/// building wit-bindgen, serde and schemars again (a minute of CPU on a
/// fresh clone). Run alone, the test still passes; it only builds more.
fn build_env(c: &mut Command, lang: &str) {
    c.env("VERBGATE", verbgate_bin())
        .env("CARGO_NET_OFFLINE", "true")
        .env("PIP_NO_INDEX", "1")
        .env("npm_config_offline", "true");
    if lang == "rust" {
        c.env("CARGO_TARGET_DIR", target_dir().join("plugins"))
            .env("RUSTFLAGS", plugins_rustflags());
    }
    if let Some(tools) = guest_tools() {
        c.env("COMPONENTIZE_PY", tools.componentize_py)
            .env("COMPONENTIZE_JS", tools.componentize_js);
    }
}

/// The RUSTFLAGS `just plugins` builds with (the justfile's remap of the
/// cargo home); cargo reuses a dependency only when the flags match.
fn plugins_rustflags() -> String {
    let cargo_home = std::env::var("CARGO_HOME")
        .unwrap_or_else(|_| format!("{}/.cargo", std::env::var("HOME").unwrap_or_default()));
    format!("--remap-path-prefix={cargo_home}=/cargo")
}

/// Run the project's own end-to-end test script.
fn run_test_sh(dir: &Path, lang: &str) -> String {
    let mut c = Command::new("bash");
    c.arg(dir.join("test.sh"));
    build_env(&mut c, lang);
    let out = c.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{lang} test.sh failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// `verbgate dev <dir>` in `env`.
fn dev(env: &Env, dir: &Path, lang: &str) -> (i32, Value) {
    let mut c = env.cmd(&["dev", dir.to_str().unwrap()]);
    build_env(&mut c, lang);
    let out = c.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let v: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
        panic!("dev printed non-JSON ({e}): {stdout}\n{}", String::from_utf8_lossy(&out.stderr))
    });
    (out.status.code().unwrap_or(-1), v)
}

/// The whole author's path for one language: scaffold, the project's own
/// test (when `project_test`), `dev` before and after trusting the dev key,
/// then the verb over MCP.
fn author_round_trip(lang: &str, name: &str, project_test: bool) {
    let env = Env::new();
    let dir = scaffold(&env, name, lang);
    if project_test {
        let said = run_test_sh(&dir, lang);
        assert!(said.contains(&format!("ok: {name}.hello answered")), "{said}");
    }

    // First `dev`: the key is created (0600) but not trusted yet, so the
    // installed component is refused and the output says how to trust it.
    let (code, first) = dev(&env, &dir, lang);
    assert_eq!(code, 1, "{first}");
    assert_eq!(first["key"]["created"], true, "{first}");
    assert_eq!(first["trusted"], false);
    let secret = PathBuf::from(first["key"]["secret"].as_str().unwrap());
    assert_eq!(std::fs::metadata(&secret).unwrap().permissions().mode() & 0o777, 0o600);
    let hint = first["next"][0].as_str().unwrap();
    assert!(hint.contains("verbgate trust add"), "{first}");
    assert_eq!(first["unavailable"][0]["code"], "untrusted_key", "{first}");
    assert_eq!(first["check"]["ok"], true, "{first}");

    // Trust it as the hint says; the second `dev` reuses the key and shows
    // the catalog line.
    env.run_ok(&["trust", "add", first["key"]["public"].as_str().unwrap()]);
    let (code, second) = dev(&env, &dir, lang);
    assert_eq!(code, 0, "{second}");
    assert_eq!(second["key"]["created"], false);
    assert_eq!(second["key"]["id"], first["key"]["id"]);
    let line = second["catalog"][0].as_str().unwrap();
    assert!(line.starts_with(&format!("{name}.hello")) && line.contains("name"), "{second}");
    assert!(
        second["check"]["errors"].as_array().unwrap().is_empty()
            && second["check"]["lint"].as_array().unwrap().is_empty(),
        "{second}"
    );

    // Installed into $VERBGATE_HOME/plugins: a real MCP session answers it.
    assert!(env.home.join("plugins").join(format!("{name}.wasm")).is_file());
    verbgate_tests::runtime().block_on(async {
        let s = Session::start(env.serve_command()).await.unwrap();
        let reply = s
            .request(json!({"ops": [{"op": format!("{name}.hello"), "args": {"name": "mcp"}}]}))
            .await
            .unwrap();
        assert!(!reply.is_error, "{}", reply.structured);
        assert_eq!(
            reply.structured["results"][0]["result"],
            json!({"greeting": "hello, mcp"}),
            "{}",
            reply.structured
        );
        // Caller input stays a value: an option-looking name is refused, not run.
        let reply = s
            .request(json!({"ops": [{"op": format!("{name}.hello"), "args": {"name": "-n"}}]}))
            .await
            .unwrap();
        assert_eq!(
            reply.structured["results"][0]["error"]["code"], "unsafe_argv",
            "{}",
            reply.structured
        );
        s.close().await.unwrap();
    });
}

#[test]
fn a_new_rust_plugin_builds_signs_checks_and_answers_over_mcp() {
    author_round_trip("rust", "demo-rs", true);
}

#[test]
fn the_rust_template_unit_tests_pass_natively() {
    let env = Env::new();
    let dir = scaffold(&env, "demo-unit", "rust");
    let out = Command::new("cargo")
        .args(["test", "--quiet", "--lib"])
        .current_dir(&dir)
        .env("CARGO_NET_OFFLINE", "true")
        // The plugins' native unit tests (`just test` runs them first) have
        // built the same dependencies here.
        .env("CARGO_TARGET_DIR", target_dir().join("plugins-native"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn new_refuses_bad_names_and_existing_projects() {
    let env = Env::new();
    let (code, out, _) =
        env.run(&["new", "Git Tool", "--dir", env.tmp.path().join("x").to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(out["error"]["message"].as_str().unwrap().contains("Git Tool"), "{out}");
    let (code, out, _) =
        env.run(&["new", "git", "--dir", env.tmp.path().join("y").to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(out["error"]["message"].as_str().unwrap().contains("bundled"), "{out}");
    let dir = scaffold(&env, "twice", "js");
    let (code, out, _) = env.run(&["new", "twice", "--dir", dir.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(out["error"]["message"].as_str().unwrap().contains("not empty"), "{out}");
}

/// `test.sh` is one script for every language (templates/common) and the
/// Rust round trip runs it. Here `dev` runs the Python `build.sh` and the MCP
/// session calls the verb; running `test.sh` as well would only compile the
/// same CPython core cold again in a throwaway home (~45 CPU-seconds).
#[test]
fn a_new_python_plugin_builds_signs_checks_and_answers_over_mcp() {
    verbgate_tests::require_guest_tools();
    author_round_trip("python", "demo-py", false);
}

/// As for Python: `dev` runs the JavaScript `build.sh`; `test.sh` is
/// covered by the Rust round trip.
#[test]
fn a_new_js_plugin_builds_signs_checks_and_answers_over_mcp() {
    verbgate_tests::require_guest_tools();
    author_round_trip("js", "demo-js", false);
}

#[test]
fn dev_explains_a_missing_or_failing_build() {
    let env = Env::new();
    let dir = env.tmp.path().join("project");
    std::fs::create_dir_all(&dir).unwrap();
    let message = |env: &Env| {
        let (code, out, _) = env.run(&["dev", dir.to_str().unwrap()]);
        assert_eq!(code, 1, "{out}");
        out["error"]["message"].as_str().unwrap().to_string()
    };
    let m = message(&env);
    assert!(m.contains("has no build.sh") && m.contains("verbgate new"), "{m}");
    std::fs::write(dir.join("build.sh"), "echo compiling >&2; exit 3\n").unwrap();
    let m = message(&env);
    assert!(m.contains("build.sh failed") && m.contains("3"), "{m}");
    std::fs::write(dir.join("build.sh"), "mkdir -p build\n").unwrap();
    let m = message(&env);
    assert!(m.contains("produced no build/*.wasm"), "{m}");
    // Nothing was signed or installed, and no key was made for a failed build.
    assert!(!env.home.join("keys/dev.sk.pem").exists());
}
