//! `git.fetch` and `git.push` against a local bare repository over
//! `file://`, which only an operator's `[git] transports` opens (and the
//! sandbox's `[[sandbox.allow]]` lets git reach); typed refspecs, no
//! option-shaped ones; results from `--porcelain`. Without the setting the
//! host's `GIT_ALLOW_PROTOCOL` keeps `file` closed. Also the pull-request
//! day's local verbs: `git.blame` and the stash.

use serde_json::json;
use std::path::{Path, PathBuf};
use verbgate_tests::{git, Env};

/// A repository with two commits in the root, and a bare repository beside
/// it (outside the root) that `origin` names by `file://` URL.
fn repos(transports: bool) -> (Env, PathBuf) {
    let bare = tempfile::tempdir().unwrap().keep().canonicalize().unwrap().join("origin.git");
    let allow = |verbs: &str| {
        format!(
            "[[sandbox.allow]]\nverbs = [{verbs}]\nwrite = [{:?}]\n",
            bare.display().to_string()
        )
    };
    let config = if transports {
        format!(
            "[git]\ntransports = [\"https\", \"ssh\", \"file\"]\n{}",
            allow("\"git.fetch\", \"git.push\"")
        )
    } else {
        allow("\"git.fetch\", \"git.push\"")
    };
    let env = Env::new().with_config(&config).allowing(&["git.*"]);
    std::fs::create_dir_all(&bare).unwrap();
    git(&bare, &["init", "-q", "--bare", "-b", "main"]);
    let root = &env.root;
    git(root, &["init", "-q", "-b", "main"]);
    std::fs::write(root.join("f.txt"), "one\ntwo\n").unwrap();
    git(root, &["add", "f.txt"]);
    git(root, &["commit", "-q", "-m", "first"]);
    std::fs::write(root.join("f.txt"), "one\nTWO\nthree\n").unwrap();
    git(root, &["commit", "-q", "-am", "second"]);
    git(root, &["remote", "add", "origin", &format!("file://{}", bare.display())]);
    (env, bare)
}

fn head(dir: &Path, rev: &str) -> String {
    git(dir, &["rev-parse", rev]).trim().to_string()
}

#[test]
fn push_and_fetch_over_file_with_typed_refspecs() {
    let (env, bare) = repos(true);
    let r = env.op("git.push", json!({"refspecs": [{"src": "main", "dst": "refs/heads/main"}]}));
    assert_eq!(r["ok"], true, "{r}");
    let result = &r["result"];
    assert_eq!(result["success"], true, "{r}");
    assert_eq!(
        result["refs"],
        json!([{"status": "new", "from": "refs/heads/main", "to": "refs/heads/main", "summary": "[new branch]", "reason": null}]),
        "{r}"
    );
    assert_eq!(head(&bare, "main"), head(&env.root, "main"));

    // Someone else pushes a commit; fetch reports the ref it updated.
    let other = tempfile::tempdir().unwrap();
    git(other.path(), &["clone", "-q", bare.to_str().unwrap(), "w"]);
    let w = other.path().join("w");
    std::fs::write(w.join("g.txt"), "new\n").unwrap();
    git(&w, &["add", "g.txt"]);
    git(&w, &["commit", "-q", "-m", "theirs"]);
    git(&w, &["push", "-q", "origin", "main"]);
    let r = env.op("git.fetch", json!({}));
    assert_eq!(r["ok"], true, "{r}");
    let refs = r["result"]["refs"].as_array().unwrap();
    assert_eq!(refs.len(), 1, "{r}");
    assert_eq!(
        (refs[0]["status"].as_str(), refs[0]["ref"].as_str()),
        (Some("fast_forward"), Some("refs/remotes/origin/main")),
        "{r}"
    );
    assert_eq!(refs[0]["new"].as_str().unwrap(), head(&bare, "main"));

    // Our main is now behind: a push is rejected (no force), and the
    // lease, which expects what we fetched, lets us overwrite.
    let r = env.op("git.push", json!({"refspecs": [{"src": "main", "dst": "main"}]}));
    assert_eq!(
        (r["result"]["success"].clone(), r["result"]["refs"][0]["status"].clone()),
        (json!(false), json!("rejected")),
        "{r}"
    );
    let r = env.op(
        "git.push",
        json!({"refspecs": [{"src": "main", "dst": "main"}], "force_with_lease": true}),
    );
    assert_eq!(
        (r["result"]["success"].clone(), r["result"]["refs"][0]["status"].clone()),
        (json!(true), json!("forced")),
        "{r}"
    );
    assert_eq!(head(&bare, "main"), head(&env.root, "main"));
}

