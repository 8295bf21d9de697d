//! Signature refusal: a component from disk loads only with a valid
//! signature from a trusted key. Each test tries to get a changed or
//! untrusted component loaded and asserts the refusal names the file and
//! the failure.

use serde_json::{json, Value};
use verbgate_tests::{component, Env};

/// The `unavailable` entry for a file, if it was refused.
fn refusal(env: &Env, file: &str) -> Option<Value> {
    let verbs = env.verbs();
    verbs["unavailable"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["source"].as_str().unwrap_or("").ends_with(file))
        .cloned()
}

fn assert_refused(env: &Env, file: &str, code: &str) {
    let r = refusal(env, file).unwrap_or_else(|| panic!("{file} was not refused: {}", env.verbs()));
    assert_eq!(r["code"], code, "{r}");
    let reason = r["reason"].as_str().unwrap();
    assert!(reason.contains(file), "reason must name the file: {reason}");
    // And the verb it declares is not reachable.
    let res = env.op("echo.argv", json!({"word": "x"}));
    assert_eq!(res["ok"], false);
    assert_eq!(res["error"]["code"], "unknown_verb", "{res}");
}

fn signed_bytes(env: &Env) -> Vec<u8> {
    std::fs::read(env.install("fixture-echo")).unwrap()
}

/// Length of the first section (the signature) including its header.
fn first_section_end(bytes: &[u8]) -> usize {
    let mut pos = 9; // preamble (8) + section id (1)
    let mut len = 0usize;
    let mut shift = 0;
    loop {
        let b = bytes[pos];
        pos += 1;
        len |= ((b & 0x7f) as usize) << shift;
        shift += 7;
        if b & 0x80 == 0 {
            break;
        }
    }
    pos + len
}

#[test]
fn a_signed_component_loads_and_its_verb_runs() {
    let env = Env::new();
    env.install("fixture-echo");
    let res = env.op("echo.argv", json!({"word": "hello"}));
    assert_eq!(res["ok"], true, "{res}");
    assert_eq!(res["result"]["argv"], json!(["hello"]));
    let verbs = env.verbs();
    let plugin = verbs["plugins"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "fixture-echo")
        .unwrap()
        .clone();
    assert!(plugin["signer"].as_str().unwrap().starts_with("ed25519:"), "{plugin}");
}

#[test]
fn an_unsigned_component_is_refused() {
    let env = Env::new();
    env.install_bytes("echo.wasm", &std::fs::read(component("fixture-echo")).unwrap());
    assert_refused(&env, "echo.wasm", "unsigned");
}

#[test]
fn a_component_with_one_flipped_byte_is_refused() {
    let env = Env::new();
    let mut bytes = signed_bytes(&env);
    std::fs::remove_file(env.plugins.join("fixture-echo.wasm")).unwrap();
    let at = first_section_end(&bytes) + (bytes.len() - first_section_end(&bytes)) / 2;
    bytes[at] ^= 0x01;
    env.install_bytes("flipped.wasm", &bytes);
    assert_refused(&env, "flipped.wasm", "tampered");
}

#[test]
fn a_flipped_preamble_byte_is_refused() {
    // The 8-byte preamble is outside the signed hash; the host checks it.
    let env = Env::new();
    let mut bytes = signed_bytes(&env);
    std::fs::remove_file(env.plugins.join("fixture-echo.wasm")).unwrap();
    bytes[4] ^= 0x01;
    env.install_bytes("preamble.wasm", &bytes);
    assert_refused(&env, "preamble.wasm", "not_a_component");
}

#[test]
fn a_section_appended_after_signing_is_refused() {
    let env = Env::new();
    let mut bytes = signed_bytes(&env);
    std::fs::remove_file(env.plugins.join("fixture-echo.wasm")).unwrap();
    // A well-formed custom section named "x" with 3 payload bytes.
    bytes.extend_from_slice(&[0x00, 0x05, 0x01, b'x', 1, 2, 3]);
    env.install_bytes("appended.wasm", &bytes);
    assert_refused(&env, "appended.wasm", "tampered");
}

