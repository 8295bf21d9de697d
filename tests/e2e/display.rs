//! What verbgate shows a person cannot be rewritten or pushed out of view
//! by what a caller sends: the `verbgate audit` table, the MCP client's
//! name recorded in the trail, and the consent question (through the
//! official Python SDK).

use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;
use verbgate_tests::{target_dir, verbgate_bin, Env};

/// Characters a terminal or UI acts on or hides: none may reach a person raw.
fn hidden(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{feff}')
}

/// Run tests/python/mcp_display.py in `mode` against `env`.
fn python(env: &Env, mode: &str) -> Value {
    let python = target_dir().join("py/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run `just python-env` (part of `just test`)",
        python.display()
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("python/mcp_display.py");
    let out = Command::new(&python)
        .arg(&script)
        .arg(verbgate_bin())
        .arg(&env.home)
        .arg(&env.root)
        .arg(&env.plugins)
        .arg(mode)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "python client failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

#[test]
fn terminal_escapes_in_an_op_name_cannot_rewrite_the_audit_table() {
    // Attack (issue 25): an unknown op name made of control sequences moved
    // the cursor up, erased the previous row and printed a fake one.
    let env = Env::new();
    assert_eq!(env.op("job.list", json!({}))["ok"], true);
    let forged =
        "\x1b[1A\x1b[2K\r2026-01-01T00:00:00.000Z cli local git.status allow default:allow ok";
    let bidi = "git.\u{202e}sutats\u{200b}";
    for name in [forged, bidi] {
        assert_eq!(env.op(name, json!({}))["error"]["code"], "unknown_verb");
    }
    let out = env.cmd(&["audit"]).output().unwrap();
    assert!(out.status.success());
    let table = String::from_utf8(out.stdout).expect("the table is UTF-8");
    let raw: Vec<char> = table.chars().filter(|&c| c != '\n' && hidden(c)).collect();
    assert!(raw.is_empty(), "the table printed {raw:?} raw:\n{table}");
    assert_eq!(table.lines().count(), 4, "a header and one line per op:\n{table}");
    assert!(table.contains(r"\u{1b}[1A\u{1b}[2K\r2026"), "the escape is shown, visibly:\n{table}");
    assert!(table.contains(r"git.\u{202e}sutats\u{200b}"), "{table}");
    // The JSON lines stay exact: the op name as it was sent.
    let rows = env.audit_rows();
    let verbs: Vec<&str> = rows.iter().map(|r| r["verb"].as_str().unwrap()).collect();
    assert_eq!(verbs, ["job.list", forged, bidi]);
}

#[test]
fn a_megabyte_client_name_is_recorded_clipped_and_escaped() {
    // Attack (issue 25): clientInfo was stored in every row unbounded; a
    // 3 MB name grew audit.db by 44 MB for one 8-op request.
    let env = Env::new();
    let v = python(&env, "client");
    let results = v["result"]["results"].as_array().unwrap();
    assert_eq!(results.len(), 8, "{v}");
    assert!(results.iter().all(|r| r["ok"] == true), "{v}");
    let rows = env.audit_rows();
    assert_eq!(rows.len(), 8);
    for row in &rows {
        let client = row["client"].as_str().unwrap();
        assert!(
            client.len() <= 700,
            "the client name is bounded where it enters: {} bytes",
            client.len()
        );
        assert!(client.starts_with(r"\u{1b}[2J\u{1b}[1;1Hnnn"), "{client}");
        assert!(client.contains("bytes not shown") && client.ends_with(r"/1\u{202e}0"), "{client}");
        assert!(!client.chars().any(hidden), "{client:?}");
    }
    let state = env.home.join("state");
    let size: u64 = std::fs::read_dir(&state)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with("audit.db"))
        .map(|e| e.metadata().unwrap().len())
        .sum();
    assert!(size < 1 << 20, "audit.db and its journal are {size} bytes after one 8-op request");
}

#[test]
fn the_consent_question_shows_what_runs_first_escaped_and_bounded() {
    // Attack (issue 25): the `args:` line showed a bidi override and a
    // zero-width space raw, and a 20 kB value made a 40 kB question whose
    // program and argv came after it.
    let env = Env::new();
    env.install_from(
        "fixture-echo",
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/contract-0.1.0/fixture-echo.wasm"),
    );
    let v = python(&env, "consent");
    assert_eq!(v["result"]["results"][0]["error"]["code"], "consent_declined", "{v}");
    let message = v["asked"][0].as_str().unwrap();
    assert!(message.len() <= 4096, "the question is {} bytes:\n{message}", message.len());
    let raw: Vec<char> = message.chars().filter(|&c| c != '\n' && hidden(c)).collect();
    assert!(raw.is_empty(), "the question shows {raw:?} raw:\n{message}");
    let lines: Vec<&str> = message.lines().collect();
    assert!(lines[0].contains("`echo.argv`"), "{message}");
    let runs = lines[1];
    assert!(
        runs.starts_with("runs: ")
            && runs.contains("verbgate-fixture-cli argv \"\\u{202e}gnp.exe\\u{200b}yyy"),
        "the program and argv come first: {message}"
    );
    assert!(runs.contains("bytes not shown"), "a cut value says so: {runs}");
    let args =
        lines.iter().find(|l| l.starts_with("args: ")).unwrap_or_else(|| panic!("{message}"));
    assert!(args.contains(r"\u202egnp.exe\u200byyy") && args.contains("bytes not shown"), "{args}");
}

#[test]
fn a_row_holding_a_value_verbgate_never_writes_is_named_and_hides_no_other() {
    // The trail is in VERBGATE_HOME (hostile input), and a newer verbgate
    // may record an outcome this one does not know: that row is named as
    // unreadable — the escape in it shown, not run — and the rows around
    // it are listed as before, in the table and in JSON.
    let env = Env::new();
    for _ in 0..3 {
        assert_eq!(env.op("job.list", json!({}))["ok"], true);
    }
    let db = env.home.join("state/audit.db");
    let script = "import sqlite3,sys\nc=sqlite3.connect(sys.argv[1])\nc.execute(\"UPDATE audit SET outcome=? WHERE id=2\", ('\\x1b[2Jfuture_code',))\nc.commit()\n";
    assert!(std::process::Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(&db)
        .status()
        .unwrap()
        .success());
    let out = env.cmd(&["audit"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(!table.contains('\x1b'), "{table}");
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 4, "a header and three rows:\n{table}");
    assert!(
        lines[2].starts_with("row 2 (job.list): cannot be shown: ")
            && lines[2].contains(r"unknown outcome `\u{1b}[2Jfuture_code`"),
        "{table}"
    );
    assert!(
        lines[1].contains("job.list") && lines[3].contains("job.list") && lines[3].contains(" ok "),
        "{table}"
    );
    let rows = env.audit_rows();
    assert_eq!(rows.len(), 3, "{rows:?}");
    assert_eq!(rows[1]["id"], 2);
    assert!(rows[1]["unreadable"].as_str().unwrap().contains("unknown outcome"), "{rows:?}");
    assert_eq!(
        (rows[0]["outcome"].as_str(), rows[2]["outcome"].as_str()),
        (Some("ok"), Some("ok"))
    );
}
