//! `verbgate dev <plugin-dir>`: the author's inner loop in one command —
//! build (the project's `build.sh`), sign with the author's local key
//! (created on first use), install into a plugins directory, check, and
//! print the verbs' catalog lines as callers will see them.

use anyhow::{bail, Context as _, Result};
use serde_json::json;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};

use super::check::check_bytes;
use super::context::Context;
use super::global::{print_json, GlobalArgs};
use crate::config::Config;
use crate::registry::Source;
use crate::trust::keys::{generate, public_of, read_secret_key};
use crate::trust::{key_id, sign_component, TrustStore};

/// The name of the author's local signing key in `$VERBGATE_HOME/keys`.
pub const DEV_KEY: &str = "dev";

/// Arguments of `dev`.
#[derive(Debug, clap::Args)]
pub struct DevArgs {
    /// The plugin project (made by `verbgate new`, or any directory with a
    /// `build.sh` that writes `build/<plugin-name>.wasm`).
    dir: PathBuf,
    /// Install into this directory. Default: $VERBGATE_HOME/plugins.
    #[arg(long, value_name = "DIR")]
    install: Option<PathBuf>,
    /// Sign with this secret key instead of $VERBGATE_HOME/keys/dev.sk.pem.
    #[arg(long, short = 'k', value_name = "FILE")]
    key: Option<PathBuf>,
}

/// Run `build.sh` with its output on our stderr (stdout carries the JSON).
fn build(dir: &Path) -> Result<PathBuf> {
    let script = dir.join("build.sh");
    if !script.is_file() {
        bail!("{} has no build.sh; scaffold a project with `verbgate new <name>`", dir.display());
    }
    let stderr = std::io::stderr().as_fd().try_clone_to_owned()?;
    let status = std::process::Command::new("bash")
        .arg(&script)
        .current_dir(dir)
        .stdout(Stdio::from(stderr))
        .status()
        .with_context(|| format!("cannot run {}", script.display()))?;
    if !status.success() {
        bail!("{} failed ({status}); its output is above", script.display());
    }
    let mut built: Vec<PathBuf> = std::fs::read_dir(dir.join("build"))
        .with_context(|| format!("{} wrote no build/ directory", script.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "wasm"))
        .collect();
    match built.len() {
        1 => Ok(built.remove(0)),
        0 => bail!("{} produced no build/*.wasm", script.display()),
        _ => bail!("build/ holds several components ({built:?}); keep one per project"),
    }
}

/// The signing key (secret file, public file if known, whether it was just
/// created): the given one, or the dev key (created if missing).
fn signing_key(
    config: &Config,
    given: Option<PathBuf>,
) -> Result<(PathBuf, Option<PathBuf>, bool)> {
    if let Some(k) = given {
        // `verbgate keygen` writes NAME.sk.pem beside NAME.pk.pem.
        let public = k
            .to_str()
            .map(|s| PathBuf::from(s.replace(".sk.pem", ".pk.pem")))
            .filter(|p| p != &k && p.is_file());
        return Ok((k, public, false));
    }
    let dir = config.keys_dir();
    let secret = dir.join(format!("{DEV_KEY}.sk.pem"));
    if secret.exists() {
        return Ok((secret, Some(dir.join(format!("{DEV_KEY}.pk.pem"))), false));
    }
    let files = generate(&dir, DEV_KEY, false)?;
    Ok((files.secret, Some(files.public), true))
}

/// Build, sign, install, check, show.
pub async fn run(g: &GlobalArgs, a: DevArgs) -> Result<ExitCode> {
    let dir = a
        .dir
        .canonicalize()
        .with_context(|| format!("no plugin project at {}", a.dir.display()))?;
    let config = Config::load(&g.overrides())?;
    let built = build(&dir)?;
    let file_name = built.file_name().context("built component has no file name")?.to_owned();

    let (secret, public, created) = signing_key(&config, a.key)?;
    let sk = read_secret_key(&secret)?;
    let pk = public_of(&sk)?;
    let bytes =
        std::fs::read(&built).with_context(|| format!("cannot read {}", built.display()))?;
    let signed = sign_component(&bytes, &sk, &pk)?;
    let install_dir = a.install.unwrap_or_else(|| config.home.join("plugins"));
    {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&install_dir)
            .with_context(|| format!("cannot create {}", install_dir.display()))?;
    }
    let installed = install_dir.join(&file_name);
    // An exclusive temporary name, then a rename: a server loading the
    // directory never reads half a file, and nothing planted is written
    // through.
    crate::private_files::write_file_atomic(&installed, &signed, 0o644)?;

    let trusted = TrustStore::load(&config.trust_dir())?.find(&pk).is_some();
    let mut global = g.clone();
    if !config.plugin_dirs.contains(&install_dir) {
        global.plugins.push(install_dir.clone());
    }
    let ctx = Context::load(&global).await?;
    let report = check_bytes(&ctx, &signed).await;
    let source = Source::File { path: installed.clone() };
    let catalog: Vec<String> = ctx
        .registry()
        .verbs()
        .filter(|v| v.plugin.source == source)
        .map(|v| v.signature.clone())
        .collect();
    let unavailable: Vec<_> = ctx
        .registry()
        .unavailable()
        .iter()
        .filter(|u| Path::new(&u.source) == installed)
        .cloned()
        .collect();
    let mut next = Vec::new();
    if !trusted {
        let file = public.as_ref().map_or_else(
            || format!("<the public key of {}>", secret.display()),
            |p| p.display().to_string(),
        );
        next.push(format!(
            "trust your key so verbgate loads what it signs: verbgate trust add {file}"
        ));
    }
    let ok = report.ok() && unavailable.is_empty() && trusted;
    print_json(&json!({
        "ok": ok,
        "built": built,
        "installed": installed,
        "key": { "id": key_id(&pk), "secret": secret, "public": public, "created": created },
        "trusted": trusted,
        "catalog": catalog,
        "unavailable": unavailable,
        "check": report.to_json(),
        "next": next,
    }));
    Ok(if ok { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