#[test]
fn option_shaped_or_forcing_refspecs_and_url_remotes_are_refused() {
    let (env, bare) = repos(true);
    for (verb, args) in [
        ("git.push", json!({"refspecs": [{"src": "--force"}]})),
        ("git.push", json!({"refspecs": [{"src": "+main", "dst": "main"}]})),
        ("git.push", json!({"refspecs": [{"src": "main", "dst": "--delete"}]})),
        ("git.fetch", json!({"refspecs": [{"src": "-uthing"}]})),
        ("git.fetch", json!({"remote": "file:///etc"})),
        ("git.push", json!({"remote": "--receive-pack=sh"})),
        ("git.push", json!({"force": true})),
    ] {
        let r = env.op(verb, args.clone());
        assert!(
            ["invalid_args", "unknown_param"]
                .contains(&r["error"]["code"].as_str().unwrap_or_default()),
            "{verb} {args}: {r}"
        );
    }
    let r = env.op("git.fetch", json!({"remote": "nosuch"}));
    assert_eq!(r["ok"], false, "{r}");
    let log = git(&bare, &["log", "--all", "--oneline"]);
    assert!(log.is_empty(), "nothing was pushed: {log}");
}

#[test]
fn file_is_refused_without_the_operators_setting() {
    let (env, bare) = repos(false);
    for verb in ["git.push", "git.fetch"] {
        let r = env.op(verb, json!({"refspecs": [{"src": "main"}]}));
        assert_eq!(r["error"]["code"], "unavailable", "{verb}: {r}");
        let message = r["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("`file`") && message.contains("[git] transports"),
            "names the setting: {r}"
        );
    }
    assert!(
        std::fs::read_dir(bare.join("refs/heads")).unwrap().next().is_none(),
        "nothing reached the bare repository"
    );
}

#[test]
fn blame_gives_ranges_by_commit_and_stash_round_trips() {
    let (env, _bare) = repos(true);
    let r = env.op("git.blame", json!({"path": "f.txt", "content": true}));
    assert_eq!(r["ok"], true, "{r}");
    let ranges = r["result"]["ranges"].as_array().unwrap();
    let spans: Vec<(u64, u64, &str)> = ranges
        .iter()
        .map(|r| {
            (
                r["start"].as_u64().unwrap(),
                r["end"].as_u64().unwrap(),
                r["summary"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(spans, [(1, 1, "first"), (2, 3, "second")], "{r}");
    assert_eq!(ranges[0]["author"], "Ada Lovelace");
    assert_eq!(r["result"]["lines"], json!(["one", "TWO", "three"]));
    let r = env.op("git.blame", json!({"path": "f.txt", "start": 3, "end": 3}));
    assert_eq!(r["result"]["ranges"][0]["start"], 3, "{r}");

    std::fs::write(env.root.join("f.txt"), "changed\n").unwrap();
    let r = env.op("git.stash", json!({"message": "wip on f"}));
    assert_eq!(
        (r["result"]["stashed"].clone(), r["result"]["stash"]["message"].clone()),
        (json!(true), json!("On main: wip on f")),
        "{r}"
    );
    assert_eq!(std::fs::read_to_string(env.root.join("f.txt")).unwrap(), "one\nTWO\nthree\n");
    let r = env.op("git.stash", json!({}));
    assert_eq!(r["result"]["stashed"], false, "nothing left to stash: {r}");
    let r = env.op("git.stashes", json!({}));
    assert_eq!(r["result"]["stashes"].as_array().unwrap().len(), 1, "{r}");
    let r = env.op("git.stash_pop", json!({}));
    assert_eq!(r["result"]["dropped"], true, "{r}");
    assert_eq!(std::fs::read_to_string(env.root.join("f.txt")).unwrap(), "changed\n");
    let r = env.op("git.stash_drop", json!({"index": 0}));
    assert_eq!(r["error"]["code"], "not_found", "{r}");
}
