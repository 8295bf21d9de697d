//! `just demo`: a real MCP session against `verbgate serve` on this
//! repository, printing every request and response.
//!
//! It builds nothing itself (`just demo` builds first); it creates a
//! throwaway verbgate home, generates a signing key, trusts it, signs a
//! plugin component into the plugin directory, then talks MCP over stdio
//! with rmcp's client exactly as Claude, Cursor or VS Code would.

use anyhow::{Context, Result};
use serde_json::{json, Value};
use std::process::Command;
use verbgate_tests::mcp::Session;
use verbgate_tests::{bin_dir, component};

/// Longest response printed in full; longer ones are cut with a note.
const PRINT_MAX: usize = 2400;

fn verbgate(home: &std::path::Path, args: &[&str]) -> Result<Value> {
    let out =
        Command::new(bin_dir().join("verbgate")).env("VERBGATE_HOME", home).args(args).output()?;
    let text = String::from_utf8_lossy(&out.stdout);
    anyhow::ensure!(
        out.status.success(),
        "verbgate {args:?} failed: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(serde_json::from_str(text.trim())?)
}

fn show(title: &str, request: &Value, response: &Value) {
    println!("\n\x1b[1m── {title}\x1b[0m");
    println!("\x1b[36m→ {request}\x1b[0m");
    let pretty = serde_json::to_string_pretty(response).unwrap();
    if pretty.len() > PRINT_MAX {
        let cut = (0..=PRINT_MAX).rev().find(|i| pretty.is_char_boundary(*i)).unwrap_or(0);
        println!("← {}\n  … ({} more bytes)", &pretty[..cut], pretty.len() - cut);
    } else {
        println!("← {pretty}");
    }
}

#[tokio::main]
async fn main() -> Result<()> {
    let repo = std::env::current_dir()?;
    let tmp = tempfile::tempdir()?;
    let home = tmp.path().join("home");
    let plugins = home.join("plugins");
    std::fs::create_dir_all(&plugins)?;

    println!("\x1b[1mverbgate demo\x1b[0m — home {} , root {}", home.display(), repo.display());
    let key = verbgate(&home, &["keygen", "--name", "demo"])?;
    println!("keygen: {}", key["key_id"]);
    verbgate(
        &home,
        &["trust", "add", key["public_key"].as_str().unwrap(), "--name", "demo author"],
    )?;
    let signed = plugins.join("fixture-echo.wasm");
    let sig = verbgate(
        &home,
        &[
            "sign",
            component("fixture-echo").to_str().unwrap(),
            "--key",
            key["secret_key"].as_str().unwrap(),
            "--out",
            signed.to_str().unwrap(),
        ],
    )?;
    println!("signed: {} by {}", sig["file"], sig["signer"]);
    let fixture_cli = bin_dir().join("verbgate-fixture-cli");
    // The policy's defaults: reads run; repository code runs in the OS
    // sandbox without asking (the root, no network); writes ask a person.
    std::fs::write(
        home.join("verbgate.toml"),
        format!("[programs]\nverbgate-fixture-cli = {:?}\n", fixture_cli.display().to_string()),
    )?;
    let doctor = verbgate(&home, &["--root", repo.to_str().unwrap(), "doctor"])?;
    println!(
        "OS sandbox: {} ({})",
        doctor["sandbox"]["mechanism"], doctor["sandbox"]["what_happens"]
    );
    println!("git.status's profile: {}", doctor["verbs"]["git.status"]);

    let mut serve = tokio::process::Command::new(bin_dir().join("verbgate"));
    serve.env("VERBGATE_HOME", &home).arg("--root").arg(&repo).arg("serve");
    let session = Session::start(serve).await.context("starting `verbgate serve`")?;
    println!("MCP session up, protocol {}", session.protocol_version());

    let tools = session.tools().await?;
    let tool_bytes = serde_json::to_string(&tools[0])?.len();
    show(
        "tools/list (one tool, whatever is loaded)",
        &json!({"method": "tools/list"}),
        &json!({ "tools": tools.len(), "name": tools[0]["name"], "bytes": tool_bytes, "description": tools[0]["description"] }),
    );

    let steps = [
        ("the catalog", json!({"help": true})),
        ("one verb's contract", json!({"help": "git.log"})),
        ("git.status and git.log in one batch", json!({"ops": [{"op": "git.status"}, {"op": "git.log", "args": {"limit": 3}}]})),
        ("a typo is named, with the schema to fix it", json!({"ops": [{"op": "git.log", "args": {"limt": 3}}]})),
        (
            "option injection never reaches a program",
            json!({"ops": [{"op": "git.log", "args": {"rev": "--output=/tmp/pwned"}}, {"op": "echo.argv", "args": {"flag": "--upload-pack=evil", "tail": ["-c"]}}]}),
        ),
        ("dry_run shows the plan without running it", json!({"ops": [{"op": "git.log", "args": {"limit": 1, "path": "README.md"}, "dry_run": true}]})),
        (
            "the policy: cargo.metadata runs repository code, confined by the OS sandbox to the root without network, so it runs without asking",
            json!({"ops": [{"op": "cargo.metadata"}]}),
        ),
        (
            "the policy: a git write asks a person first — this client cannot be asked, so nothing runs",
            json!({"ops": [{"op": "git.add", "args": {"paths": ["README.md"]}}]}),
        ),
    ];
    for (title, request) in steps {
        let reply = session.request(request.clone()).await?;
        show(title, &request, &reply.structured);
    }

    // A job: cargo.check of one small package of this workspace.
    let help = json!({"help": "cargo.check"});
    let contract = session.request(help.clone()).await?.structured;
    show(
        "cargo.check's contract (spawn verbs need its fingerprint)",
        &help,
        &json!({ "signature": contract["help"]["signature"], "schema_fingerprint": contract["help"]["schema_fingerprint"] }),
    );
    let fp = contract["help"]["schema_fingerprint"].clone();
    let spawn = json!({"ops": [{"op": "cargo.check", "args": {"package": "verbgate-fixture-cli"}, "schema_fingerprint": fp}]});
    let started = session.request(spawn.clone()).await?.structured;
    show("cargo.check starts as a background job", &spawn, &started);
    let id =
        started["results"][0]["result"]["job"]["id"].as_str().context("no job id")?.to_string();
    let wait =
        json!({"ops": [{"op": "job.wait", "args": {"ids": [&id], "max_wait_seconds": 240}}]});
    let waited = session.request(wait.clone()).await?.structured;
    show("job.wait joins it (a bounded wait, every id accounted for)", &wait, &waited);
    let result = json!({"ops": [{"op": "job.result", "args": {"id": &id}}]});
    let mapped = session.request(result.clone()).await?.structured;
    show("job.result: cargo's JSON messages mapped by the cargo plugin", &result, &mapped);
    anyhow::ensure!(
        mapped["results"][0]["result"]["status"] == "succeeded",
        "cargo.check did not succeed: {mapped}"
    );
    session.close().await?;
    let audit = Command::new(bin_dir().join("verbgate"))
        .env("VERBGATE_HOME", &home)
        .args(["audit", "--limit", "12"])
        .output()?;
    anyhow::ensure!(
        audit.status.success(),
        "verbgate audit failed: {}",
        String::from_utf8_lossy(&audit.stderr)
    );
    println!(
        "\n\x1b[1m── verbgate audit: every op, the policy's decision and who made it\x1b[0m\n{}",
        String::from_utf8_lossy(&audit.stdout)
    );
    println!("\nDone. Point your MCP host at `verbgate serve` (see README.md).");
    Ok(())
}
