//! The fixture CLI: the program fixture verbs run in tests, so tests can
//! assert on what a program *actually received*.
//!
//! - `argv [ARGS...]` — prints `{"argv": [...], "cwd", "env": {...}, "stdin"}`
//! - `sleep MS` — sleeps, then prints `{"slept_ms": MS}`
//! - `exit CODE [TEXT]` — writes TEXT to stderr and exits with CODE
//! - `touch FILE` — creates FILE (relative to the cwd): proof that it ran
//! - `swap DIR TARGET` — replaces the empty directory DIR with a symlink to TARGET
//! - `spew BYTES` — writes BYTES of the repeating digits `0123456789` to stdout
//! - `stubborn MS` — ignores SIGTERM, then sleeps
//! - `family MS` — starts a grandchild (`sleep MS`), prints its pid, sleeps
//! - `escape MS` — leaves its process group for its parent's, prints its pid, sleeps
//! - `entity start [fail]` — an "entity CLI" run: prints `{"entity": ID}`, records
//!   `ID.run` under `.fixture-entities/` in the cwd, then runs until its kill asks
//!   it to stop (`ID.stop` appears: it then SIGTERMs itself); `fail` prints an id
//!   its own kill will not find. Not by pid: the run is in a PID namespace of its
//!   own, and its kill is not.
//! - `entity kill ID` — that CLI's own kill: signals the pid in `ID.pid` if there is
//!   one (a test's decoy), else asks the run to stop; prints what it stopped

use std::io::{Read, Write};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mode = args.first().map(String::as_str).unwrap_or("");
    match mode {
        "argv" => argv(&args[1..]),
        // Replace the (empty) directory DIR with a symlink to TARGET.
        "swap" => {
            std::fs::remove_dir(&args[1]).expect("remove dir");
            std::os::unix::fs::symlink(&args[2], &args[1]).expect("symlink");
        }
        // Leave a trace that this command ran: create the file named.
        "touch" => {
            std::fs::write(args.get(1).map(String::as_str).unwrap_or("touched"), b"ran\n")
                .expect("touch");
        }
        "sleep" => {
            let ms: u64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(0);
            std::thread::sleep(std::time::Duration::from_millis(ms));
            println!("{{\"slept_ms\":{ms}}}");
        }
        "exit" => {
            let code: i32 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(1);
            if let Some(text) = args.get(2) {
                eprintln!("{text}");
            }
            std::process::exit(code);
        }
        "exit-after" => {
            let ms: u64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(0);
            std::thread::sleep(std::time::Duration::from_millis(ms));
            std::process::exit(args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1));
        }
        "spew" => {
            let n: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(0);
            let chunk: Vec<u8> = (0..65_530).map(|i| b'0' + (i % 10) as u8).collect();
            let mut out = std::io::stdout().lock();
            let mut left = n;
            while left > 0 {
                // Chunks are a multiple of 10 long, so the pattern never breaks.
                let k = left.min(chunk.len());
                if out.write_all(&chunk[..k]).is_err() {
                    return;
                }
                left -= k;
            }
        }
        "entity" => entity(&args[1..]),
        "stubborn" => {
            // SAFETY: ignoring a signal is process-wide state we own.
            unsafe {
                libc::signal(libc::SIGTERM, libc::SIG_IGN);
            }
            let ms: u64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(0);
            println!("{{\"stubborn\":true}}");
            let _ = std::io::stdout().flush();
            std::thread::sleep(std::time::Duration::from_millis(ms));
        }
        // A program may leave the group it was started in (only a session
        // leader cannot): a kill of that group alone misses it.
        "escape" => {
            // SAFETY: setpgid/getpgid/getppid take and return plain ids.
            let moved = unsafe { libc::setpgid(0, libc::getpgid(libc::getppid())) };
            let ms: u64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(0);
            println!("{{\"escaped\":{},\"pid\":{}}}", moved == 0, std::process::id());
            let _ = std::io::stdout().flush();
            std::thread::sleep(std::time::Duration::from_millis(ms));
        }
        // The grandchild is left running on purpose (a test checks that a
        // kill reaches the whole group), so it is never waited for.
        #[allow(clippy::zombie_processes)]
        "family" => {
            let ms: String = args.get(1).cloned().unwrap_or_else(|| "0".into());
            let exe = std::env::current_exe().expect("own path");
            let child = std::process::Command::new(exe)
                .arg("sleep")
                .arg(&ms)
                .stdout(std::process::Stdio::null())
                .spawn()
                .expect("grandchild");
            println!("{{\"grandchild\":{}}}", child.id());
            let _ = std::io::stdout().flush();
            std::thread::sleep(std::time::Duration::from_millis(ms.parse().unwrap_or(0)));
        }
        other => {
            eprintln!(
                "verbgate-fixture-cli: unknown mode {other:?} (argv, sleep, exit, spew, entity)"
            );
            std::process::exit(2);
        }
    }
}

