//! The compile cache: a second start with the same components compiles
//! nothing, and a cached component is still verified.

use verbgate_tests::Env;

fn cache_of(verbs: &serde_json::Value, plugin: &str) -> String {
    let p = verbs["plugins"].as_array().unwrap().iter().find(|p| p["name"] == plugin).unwrap_or_else(|| panic!("{verbs}"));
    p["cache"].as_str().unwrap().to_string()
}

#[test]
fn a_second_start_does_not_recompile() {
    let env = Env::new();
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
    let env = Env::new();
    let path = env.install("fixture-echo");
    assert_eq!(cache_of(&env.verbs(), "fixture-echo"), "compiled");
    // Same bytes, but now unsigned: the cache entry exists, yet it must not load.
    std::fs::copy(verbgate_tests::component("fixture-echo"), &path).unwrap();
    let verbs = env.verbs();
    assert!(verbs["plugins"].as_array().unwrap().iter().all(|p| p["name"] != "fixture-echo"), "{verbs}");
    let u = verbs["unavailable"].as_array().unwrap();
    assert!(u.iter().any(|u| u["code"] == "unsigned"), "{verbs}");
}
