//! The compile cache: a second start with the same components compiles
//! nothing, and a cached component is still verified.

use verbgate_tests::Env;

fn cache_of(verbs: &serde_json::Value, plugin: &str) -> String {
    let p = verbs["plugins"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == plugin)
        .unwrap_or_else(|| panic!("{verbs}"));
    p["cache"].as_str().unwrap().to_string()
}

#[test]
fn a_second_start_does_not_recompile() {
    let env = Env::cold();
    env.install("fixture-echo");
    let first = env.verbs();
    assert_eq!(cache_of(&first, "git"), "compiled");
    assert_eq!(cache_of(&first, "fixture-echo"), "compiled");
    let second = env.verbs();
    assert_eq!(cache_of(&second, "git"), "hit");
    assert_eq!(cache_of(&second, "fixture-echo"), "hit");
    // Cache files are private.
    use std::os::unix::fs::PermissionsExt;
    for entry in std::fs::read_dir(env.home.join("cache")).unwrap() {
        let mode = entry.unwrap().metadata().unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
}

#[test]
fn a_cached_component_is_still_verified() {
    let env = Env::cold();
    let path = env.install("fixture-echo");
    assert_eq!(cache_of(&env.verbs(), "fixture-echo"), "compiled");
    // Same bytes, but now unsigned: the cache entry exists, yet it must not load.
    std::fs::copy(verbgate_tests::component("fixture-echo"), &path).unwrap();
    let verbs = env.verbs();
    assert!(
        verbs["plugins"].as_array().unwrap().iter().all(|p| p["name"] != "fixture-echo"),
        "{verbs}"
    );
    let u = verbs["unavailable"].as_array().unwrap();
    assert!(u.iter().any(|u| u["code"] == "unsigned"), "{verbs}");
}

/// The cache entry holding plugin `plugin`'s compiled code.
fn entry_of(env: &Env, verbs: &serde_json::Value, plugin: &str) -> std::path::PathBuf {
    let p = verbs["plugins"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == plugin)
        .unwrap_or_else(|| panic!("{verbs}"));
    let digest = p["digest"].as_str().unwrap();
    let hits: Vec<_> = std::fs::read_dir(env.home.join("cache"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name().unwrap().to_str().unwrap().starts_with(digest)
                && p.extension().is_some_and(|e| e == "cwasm")
        })
        .collect();
    assert_eq!(hits.len(), 1, "{hits:?}");
    hits[0].clone()
}

/// After a refused entry: the plugin was recompiled (from its verified
/// bytes), works, and its entry is a fresh private regular file.
fn assert_recompiled_and_replaced(env: &Env, plugin: &str, entry: &std::path::Path) {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let verbs = env.verbs();
    assert_eq!(cache_of(&verbs, plugin), "compiled", "a refused entry must not load: {verbs}");
    assert!(verbs["verbs"].as_array().unwrap().iter().any(|v| v["plugin"] == plugin), "{verbs}");
    let meta = std::fs::symlink_metadata(entry).unwrap();
    assert!(meta.file_type().is_file());
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    assert_eq!(meta.uid(), std::fs::metadata(&env.home).unwrap().uid());
    assert_eq!(cache_of(&env.verbs(), plugin), "hit", "the fresh entry is used");
}

#[test]
fn a_group_writable_cache_entry_is_refused_and_recompiled() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::cold();
    let verbs = env.verbs();
    let entry = entry_of(&env, &verbs, "git");
    std::fs::set_permissions(&entry, std::fs::Permissions::from_mode(0o660)).unwrap();
    assert_recompiled_and_replaced(&env, "git", &entry);
}

#[test]
fn a_cache_entry_owned_by_another_user_is_refused_and_recompiled() {
    let env = Env::cold();
    let verbs = env.verbs();
    let entry = entry_of(&env, &verbs, "git");
    std::os::unix::fs::chown(&entry, Some(65534), Some(65534)).unwrap();
    assert_recompiled_and_replaced(&env, "git", &entry);
}

/// A planted entry under the right name (the digests of bundled components
/// are public) holding other compiled code — here another component's
/// genuine, well-formed entry — must not load: the tag binds the code to
/// the component digest under a per-home secret key.
#[test]
fn a_planted_cache_entry_with_the_right_name_is_refused() {
    let env = Env::cold();
    env.install("fixture-echo");
    let verbs = env.verbs();
    let git_entry = entry_of(&env, &verbs, "git");
    let echo_entry = entry_of(&env, &verbs, "fixture-echo");
    std::fs::copy(&echo_entry, &git_entry).unwrap();
    assert_recompiled_and_replaced(&env, "git", &git_entry);
    // And an entry from another home (another key) does not authenticate.
    let other = Env::cold();
    let other_entry = entry_of(&other, &other.verbs(), "git");
    std::fs::copy(&other_entry, &git_entry).unwrap();
    assert_recompiled_and_replaced(&env, "git", &git_entry);
}

#[test]
fn a_symlinked_cache_entry_is_refused() {
    let env = Env::cold();
    let verbs = env.verbs();
    let entry = entry_of(&env, &verbs, "git");
    // The link leads to the genuine entry's bytes: still refused, because
    // an entry is never read through a link.
    let elsewhere = env.tmp.path().join("elsewhere.cwasm");
    std::fs::rename(&entry, &elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &entry).unwrap();
    assert_recompiled_and_replaced(&env, "git", &entry);
    assert!(elsewhere.exists(), "the link's target is left alone");
}
