//! The OS sandbox attacked through what a program's toolchain grants
//! (issue 36, items 5 and 6), with a user home of the test's own
//! (`HOME=<tmp>/user`): a `just` installed in `~/.local/bin` made its
//! profile read all of `~/.local` — verbgate's default home, with its
//! keys — and `$HOME`'s credential files; go's tests wrote the user's own
//! build cache (`~/.cache/go-build`), which the user's next unconfined
//! `go` runs code from. Each attack was seen succeeding against the build
//! before (`VERBGATE_TEST_BIN=<older verbgate>`), and each now fails.

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use verbgate_tests::{copy_tree, require_test_tool, Env};

/// A user home under the test's directory, with the secrets a real one
/// holds: verbgate's default home, git's credential store, an ssh key.
fn user_home(env: &Env) -> PathBuf {
    let user = env.tmp.path().join("user");
    for (file, secret) in [
        (".local/share/verbgate/keys/default.sk.pem", "SIGNING-KEY"),
        (".config/git/credentials", "https://ada:GIT-TOKEN@example.com"),
        (".ssh/id_ed25519", "SSH-KEY"),
        ("notes.txt", "PRIVATE-NOTES"),
    ] {
        std::fs::create_dir_all(user.join(file).parent().unwrap()).unwrap();
        std::fs::write(user.join(file), secret).unwrap();
    }
    user
}

/// Run a verb's op (a job) with `HOME=home` to its end; the wait's answer.
fn run_with_home(env: &Env, home: &Path, verb: &str, args: Value) -> Value {
    let fp = env.request(&json!({"help": verb}))["help"]["schema_fingerprint"].clone();
    let req = json!({"ops": [{"op": verb, "args": args, "schema_fingerprint": fp}]});
    let out = env
        .cmd(&["request", &req.to_string()])
        .env("HOME", home)
        .env_remove("GOCACHE")
        .env_remove("XDG_CACHE_HOME")
        .output()
        .unwrap();
    let answer: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let id = answer["results"][0]["result"]["job"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{answer}"))
        .to_string();
    let w = env.op("job.wait", json!({"ids": [&id], "max_wait_seconds": 300}));
    assert_eq!(w["result"]["all_terminal"], true, "{w}");
    env.op("job.result", json!({"id": id}))
}

/// The `just` on `PATH` as a real file (a version manager's shim resolved).
fn just_binary() -> PathBuf {
    let out = std::process::Command::new("just").args(["--version"]).output();
    assert!(out.is_ok_and(|o| o.status.success()), "just is not installed");
    let shim = std::process::Command::new("pyenv").args(["which", "just"]).output();
    if let Some(p) = shim.ok().filter(|o| o.status.success()) {
        return PathBuf::from(String::from_utf8_lossy(&p.stdout).trim());
    }
    let which = std::process::Command::new("sh").args(["-c", "command -v just"]).output().unwrap();
    PathBuf::from(String::from_utf8_lossy(&which.stdout).trim()).canonicalize().unwrap()
}

#[test]
fn a_just_in_the_users_local_bin_reads_no_home_secret() {
    let env0 = Env::new();
    let user = user_home(&env0);
    let just = user.join(".local/bin/just");
    std::fs::create_dir_all(just.parent().unwrap()).unwrap();
    std::fs::copy(just_binary(), &just).unwrap();
    let env = env0.with_program("just", just.to_str().unwrap()).allowing(&["just.*"]);
    let targets = [
        ".local/share/verbgate/keys/default.sk.pem",
        ".config/git/credentials",
        ".ssh/id_ed25519",
        "notes.txt",
    ];
    let mut recipe = String::from("steal:\n");
    for (i, t) in targets.iter().enumerate() {
        recipe.push_str(&format!("    -cat {} > stolen-{i}\n", user.join(t).display()));
    }
    recipe.push_str("    echo done > done.txt\n");
    std::fs::write(env.root.join("justfile"), recipe).unwrap();
    let r = run_with_home(&env, &user, "just.run", json!({"target": "steal"}));
    assert_eq!(
        std::fs::read_to_string(env.root.join("done.txt")).unwrap_or_default().trim(),
        "done",
        "the recipe ran to its end under the local just: {r}"
    );
    let stolen: Vec<String> = (0..targets.len())
        .filter_map(|i| std::fs::read_to_string(env.root.join(format!("stolen-{i}"))).ok())
        .filter(|s| !s.is_empty())
        .collect();
    assert!(stolen.is_empty(), "the recipe read the user's secrets: {stolen:?} ({r})");
}

#[test]
fn go_tests_write_verbgates_own_cache_never_the_users() {
    require_test_tool("go");
    let env = Env::new();
    copy_tree(&Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/go-module"), &env.root);
    let user = user_home(&env);
    // The user's build cache exists, as it does once they have built once.
    let users_cache = user.join(".cache/go-build");
    std::fs::create_dir_all(&users_cache).unwrap();
    let r = run_with_home(&env, &user, "go.test", json!({"packages": ["./calc"]}));
    assert_eq!(r["ok"], true, "{r}");
    let entries = |dir: &Path| walk(dir).into_iter().filter(|p| p.is_file()).count();
    assert_eq!(
        entries(&users_cache),
        0,
        "go wrote the user's own build cache, which their next `go` trusts ({r})"
    );
    let private = env.home.join("toolcache");
    assert!(entries(&private) > 0, "go built into verbgate's private cache: {r}");
    // Private: only the user can enter it.
    use std::os::unix::fs::PermissionsExt;
    let cache = walk(&private).into_iter().find(|p| p.ends_with("go-build")).unwrap();
    let mode = std::fs::metadata(&cache).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "{} is {mode:o}", cache.display());
}

/// Every path under `dir`, `dir` included.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = vec![dir.to_path_buf()];
    let mut i = 0;
    while i < out.len() {
        if let Ok(rd) = std::fs::read_dir(&out[i]) {
            out.extend(rd.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| !p.is_symlink()));
        }
        i += 1;
    }
    out
}

