//! `just bench`: verbgate's figures, each beside a baseline measured in the
//! same run, printed as one table and written to `target/bench/results.json`
//! and `BENCHMARKS.md`.
//!
//! In-process figures use the library directly (median of many runs);
//! whole-process figures drive the release `verbgate` binary over stdio.
//! Goals are checked and marked met or not — honestly, whatever they say.

use anyhow::{Context, Result};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use verbgate::config::{Config, Overrides};
use verbgate::dispatch::Dispatcher;
use verbgate::exec::Prepared;
use verbgate::jobs::{JobLimits, Jobs};
use verbgate::registry::Registry;
use verbgate::runtime::model::Outcome;
use verbgate::runtime::{Runtime, SandboxLimits};
use verbgate_tests::{bin_dir, component};

mod http;
mod oauth;
mod otel;

/// The heading of BENCHMARKS.md's hand-measured part, which `just bench`
/// keeps when it rewrites the file.
const HAND_MEASURED: &str = "## Time to first answer";

/// One row of the table.
struct Row {
    figure: String,
    value: f64,
    unit: &'static str,
    baseline_name: String,
    baseline: f64,
    goal: Option<(&'static str, f64)>,
}

impl Row {
    /// One line for a partial run (`VERBGATE_BENCH_*_ONLY`).
    fn line(&self) -> String {
        format!(
            "{}: {} {} vs {} {}, {} (ratio {})",
            self.figure,
            fmt(self.value),
            self.unit,
            fmt(self.baseline),
            self.unit,
            self.baseline_name,
            fmt(self.ratio())
        )
    }