fn entity(rest: &[String]) {
    let dir = std::path::Path::new(".fixture-entities");
    match rest.first().map(String::as_str) {
        Some("start") => {
            let unique = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() % 1_000_000_000_000);
            let tag = format!("{}{unique}", std::process::id());
            let id = if rest.get(1).map(String::as_str) == Some("fail") {
                format!("bad-{tag}")
            } else {
                format!("E{tag}")
            };
            let _ = std::fs::create_dir_all(dir);
            let _ = std::fs::write(dir.join(format!("E{tag}.run")), "running");
            println!("{{\"entity\":{}}}", quote(&id));
            let _ = std::io::stdout().flush();
            let stop = dir.join(format!("E{tag}.stop"));
            for _ in 0..30_000 {
                if stop.exists() {
                    let _ = std::fs::remove_file(&stop);
                    let _ = std::fs::remove_file(dir.join(format!("E{tag}.run")));
                    // SAFETY: a signal to this very process.
                    unsafe { libc::kill(libc::getpid(), libc::SIGTERM) };
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        }
        Some("kill") => {
            let id = rest.get(1).cloned().unwrap_or_default();
            let decoy = dir.join(format!("{id}.pid"));
            let ok = if let Ok(pid) = std::fs::read_to_string(&decoy) {
                let _ = std::fs::remove_file(&decoy);
                std::process::Command::new("kill")
                    .arg("-TERM")
                    .arg(pid.trim())
                    .status()
                    .map(|s| s.success())
                    .unwrap_or(false)
            } else if dir.join(format!("{id}.run")).exists() {
                std::fs::write(dir.join(format!("{id}.stop")), "stop").is_ok()
            } else {
                eprintln!("no such entity: {id}");
                std::process::exit(3);
            };
            println!("{{\"killed\":{},\"reaped\":[{}],\"ok\":{ok}}}", quote(&id), quote(&id));
        }
        _ => {
            eprintln!("usage: entity start [fail] | entity kill ID");
            std::process::exit(2);
        }
    }
}

fn argv(rest: &[String]) {
    let mut stdin = String::new();
    let _ = std::io::stdin().read_to_string(&mut stdin);
    let cwd = std::env::current_dir().map(|p| p.display().to_string()).unwrap_or_default();
    let mut env: Vec<(String, String)> = std::env::vars().collect();
    env.sort();
    let argv: Vec<String> = rest.iter().map(|a| quote(a)).collect();
    let env: Vec<String> = env.iter().map(|(k, v)| format!("{}:{}", quote(k), quote(v))).collect();
    println!(
        "{{\"argv\":[{}],\"cwd\":{},\"env\":{{{}}},\"stdin\":{}}}",
        argv.join(","),
        quote(&cwd),
        env.join(","),
        quote(&stdin)
    );
}

/// A JSON string literal.
fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