/// A link planted where verbgate keeps its private caches
/// (`$VERBGATE_HOME/toolcache` → the user's `~/.cache`) would aim the
/// grant, and go's writes, at the user's own cache: the op is refused,
/// naming the link, and nothing is written there.
#[test]
fn a_link_planted_for_the_private_cache_is_refused_not_followed() {
    require_test_tool("go");
    let env = Env::new();
    copy_tree(&Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/go-module"), &env.root);
    let user = user_home(&env);
    let users_cache = user.join(".cache");
    std::fs::create_dir_all(&users_cache).unwrap();
    std::os::unix::fs::symlink(&users_cache, env.home.join("toolcache")).unwrap();
    let fp = env.request(&json!({"help": "go.test"}))["help"]["schema_fingerprint"].clone();
    let req = json!({"ops": [{"op": "go.test", "args": {"packages": ["./calc"]}, "schema_fingerprint": fp}]});
    let out = env.cmd(&["request", &req.to_string()]).env("HOME", &user).output().unwrap();
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    let r = &answer["results"][0];
    if let Some(id) = r["result"]["job"]["id"].as_str() {
        env.op("job.wait", json!({"ids": [id], "max_wait_seconds": 300}));
    }
    let written: Vec<PathBuf> = walk(&users_cache).into_iter().filter(|p| p.is_file()).collect();
    assert!(written.is_empty(), "go wrote through the planted link: {written:?} ({answer})");
    assert_eq!(r["error"]["code"], "launch_failed", "{answer}");
    assert!(r["error"]["message"].as_str().unwrap_or_default().contains("is a link"), "{answer}");
}

/// A program run without `HOME` (an operator's `env_allow` leaves it out)
/// still never reads the user's home through where it lives: `just` in
/// `~/bin` would have had all of `~` granted, its prefix.
#[test]
fn a_program_run_without_home_still_reads_nothing_of_the_users() {
    let env0 = Env::new().with_config("env_allow = [\"PATH\"]\n");
    let user = user_home(&env0);
    let just = user.join("bin/just");
    std::fs::create_dir_all(just.parent().unwrap()).unwrap();
    std::fs::copy(just_binary(), &just).unwrap();
    let env = env0.with_program("just", just.to_str().unwrap()).allowing(&["just.*"]);
    std::fs::write(
        env.root.join("justfile"),
        format!(
            "steal:\n    -cat {} > stolen\n    -cat {} >> stolen\n    echo done > done.txt\n",
            user.join("notes.txt").display(),
            user.join(".ssh/id_ed25519").display()
        ),
    )
    .unwrap();
    let r = run_with_home(&env, &user, "just.run", json!({"target": "steal"}));
    assert_eq!(
        std::fs::read_to_string(env.root.join("done.txt")).unwrap_or_default().trim(),
        "done",
        "the recipe ran: {r}"
    );
    let stolen = std::fs::read_to_string(env.root.join("stolen")).unwrap_or_default();
    assert!(stolen.is_empty(), "the recipe read the user's home: {stolen:?} ({r})");
}
