//! The git verbs that write (`git.add`, `git.commit`, `git.restore`,
//! `git.switch`) against temporary repositories, checked with git itself:
//! what they record, byte for byte, and what they refuse — option-looking
//! names, paths out of the root.

use serde_json::{json, Value};
use verbgate_tests::{git, Env};

fn repo_env() -> Env {
    // About what the write verbs do; that the policy asks before them by
    // default is `git_writes_ask_by_default` below and `e2e/policy`.
    let env = Env::new().allowing(&["git.*"]);
    git(&env.root, &["init", "-q", "-b", "main"]);
    git(&env.root, &["config", "user.name", "Ada Lovelace"]);
    git(&env.root, &["config", "user.email", "ada@example.com"]);
    env
}

/// The paths in the index.
fn staged(env: &Env) -> Vec<String> {
    let out = git(&env.root, &["ls-files", "-z", "--cached"]);
    out.split('\0').filter(|p| !p.is_empty()).map(str::to_string).collect()
}

/// The message bytes of a commit object, exactly as stored.
fn stored_message(env: &Env, rev: &str) -> Vec<u8> {
    let out = std::process::Command::new("git")
        .current_dir(&env.root)
        .args(["cat-file", "commit", rev])
        .output()
        .unwrap();
    assert!(out.status.success());
    let raw = out.stdout;
    let at =
        raw.windows(2).position(|w| w == b"\n\n").expect("commit headers end with a blank line");
    raw[at + 2..].to_vec()
}

fn ok(r: &Value) -> &Value {
    assert_eq!(r["ok"], true, "{r}");
    &r["result"]
}

#[test]
fn commit_records_quotes_newlines_and_a_leading_dash_byte_for_byte() {
    let env = repo_env();
    std::fs::write(env.root.join("a.txt"), "one\n").unwrap();
    ok(&env.op("git.add", json!({ "paths": ["a.txt"] })));
    // A leading dash, both quote kinds, a backslash, blank lines, trailing
    // spaces and no final newline: `-m` on argv, or git's default cleanup,
    // would each change some of it.
    let message =
        "-m \"double\" 'single' `tick` $HOME\n\n\n  indented \\ line   \n# not a comment\n\ttab";
    let r = env.op("git.commit", json!({ "message": message }));
    let c = ok(&r);
    let head = git(&env.root, &["rev-parse", "HEAD"]);
    // The answer is the new commit, read back from git after it was made.
    assert_eq!(c["commit"]["hash"], head.trim(), "{r}");
    assert_eq!(c["commit"]["parents"], json!([]));
    assert_eq!(c["branch"], "main");
    assert_eq!(c["root_commit"], true);
    assert_eq!(
        stored_message(&env, "HEAD"),
        message.as_bytes(),
        "the message must round-trip exactly"
    );
    assert_eq!(
        c["commit"]["subject"],
        git(&env.root, &["log", "-1", "--format=%s"]).trim_end_matches('\n')
    );
    assert_eq!(
        c["commit"]["body"],
        git(&env.root, &["log", "-1", "--format=%b"]).trim_end_matches('\n')
    );
    assert_eq!(c["commit"]["author"]["email"], "ada@example.com");
    // The author comes from the repository's git config.
    assert_eq!(
        git(&env.root, &["log", "-1", "--format=%an <%ae>|%cn <%ce>"]).trim(),
        "Ada Lovelace <ada@example.com>|Ada Lovelace <ada@example.com>"
    );

    // A second commit: its parent is the first; `git.show` reads it back.
    std::fs::write(env.root.join("a.txt"), "two\n").unwrap();
    ok(&env.op("git.add", json!({ "paths": ["a.txt"] })));
    // The repository's config cannot hide the branch from the read-back.
    git(&env.root, &["config", "log.excludeDecoration", "refs/heads/*"]);
    let second = env.op("git.commit", json!({ "message": "second" }));
    let s = ok(&second);
    assert_eq!(s["root_commit"], false);
    assert_eq!(s["branch"], "main", "{second}");
    assert_eq!(s["commit"]["parents"], json!([c["commit"]["hash"]]));
    let shown = env.op("git.show", json!({}));
    assert_eq!(ok(&shown)["commit"]["hash"], s["commit"]["hash"]);
    assert_eq!(shown["result"]["commit"]["parents"], json!([c["commit"]["hash"]]));

    // Detached: no branch.
    git(&env.root, &["switch", "-q", "--detach"]);
    let d = env.op("git.commit", json!({ "message": "detached", "allow_empty": true }));
    assert_eq!(ok(&d)["branch"], Value::Null, "{d}");
    assert_eq!(d["result"]["commit"]["hash"], git(&env.root, &["rev-parse", "HEAD"]).trim());
}

