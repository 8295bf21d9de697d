//! The OS sandbox attacked where Landlock does not look (issue 36): a
//! hostile repository's recipe, run by `just.run`, reaches for the user's
//! ssh-agent by its socket path, acts on verbgate's own process (prlimit,
//! its environment, its priority), reads the kernel keyring, watches a
//! directory it may not list, and writes through a descriptor left open by
//! whatever started verbgate. verbgate's home reached through a link into
//! the root, or named relative to it, and a core dump of the server are
//! attacked too. Each attack was seen succeeding against the build before
//! (`VERBGATE_TEST_BIN=<older verbgate>`), and each now fails.

use serde_json::{json, Value};
use std::os::unix::process::CommandExt;
use std::path::Path;
use verbgate_tests::Env;

/// The recipe's attacks, one marker file in the root for each that got
/// through (its content: what it got).
const ATTACK: &str = r#"
import ctypes, os, resource, socket, sys
l = ctypes.CDLL(None, use_errno=True)
AGENT, WATCHED, KEYCTL, OTHER = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])

def attempt(name, f):
    try:
        got = f()
    except Exception as e:
        open(name + ".refused", "w").write(repr(e))
        return
    open(name, "w").write(str(got))

def agent():
    s = socket.socket(socket.AF_UNIX)
    s.connect(AGENT)
    s.sendall(b"sign this for me")
    return "connected to the agent"

def ancestors():
    pid = os.getppid()
    while pid > 1:
        yield pid
        pid = int(open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[1])

def keyring():
    r = l.syscall(KEYCTL, 0, -4, 1)
    if r < 0:
        raise OSError(ctypes.get_errno(), "keyctl")
    return "user keyring %d" % r

def watch():
    fd = l.inotify_init1(0)
    if fd < 0 or l.inotify_add_watch(fd, WATCHED.encode(), 0xfff) < 0:
        raise OSError(ctypes.get_errno(), "inotify")
    return "watching " + WATCHED

attempt("breach-unix-socket", agent)
# verbgate among its ancestors; in a PID namespace of its own it has none
# to see, so the attacks go for another process of the user (the test's).
verbgate = next((p for p in ancestors() if open("/proc/%d/comm" % p).read().startswith("verbgate")), OTHER)
attempt("breach-other-process", lambda: open("/proc/%d/cmdline" % OTHER, "rb").read())
inf = resource.RLIM_INFINITY
attempt("breach-prlimit", lambda: resource.prlimit(verbgate, resource.RLIMIT_CORE, (inf, inf)))
attempt("breach-environ", lambda: open("/proc/%d/environ" % verbgate, "rb").read())
attempt("breach-renice", lambda: os.setpriority(os.PRIO_PROCESS, verbgate, 19) or "reniced")
attempt("breach-keyring", keyring)
attempt("breach-inotify", watch)
"#;

/// The markers the recipe leaves when an attack got through.
const BREACHES: &[(&str, &str)] = &[
    ("breach-unix-socket", "connected to a UNIX socket outside the root (the ssh-agent)"),
    ("breach-prlimit", "set verbgate's own limits"),
    ("breach-environ", "read verbgate's environment"),
    ("breach-renice", "changed verbgate's priority"),
    ("breach-keyring", "read the user's kernel keyring"),
    ("breach-inotify", "watched a directory outside the profile"),
    ("breach-other-process", "read another process's command line in /proc"),
    ("breach-inherited-fd", "wrote through a descriptor verbgate inherited"),
];