#[test]
fn a_component_signed_by_an_untrusted_key_is_refused() {
    let env = Env::new();
    let other = env.run_ok(&["keygen", "--name", "stranger"]);
    let dest = env.plugins.join("stranger.wasm");
    env.run_ok(&[
        "sign",
        component("fixture-echo").to_str().unwrap(),
        "--key",
        other["secret_key"].as_str().unwrap(),
        "--out",
        dest.to_str().unwrap(),
    ]);
    assert_refused(&env, "stranger.wasm", "untrusted_key");
    // `verify` agrees, and names the key.
    let (code, out, _) = env.run(&["verify", dest.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert_eq!(out["code"], "untrusted_key");
    assert!(out["reason"].as_str().unwrap().contains(other["key_id"].as_str().unwrap()), "{out}");
}

#[test]
fn a_component_with_its_signature_stripped_is_refused() {
    let env = Env::new();
    let bytes = signed_bytes(&env);
    std::fs::remove_file(env.plugins.join("fixture-echo.wasm")).unwrap();
    let mut stripped = bytes[..8].to_vec();
    stripped.extend_from_slice(&bytes[first_section_end(&bytes)..]);
    env.install_bytes("stripped.wasm", &stripped);
    assert_refused(&env, "stripped.wasm", "unsigned");
}

#[test]
fn removing_a_key_from_the_trust_store_unloads_what_it_signed() {
    let env = Env::new();
    env.install("fixture-echo");
    assert_eq!(env.op("echo.argv", json!({}))["ok"], true);
    env.run_ok(&["trust", "remove", "test key"]);
    assert_refused(&env, "fixture-echo.wasm", "no_trusted_keys");
}

#[test]
fn verify_accepts_the_signed_file_and_rejects_the_original() {
    let env = Env::new();
    let signed = env.install("fixture-echo");
    let ok = env.run_ok(&["verify", signed.to_str().unwrap()]);
    assert_eq!(ok["ok"], true);
    let (code, out, _) = env.run(&["verify", component("fixture-echo").to_str().unwrap()]);
    assert_eq!(code, 1);
    assert_eq!(out["code"], "unsigned");
}

#[test]
fn a_component_built_for_an_unknown_contract_version_is_refused_by_name() {
    let env = Env::new();
    // Rewrite the exported interface name to a version this host lacks
    // (same length, so the binary stays well-formed), then sign it properly.
    let mut bytes = std::fs::read(component("fixture-echo")).unwrap();
    let from = b"verbgate:verbs/plugin@0.2.0";
    let to = b"verbgate:verbs/plugin@9.9.9";
    let mut replaced = 0;
    let mut i = 0;
    while i + from.len() <= bytes.len() {
        if &bytes[i..i + from.len()] == from {
            bytes[i..i + from.len()].copy_from_slice(to);
            replaced += 1;
        }
        i += 1;
    }
    assert!(replaced > 0);
    let unsigned = env.tmp.path().join("future.wasm");
    std::fs::write(&unsigned, &bytes).unwrap();
    let dest = env.plugins.join("future.wasm");
    env.run_ok(&[
        "sign",
        unsigned.to_str().unwrap(),
        "--key",
        env.secret_key().to_str().unwrap(),
        "--out",
        dest.to_str().unwrap(),
    ]);
    let r = refusal(&env, "future.wasm").unwrap_or_else(|| panic!("not refused: {}", env.verbs()));
    assert_eq!(r["code"], "unknown_wit_version");
    assert!(r["reason"].as_str().unwrap().contains("verbgate:verbs@9.9.9"), "{r}");
    assert!(
        r["reason"].as_str().unwrap().contains("supported: 0.1.0, 0.2.0"),
        "both contracts are named: {r}"
    );
    let (_, check, _) = env.run(&["check", dest.to_str().unwrap()]);
    assert_eq!(check["ok"], false);
    assert_eq!(check["errors"][0]["code"], "unknown_wit_version", "{check}");
    assert!(check["errors"][0]["message"].as_str().unwrap().contains("9.9.9"), "{check}");
}

/// Run verbgate, failing the test if it has not finished within `secs`
/// (a bound only a hang would blow). Returns (exit code, stdout JSON).
fn run_within(env: &Env, args: &[&str], secs: u64) -> (i32, Value) {
    use std::io::Read;
    let mut child = env
        .cmd(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("verbgate {args:?} did not finish within {secs} s");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let mut out = String::new();
    child.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    (
        status.code().unwrap_or(-1),
        serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}")),
    )
}

/// A hostile trust store entry never blocks a start, is never read past its
/// cap, and is reported (in `trust list` and `verbs`) as skipped with the
/// reason, while the real key keeps working.
fn assert_skipped_without_blocking(env: &Env, file: &str, reason: &str) {
    env.install("fixture-echo");
    let (code, list) = run_within(env, &["trust", "list"], 20);
    assert_eq!(code, 0, "{list}");
    let skipped = list["skipped"].as_array().unwrap_or_else(|| panic!("{list}"));
    let entry = skipped
        .iter()
        .find(|s| s["path"].as_str().unwrap().ends_with(file))
        .unwrap_or_else(|| panic!("{file} not listed as skipped: {list}"));
    assert!(entry["reason"].as_str().unwrap().contains(reason), "{entry}");
    assert_eq!(list["keys"].as_array().unwrap().len(), 1, "the real key is still trusted: {list}");
    let (code, verbs) = run_within(env, &["verbs"], 20);
    assert_eq!(code, 0, "{verbs}");
    assert!(
        verbs["trust_skipped"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["path"].as_str().unwrap().ends_with(file)),
        "{verbs}"
    );
    assert!(
        verbs["plugins"].as_array().unwrap().iter().any(|p| p["name"] == "fixture-echo"),
        "{verbs}"
    );
    let (code, res) = run_within(
        env,
        &["request", &json!({"ops": [{"op": "echo.argv", "args": {"word": "x"}}]}).to_string()],
        20,
    );
    assert_eq!((code, res["results"][0]["ok"].clone()), (0, json!(true)), "{res}");
}

#[test]
fn a_fifo_in_the_trust_store_never_hangs_a_start() {
    let env = Env::new();
    let fifo = env.home.join("trust/fifo.pub.pem");
    let ok = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(ok.success());
    assert_skipped_without_blocking(&env, "fifo.pub.pem", "not a regular file");
}

#[test]
fn a_key_file_linked_to_dev_zero_is_not_followed() {
    let env = Env::new();
    std::os::unix::fs::symlink("/dev/zero", env.home.join("trust/zero.pub.pem")).unwrap();
    assert_skipped_without_blocking(&env, "zero.pub.pem", "symlink");
}

#[test]
fn a_huge_key_file_is_not_read() {
    let env = Env::new();
    let f = std::fs::File::create(env.home.join("trust/huge.pub.pem")).unwrap();
    f.set_len(1 << 30).unwrap(); // sparse: 1 GiB that costs no disk
    drop(f);
    assert_skipped_without_blocking(&env, "huge.pub.pem", "cap");
}

#[test]
fn a_name_label_linked_to_dev_zero_is_not_followed() {
    let env = Env::new();
    let list = env.run_ok(&["trust", "list"]);
    let key = std::path::PathBuf::from(list["keys"][0]["path"].as_str().unwrap());
    let label = key.with_extension("name");
    std::fs::remove_file(&label).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &label).unwrap();
    let file = label.file_name().unwrap().to_str().unwrap().to_string();
    assert_skipped_without_blocking(&env, &file, "symlink");
}

#[test]
fn a_key_file_another_user_could_write_is_not_trusted() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    let path = std::path::PathBuf::from(
        env.run_ok(&["trust", "list"])["keys"][0]["path"].as_str().unwrap(),
    );
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
    let list = env.run_ok(&["trust", "list"]);
    assert_eq!(list["keys"].as_array().unwrap().len(), 0, "{list}");
    assert!(list["skipped"][0]["reason"].as_str().unwrap().contains("chmod go-w"), "{list}");
}

