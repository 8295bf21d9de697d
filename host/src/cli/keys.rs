//! `keygen`, `sign` and `verify`: the verb author's side of trust.

use anyhow::{Context as _, Result};
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;

use super::global::{print_json, GlobalArgs};
use crate::config::Config;
use crate::json::sha256_hex;
use crate::trust::keys::{generate, public_of, read_public_key, read_secret_key};
use crate::trust::verify::verify_with_key;
use crate::trust::{key_id, sign_component, verify_component, TrustStore};

/// Arguments of `keygen`.
#[derive(Debug, clap::Args)]
pub struct KeygenArgs {
    /// Key name: files are <NAME>.sk.pem and <NAME>.pk.pem.
    #[arg(long, default_value = "default")]
    name: String,
    /// Directory to write to. Default: $VERBGATE_HOME/keys.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// Replace an existing key of that name.
    #[arg(long)]
    force: bool,
}

/// Arguments of `sign`.
#[derive(Debug, clap::Args)]
pub struct SignArgs {
    /// The component to sign.
    component: PathBuf,
    /// Secret key file. Default: $VERBGATE_HOME/keys/default.sk.pem.
    #[arg(long, short = 'k', value_name = "FILE")]
    key: Option<PathBuf>,
    /// Where to write the signed component. Default: replace the input.
    #[arg(long, short = 'o', value_name = "FILE")]
    out: Option<PathBuf>,
}

/// Arguments of `verify`.
#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// The component to verify.
    component: PathBuf,
    /// Verify against this public key instead of the trust store.
    #[arg(long, short = 'K', value_name = "FILE")]
    key: Option<PathBuf>,
}

fn home_config(g: &GlobalArgs) -> Result<Config> {
    Config::load(&g.overrides())
}

/// Generate a key pair.
pub fn keygen(g: &GlobalArgs, a: KeygenArgs) -> Result<ExitCode> {
    let dir = match a.dir {
        Some(d) => d,
        None => home_config(g)?.keys_dir(),
    };
    let files = generate(&dir, &a.name, a.force)?;
    print_json(&json!({
        "ok": true,
        "key_id": files.key_id,
        "secret_key": files.secret,
        "public_key": files.public,
        "next": format!("sign with `verbgate sign <component.wasm> --key {}`; operators trust it with `verbgate trust add {}`", files.secret.display(), files.public.display()),
    }));
    Ok(ExitCode::SUCCESS)
}

/// Sign a component.
pub fn sign(g: &GlobalArgs, a: SignArgs) -> Result<ExitCode> {
    let key = match a.key {
        Some(k) => k,
        None => home_config(g)?.keys_dir().join("default.sk.pem"),
    };
    let sk = read_secret_key(&key)
        .with_context(|| "no signing key (create one with `verbgate keygen`)")?;
    let pk = public_of(&sk)?;
    let bytes = std::fs::read(&a.component)
        .with_context(|| format!("cannot read {}", a.component.display()))?;
    let signed = sign_component(&bytes, &sk, &pk)
        .with_context(|| format!("cannot sign {}", a.component.display()))?;
    let out = a.out.unwrap_or_else(|| a.component.clone());
    std::fs::write(&out, &signed).with_context(|| format!("cannot write {}", out.display()))?;
    print_json(&json!({
        "ok": true,
        "file": out,
        "signer": key_id(&pk),
        "digest": format!("sha256:{}", sha256_hex(&signed)),
    }));
    Ok(ExitCode::SUCCESS)
}

/// Verify a component.
pub fn verify(g: &GlobalArgs, a: VerifyArgs) -> Result<ExitCode> {
    let bytes = std::fs::read(&a.component)
        .with_context(|| format!("cannot read {}", a.component.display()))?;
    let result = match &a.key {
        Some(k) => verify_with_key(&bytes, &read_public_key(k)?),
        None => verify_component(&bytes, &TrustStore::load(&home_config(g)?.trust_dir())?),
    };
    match result {
        Ok(signer) => {
            print_json(
                &json!({ "ok": true, "file": a.component, "signer": signer.key_id, "signer_name": signer.name, "digest": format!("sha256:{}", sha256_hex(&bytes)) }),
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            print_json(
                &json!({ "ok": false, "file": a.component, "code": e.kind(), "reason": format!("{} refused: {e}", a.component.display()) }),
            );
            Ok(ExitCode::FAILURE)
        }
    }
}
