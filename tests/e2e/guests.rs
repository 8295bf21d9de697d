//! Python (componentize-py) and JavaScript (componentize-js) guests: they
//! answer exactly like the Rust fixture for the same calls, their attacks
//! (a loop, a memory bomb) are stopped, per-component limits apply, and
//! their seconds-long first compile happens once, in the background.

use serde_json::{json, Value};
use verbgate_tests::mcp::Session;
use verbgate_tests::{require_guest_tools, Env};

/// An environment with the Rust, Python and JS echo fixtures installed and
/// compiled into the cache (so later calls load them in milliseconds).
fn polyglot(config: &str) -> Env {
    require_guest_tools();
    // The guest fixtures are built against contract 0.1.0 (effects
    // undeclared, so the policy would ask); these tests are about the guests.
    let env = Env::new().with_config(config).allowing(&["pyecho.*", "jsecho.*"]);
    for name in ["fixture-echo", "py-echo", "js-echo"] {
        env.install(name);
    }
    let verbs = env.verbs();
    for plugin in ["fixture-echo", "py-echo", "js-echo"] {
        assert!(
            verbs["plugins"].as_array().unwrap().iter().any(|p| p["name"] == plugin),
            "{plugin} not loaded: {verbs}"
        );
    }
    env
}

/// A result with the verb's namespace and plugin name made neutral, so the
/// three languages can be compared byte for byte; the run's private
/// `TMPDIR` (a fresh directory for every run) is blanked too.
fn neutral(v: &Value, ns: &str, plugin: &str) -> String {
    let mut v = v.clone();
    if let Some(tmp) = v.pointer_mut("/result/env/TMPDIR") {
        *tmp = Value::from("<run tmp>");
    }
    v.to_string()
        .replace(&format!("{ns}."), "NS.")
        .replace(&format!("\"{plugin}\""), "\"PLUGIN\"")
        .replace(&format!("`{plugin}`"), "`PLUGIN`")
}

#[test]
fn python_and_js_guests_answer_exactly_like_the_rust_one() {
    let env = polyglot("");
    let calls = [
        ("argv", json!({"word": "hi", "flag": "f", "tail": ["-x", "--y"], "stdin": "in put"})),
        ("argv", json!({})),
        ("argv", json!({"word": "-rf"})),
        ("argv", json!({"flag": "a\u{0}b"})),
        ("argv", json!({"wrod": "typo"})),
        ("fail", json!({"code": 3})),
        ("fail", json!({"code": 0})),
        ("fail", json!({})),
    ];
    let langs = [("echo", "fixture-echo"), ("pyecho", "py-echo"), ("jsecho", "js-echo")];
    for (verb, args) in &calls {
        let answers: Vec<String> = langs
            .iter()
            .map(|(ns, plugin)| neutral(&env.op(&format!("{ns}.{verb}"), args.clone()), ns, plugin))
            .collect();
        assert_eq!(answers[0], answers[1], "Python differs from Rust for {verb} {args}");
        assert_eq!(answers[0], answers[2], "JavaScript differs from Rust for {verb} {args}");
    }
    // The contracts are the same too: same schema, so the same fingerprint.
    for verb in ["argv", "fail"] {
        let help: Vec<Value> = langs
            .iter()
            .map(|(ns, _)| env.request(&json!({"help": format!("{ns}.{verb}")}))["help"].clone())
            .collect();
        for h in &help[1..] {
            assert_eq!(h["params_schema"], help[0]["params_schema"]);
            assert_eq!(h["schema_fingerprint"], help[0]["schema_fingerprint"]);
            assert_eq!(h["summary"], help[0]["summary"]);
        }
    }
    // And a real result came back (not two identical errors).
    let ok = env.op("pyecho.argv", json!({"word": "hi", "tail": ["-x"]}));
    assert_eq!(ok["result"]["argv"], json!(["hi", "--", "-x"]), "{ok}");
}