    fn ratio(&self) -> f64 {
        if self.baseline == 0.0 {
            f64::NAN
        } else {
            self.value / self.baseline
        }
    }
    fn met(&self) -> Option<bool> {
        self.goal.map(|(op, g)| match op {
            "<=" => self.value <= g,
            ">=" => self.value >= g,
            _ => false,
        })
    }
    fn json(&self) -> Value {
        json!({
            "figure": self.figure, "value": self.value, "unit": self.unit,
            "baseline": self.baseline_name, "baseline_value": self.baseline, "ratio": self.ratio(),
            "goal": self.goal.map(|(op, g)| format!("{op} {g}")), "met": self.met(),
        })
    }
}

/// Iterations of a loop: `default`, or `VERBGATE_BENCH_RUNS` (to profile
/// one row with enough samples).
fn runs(default: usize) -> usize {
    std::env::var("VERBGATE_BENCH_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// A private home with a trusted key and signed components installed.
struct Home {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    root: PathBuf,
}

impl Home {
    fn new(components: &[&str], config: &str) -> Result<Home> {
        let tmp = tempfile::tempdir()?;
        let home = tmp.path().join("home");
        let root = std::env::current_dir()?;
        let keys = home.join("keys");
        let files = verbgate::trust::keys::generate(&keys, "bench", false)?;
        verbgate::trust::TrustStore::add(&home.join("trust"), &files.public, None)?;
        let sk = verbgate::trust::keys::read_secret_key(&files.secret)?;
        let pk = verbgate::trust::keys::read_public_key(&files.public)?;
        std::fs::create_dir_all(home.join("plugins"))?;
        for c in components {
            let signed = verbgate::trust::sign_component(&std::fs::read(component(c))?, &sk, &pk)?;
            std::fs::write(home.join("plugins").join(format!("{c}.wasm")), signed)?;
        }
        let cli = bin_dir().join("verbgate-fixture-cli");
        std::fs::write(
            home.join("verbgate.toml"),
            format!(
                "{config}\n[programs]\nverbgate-fixture-cli = {:?}\n",
                cli.display().to_string()
            ),
        )?;
        Ok(Home { _tmp: tmp, home, root })
    }

    fn config(&self) -> Result<Config> {
        Config::load(&Overrides {
            home: Some(self.home.clone()),
            root: Some(self.root.clone()),
            ..Overrides::default()
        })
    }

    async fn dispatcher(&self) -> Result<(Arc<Dispatcher>, Arc<Registry>)> {
        let config = Arc::new(self.config()?);
        let runtime =
            Arc::new(Runtime::new(SandboxLimits::from(&config.limits), Some(config.cache_dir()))?);
        let registry = Arc::new(Registry::load(&config, runtime).await?);
        let jobs = Jobs::open(
            &config.state_dir(),
            bin_dir().join("verbgate"),
            JobLimits::from(&config.limits),
        )?;
        let audit = if config.audit.enabled {
            Some(Arc::new(verbgate::audit::AuditStore::open(&config.state_dir())?))
        } else {
            None
        };
        Ok((Dispatcher::new(registry.clone(), config, Some(jobs), audit), registry))
    }

    fn verbgate(&self) -> Command {
        let mut c = Command::new(bin_dir().join("verbgate"));
        c.env("VERBGATE_HOME", &self.home).arg("--root").arg(&self.root);
        c
    }
}

/// A raw stdio MCP session with `verbgate serve`.
struct Stdio_ {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    stdout: BufReader<std::process::ChildStdout>,
    next_id: i64,
}

impl Stdio_ {
    fn start(home: &Home) -> Result<Stdio_> {
        Stdio_::start_with(home, &[])
    }

    /// [`Stdio_::start`] with more environment.
    fn start_with(home: &Home, env: &[(&str, &str)]) -> Result<Stdio_> {
        let mut child = home
            .verbgate()
            .envs(env.iter().copied())
            .arg("serve")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let stdin = child.stdin.take().context("stdin")?;
        let stdout = BufReader::new(child.stdout.take().context("stdout")?);
        Ok(Stdio_ { child, stdin, stdout, next_id: 1 })
    }

    fn call(&mut self, method: &str, params: Value) -> Result<Value> {
        let id = self.next_id;
        self.next_id += 1;
        writeln!(
            self.stdin,
            "{}",
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        )?;
        self.stdin.flush()?;
        loop {
            let mut line = String::new();
            anyhow::ensure!(self.stdout.read_line(&mut line)? > 0, "server closed");
            let v: Value = serde_json::from_str(&line)?;
            if v["id"] == id {
                return Ok(v);
            }
        }
    }

    fn handshake(&mut self) -> Result<()> {
        self.call("initialize", json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}))?;
        writeln!(
            self.stdin,
            "{}",
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
        )?;
        Ok(())
    }

    fn request(&mut self, args: Value) -> Result<Value> {
        let r = self.call("tools/call", json!({"name": "request", "arguments": args}))?;
        Ok(r["result"]["structuredContent"].clone())
    }
}

impl Drop for Stdio_ {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Advertised bytes, ours vs one-tool-per-verb, with `n` verbs loaded.
async fn tool_bytes(n: usize) -> Result<Row> {
    let home = Home::new(&["fixture-many", "fixture-echo"], "")?;
    let (_, registry) = home.dispatcher().await?;
    let verbs: Vec<_> = registry.verbs().take(n).collect();
    anyhow::ensure!(verbs.len() == n, "only {} verbs loaded", verbs.len());
    let ours = serde_json::to_string(&verbgate::mcp::tool::tool(8))?.len() as f64;
    let per_verb: usize = verbs
        .iter()
        .map(|v| {
            json!({"name": v.name, "description": v.summary, "inputSchema": v.params_schema})
                .to_string()
                .len()
        })
        .sum();
    Ok(Row {
        figure: format!("tools/list bytes, {n} verbs"),
        value: ours,
        unit: "B",
        baseline_name: "one tool per verb".into(),
        baseline: per_verb as f64,
        goal: Some(("<=", 1500.0)),
    })
}

/// Catalog bytes per verb vs the full schema per verb.
async fn catalog_bytes() -> Result<Row> {
    let home = Home::new(&[], "")?;
    let (d, registry) = home.dispatcher().await?;
    let cat = d.handle(&json!({"help": true})).await.body;
    let n = registry.verbs().count() as f64;
    let ours = cat["help"]["verbs"].to_string().len() as f64 / n;
    let full: usize =
        registry.verbs().map(|v| v.params_schema.to_string().len() + v.name.len()).sum();
    Ok(Row {
        figure: "catalog bytes per verb (bundled)".into(),
        value: ours,
        unit: "B",
        baseline_name: "full schema per verb".into(),
        baseline: full as f64 / n,
        goal: Some(("<=", 120.0)),
    })
}

/// Host overhead of one component verb op without its subprocess.
async fn overhead() -> Result<Row> {
    let home = Home::new(&["fixture-echo"], "")?;
    let (_, registry) = home.dispatcher().await?;
    let config = home.config()?;
    let verb = registry.resolve("echo.argv").context("echo.argv")?.clone();
    let runtime = registry.runtime().clone();
    let args = json!({"word": "hello", "flag": "x", "tail": ["a", "b"]});
    let stdout =
        br#"{"argv":["hello","--flag=x","--","a","b"],"cwd":"/","env":{},"stdin":""}"#.to_vec();
    let outcome = Outcome { exit_code: Some(0), stdout: stdout.clone(), ..Outcome::default() };
    let limits = verbgate::exec::RunLimits {
        default_timeout: Duration::from_secs(5),
        max_timeout: Duration::from_secs(5),
        capture_bytes: 1 << 20,
    };
    let iterations = runs(2000);
    let mut ours = Vec::with_capacity(iterations);
    let mut floor = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        let t = Instant::now();
        verb.validate_args(&args)?;
        let text = args.to_string();
        let plan = runtime
            .plan(&verb.plugin.component, &verb.name, &text)
            .await?
            .map_err(|e| anyhow::anyhow!(e.message))?;
        let verbgate::runtime::model::Plan::Exec(cmd) = plan else { anyhow::bail!("not exec") };
        let _prepared =
            Prepared::from_command(&cmd, &verb.programs, &config.root, &config.env_allow, &limits)?;
        let mapped = runtime
            .map_result(&verb.plugin.component, &verb.name, &text, &outcome, None)
            .await?
            .map_err(|e| anyhow::anyhow!(e.message))?;
        let v: Value = serde_json::from_str(&mapped)?;
        let _ = verb.result_problems(&v);
        ours.push(t.elapsed().as_secs_f64() * 1e6);

        // The same work as native Rust: validate, build argv, parse output.
        let t = Instant::now();
        verb.validate_args(&args)?;
        let text = args.to_string();
        let parsed: Value = serde_json::from_str(&text)?;
        let mut argv =
            vec!["argv".to_string(), parsed["word"].as_str().unwrap_or_default().to_string()];
        argv.push(format!("--flag={}", parsed["flag"].as_str().unwrap_or_default()));
        argv.push("--".into());
        argv.extend(
            parsed["tail"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|x| x.as_str().map(String::from)),
        );
        let out: Value = serde_json::from_slice(&stdout)?;
        let _ = verb.result_problems(&out);
        std::hint::black_box((argv, out));
        floor.push(t.elapsed().as_secs_f64() * 1e6);
    }
    Ok(Row {
        figure: "host overhead per component op (no subprocess)".into(),
        value: median(ours),
        unit: "µs",
        baseline_name: "same logic native".into(),
        baseline: median(floor),
        goal: Some(("<=", 20.0)),
    })
}

/// What the policy decision and the audit row add to one op: a one-op
/// `job.status` request through the dispatcher with the trail on vs the same
/// with `audit.enabled = false`, interleaved, medians subtracted. (The
/// policy is decided in both; its own cost is measured alone and added.)
async fn policy_audit_cost() -> Result<Row> {
    let on = Home::new(&["fixture-echo"], "")?;
    let off = Home::new(&["fixture-echo"], "[audit]\nenabled = false\n")?;
    let (d_on, reg) = on.dispatcher().await?;
    let (d_off, _) = off.dispatcher().await?;
    let fp =
        d_on.handle(&json!({"help": "echo.job"})).await.body["help"]["schema_fingerprint"].clone();
    let mut ids = Vec::new();
    for d in [&d_on, &d_off] {
        let r = d.handle(&json!({"ops": [{"op": "echo.job", "args": {"word": "x"}, "schema_fingerprint": fp}]})).await.body;
        ids.push(r["results"][0]["result"]["job"]["id"].as_str().context("job id")?.to_string());
    }
    let iterations = runs(2000);
    let (mut with, mut without, mut decide) = (
        Vec::with_capacity(iterations),
        Vec::with_capacity(iterations),
        Vec::with_capacity(iterations),
    );
    let verb = reg.resolve("job.status").context("job.status")?.clone();
    let local = verbgate::dispatch::Caller::local();
    for _ in 0..iterations {
        let t = Instant::now();
        d_on.handle(&json!({"ops": [{"op": "job.status", "args": {"id": &ids[0]}}]})).await;
        with.push(t.elapsed().as_secs_f64() * 1e6);
        let t = Instant::now();
        d_off.handle(&json!({"ops": [{"op": "job.status", "args": {"id": &ids[1]}}]})).await;
        without.push(t.elapsed().as_secs_f64() * 1e6);
        let t = Instant::now();
        std::hint::black_box(d_on.policy().decide(&verb, &local));
        decide.push(t.elapsed().as_secs_f64() * 1e6);
    }
    let base = median(without);
    Ok(Row {
        figure: "policy + audit cost per op (one-op job.status)".into(),
        value: (median(with) - base).max(0.0) + median(decide),
        unit: "µs",
        baseline_name: "the op without the audit trail".into(),
        baseline: base,
        goal: Some(("<=", 20.0)),
    })
}

/// The program, argv and environment dispatch gives git.status's command
/// (the plugin's plan, prepared and hardened as dispatch does it; only the
/// run's private `TMPDIR` is missing), for a direct run of the same.
async fn git_status_command(home: &Home, registry: &Registry) -> Result<Prepared> {
    let config = home.config()?;
    let verb = registry.resolve("git.status").context("git.status")?.clone();
    let plan = registry
        .runtime()
        .plan(&verb.plugin.component, &verb.name, "{}")
        .await?
        .map_err(|e| anyhow::anyhow!(e.message))?;
    let verbgate::runtime::model::Plan::Exec(cmd) = plan else {
        anyhow::bail!("git.status does not plan one command")
    };
    let limits = verbgate::exec::RunLimits {
        default_timeout: Duration::from_secs(60),
        max_timeout: Duration::from_secs(60),
        capture_bytes: 1 << 20,
    };
    let mut p =
        Prepared::from_command(&cmd, &verb.programs, &config.root, &config.env_allow, &limits)?;
    verbgate::exec::Guards::new(vec![], vec![]).harden(&mut p, &config.root)?;
    Ok(p)
}

/// git.status end to end (the dispatcher's whole op, in process, OS
/// sandbox on as by default) vs the same program with the same argv, working
/// directory and environment started directly, interleaved.
async fn exec_end_to_end() -> Result<Row> {
    let home = Home::new(&[], "")?;
    let (d, registry) = home.dispatcher().await?;
    let git = git_status_command(&home, &registry).await?;
    let req = json!({"ops": [{"op": "git.status"}]});
    let dry = d.handle(&json!({"ops": [{"op": "git.status", "dry_run": true}]})).await.body;
    let argv: Vec<String> =
        serde_json::from_value(dry["results"][0]["result"]["plan"]["command"]["argv"].clone())
            .map_err(|e| anyhow::anyhow!("the dry run did not show an argv ({e}): {dry}"))?;
    anyhow::ensure!(
        argv == git.argv,
        "the direct run's argv {:?} is not the op's {argv:?}",
        git.argv
    );
    let (mut ours, mut direct) = (Vec::new(), Vec::new());
    for _ in 0..runs(60) {
        let t = Instant::now();
        let r = d.handle(&req).await.body;
        anyhow::ensure!(r["status"] == "success", "{r}");
        ours.push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        let out = Command::new(&git.program)
            .args(&git.argv)
            .env_clear()
            .envs(&git.env)
            .current_dir(&git.cwd)
            .output()?;
        anyhow::ensure!(out.status.success());
        direct.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let (o, b) = (median(ours), median(direct));
    Ok(Row {
        figure: "git.status end to end".into(),
        value: o,
        unit: "ms",
        baseline_name: "same git argv run directly".into(),
        baseline: b,
        goal: Some(("<=", 1.05 * b)),
    })
}

/// git.status's ops, interleaved, in two homes: the median of each.
async fn interleaved(a: &Home, b: &Home) -> Result<(f64, f64)> {
    let (da, _) = a.dispatcher().await?;
    let (db, _) = b.dispatcher().await?;
    let req = json!({"ops": [{"op": "git.status"}]});
    let (mut with, mut without) = (Vec::new(), Vec::new());
    for _ in 0..runs(60) {
        for (d, out) in [(&da, &mut with), (&db, &mut without)] {
            let t = Instant::now();
            let r = d.handle(&req).await.body;
            anyhow::ensure!(r["status"] == "success", "{r}");
            out.push(t.elapsed().as_secs_f64() * 1e3);
        }
    }
    Ok((median(with), median(without)))
}

/// One layer of the sandbox: git.status with verbgate.toml `with` vs
/// `without` (the layer off), interleaved; `goal` as a factor of the
/// baseline, or none (the layer's cost, reported).
async fn layer_cost(
    figure: &str,
    with: &str,
    baseline_name: &str,
    without: &str,
    goal: Option<f64>,
) -> Result<Row> {
    let (w, b) = interleaved(&Home::new(&[], with)?, &Home::new(&[], without)?).await?;
    Ok(Row {
        figure: figure.into(),
        value: w,
        unit: "ms",
        baseline_name: baseline_name.into(),
        baseline: b,
        goal: goal.map(|g| ("<=", g * b)),
    })
}

/// What Landlock and seccomp cost a started program: git.status confined
/// without namespaces of its own vs the same verb with `[sandbox] mode =
/// "off"`.
async fn sandbox_cost() -> Result<Row> {
    let (confined, open) = ("[sandbox]\nnamespaces = false\n", "[sandbox]\nmode = \"off\"\n");
    layer_cost(
        "git.status in Landlock + seccomp",
        confined,
        "same verb, sandbox off",
        open,
        Some(1.05),
    )
    .await
}

/// What the program's own namespaces add (the wrapper's exec, the
/// unshare, the fresh `/proc`, two forks): git.status as by default (the
/// memory bound, a layer of its own, off) vs with `[sandbox] namespaces =
/// false`.
#[cfg(target_os = "linux")]
async fn namespace_cost() -> Result<Row> {
    layer_cost(
        "git.status in its own namespaces (memory bound off)",
        "[limits]\nmax_memory_mib = 0\n",
        "same verb, namespaces = false",
        "[sandbox]\nnamespaces = false\n",
        None,
    )
    .await
}

/// What the memory bound adds (the tree's cgroup made, limited, joined,
/// read and removed): git.status as by default vs with `[limits]
/// max_memory_mib = 0`.
#[cfg(target_os = "linux")]
async fn memory_bound_cost() -> Result<Row> {
    layer_cost(
        "git.status with its tree's memory cgroup (the default)",
        "",
        "same verb, max_memory_mib = 0",
        "[limits]\nmax_memory_mib = 0\n",
        None,
    )
    .await
}

/// The whole sandbox's cost per started program as verbgate pays it vs
/// the same confinement outside verbgate: git.status (default sandbox) vs
/// git with the same argv and environment started directly through the
/// same confinement (`Confinement::command` + `spawn`, the wrapper and its
/// namespaces included), interleaved.
#[cfg(target_os = "linux")]
async fn confined_end_to_end() -> Result<Row> {
    let home = Home::new(&[], "")?;
    let (d, registry) = home.dispatcher().await?;
    let git = git_status_command(&home, &registry).await?;
    let config = home.config()?;
    let verb = registry.resolve("git.status").context("git.status")?.clone();
    let profile =
        verbgate::dispatch::prepare::profile_for(&config, &verb, "git", &git.program, &git.env);
    anyhow::ensure!(profile.processes.is_some(), "the default profile has no namespaces");
    let req = json!({"ops": [{"op": "git.status"}]});
    let (mut ours, mut direct) = (Vec::new(), Vec::new());
    for _ in 0..runs(60) {
        let t = Instant::now();
        let r = d.handle(&req).await.body;
        anyhow::ensure!(r["status"] == "success", "{r}");
        ours.push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        let tmp = verbgate::sandbox::RunTmp::new().map_err(|e| anyhow::anyhow!("{e:?}"))?;
        let c = verbgate::sandbox::Confinement::new(&profile, tmp.path())
            .map_err(|e| anyhow::anyhow!("{e:?}"))?;
        let mut cmd = c.command(&git.program);
        cmd.args(&git.argv).env_clear().envs(&git.env).env("TMPDIR", tmp.path());
        cmd.current_dir(&git.cwd).stdout(Stdio::piped()).stderr(Stdio::piped());
        let out = c.spawn(&mut cmd)?.wait_with_output()?;
        anyhow::ensure!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        direct.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let (o, b) = (median(ours), median(direct));
    Ok(Row {
        figure: "git.status, sandboxed, end to end".into(),
        value: o,
        unit: "ms",
        baseline_name: "same git in the same confinement, started directly".into(),
        baseline: b,
        goal: Some(("<=", 1.10 * b)),
    })
}

/// Where git.status's time goes (`VERBGATE_BENCH_EXEC_BREAKDOWN=1`), each
/// part timed alone in this process (which holds wasmtime's pooling
/// allocator, as a server does), medians: the op without the program (dry
/// run: plan + prepare), the sandbox's parts (profile, private TMPDIR,
/// Landlock ruleset), the host's process runner with and without the
/// sandbox, std's `Command::output`, and the whole op confined and not.
async fn exec_breakdown() -> Result<()> {
    let home = Home::new(&[], "")?;
    let open = Home::new(&[], "[sandbox]\nmode = \"off\"\n")?;
    let (d, registry) = home.dispatcher().await?;
    let (du, _) = open.dispatcher().await?;
    let verb = registry.resolve("git.status").context("git.status")?.clone();
    let git = verb.programs["git"].clone();
    let dry = json!({"ops": [{"op": "git.status", "dry_run": true}]});
    let req = json!({"ops": [{"op": "git.status"}]});
    let p = git_status_command(&home, &registry).await?;
    let (argv, env) = (p.argv.clone(), p.env.clone());
    let derive = || {
        verbgate::sandbox::Profile::derive(&verbgate::sandbox::profile::Inputs {
            verb: "git.status",
            effects: &verb.effects,
            root: &home.root,
            program: &git,
            env: &env,
            widen: &[],
            verbgate_home: &home.home,
            also_read: vec![],
        })
    };
    let confined = Prepared { sandbox: Some(derive()), ..p.clone() };
    // One confinement for the whole loop: what is left of the sandbox in
    // the runs below is the confining thread and the kernel's checks.
    let kept_tmp = verbgate::sandbox::RunTmp::new().map_err(|e| anyhow::anyhow!("{e:?}"))?;
    let kept =
        verbgate::sandbox::Confinement::new(confined.sandbox.as_ref().unwrap(), kept_tmp.path())
            .map_err(|e| anyhow::anyhow!("{e:?}"))?;
    let mut t: std::collections::BTreeMap<&str, Vec<f64>> = Default::default();
    let mut time = |name: &'static str, us: f64| t.entry(name).or_default().push(us);
    for _ in 0..runs(200) {
        let s = Instant::now();
        d.handle(&dry).await;
        time("dry run (plan + prepare), µs", s.elapsed().as_secs_f64() * 1e6);
        let s = Instant::now();
        std::hint::black_box(derive());
        time("Profile::derive, µs", s.elapsed().as_secs_f64() * 1e6);
        let s = Instant::now();
        let tmp = verbgate::sandbox::RunTmp::new().map_err(|e| anyhow::anyhow!("{e:?}"))?;
        let made = s.elapsed().as_secs_f64() * 1e6;
        let c = verbgate::sandbox::Confinement::new(confined.sandbox.as_ref().unwrap(), tmp.path())
            .map_err(|e| anyhow::anyhow!("{e:?}"))?;
        let ruleset = s.elapsed().as_secs_f64() * 1e6 - made;
        drop(c);
        drop(tmp);
        time("RunTmp made + removed, µs", s.elapsed().as_secs_f64() * 1e6 - ruleset);
        time("Confinement::new, µs", ruleset);
        let s = Instant::now();
        verbgate::exec::run_command(&p, 1 << 20).await.map_err(|e| anyhow::anyhow!("{e:?}"))?;
        time("run_command unconfined, ms", s.elapsed().as_secs_f64() * 1e3);
        let s = Instant::now();
        verbgate::exec::run_command(&confined, 1 << 20)
            .await
            .map_err(|e| anyhow::anyhow!("{e:?}"))?;
        time("run_command confined, ms", s.elapsed().as_secs_f64() * 1e3);
        let s = Instant::now();
        Command::new(&git).args(&argv).env_clear().envs(&env).current_dir(&home.root).output()?;
        time("std Command::output (same env), ms", s.elapsed().as_secs_f64() * 1e3);
        let s = Instant::now();
        let mut c = Command::new(&git);
        c.args(&argv).env_clear().envs(&env).current_dir(&home.root);
        c.env("TMPDIR", kept_tmp.path()).stdout(Stdio::piped()).stderr(Stdio::piped());
        anyhow::ensure!(kept.spawn(&mut c)?.wait_with_output()?.status.success());
        time(
            "std Command::output confined (ruleset made once), ms",
            s.elapsed().as_secs_f64() * 1e3,
        );
        let s = Instant::now();
        let mut c = Command::new(&git);
        c.args(&argv).env_clear().envs(&env).current_dir(&home.root);
        // SAFETY: an empty closure; it only makes std fork instead of spawn.
        unsafe { std::os::unix::process::CommandExt::pre_exec(&mut c, || Ok(())) };
        c.output()?;
        time("std Command::output with a pre_exec (fork), ms", s.elapsed().as_secs_f64() * 1e3);
        let s = Instant::now();
        d.handle(&req).await;
        time("whole op, sandbox on, ms", s.elapsed().as_secs_f64() * 1e3);
        let s = Instant::now();
        du.handle(&req).await;
        time("whole op, sandbox off, ms", s.elapsed().as_secs_f64() * 1e3);
    }
    // The op's parts around the program, each alone.
    let quiet = Home::new(&[], "[sandbox]\nmode = \"off\"\n[audit]\nenabled = false\n")?;
    let (dq, _) = quiet.dispatcher().await?;
    let runtime = registry.runtime().clone();
    let config = home.config()?;
    let limits = verbgate::exec::RunLimits {
        default_timeout: Duration::from_secs(5),
        max_timeout: Duration::from_secs(5),
        capture_bytes: 1 << 20,
    };
    let guards = verbgate::exec::Guards::new(vec![], vec![]);
    let output =
        verbgate::exec::run_command(&p, 1 << 20).await.map_err(|e| anyhow::anyhow!("{e:?}"))?;
    let turns = verbgate::dispatch::turns::Turns::new(&home.home, &home.root);
    for _ in 0..runs(200) {
        let s = Instant::now();
        let plan = runtime
            .plan(&verb.plugin.component, &verb.name, "{}")
            .await?
            .map_err(|e| anyhow::anyhow!(e.message))?;
        time("part: plan (component call), µs", s.elapsed().as_secs_f64() * 1e6);
        let verbgate::runtime::model::Plan::Exec(cmd) = plan else { anyhow::bail!("not exec") };
        let s = Instant::now();
        let mut prepared =
            Prepared::from_command(&cmd, &verb.programs, &config.root, &config.env_allow, &limits)?;
        guards.harden(&mut prepared, &config.root)?;
        time("part: Prepared::from_command + harden, µs", s.elapsed().as_secs_f64() * 1e6);
        let s = Instant::now();
        guards.check(&prepared, &config.root).await?;
        time("part: git guard check (cached verdict), µs", s.elapsed().as_secs_f64() * 1e6);
        let s = Instant::now();
        let mapped = runtime
            .map_result(&verb.plugin.component, &verb.name, "{}", &output, None)
            .await?
            .map_err(|e| anyhow::anyhow!(e.message))?;
        time("part: map_result (component call), µs", s.elapsed().as_secs_f64() * 1e6);
        // The floor under every plugin call: a fresh instance made (store,
        // WASI context, instantiation) and dropped (its pages reset), with
        // no call at all. A component op makes two.
        let s = Instant::now();
        let instance = runtime.ready(&verb.plugin.component).await;
        anyhow::ensure!(instance.is_some(), "the pool is too small to make an instance ahead");
        drop(instance);
        time(
            "part: a fresh instance made and dropped (no call), µs",
            s.elapsed().as_secs_f64() * 1e6,
        );
        let s = Instant::now();
        let v: Value = serde_json::from_str(&mapped)?;
        let _ = verb.result_problems(&v);
        time("part: result parse + schema, µs", s.elapsed().as_secs_f64() * 1e6);
        let s = Instant::now();
        drop(turns.take(verbgate::dispatch::turns::Access::Shared).await);
        time("part: turn taken + given back, µs", s.elapsed().as_secs_f64() * 1e6);
        let s = Instant::now();
        dq.handle(&req).await;
        time("whole op, sandbox off, audit off, ms", s.elapsed().as_secs_f64() * 1e3);
    }
    for _ in 0..runs(200) {
        let s = Instant::now();
        // SAFETY: the child only calls _exit.
        unsafe {
            let pid = libc::fork();
            if pid == 0 {
                libc::_exit(0);
            }
            libc::waitpid(pid, std::ptr::null_mut(), 0);
        }
        time("bare fork + _exit + wait, µs", s.elapsed().as_secs_f64() * 1e6);
    }
    for (name, v) in t {
        println!("{name}: {:.3}", median(v));
    }
    let status = std::fs::read_to_string("/proc/self/status")?;
    let maps = std::fs::read_to_string("/proc/self/maps")?.lines().count();
    println!(
        "maps: {maps}; {}",
        status
            .lines()
            .filter(|l| l.starts_with("VmRSS") || l.starts_with("VmPTE") || l.starts_with("VmSize"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(())
}

/// Start `verbgate serve` and time until tools/list is answered.
fn cold_start(home: &Home) -> Result<f64> {
    Ok(start_timed(home)?.0)
}

/// Start `verbgate serve`; the ms until tools/list is answered and until
/// the catalog (`help: true`, which waits for the bundled components)
/// names `git.status`.
fn start_timed(home: &Home) -> Result<(f64, f64)> {
    let t = Instant::now();
    let mut s = Stdio_::start(home)?;
    s.handshake()?;
    let tools = s.call("tools/list", json!({}))?;
    anyhow::ensure!(tools["result"]["tools"].as_array().map(Vec::len) == Some(1));
    let listed = t.elapsed().as_secs_f64() * 1e3;
    let catalog = s.call("tools/call", json!({"name": "request", "arguments": {"help": true}}))?;
    anyhow::ensure!(catalog.to_string().contains("git.status"), "no git.status: {catalog}");
    Ok((listed, t.elapsed().as_secs_f64() * 1e3))
}

fn start_rows() -> Result<Vec<Row>> {
    let floor = median(
        (0..10)
            .map(|_| {
                let t = Instant::now();
                let _ = Command::new(bin_dir().join("verbgate")).arg("--version").output();
                t.elapsed().as_secs_f64() * 1e3
            })
            .collect(),
    );
    let warm_home = Home::new(&[], "")?;
    // Until the catalog: that start compiles and caches every component.
    start_timed(&warm_home)?;
    let warm = median((0..10).map(|_| cold_start(&warm_home).unwrap_or(f64::NAN)).collect());
    let fresh: Vec<(f64, f64)> = (0..3)
        .map(|_| Home::new(&[], "").and_then(|h| start_timed(&h)).unwrap_or((f64::NAN, f64::NAN)))
        .collect();
    let cold = median(fresh.iter().map(|f| f.0).collect());
    let cold_catalog = median(fresh.iter().map(|f| f.1).collect());
    Ok(vec![
        Row {
            figure: "start to tools/list, warm compile cache".into(),
            value: warm,
            unit: "ms",
            baseline_name: "`verbgate --version` process".into(),
            baseline: floor,
            goal: Some(("<=", 100.0)),
        },
        Row {
            figure: "start to tools/list, cold compile cache".into(),
            value: cold,
            unit: "ms",
            baseline_name: "`verbgate --version` process".into(),
            baseline: floor,
            goal: Some(("<=", 200.0)),
        },
        Row {
            figure: "start to a complete catalog (help: true), cold compile cache".into(),
            value: cold_catalog,
            unit: "ms",
            baseline_name: "`verbgate --version` process".into(),
            baseline: floor,
            goal: None,
        },
    ])
}

/// How long after a job's end `job.wait` (poll interval 1 s) returns.
async fn wake_latency() -> Result<Row> {
    let home = Home::new(&["fixture-echo"], "")?;
    let (d, _) = home.dispatcher().await?;
    let fp =
        d.handle(&json!({"help": "echo.job"})).await.body["help"]["schema_fingerprint"].clone();
    let mut lat = Vec::new();
    for _ in 0..8 {
        let r = d.handle(&json!({"ops": [{"op": "echo.job", "args": {"sleep_ms": 300}, "schema_fingerprint": fp}]})).await.body;
        let id = r["results"][0]["result"]["job"]["id"].as_str().context("job id")?.to_string();
        let w = d.handle(&json!({"ops": [{"op": "job.wait", "args": {"ids": [&id], "max_wait_seconds": 30, "poll_interval_seconds": 1}}]})).await.body;
        let returned = verbgate::jobs::process::now_ms();
        anyhow::ensure!(w["results"][0]["result"]["all_terminal"] == true, "{w}");
        let st = d.handle(&json!({"ops": [{"op": "job.status", "args": {"id": &id}}]})).await.body;
        let ended = st["results"][0]["result"]["ended_ms"].as_i64().context("ended")?;
        lat.push((returned - ended) as f64);
    }
    Ok(Row {
        figure: "job.wait wake latency after exit (poll 1 s)".into(),
        value: median(lat),
        unit: "ms",
        baseline_name: "poll interval".into(),
        baseline: 1000.0,
        goal: Some(("<=", 50.0)),
    })
}

/// 16-op batches of job.status over stdio MCP vs the same via CLI processes;
/// also the home, the batch and the stdio request latency (ms, median), for
/// the HTTP rows beside it.
async fn batch_throughput() -> Result<(Row, Home, Value, f64)> {
    let home = Home::new(&["fixture-echo"], "")?;
    let (d, _) = home.dispatcher().await?;
    let fp =
        d.handle(&json!({"help": "echo.job"})).await.body["help"]["schema_fingerprint"].clone();
    let r = d
        .handle(
            &json!({"ops": [{"op": "echo.job", "args": {"word": "x"}, "schema_fingerprint": fp}]}),
        )
        .await
        .body;
    let id = r["results"][0]["result"]["job"]["id"].as_str().context("job id")?.to_string();
    let batch = json!({"ops": (0..16).map(|_| json!({"op": "job.status", "args": {"id": &id}})).collect::<Vec<_>>()});
    let cap16 = Home::new(&["fixture-echo"], "[limits]\nbatch_cap = 16")?;
    // Same store for the CLI baseline: reuse `home` but with cap 16.
    std::fs::write(
        home.home.join("verbgate.toml"),
        std::fs::read_to_string(cap16.home.join("verbgate.toml"))?,
    )?;
    let mut s = Stdio_::start(&home)?;
    s.handshake()?;
    s.request(batch.clone())?;
    let n = 200;
    let mut latency = Vec::with_capacity(n);
    let t = Instant::now();
    for _ in 0..n {
        let one = Instant::now();
        let r = s.request(batch.clone())?;
        latency.push(one.elapsed().as_secs_f64() * 1e3);
        anyhow::ensure!(r["status"] == "success", "{r}");
    }
    let ours = (n * 16) as f64 / t.elapsed().as_secs_f64();
    let m = 10;
    let t = Instant::now();
    for _ in 0..m {
        let out = home.verbgate().arg("request").arg(batch.to_string()).output()?;
        anyhow::ensure!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    }
    let cli = (m * 16) as f64 / t.elapsed().as_secs_f64();
    let row = Row {
        figure: "16-op job.status batches over stdio MCP".into(),
        value: ours,
        unit: "ops/s",
        baseline_name: "same batches, one CLI process each".into(),
        baseline: cli,
        goal: Some((">=", 5000.0)),
    };
    Ok((row, home, batch, median(latency)))
}

fn rss_kib(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(f64::NAN)
}

/// RSS of a server idle after answering tools/list.
fn server_rss(home: &Home) -> Result<f64> {
    let mut s = Stdio_::start(home)?;
    s.handshake()?;
    s.call("tools/list", json!({}))?;
    // On a fresh home tools/list answers before the bundled components are
    // compiled (in the background); the catalog waits for them, so this is
    // the server with all of them loaded (and cached for the next start).
    s.call("tools/call", json!({"name": "request", "arguments": {"help": true}}))?;
    std::thread::sleep(Duration::from_millis(300));
    Ok(rss_kib(s.child.id()) / 1024.0)
}

/// Idle RSS after a first start (bundled components compiled, cold cache)
/// and after a usual start (warm cache), beside an idle `cat`.
fn idle_rss() -> Result<Vec<Row>> {
    let home = Home::new(&[], "")?;
    let cold = server_rss(&home)?;
    let warm = median((0..3).map(|_| server_rss(&home).unwrap_or(f64::NAN)).collect());
    let mut cat = Command::new("cat").stdin(Stdio::piped()).stdout(Stdio::null()).spawn()?;
    std::thread::sleep(Duration::from_millis(100));
    let base = rss_kib(cat.id()) / 1024.0;
    let _ = cat.kill();
    let _ = cat.wait();
    Ok(vec![
        Row {
            figure: "idle RSS, bundled components loaded (warm cache)".into(),
            value: warm,
            unit: "MiB",
            baseline_name: "an idle `cat`".into(),
            baseline: base,
            goal: Some(("<=", 40.0)),
        },
        Row {
            figure: "idle RSS, first start (components compiled)".into(),
            value: cold,
            unit: "MiB",
            baseline_name: "an idle `cat`".into(),
            baseline: base,
            goal: Some(("<=", 40.0)),
        },
    ])
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0);
    let mem = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines().next().and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map(|kib| format!("{:.0} GiB", kib / 1024.0 / 1024.0))
        .unwrap_or_default();
    format!("{cpu}, {cores} cores, {mem} RAM, {}", std::env::consts::OS)
}

fn fmt(v: f64) -> String {
    if v.is_nan() {
        "n/a".into()
    } else if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// Run `f` on a runtime worker, as the MCP transport runs every request
/// (rmcp spawns a task per request): measured from `main`'s own thread (the
/// runtime's `block_on`), each op's task would be handed to a worker and
/// its answer back across threads, two wake-ups a server does not pay.
async fn on_worker<T: Send + 'static>(
    f: impl std::future::Future<Output = Result<T>> + Send + 'static,
) -> Result<T> {
    tokio::spawn(f).await?
}

fn main() -> Result<()> {
    // The ops this bench runs in process start their programs through this
    // very binary (`/proc/self/exe`), as the verbgate binary does: it must
    // be the sandbox's wrapper when asked, before any thread exists.
    #[cfg(target_os = "linux")]
    if verbgate::sandbox::namespace::is_entry(std::env::args_os().nth(1).as_deref()) {
        verbgate::sandbox::namespace::main();
    }
    tokio::runtime::Builder::new_multi_thread().enable_all().build()?.block_on(bench_main())
}

async fn bench_main() -> Result<()> {
    if std::env::var_os("VERBGATE_BENCH_OVERHEAD_ONLY").is_some() {
        let r = overhead().await?;
        println!("{}: {:.1} µs (native {:.2} µs)", r.figure, r.value, r.baseline);
        return Ok(());
    }
    if std::env::var_os("VERBGATE_BENCH_EXEC_BREAKDOWN").is_some() {
        return exec_breakdown().await;
    }
    if let Ok(mode) = std::env::var("VERBGATE_BENCH_GIT_STATUS_LOOP") {
        // git.status over and over (sandbox `on` or `off`), to profile.
        let home = Home::new(&[], if mode == "off" { "[sandbox]\nmode = \"off\"\n" } else { "" })?;
        let (d, _) = home.dispatcher().await?;
        let req = json!({"ops": [{"op": "git.status"}]});
        let t = on_worker(async move {
            let mut t = Vec::new();
            for _ in 0..runs(100) {
                let s = Instant::now();
                d.handle(&req).await;
                t.push(s.elapsed().as_secs_f64() * 1e3);
            }
            Ok(t)
        })
        .await?;
        println!("git.status, sandbox {mode}: {:.3} ms", median(t));
        return Ok(());
    }
    if std::env::var_os("VERBGATE_BENCH_AUDIT_ONLY").is_some() {
        let r = policy_audit_cost().await?;
        println!("{}: {:.2} µs (without: {:.0} µs)", r.figure, r.value, r.baseline);
        return Ok(());
    }
    if std::env::var_os("VERBGATE_BENCH_E2E_ONLY").is_some() {
        for r in [on_worker(exec_end_to_end()).await?, on_worker(sandbox_cost()).await?] {
            println!(
                "{}: {:.3} vs {:.3} ms (ratio {:.3})",
                r.figure,
                r.value,
                r.baseline,
                r.ratio()
            );
        }
        return Ok(());
    }
    if std::env::var_os("VERBGATE_BENCH_OTEL_ONLY").is_some() {
        println!("{}", otel::overhead()?.line());
        return Ok(());
    }
    if std::env::var_os("VERBGATE_BENCH_OAUTH_ONLY").is_some() {
        for r in oauth::jwt_validation().await? {
            println!("{}", r.line());
        }
        return Ok(());
    }
    if std::env::var_os("VERBGATE_BENCH_SANDBOX_ONLY").is_some() {
        let mut rows = vec![on_worker(sandbox_cost()).await?];
        #[cfg(target_os = "linux")]
        {
            rows.push(on_worker(namespace_cost()).await?);
            rows.push(on_worker(memory_bound_cost()).await?);
            rows.push(on_worker(confined_end_to_end()).await?);
        }
        for r in rows {
            println!("{}", r.line());
        }
        return Ok(());
    }
    let mut rows = Vec::new();
    for n in [5, 20, 100] {
        rows.push(tool_bytes(n).await?);
    }
    rows.push(catalog_bytes().await?);
    rows.push(overhead().await?);
    rows.push(policy_audit_cost().await?);
    rows.extend(oauth::jwt_validation().await?);
    rows.push(otel::overhead()?);
    rows.push(on_worker(exec_end_to_end()).await?);
    rows.push(on_worker(sandbox_cost()).await?);
    #[cfg(target_os = "linux")]
    {
        rows.push(on_worker(namespace_cost()).await?);
        rows.push(on_worker(memory_bound_cost()).await?);
        rows.push(on_worker(confined_end_to_end()).await?);
    }
    rows.extend(start_rows()?);
    rows.push(wake_latency().await?);
    let (stdio, home, batch, stdio_ms) = batch_throughput().await?;
    let stdio_ops = stdio.value;
    rows.push(stdio);
    rows.extend(http::rows(&home, &batch, stdio_ops, stdio_ms)?);
    rows.extend(idle_rss()?);

    let mut table = String::from("| figure | value | baseline (same run) | ratio | goal | met |\n|---|---|---|---|---|---|\n");
    for r in &rows {
        let goal = r
            .goal
            .map(|(op, g)| format!("{op} {} {}", fmt(g), r.unit))
            .unwrap_or_else(|| "—".into());
        let met = match r.met() {
            Some(true) => "met",
            Some(false) => "NOT met",
            None => "—",
        };
        table.push_str(&format!(
            "| {} | {} {} | {}: {} {} | {} | {goal} | {met} |\n",
            r.figure,
            fmt(r.value),
            r.unit,
            r.baseline_name,
            fmt(r.baseline),
            r.unit,
            fmt(r.ratio())
        ));
    }
    let machine = machine();
    println!("verbgate benchmarks — {machine}\n\n{table}");
    let out_dir = Path::new("target/bench");
    std::fs::create_dir_all(out_dir)?;
    std::fs::write(
        out_dir.join("results.json"),
        serde_json::to_string_pretty(
            &json!({ "machine": machine, "rows": rows.iter().map(Row::json).collect::<Vec<_>>() }),
        )?,
    )?;
    let md = format!(
        "# Benchmarks\n\nProduced by `just bench` (release build) on: {machine}.\nEach figure sits beside a baseline measured in the same run; the ratio is figure ÷ baseline.\nRaw numbers: `target/bench/results.json`.\n\n{table}\nNotes:\n- `tools/list` bytes do not depend on the verbs loaded (one tool); the baseline is what one tool per verb would advertise.\n- git.status end to end: the dispatcher's whole op in process (no MCP transport; the OS sandbox on, as by default), measured from a runtime worker as rmcp runs each request, vs the same program, argv, working directory and environment (prepared and hardened as dispatch does; only the run's private `TMPDIR` differs) started with std's `Command::output`, interleaved; the goal is 1.05 × that direct run. It is not met, and with the sandbox on it cannot be: the sandbox's own checks inside git (seccomp runs its filter on each of git status's ~1400 system calls, Landlock checks each of its ~200 opens) cost about 0.2 ms, some 9% of the direct run, before verbgate does anything (measured here with builds that skipped one or the other: ~0.1 ms each). `VERBGATE_BENCH_EXEC_BREAKDOWN=1 target/release/verbgate-bench` times each part alone (medians, this machine): the plan call about 46 µs, prepare and git's hardening 12 µs, the git guard's cached verdict (stamps of the repository's files) 22 µs, the sandbox profile 30–48 µs, the Landlock ruleset 29 µs, the private TMPDIR made (~36 µs) and removed (~120 µs, after the answer), a turn on the root 9 µs, map-result 27 µs, the result's schema 9 µs, and the audit row (~40 µs of SQLite, committed by the thread that then starts the program while the op's task makes the TMPDIR and ruleset). Inside the op, map-result takes about twice what it takes alone (~75 µs): git's run leaves the caches cold. The program's life is spent on a blocking thread (`exec/child.rs`: `poll` on its pipes, a pidfd for its end), about as cheap as std's `Command::output` (2.42 vs 2.33 ms, where tokio's process driver cost 2.50): each readiness event through tokio's I/O driver woke the task anew. `VERBGATE_BENCH_GIT_STATUS_LOOP=on|off` loops the op for a profiler.
- Plugin instances come from wasmtime's pooling allocator (memories, tables and fiber stacks reused; touched pages reset through PAGEMAP_SCAN): a fresh instance per call without an mmap/munmap per call.
- Host overhead per component op: two calls (plan, map-result), each on a fresh instance, as SPEC §5 requires (nothing leaks between calls). The goal of 20 µs is not met and cannot be under that rule on this machine: a fresh instance made and dropped without any call costs 7.6–9 µs (store and WASI context, instantiation, the bindings' type check of each export, the reset of its pages), two of them 15–18 µs, and the native work of the op (argument and result validation, preparing the command) about 2 µs, which leaves nothing for the guests' own work and the copies in and out of their memory (about 10 µs for the two calls). Tried and measured without effect: a timer per call only for calls that wait (no futex wake was being paid), the plugins at `opt-level = 3` (−1.5 µs for 20% larger components), making the next instances ahead and dropping stores on another task (42–53 µs against 29–31 µs, interleaved: on 2 cores the background work competes with the op).
- Start to tools/list: components are loaded from the compile cache (read, tag checked, deserialized) on every core at once, then described and admitted in order: about 40 ms warm, against 45 ms loading one after another. The loading thread's malloc arena keeps what it allocated of the components' metadata (+1.4 MiB of idle RSS). Every bundled component's `describe` runs at each start (~6 ms in all; since the guest SDK derives result schemas too, ~3 ms more than before); caching its answer by component digest would remove it, not done.
- A turn on the root (see `dispatch/turns.rs`) is taken on the op's own thread when nobody holds the root: the gate and lock files are tried without waiting, and only a contended turn waits on a blocking thread (about 100 µs → 10 µs).\n- Wake latency is the time from the job's recorded end to `job.wait` returning, with a 1 s poll interval.\n- HTTP rows: `verbgate serve --http 127.0.0.1:0` with a bearer token, raw HTTP/1.1 clients (a new connection per request, the answer read from the event stream); 1 client sends 200 batches, 50 clients 20 each at once; latency is per request. The Node row is `tests/bench/node_client.mjs`: Node's fetch over one kept-alive connection, 200 sequential calls (without `TCP_NODELAY` every other call waited ~40 ms on Node's delayed ACK). RSS is the server's with 50 sessions initialised and open.\n- Policy + audit: a one-op `job.status` request through the dispatcher with the audit trail on vs off, interleaved, medians subtracted, plus the policy decision alone (it runs in both). A job verb that only reads queues its row; an op that starts a program (or kills a job) commits its row before it acts, which this row does not measure.\n- The OS sandbox: git.status with the sandbox (the default) vs the same verb with `[sandbox] mode = \"off\"`, interleaved, on this repository as the root. The program is started by a thread that confined itself first (`no_new_privs`, Landlock, seccomp: each applies to the calling thread only, and the child inherits them), so std starts it with posix_spawn. It used to be confined in a `pre_exec` hook, which forces `fork`: forking a process that holds wasmtime's pool took 2–3 ms on this VM (bare fork + exit + wait; 0.8 ms even for a Python process), most of what the sandbox cost. What is left: the run's private TMPDIR, the Landlock ruleset, the thread, and the kernel's own checks (above).\n"
    );
    // Figures measured by hand (fresh-clone build times) live below this
    // heading and are kept as they are.
    let kept = std::fs::read_to_string("BENCHMARKS.md")
        .ok()
        .and_then(|old| old.find(HAND_MEASURED).map(|i| old[i..].to_string()))
        .unwrap_or_default();
    std::fs::write("BENCHMARKS.md", format!("{md}\n{kept}"))?;
    Ok(())
}
