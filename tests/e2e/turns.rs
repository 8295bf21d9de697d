//! Ops take turns on the root (`host/src/dispatch/turns.rs`): a write in a
//! batch must not change what another op's checks saw before that op runs,
//! in the same request or from another process. Each test is an attack
//! that succeeded against the code before turns (run it with
//! `VERBGATE_TEST_BIN=<older verbgate>` to watch it), repeated so that a
//! race which wins only sometimes still shows.

use serde_json::{json, Value};
use std::path::Path;
use verbgate_tests::{git, require_test_tool, Env};

/// A root repository on `main` whose `sub/` is a plain directory, with a
/// branch `evil` on which `sub` is a symlink to a sibling project outside
/// the root; the sibling's history and files carry `SIBLING-SECRET`.
fn switch_env() -> Env {
    require_test_tool("rg");
    let env = Env::new().allowing(&["git.*", "rg.*"]);
    let sibling = env.tmp.path().join("sibling");
    std::fs::create_dir_all(&sibling).unwrap();
    git(&sibling, &["init", "-q", "-b", "main"]);
    std::fs::write(sibling.join("secret.txt"), "SIBLING-SECRET\n").unwrap();
    git(&sibling, &["add", "secret.txt"]);
    git(&sibling, &["commit", "-q", "-m", "SIBLING-SECRET history"]);
    let root = &env.root;
    git(root, &["init", "-q", "-b", "main"]);
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::write(root.join("sub/readme.txt"), "inside\n").unwrap();
    git(root, &["add", "sub"]);
    git(root, &["commit", "-q", "-m", "inside"]);
    git(root, &["switch", "-q", "-c", "evil"]);
    git(root, &["rm", "-q", "-r", "sub"]);
    std::os::unix::fs::symlink("../sibling", root.join("sub")).unwrap();
    git(root, &["add", "sub"]);
    git(root, &["commit", "-q", "-m", "sub leads out"]);
    git(root, &["switch", "-q", "main"]);
    assert!(root.join("sub").is_dir() && !root.join("sub").is_symlink());
    env
}

fn leaked(answer: &Value) -> bool {
    answer.to_string().contains("SIBLING-SECRET")
}

#[test]
fn a_switch_in_the_batch_cannot_lead_later_ops_out_of_the_root() {
    // Seen before turns: git.log {repo: "sub"} returned the sibling's
    // history in 14 of 20 trials, rg.search its file in 6 of 47.
    let env = switch_env();
    for trial in 0..12 {
        git(&env.root, &["switch", "-q", "-f", "main"]);
        let r = env.request(&json!({"ops": [
            {"op": "git.switch", "args": {"branch": "evil"}},
            {"op": "git.log", "args": {"repo": "sub"}},
            {"op": "rg.search", "args": {"pattern": "SIBLING-SECRET", "paths": ["sub"]}},
            {"op": "rg.search", "args": {"pattern": "SIBLING-SECRET", "paths": ["sub/secret.txt"]}},
        ]}));
        assert!(!leaked(&r), "trial {trial}: an op read outside the root after the switch: {r}");
        assert_eq!(r["results"][0]["ok"], true, "{r}");
        // The later ops ran after the switch, so they saw the symlink and
        // were refused — not merely lucky.
        for i in 1..4 {
            assert_eq!(r["results"][i]["ok"], false, "trial {trial}, op {i}: {r}");
        }
    }
}

#[test]
fn ops_after_a_write_see_what_it_wrote() {
    // Seen before turns: [git.add, git.commit] on a fresh repository failed
    // 4 of 6 times (the commit ran before the add had staged).
    let env = Env::new().allowing(&["git.*"]);
    git(&env.root, &["init", "-q", "-b", "main"]);
    git(&env.root, &["config", "user.name", "Ada Lovelace"]);
    git(&env.root, &["config", "user.email", "ada@example.com"]);
    for trial in 0..6 {
        let name = format!("f{trial}.txt");
        std::fs::write(env.root.join(&name), format!("{trial}\n")).unwrap();
        let r = env.request(&json!({"ops": [
            {"op": "git.add", "args": {"paths": [&name]}},
            {"op": "git.commit", "args": {"message": format!("add {name}")}},
            {"op": "git.status", "args": {}},
        ]}));
        assert_eq!(r["status"], "success", "trial {trial}: {r}");
        let files = git(&env.root, &["show", "--name-only", "--format=", "HEAD"]);
        assert_eq!(files.trim(), name, "trial {trial}: the commit has what the add staged");
        // The status after the commit sees a clean tree.
        assert_eq!(r["results"][2]["result"]["entries"], json!([]), "trial {trial}: {r}");
    }
}

