//! `verbgate audit export --format jsonl`: the whole trail (not the 100
//! rows `verbgate audit` shows), oldest first, a page at a time, each line
//! valid against the schema `--schema` prints (pinned in golden.rs), with
//! continuation by `--after-id`, rows still running handed out again, a
//! row this verbgate cannot read exported as such, hostile text kept
//! exact, and a reader that goes away (`| head`) not an error.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::process::Stdio;
use verbgate::audit::{AuditStore, Record, RowOutcome, Transport};
use verbgate_tests::Env;

fn export(env: &Env, args: &[&str]) -> (Vec<Value>, String) {
    let out =
        env.cmd(&[&["audit", "export", "--format", "jsonl"][..], args].concat()).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "export failed: {stderr}");
    let lines = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    (lines, stderr)
}

#[test]
fn the_whole_trail_exports_in_order_each_line_valid_and_continues_by_id() {
    let env = Env::with_plugin("fixture-echo");
    // Real ops first: one that runs, one that names no verb.
    let ran = env.op("echo.argv", json!({"word": "a"}));
    let ran_outcome = if ran["ok"] == true { json!("ok") } else { ran["error"]["code"].clone() };
    env.op("no.such", json!({}));
    let now = verbgate::jobs::process::now_ms();
    let store = AuditStore::open(&env.home.join("state")).unwrap();
    let hostile = "\u{1b}[2J\u{202e}evil\n";
    let mut rows: Vec<Record> = (0..2400)
        .map(|i| Record {
            time_ms: now + i,
            transport: Transport::Http,
            caller: format!("bulk{hostile}"),
            verb: "echo.argv".into(),
            args: r#"{"words":["x"]}"#.into(),
            outcome: RowOutcome::Ok,
            ..Record::default()
        })
        .collect();
    // One cut at the args bound (not JSON), one still running.
    rows[10].args = r#"{"words":["xxxx…(+4000 bytes)"#.into();
    rows[2000].outcome = RowOutcome::Started;
    store.append_all(&rows).unwrap();
    // A row a newer verbgate (or an edit) left with an unknown transport.
    let db = rusqlite::Connection::open(env.home.join("state/audit.db")).unwrap();
    db.execute(
        "UPDATE audit SET transport = 'carrier-pigeon' WHERE id = (SELECT max(id) FROM audit)",
        [],
    )
    .unwrap();
    drop(db);

    let (lines, stderr) = export(&env, &[]);
    assert_eq!(lines.len(), 2402, "every row, past the page size: {stderr}");
    let ids: Vec<i64> = lines.iter().map(|l| l["id"].as_i64().unwrap()).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "oldest first, each once");
    let first = &lines[0];
    assert_eq!(first["schema"], "verbgate.audit/1");
    assert_eq!(first["verb"], "echo.argv");
    assert_eq!(first["args"]["word"], "a", "args are JSON, not a string: {first}");
    assert_eq!(first["outcome"], ran_outcome, "{first}");
    assert_eq!(first["ok"], ran_outcome == "ok");
    assert_eq!(lines[1]["outcome"], "unknown_verb");
    assert_eq!(lines[2]["caller"], format!("bulk{hostile}"), "hostile text exact, JSON-escaped");
    assert!(
        lines[12]["args"].is_null() && lines[12]["args_text"].as_str().unwrap().contains("+4000")
    );
    let last = lines.last().unwrap();
    assert!(last["unreadable"].as_str().unwrap().contains("carrier-pigeon"), "{last}");
    // Each line fits the published schema.
    let out = env.cmd(&["audit", "export", "--schema"]).output().unwrap();
    let schema: Value = serde_json::from_slice(&out.stdout).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    for l in &lines {
        let errors: Vec<String> = validator.iter_errors(l).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{errors:?}: {l}");
    }
    // The running op makes the continuation start before it.
    let running = lines[2002]["id"].as_i64().unwrap();
    assert_eq!(lines[2002]["outcome"], "started");
    assert!(stderr.contains(&format!("--after-id {}", running - 1)), "{stderr}");
    let (again, _) = export(&env, &["--after-id", &(running - 1).to_string()]);
    assert_eq!(again.len(), 400);
    assert_eq!(again[0]["id"], running);
    let (none, stderr) = export(&env, &["--after-id", &ids.last().unwrap().to_string()]);
    assert!(none.is_empty() && stderr.contains("exported 0 rows"), "{stderr}");
    let (only, stderr) = export(&env, &["--outcome", "unknown_verb"]);
    assert_eq!(only.len(), 1);
    // Asking only for `ok` rows: the running op is not among them, but the
    // continuation still stops before it, so its end is exported later.
    let (oks, stderr_ok) = export(&env, &["--outcome", "ok"]);
    assert!(oks.iter().filter(|l| l.get("unreadable").is_none()).all(|l| l["outcome"] == "ok"));
    assert!(stderr_ok.contains(&format!("--after-id {}", running - 1)), "{stderr_ok}");
    assert!(
        !stderr.contains("still running"),
        "the running op lies after the only unknown_verb row: {stderr}"
    );
    let bad = env.cmd(&["audit", "export", "--after-id=-5"]).output().unwrap();
    assert!(!bad.status.success());
    let said = String::from_utf8_lossy(&bad.stderr);
    assert!(said.contains("-5") && said.contains("--after-id"), "{said}");

    // A reader that stops after one line: the export ends quietly.
    let mut child = env
        .cmd(&["audit", "export"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first_line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut first_line).unwrap();
    let status = child.wait().unwrap();
    assert!(first_line.contains("verbgate.audit/1"));
    assert!(status.success(), "a closed pipe is not a failure: {status:?}");
}