/// Run `request` with `file` open (append, inheritable) as descriptor 7
/// of the verbgate process, as a shell's `7>>file` would leave it.
fn request_with_fd(env: &Env, request: &Value, file: &Path) -> Value {
    let f = std::fs::OpenOptions::new().create(true).append(true).open(file).unwrap();
    let mut cmd = env.cmd(&["request", &request.to_string()]);
    let raw = std::os::fd::AsRawFd::as_raw_fd(&f);
    // SAFETY: dup2 between two descriptors, in the child before exec.
    unsafe {
        cmd.pre_exec(move || {
            if libc::dup2(raw, 7) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = cmd.output().unwrap();
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("non-JSON ({e}): {}", String::from_utf8_lossy(&out.stderr)))
}

#[test]
fn a_recipe_cannot_reach_sockets_processes_keyrings_watches_or_inherited_descriptors() {
    let env = Env::new().allowing(&["just.*"]);
    let outside = env.tmp.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let agent = outside.join("agent.sock");
    let listener = std::os::unix::net::UnixListener::bind(&agent).unwrap();
    listener.set_nonblocking(true).unwrap();
    let inherited = outside.join("inherited.txt");
    std::fs::write(env.root.join("attack.py"), ATTACK).unwrap();
    std::fs::write(
        env.root.join("justfile"),
        format!(
            "attack:\n    -/usr/bin/python3 attack.py {} {} {} {}\n    -echo pwned >&7 && echo yes > breach-inherited-fd\n    echo done > done.txt\n",
            agent.display(),
            outside.display(),
            libc::SYS_keyctl,
            std::process::id()
        ),
    )
    .unwrap();
    let fp = env.request(&json!({"help": "just.run:attack"}))["help"]["schema_fingerprint"].clone();
    let out = request_with_fd(
        &env,
        &json!({"ops": [{"op": "just.run", "args": {"target": "attack"}, "schema_fingerprint": fp}]}),
        &inherited,
    );
    let id = out["results"][0]["result"]["job"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{out}"))
        .to_string();
    let w = env.op("job.wait", json!({"ids": [&id], "max_wait_seconds": 60}));
    assert_eq!(w["result"]["all_terminal"], true, "{w}");
    assert_eq!(
        std::fs::read_to_string(env.root.join("done.txt")).unwrap_or_default().trim(),
        "done",
        "the recipe ran to its end: {w}"
    );
    let mut breaches: Vec<String> = BREACHES
        .iter()
        .filter_map(|(marker, what)| {
            let got = std::fs::read_to_string(env.root.join(marker)).ok()?;
            Some(format!("{what} ({})", got.chars().take(80).collect::<String>()))
        })
        .collect();
    if listener.accept().is_ok() {
        breaches.push("the agent saw a connection".into());
    }
    if std::fs::read_to_string(&inherited).unwrap_or_default().contains("pwned") {
        breaches.push("the outside file got the write".into());
    }
    // The attack script ran and each attempt was refused, not skipped.
    for (marker, _) in &BREACHES[..BREACHES.len() - 1] {
        assert!(
            env.root.join(marker).exists() || env.root.join(format!("{marker}.refused")).exists(),
            "the attack {marker} did not run: {w}"
        );
    }
    assert!(breaches.is_empty(), "the recipe {}", breaches.join("; "));
}

/// Move the test's home into its root (`root/.vg`), leaving a link where
/// the home was: `VERBGATE_HOME` then reaches the root through the link.
fn home_through_a_link_into_the_root(env: &Env) -> std::path::PathBuf {
    let inside = env.root.join(".vg");
    std::fs::rename(&env.home, &inside).unwrap();
    std::os::unix::fs::symlink(&inside, &env.home).unwrap();
    inside
}

#[test]
fn a_home_reached_through_a_link_into_the_root_refuses_to_start() {
    let env = Env::new().allowing(&["just.*"]);
    std::fs::write(
        env.root.join("justfile"),
        "attack:\n    printf '\\n[sandbox]\\nmode = \"off\"\\n' >> .vg/verbgate.toml\n",
    )
    .unwrap();
    let inside = home_through_a_link_into_the_root(&env);
    let before = std::fs::read_to_string(inside.join("verbgate.toml")).unwrap();
    let (code, out, _) = env.run(&["request", r#"{"help": "just.run:attack"}"#]);
    let fp = out["help"]["schema_fingerprint"].clone();
    let (code2, out2, _) = env.run(&[
        "request",
        &json!({"ops": [{"op": "just.run", "args": {"target": "attack"}, "schema_fingerprint": fp}]})
            .to_string(),
    ]);
    if let Some(id) = out2["results"][0]["result"]["job"]["id"].as_str() {
        env.op("job.wait", json!({"ids": [id], "max_wait_seconds": 60}));
    }
    assert_eq!(
        std::fs::read_to_string(inside.join("verbgate.toml")).unwrap(),
        before,
        "a recipe rewrote verbgate.toml through the home's link: {out2}"
    );
    for (code, out) in [(code, &out), (code2, &out2)] {
        assert_eq!(code, 1, "{out}");
        assert_eq!(out["error"]["code"], "sandbox_unavailable", "{out}");
        let message = out["error"]["message"].as_str().unwrap();
        assert!(message.contains("lies inside the root") && message.contains("--root"), "{out}");
        assert_eq!(
            out["error"]["home"],
            inside.canonicalize().unwrap().display().to_string(),
            "the error names the real home: {out}"
        );
    }
}

#[test]
fn a_relative_home_inside_the_root_refuses_to_start() {
    let env = Env::new();
    let inside = home_through_a_link_into_the_root(&env);
    std::fs::remove_file(&env.home).unwrap();
    let out = env
        .cmd(&["request", r#"{"ops": [{"op": "git.status"}]}"#])
        .current_dir(&env.root)
        .env("VERBGATE_HOME", ".vg")
        .output()
        .unwrap();
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["error"]["code"], "sandbox_unavailable", "{json}");
    assert_eq!(json["error"]["home"], inside.canonicalize().unwrap().display().to_string());
    // And a root inside the home is refused the same way.
    let env = Env::new();
    std::fs::create_dir_all(env.home.join("repo")).unwrap();
    let out = std::process::Command::new(verbgate_tests::verbgate_bin())
        .env("VERBGATE_HOME", &env.home)
        .arg("--root")
        .arg(env.home.join("repo"))
        .args(["request", r#"{"help": true}"#])
        .output()
        .unwrap();
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["error"]["code"], "sandbox_unavailable", "a root inside the home: {json}");
    assert!(json["error"]["message"].as_str().unwrap().contains("the root lies inside"), "{json}");
}

/// `--config ./verbgate.toml` inside the root: a recipe that writes the
/// repository would rewrite the config (`mode = "off"`, allow every verb)
/// for the next start. The old build started and let the recipe do so.
#[test]
fn a_config_file_inside_the_root_refuses_to_start() {
    let env = Env::new().allowing(&["just.*"]);
    let config = env.root.join("verbgate.toml");
    std::fs::copy(env.home.join("verbgate.toml"), &config).unwrap();
    std::fs::write(
        env.root.join("justfile"),
        "r:\n    printf '[sandbox]\\nmode = \"off\"\\n' >> verbgate.toml\n",
    )
    .unwrap();
    let out = env
        .cmd(&[
            "--config",
            config.to_str().unwrap(),
            "request",
            r#"{"ops": [{"op": "just.run", "args": {"target": "r"}}]}"#,
        ])
        .output()
        .unwrap();
    let json: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(json["error"]["code"], "sandbox_unavailable", "{json}");
    assert_eq!(
        json["error"]["config"],
        config.canonicalize().unwrap().display().to_string(),
        "{json}"
    );
    assert!(json["error"]["message"].as_str().unwrap().contains("outside the root"), "{json}");
    std::thread::sleep(std::time::Duration::from_millis(500));
    let text = std::fs::read_to_string(&config).unwrap();
    assert!(!text.contains("mode = \"off\""), "the recipe rewrote the config: {text}");
}

#[test]
fn the_server_dumps_no_core_whatever_its_limit() {
    let env = Env::new();
    let cwd = env.tmp.path().join("cwd");
    std::fs::create_dir_all(&cwd).unwrap();
    let mut server = env
        .cmd(&["serve"])
        .current_dir(&cwd)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    let pid = server.id() as libc::pid_t;
    // What a same-user process can do to it: raise its core limit (prlimit
    // needs no privilege for one's own processes), then crash it (SIGABRT:
    // wasmtime's handler takes SIGSEGV).
    let unlimited = libc::rlimit { rlim_cur: libc::RLIM_INFINITY, rlim_max: libc::RLIM_INFINITY };
    // SAFETY: prlimit and kill with plain values on our own child.
    unsafe {
        libc::prlimit(pid, libc::RLIMIT_CORE, &unlimited, std::ptr::null_mut());
        libc::kill(pid, libc::SIGABRT);
    }
    let status = server.wait().unwrap();
    assert!(std::os::unix::process::ExitStatusExt::signal(&status).is_some(), "{status:?}");
    let cores: Vec<_> = std::fs::read_dir(&cwd)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("core"))
        .collect();
    assert!(cores.is_empty(), "the server dumped its memory into {}: {cores:?}", cwd.display());
}

/// A daemon that leaves its job's group and session (a double fork and
/// `setsid`) and appends to a file in the root until stopped; its pid goes
/// to `<log>.pid`.
const DAEMON: &str = r#"
import os, sys, time
log = sys.argv[1]
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        for fd in (0, 1, 2):
            os.close(fd)
        open(log + ".pid", "w").write(str(os.getpid()))
        while True:
            with open(log, "a") as f:
                f.write("tick\n")
            time.sleep(0.05)
    os._exit(0)
os.wait()
while not os.path.exists(log + ".pid"):
    time.sleep(0.01)
"#;

/// Whether the file `log` still grows (read twice, 600 ms apart).
fn grows(log: &Path) -> bool {
    let size = || std::fs::metadata(log).map(|m| m.len()).unwrap_or(0);
    let before = size();
    std::thread::sleep(std::time::Duration::from_millis(600));
    size() > before
}

/// Stop a daemon the old build left running.
fn reap_daemon(log: &Path) {
    let pid = std::fs::read_to_string(log.with_extension("log.pid")).unwrap_or_default();
    if let Ok(pid) = pid.trim().parse::<libc::pid_t>() {
        // SAFETY: kill with plain values.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
}

#[test]
fn daemons_a_job_starts_end_with_the_job_and_with_its_kill() {
    let env = Env::new().allowing(&["just.*"]);
    std::fs::write(env.root.join("daemon.py"), DAEMON).unwrap();
    std::fs::write(
        env.root.join("justfile"),
        "leave:\n    /usr/bin/python3 daemon.py leave.log\n\nstay:\n    /usr/bin/python3 daemon.py stay.log\n    sleep 60\n",
    )
    .unwrap();
    let (leave, stay) = (env.root.join("leave.log"), env.root.join("stay.log"));
    let start = |target: &str| {
        let fp = env.request(&json!({"help": format!("just.run:{target}")}))["help"]
            ["schema_fingerprint"]
            .clone();
        let out = env.request(&json!({"ops": [{"op": "just.run", "args": {"target": target}, "schema_fingerprint": fp}]}));
        out["results"][0]["result"]["job"]["id"]
            .as_str()
            .unwrap_or_else(|| panic!("{out}"))
            .to_string()
    };
    // A job that ends on its own, its daemon running.
    let id = start("leave");
    let w = env.op("job.wait", json!({"ids": [&id], "max_wait_seconds": 60}));
    assert_eq!(w["result"]["all_terminal"], true, "{w}");
    assert!(leave.with_extension("log.pid").exists(), "the daemon started: {w}");
    let leave_grows = grows(&leave);
    // A job killed while its daemon runs.
    let id = start("stay");
    for _ in 0..200 {
        if stay.with_extension("log.pid").exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(grows(&stay), "the second daemon runs while its job does");
    let k = env.op("job.kill", json!({"id": &id}));
    assert_eq!(k["ok"], true, "{k}");
    let w = env.op("job.wait", json!({"ids": [&id], "max_wait_seconds": 60}));
    assert_eq!(w["result"]["all_terminal"], true, "{w}");
    let stay_grows = grows(&stay);
    reap_daemon(&leave);
    reap_daemon(&stay);
    assert!(
        !leave_grows,
        "a daemon outlived the job that started it (it still writes {})",
        leave.display()
    );
    assert!(!stay_grows, "a daemon outlived job.kill of its job");
}

#[test]
fn a_daemon_an_ops_program_starts_ends_with_the_op() {
    // eslint.check runs the repository's eslint.config.js, synchronously (an
    // exec op): the config starts a daemon that leaves eslint's group.
    verbgate_tests::require_test_tool("eslint");
    let env = Env::new();
    verbgate_tests::copy_tree(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/eslint-project"),
        &env.root,
    );
    std::fs::write(env.root.join("daemon.py"), DAEMON).unwrap();
    let config = std::fs::read_to_string(env.root.join("eslint.config.js")).unwrap();
    std::fs::write(
        env.root.join("eslint.config.js"),
        format!(
            "import {{ spawnSync }} from \"node:child_process\";\nspawnSync(\"/usr/bin/python3\", [\"daemon.py\", \"lint.log\"]);\n{config}"
        ),
    )
    .unwrap();
    let r = env.op("eslint.check", json!({}));
    let log = env.root.join("lint.log");
    assert!(log.with_extension("log.pid").exists(), "the config started its daemon: {r}");
    assert_eq!(r["ok"], true, "eslint still ran: {r}");
    let still = grows(&log);
    reap_daemon(&log);
    assert!(
        !still,
        "a daemon outlived the op whose program started it (it still writes {})",
        log.display()
    );
    // The same op through a server that keeps running: the daemon ends
    // after the answer, not when the server does.
    std::fs::remove_file(log.with_extension("log.pid")).unwrap();
    let rt = verbgate_tests::runtime();
    let (reply, still) = rt.block_on(async {
        let session =
            verbgate_tests::mcp::Session::start(env.serve_command()).await.expect("MCP session");
        let reply = session.request(json!({"ops": [{"op": "eslint.check"}]})).await.unwrap();
        let still = grows(&log);
        session.close().await.unwrap();
        (reply, still)
    });
    reap_daemon(&log);
    assert!(log.with_extension("log.pid").exists(), "the daemon started again: {}", reply.text);
    assert!(!still, "a daemon outlived its op in a running server");
}

/// Start `just.run` of `target` as a job and wait (up to 60 s) for it to
/// end; the wait's answer.
fn run_recipe_job(env: &Env, target: &str) -> Value {
    let fp = env.request(&json!({"help": format!("just.run:{target}")}))["help"]
        ["schema_fingerprint"]
        .clone();
    let out = env.request(
        &json!({"ops": [{"op": "just.run", "args": {"target": target}, "schema_fingerprint": fp}]}),
    );
    let id = out["results"][0]["result"]["job"]["id"].as_str().unwrap_or_else(|| panic!("{out}"));
    let w = env.op("job.wait", json!({"ids": [id], "max_wait_seconds": 60}));
    assert_eq!(w["result"]["all_terminal"], true, "{w}");
    w
}

/// A daemon that never keeps a pid: it leaves the job's session, then
/// every 20 ms forks a successor and exits, appending to a file in the
/// root as it goes. A sweep that reads the pids a tree holds and kills
/// them in rounds never catches it (seen: it outlived the sweep's give-up).
/// Its pid goes to `<log>.pid`, refreshed on every hop.
const HOPPER: &str = r#"
import os, sys, time
log = sys.argv[1]
if os.fork() == 0:
    os.setsid()
    for fd in (0, 1, 2):
        os.close(fd)
    while True:
        if os.fork() != 0:
            os._exit(0)
        open(log + ".pid", "w").write(str(os.getpid()))
        with open(log, "a") as f:
            f.write("hop\n")
        time.sleep(0.02)
while not os.path.exists(log + ".pid"):
    time.sleep(0.01)
"#;

#[test]
fn a_daemon_that_hops_from_pid_to_pid_ends_with_its_job() {
    let env = Env::new().allowing(&["just.*"]);
    std::fs::write(env.root.join("hopper.py"), HOPPER).unwrap();
    std::fs::write(env.root.join("justfile"), "hop:\n    /usr/bin/python3 hopper.py hop.log\n")
        .unwrap();
    let log = env.root.join("hop.log");
    let w = run_recipe_job(&env, "hop");
    assert!(log.with_extension("log.pid").exists(), "the hopper started: {w}");
    // Past the sweep's give-up (10 s after a job) it still hopped, before.
    std::thread::sleep(std::time::Duration::from_secs(11));
    let still = grows(&log);
    if still {
        // The old build: stop it by its session (it keeps one).
        let pid = std::fs::read_to_string(log.with_extension("log.pid")).unwrap_or_default();
        if let Ok(pid) = pid.trim().parse::<libc::pid_t>() {
            // SAFETY: plain values; getsid then a group kill of that session's leader group.
            unsafe { libc::killpg(libc::getsid(pid), libc::SIGKILL) };
        }
    }
    assert!(
        !still,
        "a daemon hopping between pids outlived its job (it still writes {})",
        log.display()
    );
}

/// Fork until refused (or 1,500 children, each sleeping 5 s): the count
/// goes to `forked.txt`.
const FORKER: &str = r#"
import os, time
n = 0
try:
    while n < 1500:
        if os.fork() == 0:
            time.sleep(5)
            os._exit(0)
        n += 1
except OSError as e:
    pass
open("forked.txt", "w").write(str(n))
"#;

#[test]
fn a_programs_tree_holds_no_more_processes_than_its_bound() {
    // Seen before the bound: all 1,500 started (one job started 1,500
    // processes and touched 2 GiB, issue 36). The bound holds for root too.
    let env = Env::new().allowing(&["just.*"]).with_config("[limits]\nmax_processes = 300\n");
    std::fs::write(env.root.join("forker.py"), FORKER).unwrap();
    std::fs::write(env.root.join("justfile"), "fork:\n    /usr/bin/python3 forker.py\n").unwrap();
    let w = run_recipe_job(&env, "fork");
    let forked: u32 = std::fs::read_to_string(env.root.join("forked.txt"))
        .unwrap_or_else(|e| panic!("the forker did not finish ({e}): {w}"))
        .trim()
        .parse()
        .unwrap();
    assert!(forked >= 100, "the bound left too little to work with: {forked}");
    // pid_max is set 300 above the bound (the kernel skips the first 300
    // pids once they wrap), so before a wrap a tree may hold up to 299 more.
    assert!(forked < 600, "the tree started {forked} processes past its bound of 300");
}

#[test]
fn the_wrapper_that_starts_a_program_gets_none_of_its_environment() {
    // Attack (review of the namespace wrapper): the wrapper ran with the
    // program's environment, unconfined, as verbgate's binary; the loader
    // reads LD_LIBRARY_PATH there (an empty entry is the repository), so a
    // library one run planted was loaded by the next run's wrapper outside
    // the sandbox. The wrapper now starts with an empty environment in `/`.
    let env = Env::with_plugin("fixture-echo").allowing(&["echo.*"]);
    let fp = env.request(&json!({"help": "echo.job"}))["help"]["schema_fingerprint"].clone();
    let out = env.request(
        &json!({"ops": [{"op": "echo.job", "args": {"sleep_ms": 5000}, "schema_fingerprint": fp}]}),
    );
    let id = out["results"][0]["result"]["job"]["id"].as_str().unwrap_or_else(|| panic!("{out}"));
    let mut seen = None;
    for _ in 0..100 {
        let st = env.op("job.status", json!({"id": id}));
        if let Some(pid) = st["result"]["pid"].as_i64() {
            seen = Some(pid);
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let pid = seen.expect("the job started");
    let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
    let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).unwrap();
    env.op("job.kill", json!({"id": id, "grace_seconds": 0}));
    let text = String::from_utf8_lossy(&environ).replace('\0', " ");
    assert!(
        !text.contains("PATH="),
        "the job's first process has the program's environment: {text}"
    );
    assert_eq!(cwd, Path::new("/"), "the job's first process runs in the repository");
}

/// A tree of four processes that each fill 100 MiB and hold it together;
/// `tree.txt` gets how many of them did, `alive-<i>` marks each that got
/// its memory.
const HOG: &str = r#"
import os, time
kids = []
for i in range(4):
    pid = os.fork()
    if pid == 0:
        x = b"x" * (100 << 20)
        open("alive-%d" % i, "w").write("100 MiB")
        time.sleep(2)
        os._exit(0)
    kids.append(pid)
ok = 0
for pid in kids:
    _, status = os.waitpid(pid, 0)
    ok += os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
open("tree.txt", "w").write(str(ok))
"#;

#[test]
fn a_programs_tree_holds_no_more_memory_than_its_bound() {
    // Issue 36: one job touched 2 GiB. Unbounded (`max_memory_mib = 0`,
    // as every tree was before) the four processes hold 400 MiB together;
    // bounded to 128 MiB for the whole tree, the kernel ends the tree's
    // processes past it (not the server's, not another tree's), and the
    // job's stderr says why.
    for (bound, all_fit) in [(0, true), (128, false)] {
        let env = Env::new()
            .allowing(&["just.*"])
            .with_config(&format!("[limits]\nmax_memory_mib = {bound}\n"));
        std::fs::write(env.root.join("hog.py"), HOG).unwrap();
        std::fs::write(env.root.join("justfile"), "hog:\n    /usr/bin/python3 hog.py\n").unwrap();
        let w = run_recipe_job(&env, "hog");
        let tree = std::fs::read_to_string(env.root.join("tree.txt")).ok();
        let alive = (0..4).filter(|i| env.root.join(format!("alive-{i}")).exists()).count();
        let id = w["result"]["terminal"][0].as_str().unwrap_or_else(|| panic!("{w}")).to_string();
        let err = env.op("job.output", json!({"id": id, "stream": "stderr"}));
        let stderr = err.to_string();
        if all_fit {
            assert_eq!(
                tree.as_deref(),
                Some("4"),
                "unbounded, every process should fit: {w} {stderr}"
            );
            assert_eq!(alive, 4);
        } else {
            assert!(alive <= 1, "{alive} processes held 100 MiB each under a 128 MiB bound: {w}");
            assert_ne!(tree.as_deref(), Some("4"), "{w}");
            assert!(stderr.contains("memory bound (128 MiB"), "the job does not say why: {stderr}");
        }
        // A server and a new op still work: the bound took only the tree.
        let st = env.op("job.status", json!({"id": id}));
        assert_eq!(st["ok"], true, "{st}");
    }
}

#[test]
fn without_a_memory_cgroup_it_may_manage_a_program_is_refused_not_run_unbounded() {
    // No silent fallback: where verbgate's user may not make memory cgroups
    // (an unprivileged user on cgroup v1, as here) an op that would start a
    // program answers sandbox_unavailable, saying how to give it one or how
    // to turn the bound off; with `max_memory_mib = 0` the same op runs.
    // As root the test runs verbgate as `nobody`.
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    verbgate_tests::git(&env.root, &["init", "-q", "-b", "main"]);
    // Everything the other user needs: the binary (the checkout may be
    // where `nobody` cannot reach it) and the environment's files.
    let bin = env.tmp.path().join("verbgate");
    if std::fs::hard_link(verbgate_tests::verbgate_bin(), &bin).is_err() {
        std::fs::copy(verbgate_tests::verbgate_bin(), &bin).unwrap();
    }
    // SAFETY: getuid cannot fail.
    let root = unsafe { libc::getuid() } == 0;
    if root {
        let ok = std::process::Command::new("chown")
            .args(["-R", "65534:65534"])
            .arg(env.tmp.path())
            .status()
            .unwrap()
            .success();
        assert!(ok, "chown failed");
        std::fs::set_permissions(env.tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let run = |args: &[&str]| -> Value {
        let mut c = if root {
            let mut c = std::process::Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups"]).arg(&bin);
            c
        } else {
            std::process::Command::new(&bin)
        };
        c.env("VERBGATE_HOME", &env.home)
            .env("HOME", env.tmp.path())
            .env_remove("VERBGATE_LOG")
            .arg("--root")
            .arg(&env.root)
            .arg("--plugins")
            .arg(&env.plugins)
            .args(args);
        let out = c.output().unwrap();
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "{e}: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        })
    };
    let status = json!({"ops": [{"op": "git.status"}]}).to_string();
    let doctor = run(&["doctor"]);
    let r = run(&["request", &status]);
    if doctor["memory_bound"]["missing"].is_null() {
        // This user may make memory cgroups (a delegated v2 cgroup).
        assert_eq!(r["results"][0]["ok"], true, "{r}");
        return;
    }
    let e = &r["results"][0]["error"];
    assert_eq!(e["code"], "sandbox_unavailable", "{r}");
    let msg = e["message"].as_str().unwrap();
    assert!(msg.contains("without a memory bound") && msg.contains("max_memory_mib = 0"), "{msg}");
    // The operator's knowing opt-out.
    let config = env.home.join("verbgate.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, format!("[limits]\nmax_memory_mib = 0\n{text}")).unwrap();
    let r = run(&["request", &status]);
    assert_eq!(r["results"][0]["ok"], true, "with the bound off the op runs: {r}");
}

/// Tries to leave or widen the tree's memory cgroup under `argv[1]` (the
/// base); `breaches.txt` lists what worked, `trees.txt` how many tree
/// cgroups it saw.
const CGROUP_ESCAPE: &str = r#"
import ctypes, glob, os, sys
base = sys.argv[1]
trees = glob.glob(os.path.join(base, "verbgate-tree-*"))
open("trees.txt", "w").write(str(len(trees)))
got = []
def attempt(what, f):
    try:
        f()
        got.append(what)
    except OSError:
        pass
attempt("moved itself out", lambda: open(os.path.join(base, "cgroup.procs"), "w").write("0"))
attempt("moved a thread out", lambda: open(os.path.join(base, "tasks"), "w").write("0"))
attempt("made a cgroup beside", lambda: os.mkdir(os.path.join(base, "verbgate-evil")))
for t in trees:
    attempt("raised a limit", lambda: open(os.path.join(t, "memory.limit_in_bytes"), "w").write(str(1 << 40)))
    attempt("made a child cgroup", lambda: os.mkdir(os.path.join(t, "child")))
l = ctypes.CDLL(None, use_errno=True)
l.syscall(435, None, 0)
if ctypes.get_errno() != 38:
    got.append("clone3 reached the kernel")
open("breaches.txt", "w").write("\n".join(got))
"#;

#[test]
fn a_program_cannot_leave_or_widen_its_memory_cgroup() {
    // Review of the memory bound: the cgroup files are in /sys, which every
    // profile reads; writing them (moving out, raising the limit, making a
    // child) must fail, and clone3 (whose CLONE_INTO_CGROUP starts a child
    // in another cgroup on v2, past Landlock) looks absent.
    let env = Env::new().allowing(&["just.*"]);
    let doctor = env.run_ok(&["doctor"]);
    let at = doctor["memory_bound"]["cgroups"].as_str().unwrap_or_else(|| panic!("{doctor}"));
    let base = at.split_once(": ").unwrap().1.to_string();
    std::fs::write(env.root.join("escape.py"), CGROUP_ESCAPE).unwrap();
    std::fs::write(
        env.root.join("justfile"),
        format!("escape:\n    /usr/bin/python3 escape.py {base:?}\n"),
    )
    .unwrap();
    let w = run_recipe_job(&env, "escape");
    let trees = std::fs::read_to_string(env.root.join("trees.txt"))
        .unwrap_or_else(|e| panic!("the script did not run ({e}): {w}"));
    assert_ne!(trees.trim(), "0", "the program saw no tree cgroup, so it tried nothing: {w}");
    let breaches = std::fs::read_to_string(env.root.join("breaches.txt")).unwrap();
    assert_eq!(breaches.trim(), "", "the program changed its memory cgroup: {breaches}");
    assert!(!Path::new(&base).join("verbgate-evil").exists());
}
