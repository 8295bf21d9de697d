//! The OS sandbox, attacked the way a hostile repository would: code run by
//! `cargo.test` (a test), `pytest.run` (a conftest.py) and `just.run` (a
//! recipe) tries to (1) read a key file outside the root, (2) write a file
//! outside the root, (3) append an allow-everything rule to verbgate's own
//! config, (4) connect to a listener on 127.0.0.1, and (5) do the first two
//! through `sh -c`. The operator allows the verbs (as one "yes" would):
//! everything after that is the kernel's to refuse. Each attack succeeded
//! before the sandbox (run with `VERBGATE_TEST_BIN=<older verbgate>`).
//! Honest work keeps running: the same suites pass inside.

use serde_json::{json, Value};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use verbgate_tests::{copy_tree, require_test_tool, Env};

/// What an attack can reach, and how to tell whether it got there.
struct Target {
    env: Env,
    key: PathBuf,
    outside: PathBuf,
    config: PathBuf,
    config_before: String,
    listener: TcpListener,
}

const KEY: &str = "SECRET-KEY-MATERIAL-7f3a";

fn target(allow: &[&str]) -> Target {
    let env = Env::new().allowing(allow);
    let outside = env.tmp.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let key = outside.join("id_key");
    std::fs::write(&key, format!("{KEY}\n")).unwrap();
    let config = env.home.join("verbgate.toml");
    let config_before = std::fs::read_to_string(&config).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    Target { env, key, outside, config, config_before, listener }
}

impl Target {
    fn port(&self) -> u16 {
        self.listener.local_addr().unwrap().port()
    }

    /// Every way the attack could have succeeded, checked from outside;
    /// all breaches are named at once.
    fn assert_contained(&self, what: &str, answer: &Value) {
        let in_root =
            |name: &str| std::fs::read_to_string(self.env.root.join(name)).unwrap_or_default();
        let mut breaches = Vec::new();
        for (name, how) in [
            ("leak.txt", "read the key outside the root"),
            ("sh-leak.txt", "read the key through sh -c"),
        ] {
            if in_root(name).contains(KEY) {
                breaches.push(how);
            }
        }
        for (name, how) in [
            ("written.txt", "wrote outside the root"),
            ("sh-written.txt", "wrote outside the root through sh -c"),
        ] {
            if self.outside.join(name).exists() {
                breaches.push(how);
            }
        }
        if std::fs::read_to_string(&self.config).unwrap() != self.config_before {
            breaches.push("changed verbgate's own config");
        }
        if self.listener.accept().is_ok() {
            breaches.push("connected to 127.0.0.1");
        }
        if answer.to_string().contains(KEY) {
            breaches.push("put the key in the answer");
        }
        assert!(
            breaches.is_empty(),
            "{what}: the repository's code {}: {answer}",
            breaches.join(", ")
        );
    }
}

fn rust_str(p: &Path) -> String {
    format!("{:?}", p.display().to_string())
}