#[test]
fn hostile_python_and_js_guests_are_stopped_and_the_server_keeps_serving() {
    let env = polyglot("");
    verbgate_tests::runtime().block_on(async {
        let s = Session::start(env.serve_command()).await.unwrap();
        let ops: Vec<Value> = [
            "pyecho.spin",
            "pyecho.bomb",
            "jsecho.spin",
            "jsecho.bomb",
            "pyecho.argv",
            "jsecho.argv",
        ]
        .iter()
        .map(|op| json!({"op": op, "args": {}}))
        .collect();
        let reply = s.request(json!({ "ops": ops })).await.unwrap();
        let r = &reply.structured["results"];
        for (i, plugin) in [(0, "py-echo"), (2, "js-echo")] {
            assert_eq!(r[i]["error"]["code"], "plugin_timeout", "{}", reply.structured);
            assert_eq!(r[i]["error"]["plugin"], plugin);
            assert_eq!(r[i + 1]["error"]["code"], "plugin_limit", "{}", reply.structured);
            assert_eq!(r[i + 1]["error"]["limit"], "memory");
            assert!(
                r[i + 1]["error"]["message"].as_str().unwrap().contains("67108864"),
                "default 64 MiB cap: {}",
                r[i + 1]
            );
        }
        assert_eq!(r[4]["ok"], true, "{}", reply.structured);
        assert_eq!(r[5]["ok"], true, "{}", reply.structured);
        s.close().await.unwrap();
    });
}

#[test]
fn per_component_limits_raise_and_lower_the_defaults() {
    let env = polyglot(
        "[components.py-echo]\nmemory_mib = 128\n[components.js-echo]\ntimeout_ms = 300\n",
    );
    let bomb = env.op("pyecho.bomb", json!({}));
    assert_eq!(bomb["error"]["code"], "plugin_limit", "{bomb}");
    assert!(
        bomb["error"]["message"].as_str().unwrap().contains("134217728"),
        "raised to 128 MiB: {bomb}"
    );
    let spin = env.op("jsecho.spin", json!({}));
    assert_eq!(spin["error"]["code"], "plugin_timeout", "{spin}");
    assert!(
        spin["error"]["message"].as_str().unwrap().contains("300 ms"),
        "lowered to 300 ms: {spin}"
    );
    // The Rust fixture keeps the defaults.
    let rust = env.op("echo.argv", json!({}));
    assert_eq!(rust["ok"], true, "{rust}");

    // Above the operator cap: refused at start, naming the setting.
    let over = Env::new().with_config(
        "[limits]\nplugin_memory_cap_mib = 256\n[components.py-echo]\nmemory_mib = 512\n",
    );
    let (code, out, _) = over.run(&["verbs"]);
    assert_ne!(code, 0);
    assert!(
        out["error"]["message"].as_str().unwrap().contains("components.py-echo.memory_mib = 512"),
        "{out}"
    );
}

#[test]
fn a_python_guest_compiles_once_in_the_background_then_loads_from_the_cache() {
    require_guest_tools();
    // Cold: nothing compiled yet, the Python guest least of all.
    let env = Env::cold().allowing(&["pyecho.*", "jsecho.*"]);
    env.install("py-echo");
    verbgate_tests::runtime().block_on(async {
        // Cold cache: the server answers at once; the Python component is
        // still compiling (seconds), listed under `loading`, while the
        // bundled verbs already serve.
        let s = Session::start(env.serve_command()).await.unwrap();
        assert_eq!(s.tools().await.unwrap().len(), 1);
        let catalog = s.request(json!({"help": true})).await.unwrap().structured;
        let loading = catalog["help"]["loading"]
            .as_array()
            .unwrap_or_else(|| panic!("nothing loading: {catalog}"));
        // (The bundled components may still be compiling too on a loaded
        // machine: they are listed as `bundled`.)
        assert!(
            loading.iter().any(|l| l.as_str().is_some_and(|l| l.ends_with("py-echo.wasm"))),
            "{catalog}"
        );
        let git =
            s.request(json!({"ops": [{"op": "git.status", "args": {}}]})).await.unwrap().structured;
        assert_ne!(git["results"][0]["error"]["code"], "unknown_verb", "{git}");
        // An op naming one of its verbs waits for it instead of failing.
        let reply = s
            .request(json!({"ops": [{"op": "pyecho.argv", "args": {"word": "late"}}]}))
            .await
            .unwrap()
            .structured;
        assert_eq!(reply["results"][0]["result"]["argv"], json!(["late"]), "{reply}");
        let catalog = s.request(json!({"help": true})).await.unwrap().structured;
        assert!(catalog["help"].get("loading").is_none(), "{catalog}");
        s.close().await.unwrap();

        // Warm cache: the next start loads it from the cache before the
        // first answer, so nothing is left loading.
        let s = Session::start(env.serve_command()).await.unwrap();
        assert_eq!(s.tools().await.unwrap().len(), 1);
        let catalog = s.request(json!({"help": true})).await.unwrap().structured;
        assert!(catalog["help"].get("loading").is_none(), "{catalog}");
        assert!(
            catalog["help"]["verbs"]["exec"]
                .as_array()
                .unwrap()
                .iter()
                .any(|v| v.as_str().unwrap().starts_with("pyecho.argv(")),
            "{catalog}"
        );
        s.close().await.unwrap();
    });
    let verbs = env.verbs();
    let py = verbs["plugins"].as_array().unwrap().iter().find(|p| p["name"] == "py-echo").unwrap();
    assert_eq!(py["cache"], "hit", "{verbs}");
}