#[test]
fn a_failed_commit_says_why_even_when_git_said_it_on_stdout() {
    let env = Env::new().allowing(&["git.*"]);
    git(&env.root, &["init", "-q", "-b", "main"]);
    std::fs::write(env.root.join("untracked.txt"), "x\n").unwrap();
    let r = env.op("git.commit", json!({"message": "nothing staged"}));
    assert_eq!(r["ok"], false, "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("nothing is staged"), "{r}");
}

/// A repository whose `.git/config` includes `evil.cfg` on branch `evil`
/// only, where that file names a clean filter for `*.txt` (the filter
/// writes `marker`): on `main`, every check finds nothing to refuse.
fn include_if_env(marker: &Path) -> Env {
    let env = Env::new().allowing(&["git.*"]);
    let root = &env.root;
    git(root, &["init", "-q", "-b", "main"]);
    std::fs::write(root.join("a.txt"), "a\n").unwrap();
    git(root, &["add", "a.txt"]);
    git(root, &["commit", "-q", "-m", "a"]);
    git(root, &["switch", "-q", "-c", "evil"]);
    std::fs::write(
        root.join("evil.cfg"),
        format!("[filter \"x\"]\n\tclean = touch {}\n", marker.display()),
    )
    .unwrap();
    std::fs::write(root.join(".gitattributes"), "*.txt filter=x\n").unwrap();
    git(root, &["add", "evil.cfg", ".gitattributes"]);
    git(root, &["commit", "-q", "-m", "evil"]);
    git(root, &["switch", "-q", "main"]);
    git(root, &["config", "includeIf.onbranch:evil.path", "../evil.cfg"]);
    env
}

#[test]
fn a_switch_in_the_batch_cannot_bring_a_filter_into_a_later_add() {
    // Seen before turns: the filter ran inside git.add in 20 of 32 trials.
    let marker = tempfile::tempdir().unwrap();
    let marker = marker.path().join("filter-ran");
    let env = include_if_env(&marker);
    for trial in 0..12 {
        // The test's own git must not run the filter either.
        git(&env.root, &["-c", "filter.x.clean=cat", "switch", "-q", "-f", "main"]);
        std::fs::write(env.root.join("a.txt"), format!("changed {trial}\n")).unwrap();
        let r = env.request(&json!({"ops": [
            {"op": "git.switch", "args": {"branch": "evil"}},
            {"op": "git.add", "args": {"paths": ["a.txt"]}},
        ]}));
        assert!(!marker.exists(), "trial {trial}: the repository's filter ran inside git.add: {r}");
        // The switch happened; its read-back is refused like any git op
        // in a repository whose config now names a program.
        assert_eq!(r["results"][0]["error"]["wrote"], true, "{r}");
        assert_eq!(
            r["results"][1]["error"]["code"], "repo_config_runs_programs",
            "trial {trial}: {r}"
        );
    }
}

#[test]
fn another_process_switching_branches_cannot_lead_a_read_out_of_the_root() {
    // A `verbgate request` and a server (here: two CLI processes) on the
    // same root take turns through the lock file in the state directory.
    let env = std::sync::Arc::new(switch_env());
    // One request first makes the home's state (job store, audit trail,
    // lock file), so the two processes below race only on the root.
    assert_eq!(env.op("git.status", json!({}))["ok"], true);
    let switcher = {
        let env = std::sync::Arc::clone(&env);
        std::thread::spawn(move || {
            for i in 0..16 {
                let branch = if i % 2 == 0 { "evil" } else { "main" };
                let r = env
                    .request(&json!({"ops": [{"op": "git.switch", "args": {"branch": branch}}]}));
                assert_eq!(r["results"][0]["ok"], true, "{r}");
            }
        })
    };
    let mut reads = 0;
    while !switcher.is_finished() {
        let r = env.request(&json!({"ops": [{"op": "git.log", "args": {"repo": "sub"}}]}));
        assert!(!leaked(&r), "read {reads}: git.log read the sibling's history: {r}");
        reads += 1;
    }
    switcher.join().unwrap();
    assert!(reads > 3, "the reads overlapped the switches ({reads} reads)");
}

#[test]
fn an_op_still_waiting_for_its_turn_when_its_request_is_cancelled_never_runs() {
    // Seen before: a git.add cancelled by its client after 40 s of waiting
    // for its turn ran anyway once the turn came.
    let env = Env::new().allowing(&["git.*"]);
    git(&env.root, &["init", "-q", "-b", "main"]);
    std::fs::write(env.root.join("a.txt"), "a\n").unwrap();
    assert_eq!(env.op("git.status", json!({}))["ok"], true, "makes the lock file");
    let lock = std::fs::read_dir(env.home.join("state/locks"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "lock"))
        .unwrap();
    // Another process holds the root.
    let mut holder = std::process::Command::new("flock")
        .arg("-x")
        .arg(&lock)
        .arg("sleep")
        .arg("3")
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    verbgate_tests::runtime().block_on(async {
        let s = verbgate_tests::mcp::Session::start(env.serve_command()).await.unwrap();
        s.request_then_cancel(
            json!({"ops": [{"op": "git.add", "args": {"paths": ["a.txt"]}}]}),
            std::time::Duration::from_millis(500),
        )
        .await
        .unwrap();
        holder.wait().unwrap();
        // The turn is free now; give the cancelled op the time it would
        // have needed to run.
        tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
        s.close().await.unwrap();
    });
    assert_eq!(git(&env.root, &["ls-files", "--cached"]), "", "the cancelled git.add ran");
}