#[test]
fn a_crates_tests_cannot_reach_outside_the_root_through_cargo_test() {
    let t = target(&["cargo.*"]);
    let (key, outside, config) = (rust_str(&t.key), rust_str(&t.outside), rust_str(&t.config));
    let lib = format!(
        r#"
#[cfg(test)]
mod tests {{
    use std::io::Write;
    #[test]
    fn attack() {{
        let key = std::fs::read_to_string({key}).unwrap_or_else(|e| format!("read refused: {{e}}"));
        std::fs::write("leak.txt", key).unwrap();
        let _ = std::fs::write(std::path::Path::new({outside}).join("written.txt"), "pwned");
        if let Ok(mut f) = std::fs::OpenOptions::new().append(true).open({config}) {{
            let _ = f.write_all(b"\n[[policy]]\nverbs = [\"*\"]\ndecision = \"allow\"\n");
        }}
        let _ = std::net::TcpStream::connect(("127.0.0.1", {port}));
        let _ = std::process::Command::new("sh").arg("-c")
            .arg(format!("cat {{}} > sh-leak.txt; echo pwned > {{}}/sh-written.txt", {key}, {outside}))
            .status();
    }}
    #[test]
    fn honest() {{ assert_eq!(2 + 2, 4); }}
}}
"#,
        port = t.port()
    );
    std::fs::write(
        t.env.root.join("Cargo.toml"),
        "[package]\nname = \"attack\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    )
    .unwrap();
    std::fs::create_dir_all(t.env.root.join("src")).unwrap();
    std::fs::write(t.env.root.join("src/lib.rs"), lib).unwrap();
    let r = t.env.run_job("cargo.test", json!({}));
    // The crate built offline and its tests ran, inside the root.
    assert_eq!(r["result"]["result"]["tests"]["passed"], 2, "{r}");
    t.assert_contained("cargo.test", &r);
}

#[test]
fn a_conftest_cannot_reach_outside_the_root_through_pytest_run() {
    require_test_tool("pytest");
    let t = target(&["pytest.*"]);
    copy_tree(&Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/pytest-suite"), &t.env.root);
    let conftest = format!(
        r#"
import os, socket, subprocess
try:
    key = open({key}).read()
except OSError as e:
    key = "read refused: %s" % e
open("leak.txt", "w").write(key)
for attempt in (
    lambda: open(os.path.join({outside}, "written.txt"), "w").write("pwned"),
    lambda: open({config}, "a").write('\n[[policy]]\nverbs = ["*"]\ndecision = "allow"\n'),
    lambda: socket.create_connection(("127.0.0.1", {port}), timeout=2),
):
    try:
        attempt()
    except OSError:
        pass
subprocess.run(["sh", "-c", "cat %s > sh-leak.txt; echo pwned > %s/sh-written.txt" % ({key}, {outside})])
"#,
        key = rust_str(&t.key),
        outside = rust_str(&t.outside),
        config = rust_str(&t.config),
        port = t.port()
    );
    std::fs::write(t.env.root.join("conftest.py"), conftest).unwrap();
    let r =
        t.env.run_job("pytest.run", json!({"node_ids": ["tests/test_outcomes.py::test_passes"]}));
    assert_eq!(r["result"]["result"]["counts"]["passed"], 1, "the suite still runs: {r}");
    t.assert_contained("pytest.run", &r);
}

#[test]
fn a_recipe_cannot_reach_outside_the_root_through_just_run() {
    let t = target(&["just.*"]);
    let (key, outside, config) = (t.key.display(), t.outside.display(), t.config.display());
    let justfile = format!(
        "attack:\n    -cat {key} > leak.txt\n    -echo pwned > {outside}/written.txt\n    -printf '[[policy]]\\nverbs = [\"*\"]\\ndecision = \"allow\"\\n' >> {config}\n    -bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port}'\n    -sh -c 'cat {key} > sh-leak.txt; echo pwned > {outside}/sh-written.txt'\n    echo done > done.txt\n",
        port = t.port()
    );
    std::fs::write(t.env.root.join("justfile"), justfile).unwrap();
    let fp =
        t.env.request(&json!({"help": "just.run:attack"}))["help"]["schema_fingerprint"].clone();
    let out = t.env.request(&json!({"ops": [{"op": "just.run", "args": {"target": "attack"}, "schema_fingerprint": fp}]}));
    let id = out["results"][0]["result"]["job"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{out}"))
        .to_string();
    let w = t.env.op("job.wait", json!({"ids": [&id], "max_wait_seconds": 60}));
    assert_eq!(w["result"]["all_terminal"], true, "{w}");
    assert_eq!(
        std::fs::read_to_string(t.env.root.join("done.txt")).unwrap_or_default().trim(),
        "done",
        "the recipe ran to its end in the root: {w}"
    );
    t.assert_contained("just.run", &w);
}

#[test]
fn a_verb_that_declares_it_only_reads_cannot_write() {
    let env = Env::new();
    env.install("fixture-hostile");
    let r = env.op("hostile.readonlywrite", json!({}));
    assert!(
        !env.root.join("escaped-write.txt").exists(),
        "a reads_repo verb's program wrote the root: {r}"
    );
}

#[test]
fn doctor_says_what_the_kernel_enforces_and_each_verbs_profile() {
    let env = Env::new();
    let out = env.run_ok(&["doctor"]);
    assert_eq!(out["sandbox"]["mode"], "enforce", "{out}");
    assert_eq!(
        out["sandbox"]["mechanism"], "landlock+seccomp",
        "this machine's kernel has Landlock: {out}"
    );
    let status = &out["verbs"]["git.status"];
    let root = env.root.canonicalize().unwrap().display().to_string();
    assert!(status["read"].as_array().unwrap().contains(&json!(root)), "{status}");
    assert!(!status["write"].as_array().unwrap().contains(&json!(root)), "{status}");
    assert_eq!(status["network"], false);
    let commit = &out["verbs"]["git.commit"];
    assert!(commit["write"].as_array().unwrap().contains(&json!(root)), "{commit}");
    let home = env.home.display().to_string();
    assert!(!out["verbs"].to_string().contains(&home), "no profile reaches VERBGATE_HOME: {out}");
    // help says it too.
    let h = env.request(&json!({"help": "git.commit"}));
    assert_eq!(
        h["help"]["sandbox"],
        json!({"enforced": true, "root": "read-write", "network": false, "note": "`verbgate doctor` lists every path"}),
        "{h}"
    );
}

#[test]
fn without_landlock_or_with_the_sandbox_off_it_is_said_not_silent() {
    // `mode = "off"` is the operator's explicit choice: programs run, and
    // the policy asks before repository code again.
    let env = Env::new().with_config("[sandbox]\nmode = \"off\"\n");
    let h = env.request(&json!({"help": "cargo.test"}));
    assert_eq!(h["help"]["policy"]["rule"], "default:runs_repo_code", "{h}");
    assert_eq!(h["help"]["sandbox"]["enforced"], false, "{h}");
    let out = env.run_ok(&["doctor"]);
    assert_eq!(out["sandbox"]["mode"], "off", "{out}");
    assert_eq!(out["verbs"]["git.status"], Value::Null, "no profile is applied: {out}");
}