#[test]
fn commit_with_nothing_staged_says_what_to_do_and_allow_empty_commits() {
    let env = repo_env();
    std::fs::write(env.root.join("a.txt"), "one\n").unwrap();
    git(&env.root, &["add", "a.txt"]);
    git(&env.root, &["commit", "-q", "-m", "first"]);
    let r = env.op("git.commit", json!({ "message": "nothing" }));
    assert_eq!(r["ok"], false, "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("git.add"), "{r}");
    let before = git(&env.root, &["rev-parse", "HEAD"]);
    let e = env.op("git.commit", json!({ "message": "empty", "allow_empty": true }));
    assert_ne!(ok(&e)["commit"]["hash"], before.trim());
    assert_eq!(git(&env.root, &["rev-list", "--count", "HEAD"]).trim(), "2");
}

#[test]
fn add_stages_literal_paths_and_never_forces_or_escapes() {
    let env = repo_env();
    let root = &env.root;
    std::fs::create_dir_all(root.join("dir")).unwrap();
    std::fs::write(root.join("a.txt"), "a\n").unwrap();
    std::fs::write(root.join("dir/b.txt"), "b\n").unwrap();
    std::fs::write(root.join("star*.txt"), "not a glob\n").unwrap();
    std::fs::write(root.join("starry.txt"), "must not match star*\n").unwrap();
    std::fs::write(root.join(".gitignore"), "secret.txt\n").unwrap();
    std::fs::write(root.join("secret.txt"), "ignored\n").unwrap();

    let r = env.op("git.add", json!({ "paths": ["a.txt", "dir", "star*.txt"] }));
    assert_eq!(ok(&r)["staged"], json!(["a.txt", "dir", "star*.txt"]));
    // The answer carries the status read back after staging.
    let entries = r["result"]["status"]["entries"].as_array().unwrap();
    let staged_now: Vec<&str> = entries
        .iter()
        .filter(|e| e["staged"] == true)
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert_eq!(staged_now, ["a.txt", "dir/b.txt", "star*.txt"], "{r}");
    assert!(entries.iter().any(|e| e["path"] == "starry.txt" && e["kind"] == "untracked"), "{r}");
    assert_eq!(
        staged(&env),
        ["a.txt", "dir/b.txt", "star*.txt"],
        "a path is a literal name, never a glob"
    );

    // `--force` is a file name here (after `--`), which does not exist:
    // nothing is staged, the ignored file least of all.
    let r = env.op("git.add", json!({ "paths": ["--force", "secret.txt"] }));
    assert_eq!(r["ok"], false, "{r}");
    assert_eq!(r["error"]["code"], "not_found", "{r}");
    assert_eq!(r["error"]["plugin_details"]["path"], "--force", "{r}");
    let r = env.op("git.add", json!({ "paths": ["secret.txt"] }));
    assert_eq!(r["error"]["code"], "invalid_args", "{r}");
    assert!(!staged(&env).contains(&"secret.txt".to_string()), "an ignored file was staged");

    // Paths out of the root, directly or through a link, never reach git.
    std::fs::write(env.tmp.path().join("outside.txt"), "out\n").unwrap();
    std::os::unix::fs::symlink(env.tmp.path(), root.join("escape")).unwrap();
    for bad in ["../outside.txt", "/etc/passwd", "escape/outside.txt", "dir/../../outside.txt"] {
        let r = env.op("git.add", json!({ "paths": [bad] }));
        assert_eq!(r["error"]["code"], "plan_refused", "{bad}: {r}");
        assert_eq!(r["error"]["path"], bad, "{r}");
    }
    let r = env.op("git.add", json!({ "paths": ["a.txt"], "repo": "../" }));
    assert_eq!(r["error"]["code"], "plan_refused", "{r}");
    // And a misspelt parameter is refused, not ignored.
    let r = env.op("git.add", json!({ "path": ["a.txt"] }));
    assert_eq!(r["ok"], false, "{r}");
    assert_eq!(staged(&env), ["a.txt", "dir/b.txt", "star*.txt"]);
}

#[test]
fn restore_unstages_or_discards_from_the_index_or_a_commit() {
    let env = repo_env();
    let root = &env.root;
    std::fs::write(root.join("a.txt"), "one\n").unwrap();
    git(root, &["add", "a.txt"]);
    git(root, &["commit", "-q", "-m", "first"]);
    std::fs::write(root.join("a.txt"), "two\n").unwrap();
    git(root, &["add", "a.txt"]);
    git(root, &["commit", "-q", "-m", "second"]);
    std::fs::write(root.join("a.txt"), "three\n").unwrap();
    git(root, &["add", "a.txt"]);

    let r = env.op("git.restore", json!({ "paths": ["a.txt"], "scope": "staged" }));
    assert_eq!(ok(&r)["scope"], "staged");
    let a = &r["result"]["status"]["entries"][0];
    assert_eq!(
        (a["path"].as_str(), a["staged"].as_bool(), a["unstaged"].as_bool()),
        (Some("a.txt"), Some(false), Some(true)),
        "{r}"
    );
    assert_eq!(git(root, &["diff", "--cached", "--name-only"]).trim(), "", "still staged");
    assert_eq!(
        std::fs::read_to_string(root.join("a.txt")).unwrap(),
        "three\n",
        "unstaging keeps the working tree"
    );

    ok(&env.op("git.restore", json!({ "paths": ["a.txt"] })));
    assert_eq!(
        std::fs::read_to_string(root.join("a.txt")).unwrap(),
        "two\n",
        "the working tree comes back from the index"
    );

    let r =
        env.op("git.restore", json!({ "paths": ["a.txt"], "scope": "both", "source": "HEAD~1" }));
    assert_eq!(ok(&r)["source"], "HEAD~1");
    assert_eq!(std::fs::read_to_string(root.join("a.txt")).unwrap(), "one\n");
    assert_eq!(
        git(root, &["diff", "--cached", "--name-only"]).trim(),
        "a.txt",
        "the index holds the old content too"
    );

    // A source that looks like an option is one `--source=...` word: git
    // reads it as a revision it cannot find.
    let r = env.op("git.restore", json!({ "paths": ["a.txt"], "source": "--worktree" }));
    assert_eq!(r["ok"], false, "{r}");
    assert_eq!(std::fs::read_to_string(root.join("a.txt")).unwrap(), "one\n");
    let r = env.op("git.restore", json!({ "paths": ["../a.txt"] }));
    assert_eq!(r["error"]["code"], "plan_refused", "{r}");
}

#[test]
fn switch_changes_and_creates_branches_and_refuses_option_names() {
    let env = repo_env();
    let root = &env.root;
    std::fs::write(root.join("a.txt"), "one\n").unwrap();
    git(root, &["add", "a.txt"]);
    git(root, &["commit", "-q", "-m", "first"]);
    let first = git(root, &["rev-parse", "HEAD"]);
    std::fs::write(root.join("a.txt"), "two\n").unwrap();
    git(root, &["commit", "-q", "-am", "second"]);
    let current = || git(root, &["rev-parse", "--abbrev-ref", "HEAD"]).trim().to_string();

    let r = env
        .op("git.switch", json!({ "branch": "feature", "create": true, "start_point": "HEAD~1" }));
    assert_eq!(
        (ok(&r)["branch"].as_str(), r["result"]["created"].as_bool()),
        (Some("feature"), Some(true)),
        "{r}"
    );
    assert_eq!(
        r["result"]["status"]["branch"]["head"], "feature",
        "the status read back after switching"
    );
    assert_eq!(r["result"]["status"]["branch"]["oid"], first.trim());
    assert_eq!(current(), "feature");
    assert_eq!(git(root, &["rev-parse", "HEAD"]), first);
    ok(&env.op("git.switch", json!({ "branch": "main" })));
    assert_eq!(current(), "main");

    // `-D` is never an option: as a branch to switch to the host refuses
    // it, as a name to create git refuses it; no branch is deleted.
    let r = env.op("git.switch", json!({ "branch": "-D" }));
    assert_eq!(r["error"]["code"], "unsafe_argv", "{r}");
    let r = env.op("git.switch", json!({ "branch": "-D", "create": true }));
    assert_eq!(r["ok"], false, "{r}");
    let r =
        env.op("git.switch", json!({ "branch": "x", "create": true, "start_point": "--orphan" }));
    assert_eq!(r["error"]["code"], "unsafe_argv", "{r}");
    let branches = git(root, &["for-each-ref", "--format=%(refname:short)", "refs/heads"]);
    assert_eq!(branches.lines().collect::<Vec<_>>(), ["feature", "main"]);
    assert_eq!(current(), "main");

    let r = env.op("git.switch", json!({ "branch": "nope" }));
    assert_eq!(r["error"]["code"], "not_found", "{r}");
    let r = env.op("git.switch", json!({ "branch": "feature", "start_point": "main" }));
    assert_eq!(r["error"]["code"], "invalid_args", "{r}");
}

#[test]
fn git_writes_ask_by_default_and_say_what_they_do() {
    let env = Env::new();
    git(&env.root, &["init", "-q", "-b", "main"]);
    std::fs::write(env.root.join("a.txt"), "x").unwrap();
    for (verb, effects) in [
        ("git.add", json!(["reads_repo", "writes_repo"])),
        ("git.commit", json!(["reads_repo", "writes_repo"])),
        ("git.restore", json!(["reads_repo", "writes_repo", "destructive"])),
        ("git.switch", json!(["reads_repo", "writes_repo"])),
    ] {
        let help = env.request(&json!({ "help": verb }))["help"].clone();
        assert_eq!(help["effects"], effects, "{verb}: {help}");
        assert_eq!(help["policy"]["decision"], "ask", "{verb}: {help}");
    }
    // No terminal to ask on: refused, and nothing was staged.
    let r = env.op("git.add", json!({ "paths": ["a.txt"] }));
    assert_eq!(r["error"]["code"], "consent_required", "{r}");
    assert_eq!(r["error"]["rule"], "default:writes_repo");
    assert!(
        git(&env.root, &["diff", "--cached", "--name-only"]).trim().is_empty(),
        "nothing may be staged"
    );
}
