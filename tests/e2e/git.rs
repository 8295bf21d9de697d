//! The bundled git verbs against temporary repositories built by the test,
//! compared with what git itself reports.

use serde_json::{json, Value};
use verbgate_tests::{git, Env};

fn repo_env() -> Env {
    let env = Env::new();
    git(&env.root, &["init", "-q", "-b", "main"]);
    git(&env.root, &["config", "user.name", "Ada Lovelace"]);
    git(&env.root, &["config", "user.email", "ada@example.com"]);
    env
}

fn entry<'a>(status: &'a Value, path: &str) -> &'a Value {
    status["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["path"] == path)
        .unwrap_or_else(|| panic!("no entry {path} in {status}"))
}

#[test]
fn status_reports_branch_staged_unstaged_untracked_and_renames() {
    let env = repo_env();
    let root = &env.root;
    std::fs::write(root.join("a.txt"), "one\n").unwrap();
    std::fs::write(root.join("old name.txt"), "rename me\n").unwrap();
    git(root, &["add", "."]);
    git(root, &["commit", "-q", "-m", "first"]);
    std::fs::write(root.join("a.txt"), "one\ntwo\n").unwrap(); // unstaged
    std::fs::write(root.join("b.txt"), "new\n").unwrap();
    git(root, &["add", "b.txt"]); // staged add
    git(root, &["mv", "old name.txt", "new name.txt"]); // staged rename
    std::fs::write(root.join("untracked.txt"), "?\n").unwrap();

    let r = env.op("git.status", json!({}));
    assert_eq!(r["ok"], true, "{r}");
    let s = &r["result"];
    let head = git(root, &["rev-parse", "HEAD"]);
    assert_eq!(s["branch"]["head"], "main");
    assert_eq!(s["branch"]["oid"], head.trim());
    assert_eq!(s["clean"], false);
    let a = entry(s, "a.txt");
    assert_eq!(
        (a["staged"].clone(), a["unstaged"].clone(), a["worktree"].clone()),
        (json!(false), json!(true), json!("M"))
    );
    let b = entry(s, "b.txt");
    assert_eq!((b["staged"].clone(), b["index"].clone()), (json!(true), json!("A")));
    let moved = entry(s, "new name.txt");
    assert_eq!(moved["kind"], "renamed");
    assert_eq!(moved["orig_path"], "old name.txt");
    assert_eq!(entry(s, "untracked.txt")["kind"], "untracked");
    // Exactly the paths git lists, no more.
    let porcelain = git(root, &["status", "--porcelain=v1", "-z", "--untracked-files=all"]);
    let git_count =
        porcelain.split('\0').filter(|r| !r.is_empty() && r.len() > 3 && &r[2..3] == " ").count();
    assert_eq!(s["entries"].as_array().unwrap().len(), git_count, "{porcelain:?} vs {s}");

    let without = env.op("git.status", json!({"untracked": false}));
    assert!(without["result"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .all(|e| e["kind"] != "untracked"));
}

#[test]
fn log_matches_git_with_times_in_utc_and_limits() {
    let env = repo_env();
    let root = &env.root;
    for (i, date) in
        ["2024-01-02T03:04:05+02:00", "2024-02-03T10:00:00-05:00", "2024-03-04T00:00:00+00:00"]
            .iter()
            .enumerate()
    {
        std::fs::write(root.join(format!("f{i}.txt")), format!("{i}\n")).unwrap();
        git(root, &["add", "."]);
        let out = std::process::Command::new("git")
            .current_dir(root)
            .args(["commit", "-q", "-m", &format!("commit {i}"), "-m", &format!("body {i}")])
            .env("GIT_AUTHOR_DATE", date)
            .env("GIT_COMMITTER_DATE", date)
            .status()
            .unwrap();
        assert!(out.success());
    }
    let r = env.op("git.log", json!({"limit": 2, "body": true}));
    assert_eq!(r["ok"], true, "{r}");
    let commits = r["result"]["commits"].as_array().unwrap();
    assert_eq!(commits.len(), 2);
    assert_eq!(r["result"]["truncated"], true);
    let hashes = git(root, &["log", "--format=%H"]);
    let hashes: Vec<&str> = hashes.lines().collect();
    assert_eq!(commits[0]["hash"], hashes[0]);
    assert_eq!(commits[1]["hash"], hashes[1]);
    assert_eq!(commits[0]["parents"], json!([hashes[1]]));
    assert_eq!(commits[0]["subject"], "commit 2");
    assert_eq!(commits[0]["body"], "body 2");
    assert_eq!(commits[0]["author"]["name"], "Ada Lovelace");
    assert_eq!(commits[0]["author"]["email"], "ada@example.com");
    assert_eq!(commits[0]["author"]["time"], "2024-03-04T00:00:00Z");
    assert_eq!(commits[1]["author"]["time"], "2024-02-03T15:00:00Z");

    let all = env.op("git.log", json!({}));
    assert_eq!(all["result"]["commits"].as_array().unwrap().len(), 3);
    assert_eq!(all["result"]["truncated"], false);
    assert!(all["result"]["commits"][0].get("body").is_none());
    // Path filter and a revision range.
    let one = env.op("git.log", json!({"path": "f1.txt"}));
    assert_eq!(one["result"]["commits"].as_array().unwrap().len(), 1, "{one}");
    assert_eq!(one["result"]["commits"][0]["subject"], "commit 1");
    let range = env.op("git.log", json!({"rev": "HEAD~1..HEAD"}));
    assert_eq!(range["result"]["commits"].as_array().unwrap().len(), 1, "{range}");
}

#[test]
fn log_refuses_option_injection_through_rev_and_handles_empty_repos() {
    let env = repo_env();
    let empty = env.op("git.log", json!({}));
    assert_eq!(empty["ok"], true, "{empty}");
    assert_eq!(empty["result"], json!({"commits": [], "truncated": false}));
    for evil in ["--upload-pack=touch /tmp/pwned", "-c", "--output=/tmp/x"] {
        let r = env.op("git.log", json!({ "rev": evil }));
        assert_eq!(r["error"]["code"], "unsafe_argv", "{r}");
    }
    // A path that looks like an option is just a path (it comes after --).
    let r = env.op("git.log", json!({ "path": "-c" }));
    assert_eq!(r["ok"], true, "{r}");
}

#[test]
fn outside_a_repository_the_host_refuses_before_git_runs() {
    // (git would fall back to `--no-index`: see
    // hostile_repo::git_verbs_refuse_a_root_that_is_no_repository.)
    let env = Env::new();
    let r = env.op("git.status", json!({}));
    assert_eq!(r["error"]["code"], "not_a_repository", "{r}");
}

fn commit_all(root: &std::path::Path, msg: &str) {
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", msg]);
}

#[test]
fn diff_reports_numstat_and_patch_and_flags_truncation() {
    let env = repo_env();
    let root = &env.root;
    std::fs::write(root.join("a.txt"), "one\ntwo\n").unwrap();
    std::fs::write(root.join("old.txt"), "rename me please\nsecond line\n").unwrap();
    std::fs::write(root.join("bin.dat"), [0u8, 1, 2, 3]).unwrap();
    commit_all(root, "base");
    std::fs::write(root.join("a.txt"), "one\nTWO\nthree\n").unwrap();
    std::fs::write(root.join("bin.dat"), [9u8, 0, 8, 7]).unwrap();
    git(root, &["mv", "old.txt", "new.txt"]);

    let r = env.op("git.diff", json!({"rev": "HEAD"}));
    assert_eq!(r["ok"], true, "{r}");
    let files = r["result"]["files"].as_array().unwrap();
    let a = files.iter().find(|f| f["path"] == "a.txt").unwrap();
    assert_eq!((a["added"].clone(), a["deleted"].clone()), (json!(2), json!(1)));
    let renamed = files.iter().find(|f| f["path"] == "new.txt").unwrap();
    assert_eq!(renamed["orig_path"], "old.txt");
    assert_eq!(files.iter().find(|f| f["path"] == "bin.dat").unwrap()["binary"], true);
    assert!(r["result"]["patch"].as_str().unwrap().contains("+TWO"));
    assert_eq!(r["result"]["truncated"], false);
    // Numstat agrees with git's own.
    let numstat = git(root, &["diff", "--numstat", "HEAD", "--", "a.txt"]);
    assert!(numstat.starts_with("2\t1\ta.txt"), "{numstat}");

    let staged = env.op("git.diff", json!({"staged": true, "patch": false}));
    let staged_files: Vec<&str> = staged["result"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(staged_files, ["new.txt"], "{staged}");
    assert_eq!(staged["result"]["patch"], Value::Null);

    // A 5 MB diff: cut at the capture bound, and said so.
    let big: String = (0..100_000)
        .map(|i| format!("line {i} of a very large change, padded to be long enough\n"))
        .collect();
    std::fs::write(root.join("big.txt"), &big).unwrap();
    git(root, &["add", "big.txt"]);
    let huge = env.op("git.diff", json!({"staged": true}));
    assert_eq!(huge["ok"], true, "{}", &huge.to_string()[..500.min(huge.to_string().len())]);
    assert_eq!(huge["result"]["truncated"], true);
    assert!(huge["result"]["patch"].as_str().unwrap().len() < 1_100_000);
}

#[test]
fn show_and_branches_including_a_merge_commit() {
    let env = repo_env();
    let root = &env.root;
    std::fs::write(root.join("base.txt"), "base\n").unwrap();
    commit_all(root, "base");
    git(root, &["checkout", "-q", "-b", "feature"]);
    std::fs::write(root.join("feature.txt"), "f\n").unwrap();
    commit_all(root, "feature work");
    git(root, &["checkout", "-q", "main"]);
    std::fs::write(root.join("main.txt"), "m\n").unwrap();
    commit_all(root, "main work");
    git(root, &["merge", "-q", "--no-ff", "feature", "-m", "merge feature"]);

    let show = env.op("git.show", json!({}));
    assert_eq!(show["ok"], true, "{show}");
    let c = &show["result"]["commit"];
    assert_eq!(c["subject"], "merge feature");
    assert_eq!(c["parents"].as_array().unwrap().len(), 2, "a merge has two parents: {show}");
    let files: Vec<&str> = show["result"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(files, ["feature.txt"], "first-parent diff of the merge: {show}");

    let log = env.op("git.log", json!({"limit": 1}));
    assert_eq!(log["result"]["commits"][0]["hash"], c["hash"]);

    let b = env.op("git.branches", json!({}));
    let branches = b["result"]["branches"].as_array().unwrap();
    let names: Vec<&str> = branches.iter().map(|x| x["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["feature", "main"], "{b}");
    let main = branches.iter().find(|x| x["name"] == "main").unwrap();
    assert_eq!(main["current"], true);
    assert_eq!(main["commit"], c["hash"]);
    assert_eq!(main["kind"], "local");
}

#[test]
fn paths_outside_the_root_are_refused() {
    let env = repo_env();
    std::fs::write(env.root.join("f"), "x").unwrap();
    commit_all(&env.root, "one");
    std::os::unix::fs::symlink("/etc", env.root.join("escape")).unwrap();
    for bad in ["../../etc", "/etc", "escape", "escape/passwd"] {
        let r = env.op("git.log", json!({ "path": bad }));
        assert_eq!(r["ok"], false, "{bad}: {r}");
        assert_eq!(r["error"]["code"], "plan_refused", "{bad}: {r}");
        assert_eq!(r["error"]["path"], bad);
    }
    let r = env.op("git.status", json!({ "repo": "../" }));
    assert_eq!(r["error"]["code"], "plan_refused", "{r}");
    assert_eq!(env.op("git.log", json!({ "path": "f" }))["ok"], true);
}

#[test]
fn status_survives_a_non_utf8_file_name() {
    use std::os::unix::ffi::OsStrExt;
    let env = repo_env();
    std::fs::write(env.root.join("ok.txt"), "x").unwrap();
    commit_all(&env.root, "one");
    let name = std::ffi::OsStr::from_bytes(b"bad-\xff-name.txt");
    std::fs::write(env.root.join(name), "x").unwrap();
    let r = env.op("git.status", json!({}));
    assert_eq!(r["ok"], true, "{r}");
    let entries = r["result"]["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0]["kind"], "untracked");
    assert_eq!(
        entries[0]["path"], "bad-\u{fffd}-name.txt",
        "non-UTF-8 bytes are replaced, not dropped"
    );
}

/// A name holding git's field separator (0x1f) would shift every later
/// field of a log record (the subject read as an email, and so on): the
/// record's hashes and dates give it away, and the op says so.
#[test]
fn a_unit_separator_in_an_author_name_is_refused_not_misread() {
    let env = repo_env();
    let out = std::process::Command::new("git")
        .current_dir(&env.root)
        .args([
            "-c",
            "user.name=A\u{1f}B",
            "-c",
            "user.email=a@example.com",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "shifted",
        ])
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env_remove("GIT_AUTHOR_NAME")
        .env_remove("GIT_COMMITTER_NAME")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r = env.op("git.log", json!({ "limit": 1 }));
    assert_eq!(r["error"]["code"], "invalid_output", "{r}");
}