/// LEB128, optionally padded with `extra` redundant bytes.
fn leb(mut v: usize, extra: usize) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 && extra == 0 {
            out.push(b);
            return out;
        }
        out.push(b | 0x80);
        if v == 0 {
            out.extend(std::iter::repeat_n(0x80, extra - 1));
            out.push(0);
            return out;
        }
    }
}

/// The signature section is outside the signed hash, and the format's
/// parser ignores bytes after its last entry and accepts padded numbers:
/// either change used to leave a loadable component with new bytes.
#[test]
fn a_signature_section_changed_in_ways_the_parser_tolerates_is_refused() {
    let env = Env::new();
    let bytes = signed_bytes(&env);
    std::fs::remove_file(env.plugins.join("fixture-echo.wasm")).unwrap();
    let end = first_section_end(&bytes);
    let mut pos = 9;
    while bytes[pos] & 0x80 != 0 {
        pos += 1;
    }
    let body = &bytes[pos + 1..end]; // name length, name, payload
    let rebuild = |body: &[u8], extra: usize| {
        let mut out = bytes[..8].to_vec();
        out.push(0);
        out.extend(leb(body.len(), extra));
        out.extend_from_slice(body);
        out.extend_from_slice(&bytes[end..]);
        out
    };
    assert_eq!(rebuild(body, 0), bytes);
    let mut trailing = body.to_vec();
    trailing.extend_from_slice(b"junk");
    env.install_bytes("trailing.wasm", &rebuild(&trailing, 0));
    assert_refused(&env, "trailing.wasm", "tampered");
    std::fs::remove_file(env.plugins.join("trailing.wasm")).unwrap();
    env.install_bytes("padded.wasm", &rebuild(body, 1));
    assert_refused(&env, "padded.wasm", "tampered");
}
