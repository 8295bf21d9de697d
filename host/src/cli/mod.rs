//! The command line: clap definitions and the glue that runs each
//! subcommand. One file per subcommand group; JSON on stdout, logs on
//! stderr. Exit codes: 0 success; 1 failure (refused, invalid, partial);
//! 2 usage error (clap); 4 a request that could not run at all.

mod ask;
mod audit;
mod check;
mod context;
mod dev;
mod doctor;
mod global;
mod jobs;
mod keys;
mod new;
mod request;
mod serve;
mod token;
mod trust;
mod verbs;

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

use global::{print_json, GlobalArgs};

/// verbgate: signed WebAssembly verbs for AI agents, behind one MCP tool.
#[derive(Debug, Parser)]
#[command(name = "verbgate", version, long_version = long_version(), about, long_about = None)]
pub struct Cli {
    #[command(flatten)]
    global: GlobalArgs,
    #[command(subcommand)]
    command: Command,
}

/// `verbgate --version`: the version, the plugin contracts this binary
/// loads, and the digest of every component it embeds (what an operator
/// compares against a release's notes).
fn long_version() -> &'static str {
    static TEXT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TEXT.get_or_init(|| {
        let wit: Vec<String> = crate::runtime::wit::SUPPORTED_VERSIONS
            .iter()
            .map(|v| format!("verbgate:verbs@{v}"))
            .collect();
        let mut text = format!(
            "{}\ncontracts: {}\nbundled components:",
            env!("CARGO_PKG_VERSION"),
            wit.join(", ")
        );
        for c in crate::registry::bundled::BUNDLED {
            text.push_str(&format!("\n  {} sha256:{}", c.name, c.sha256));
        }
        text
    })
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve MCP over stdio (or Streamable HTTP with --http): one tool, `request`.
    Serve(serve::ServeArgs),
    /// Run one request ({"ops": [...]} or {"help": ...}) and print the JSON result.
    Request(request::RequestArgs),
    /// Print the verb catalog as JSON, with unavailable verbs and reasons.
    Verbs(verbs::VerbsArgs),
    /// Check a component for its author: contract, schemas, names, lint. Needs no trust, runs nothing.
    Check(check::CheckArgs),
    /// What this machine's kernel enforces and the OS sandbox profile each verb's programs run in.
    Doctor(doctor::DoctorArgs),
    /// Scaffold a plugin project (Rust, Python or JavaScript) with one example verb.
    New(new::NewArgs),
    /// Build, sign with your dev key, install and check a plugin project; print its catalog lines.
    Dev(dev::DevArgs),
    /// Generate an ed25519 signing key pair.
    Keygen(keys::KeygenArgs),
    /// Sign a component with your secret key.
    Sign(keys::SignArgs),
    /// Verify a component's signature against the trust store (or one key).
    Verify(keys::VerifyArgs),
    /// Manage the operator's trusted keys (terminal only, never a verb).
    #[command(subcommand)]
    Trust(trust::TrustCommand),
    /// Manage the job store (terminal only, never a verb).
    #[command(subcommand)]
    Jobs(jobs::JobsCommand),
    /// Manage bearer tokens for `serve --http` (terminal only, never a verb).
    #[command(subcommand)]
    Token(token::TokenCommand),
    /// Read the audit trail: every op, who asked, the policy's decision, what ran (terminal only, never a verb).
    Audit(audit::AuditArgs),
    /// Internal: supervise one job (started detached by verbgate itself).
    #[command(name = "__supervise", hide = true)]
    Supervise {
        /// The state directory holding the job store.
        #[arg(long)]
        state: PathBuf,
        /// The job id.
        #[arg(long)]
        id: String,
        /// The OS sandbox profile the program runs in, as JSON (absent:
        /// unconfined, the operator turned the sandbox off).
        #[arg(long)]
        sandbox: Option<String>,
    },
}

/// Entry point for the binary.
pub fn main() -> ExitCode {
    // Before anything else runs: no core file, not dumpable, no inherited
    // descriptor reaches a program (see sandbox::self_protect).
    if let Err(e) = crate::sandbox::self_protect::protect_this_process() {
        eprintln!("verbgate: cannot protect this process from the programs it starts: {e}");
        return ExitCode::FAILURE;
    }
    let cli = Cli::parse();
    init_logging();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("verbgate: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(run(cli));
    match result {
        Ok(code) => code,
        Err(e) => {
            // A home that is not safe to trust has its own code and names the path.
            let error = match e.downcast_ref::<crate::private_files::InsecureFile>() {
                Some(f) => {
                    serde_json::json!({ "code": f.code().as_str(), "message": format!("{e:#}"), "path": f.path, "fix": f.fix })
                }
                None => match e.downcast_ref::<crate::config::HomeInRoot>() {
                    Some(h) => {
                        let mut error = serde_json::json!({
                            "code": h.code().as_str(),
                            "message": format!("{e:#}"),
                            "home": h.home.display().to_string(),
                            "root": h.root.display().to_string(),
                        });
                        if let Some(c) = &h.config {
                            error["config"] = c.display().to_string().into();
                        }
                        error
                    }
                    None => serde_json::json!({ "code": "internal", "message": format!("{e:#}") }),
                },
            };
            print_json(&serde_json::json!({ "ok": false, "error": error }));
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let g = &cli.global;
    match cli.command {
        Command::Serve(a) => serve::run(g, a).await,
        Command::Request(a) => request::run(g, a).await,
        Command::Verbs(a) => verbs::run(g, a).await,
        Command::Check(a) => check::run(g, a).await,
        Command::Doctor(a) => doctor::run(g, a).await,
        Command::New(a) => new::run(g, a),
        Command::Dev(a) => dev::run(g, a).await,
        Command::Keygen(a) => keys::keygen(g, a),
        Command::Sign(a) => keys::sign(g, a),
        Command::Verify(a) => keys::verify(g, a),
        Command::Trust(c) => trust::run(g, c),
        Command::Jobs(c) => jobs::run(g, c),
        Command::Token(c) => token::run(g, c),
        Command::Audit(a) => audit::run(g, a).await,
        Command::Supervise { state, id, sandbox } => Ok(ExitCode::from(
            crate::jobs::supervisor::supervise(&state, &id, sandbox.as_deref()) as u8,
        )),
    }
}

fn init_logging() {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let filter = tracing_subscriber::EnvFilter::try_from_env("VERBGATE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let fmt = tracing_subscriber::fmt::layer().with_writer(std::io::stderr).with_target(false);
    let _ = tracing_subscriber::registry()
        .with(filter)
        .with(tracing_subscriber::filter::filter_fn(|m| !is_error_answer_echo(m)))
        .with(fmt)
        .try_init();
}

/// rmcp's WARN for every error answer a handler returns (`response error`,
/// with fields `id` and `error`): the client gets that answer itself, and
/// an ordinary client cancel ends in one, so hosts showed the user a
/// warning for pressing stop. Shown at DEBUG only (`VERBGATE_LOG=rmcp=debug`
/// still shows rmcp's own debug lines of the same answer).
fn is_error_answer_echo(m: &tracing::Metadata<'_>) -> bool {
    m.target().starts_with("rmcp::service")
        && *m.level() == tracing::Level::WARN
        && m.fields().field("id").is_some()
        && m.fields().field("error").is_some()
}