#[test]
fn a_pool_of_one_call_still_runs_every_guest_language() {
    // What a small address space shrinks the pool to (or an operator sets):
    // a Python guest alone instantiates over a dozen core modules, so the
    // pool's per-call ratios must not starve it.
    let env = polyglot("[limits]\nplugin_concurrent_calls = 1\n");
    for ns in ["echo", "pyecho", "jsecho"] {
        let r = env.op(&format!("{ns}.argv"), json!({"word": "hi"}));
        assert_eq!(r["ok"], true, "{ns}.argv in a pool of one call: {r}");
    }
}

#[test]
fn an_op_whose_verb_is_still_compiling_past_the_wait_is_told_to_retry_not_unknown() {
    // Before: when the wait for background compiles ended with one still
    // running, the op answered plain `unknown_verb`, as if the verb did not
    // exist. With `limits.loading_wait_ms = 0` no op waits at all.
    verbgate_tests::require_guest_tools();
    let env = Env::cold()
        .with_config("[limits]\nloading_wait_ms = 0\n")
        .with_program("rg", "/nonexistent/rg")
        .allowing(&["pyecho.*"]);
    env.install("py-echo");
    verbgate_tests::runtime().block_on(async {
        let s = Session::start(env.serve_command()).await.unwrap();
        let early = s.request(json!({"ops": [{"op": "pyecho.argv", "args": {"word": "x"}}, {"op": "no.such"}]})).await.unwrap().structured;
        for (i, r) in early["results"].as_array().unwrap().iter().enumerate() {
            // The bundled set may still be compiling too on a loaded machine.
            let loading = r["error"]["loading"].as_array().cloned().unwrap_or_default();
            if loading.is_empty() {
                continue; // compiles were done before the request arrived
            }
            assert_eq!(r["error"]["code"], "unavailable", "op {i}: {r}");
            assert_eq!(r["error"]["reason_code"], "loading", "{r}");
            assert!(loading.iter().any(|l| l == "py-echo.wasm"), "{r}");
            assert!(r["error"]["message"].as_str().unwrap().contains("Retry shortly"), "{r}");
        }
        assert!(
            early["results"][0]["error"]["code"] == "unavailable" || early["results"][0]["ok"] == true,
            "{early}"
        );
        // A verb whose component has loaded but whose program is missing is
        // known while others still compile: it says why, not "retry".
        let missing = s.request(json!({"ops": [{"op": "rg.files"}]})).await.unwrap().structured;
        let r = &missing["results"][0];
        assert_eq!(r["error"]["code"], "unavailable", "{missing}");
        let loading = r["error"]["loading"].as_array().cloned().unwrap_or_default();
        if r["error"]["reason_code"] == "loading" {
            // Only when rg's own (bundled) component is still compiling.
            assert!(loading.iter().any(|l| l != "py-echo.wasm"), "{missing}");
        } else {
            assert_eq!(r["error"]["reason_code"], "missing_program", "{missing}");
        }
        // Once it has compiled, the same op runs and a missing verb is unknown.
        let mut done = Value::Null;
        for _ in 0..600 {
            done = s.request(json!({"ops": [{"op": "pyecho.argv", "args": {"word": "x"}}, {"op": "no.such"}]})).await.unwrap().structured;
            if done["results"][0]["ok"] == true {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
        assert_eq!(done["results"][0]["ok"], true, "{done}");
        assert_eq!(done["results"][1]["error"]["code"], "unknown_verb", "{done}");
        let missing = s.request(json!({"ops": [{"op": "rg.files"}]})).await.unwrap().structured;
        assert_eq!(missing["results"][0]["error"]["reason_code"], "missing_program", "{missing}");
        s.close().await.unwrap();
    });
}
