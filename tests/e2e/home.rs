//! The home is checked before anything in it is trusted: `VERBGATE_HOME`,
//! `cache/`, `trust/`, `state/`, `plugins/` and `verbgate.toml` must belong
//! to the user and not be writable by group or others, or the start fails
//! with `insecure_file`, naming the path, the problem and the fix. (Tests
//! run as root, so "another user" is uid 65534.)

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use verbgate_tests::Env;

fn assert_start_refused(env: &Env, path: &Path, problem: &str, fix: &str) {
    for args in [&["verbs"][..], &["request", r#"{"ops":[{"op":"job.list","args":{}}]}"#][..], &["trust", "list"][..]] {
        let (code, out, _) = env.run(args);
        assert_ne!(code, 0, "{args:?} must fail: {out}");
        assert_eq!(out["error"]["code"], "insecure_file", "{args:?}: {out}");
        let message = out["error"]["message"].as_str().unwrap();
        assert!(message.contains(&path.display().to_string()), "names the path: {message}");
        assert!(message.contains(problem), "says the problem ({problem}): {message}");
        assert!(message.contains(fix), "says the fix ({fix}): {message}");
        assert_eq!(out["error"]["path"], path.display().to_string(), "{out}");
    }
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn a_group_writable_trust_dir_refuses_the_start() {
    let env = Env::new();
    let trust = env.home.join("trust");
    chmod(&trust, 0o770);
    assert_start_refused(&env, &trust, "mode 770", "chmod go-w");
}

#[test]
fn a_foreign_trust_dir_refuses_the_start() {
    let env = Env::new();
    let trust = env.home.join("trust");
    std::os::unix::fs::chown(&trust, Some(65534), None).unwrap();
    assert_start_refused(&env, &trust, "owned by uid 65534", "chown");
}

#[test]
fn a_foreign_or_world_writable_config_file_refuses_the_start() {
    let env = Env::new();
    let config = env.home.join("verbgate.toml");
    std::os::unix::fs::chown(&config, Some(65534), None).unwrap();
    assert_start_refused(&env, &config, "owned by uid 65534", "chown");
    std::os::unix::fs::chown(&config, Some(0), None).unwrap();
    chmod(&config, 0o666);
    assert_start_refused(&env, &config, "mode 666", "chmod go-w");
}

#[test]
fn a_writable_home_cache_state_or_plugins_dir_refuses_the_start() {
    let env = Env::new();
    env.verbs(); // creates cache/
    std::fs::create_dir_all(env.home.join("plugins")).unwrap();
    std::fs::create_dir_all(env.home.join("state")).unwrap();
    for sub in ["", "cache", "state", "plugins"] {
        let path = if sub.is_empty() { env.home.clone() } else { env.home.join(sub) };
        let before = std::fs::metadata(&path).unwrap().permissions().mode() & 0o7777;
        chmod(&path, 0o777);
        assert_start_refused(&env, &path, "mode 777", "chmod go-w");
        chmod(&path, before);
    }
    env.verbs(); // fixed: starts again
}

#[test]
fn directories_verbgate_creates_are_private() {
    let env = Env::cold();
    env.verbs();
    env.op("job.list", serde_json::json!({}));
    for sub in ["cache", "trust", "keys", "state"] {
        let mode = std::fs::metadata(env.home.join(sub)).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "{sub}");
    }
    let key = std::fs::metadata(env.home.join("cache/mac.key")).unwrap().permissions().mode() & 0o777;
    assert_eq!(key, 0o600);
}
