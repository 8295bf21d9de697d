//! The audit trail fails closed: an op whose row cannot be made durable
//! before it acts does not run (`audit_unavailable`). Fault injection on
//! the real binary: the database write-locked by another connection past
//! the busy timeout, and a file that cannot grow (a full disk, made with
//! the file-size limit). Each was seen to let ops run unrecorded before.

use serde_json::{json, Value};
use std::process::Command;
use verbgate_tests::mcp::Session;
use verbgate_tests::{git, runtime, verbgate_bin, Env};

fn repo_env() -> Env {
    let env = Env::new().allowing(&["git.*"]);
    git(&env.root, &["init", "-q", "-b", "main"]);
    std::fs::write(env.root.join("a.txt"), "a\n").unwrap();
    // A first request makes the state files (job store, audit trail), so
    // that what fails below is the op's row, not verbgate's start.
    assert_eq!(env.op("git.status", json!({}))["ok"], true);
    env
}

fn staged(env: &Env) -> String {
    git(&env.root, &["ls-files", "--cached"])
}

fn rows(env: &Env) -> Vec<Value> {
    let out = env.cmd(&["audit", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn no_op_runs_while_the_trail_is_locked() {
    // Seen before: with audit.db write-locked for 8 s, git ops ran and
    // their rows were lost after the busy timeout.
    let env = repo_env();
    let db = env.home.join("state/audit.db");
    let script = "import sqlite3,sys,time\nc=sqlite3.connect(sys.argv[1],isolation_level=None)\nc.execute('BEGIN EXCLUSIVE')\nprint('locked',flush=True)\ntime.sleep(8)\n";
    let mut locker = Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(&db)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(locker.stdout.as_mut().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(line.trim(), "locked");
    let r = env.op("git.add", json!({"paths": ["a.txt"]}));
    locker.wait().unwrap();
    assert_eq!(r["error"]["code"], "audit_unavailable", "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("did not run"), "{r}");
    assert_eq!(staged(&env), "", "git.add ran although its row could not be written");
}

#[test]
fn no_op_runs_when_the_trail_cannot_grow() {
    // Seen before: with the file unable to grow (a full disk), commits ran
    // and no row existed. A running server's file-size limit, lowered with
    // `prlimit` after its first op, stands in for the full disk (writes
    // fail with EFBIG; SIGXFSZ is ignored so the write returns an error).
    let env = repo_env();
    let before = rows(&env).len();
    let pidfile = env.tmp.path().join("server.pid");
    let mut cmd = tokio::process::Command::new("sh");
    cmd.arg("-c")
        .arg("echo $$ > \"$0\"; trap '' XFSZ; exec \"$@\"")
        .arg(&pidfile)
        .arg(verbgate_bin())
        .args([
            "--root",
            env.root.to_str().unwrap(),
            "--plugins",
            env.plugins.to_str().unwrap(),
            "serve",
        ])
        .env("VERBGATE_HOME", &env.home)
        .env_remove("VERBGATE_LOG")
        .stderr(std::process::Stdio::null());
    runtime().block_on(async {
        let session = Session::start(cmd).await.unwrap();
        let warm = session.request(json!({"ops": [{"op": "git.status"}]})).await.unwrap();
        assert_eq!(warm.structured["status"], "success", "{warm:?}");
        let pid = std::fs::read_to_string(&pidfile).unwrap();
        let limited = Command::new("prlimit")
            .args(["--pid", pid.trim(), "--fsize=4096:4096"])
            .status()
            .unwrap();
        assert!(limited.success());
        let asked =
            session.request(json!({"ops": [{"op": "git.add", "args": {"paths": ["a.txt"]}}]}));
        let answer = tokio::time::timeout(std::time::Duration::from_secs(60), asked).await;
        // The server can no longer write files: stop it outright rather
        // than wait for a clean shutdown.
        let _ = Command::new("kill").args(["-KILL", pid.trim()]).status();
        match answer {
            Ok(r) => {
                let r = r.unwrap();
                assert_eq!(
                    r.structured["results"][0]["error"]["code"], "audit_unavailable",
                    "{r:?}"
                );
            }
            // Seen once in six runs: a server that can no longer write
            // files gave no answer (the cause is not understood yet). What
            // this test is about still holds and is checked below: the op
            // did not run.
            Err(_) => {
                eprintln!("no answer to git.add within 60 s from a server that cannot write files")
            }
        }
        drop(session);
    });
    assert_eq!(staged(&env), "", "git.add ran although its row could not be written");
    // Only the warm-up's row made it.
    assert_eq!(rows(&env).len(), before + 1);
}

#[test]
fn every_op_that_ran_has_its_row_and_refused_requests_have_theirs() {
    let env = repo_env();
    let r = env.op("git.add", json!({"paths": ["a.txt"]}));
    assert_eq!(r["ok"], true, "{r}");
    let too_many: Vec<Value> = (0..9).map(|_| json!({"op": "git.status"})).collect();
    let refused = env.request(&json!({ "ops": too_many }));
    assert_eq!(refused["error"]["code"], "batch_too_large", "{refused}");
    let all = rows(&env);
    let add = all.iter().find(|r| r["verb"] == "git.add").unwrap_or_else(|| panic!("{all:?}"));
    assert_eq!(add["outcome"], "ok", "the row written before the op ran was completed: {add}");
    assert!(add["program"].as_str().unwrap().ends_with("git"), "{add}");
    let req = all
        .iter()
        .find(|r| r["verb"] == "request")
        .unwrap_or_else(|| panic!("no row for the refused request: {all:?}"));
    assert_eq!(req["outcome"], "batch_too_large", "{req}");
}
