//! The bundled rg verbs against the real ripgrep (`just test-tools`):
//! `rg.search` equals ripgrep's own `--json` output on a copy of this
//! repository, caps say `truncated`, non-UTF-8 names and lines are replaced
//! as the git verbs replace them, paths stay in the root, and nothing a
//! caller or the environment says makes rg run a program.

use serde_json::{json, Value};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use verbgate_tests::{copy_tree, require_test_tool, Env};

/// An environment whose root holds a copy of part of this repository.
fn repo_env(extra_config: &str) -> Env {
    require_test_tool("rg");
    let env = Env::new().with_config(extra_config);
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    for part in
        ["host/src", "plugins/git/src", "plugins/rg/src", "docs", "README.md", "SECURITY.md"]
    {
        copy_tree(&repo.join(part), &env.root.join(part));
    }
    env
}

fn ok(r: &Value) -> &Value {
    assert_eq!(r["ok"], true, "{r}");
    &r["result"]
}

fn text(v: &Value) -> String {
    v["text"].as_str().unwrap_or_else(|| panic!("the comparison corpus is UTF-8: {v}")).to_string()
}

fn strip_eol(s: String) -> String {
    s.strip_suffix('\n').map(|s| s.strip_suffix('\r').unwrap_or(s).to_string()).unwrap_or(s)
}

/// What ripgrep itself prints for `flags` in `root`, in the verb's shape:
/// the matches (without context), every context line, the files with
/// matches and the summary's counts.
struct Direct {
    matches: Vec<Value>,
    context: Vec<Value>,
    files: Vec<Value>,
    stats: Value,
}

fn rg_direct(root: &Path, flags: &[&str]) -> Direct {
    let out = Command::new(require_test_tool("rg"))
        .current_dir(root)
        .env_remove("RIPGREP_CONFIG_PATH")
        .args(["--json", "--sort=path"])
        .args(flags)
        .output()
        .unwrap();
    assert!(
        out.status.code().unwrap() < 2,
        "rg {flags:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut d = Direct { matches: vec![], context: vec![], files: vec![], stats: Value::Null };
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let m: Value = serde_json::from_str(line).unwrap();
        let data = &m["data"];
        match m["type"].as_str().unwrap() {
            "match" => {
                let subs: Vec<Value> =
                    data["submatches"].as_array().unwrap().iter().map(|s| json!({"start": s["start"], "end": s["end"], "text": text(&s["match"])})).collect();
                d.matches.push(json!({
                    "path": text(&data["path"]),
                    "line": data["line_number"],
                    "column": subs[0]["start"].as_u64().unwrap() + 1,
                    "text": strip_eol(text(&data["lines"])),
                    "submatches": subs,
                }));
            }
            "context" => d.context.push(json!({"path": text(&data["path"]), "line": data["line_number"], "text": strip_eol(text(&data["lines"]))})),
            "end" if data["stats"]["matched_lines"].as_u64().unwrap() > 0 => d.files.push(json!({
                "path": text(&data["path"]),
                "matches": data["stats"]["matches"],
                "lines": data["stats"]["matched_lines"],
            })),
            "summary" => {
                let s = &data["stats"];
                d.stats = json!([s["searches"], s["searches_with_match"], s["bytes_searched"], s["matched_lines"], s["matches"]]);
            }
            _ => {}
        }
    }
    d
}

/// The verb's result, split the same way.
fn from_verb(r: &Value) -> Direct {
    let mut context: Vec<Value> = Vec::new();
    let mut matches = Vec::new();
    for m in r["matches"].as_array().unwrap() {
        for c in m["before"].as_array().unwrap().iter().chain(m["after"].as_array().unwrap()) {
            let c = json!({"path": m["path"], "line": c["line"], "text": c["text"]});
            if !context.contains(&c) {
                context.push(c);
            }
        }
        let mut bare = m.clone();
        bare.as_object_mut().unwrap().retain(|k, _| k != "before" && k != "after");
        matches.push(bare);
    }
    context.sort_by_key(|c| (c["path"].as_str().unwrap().to_string(), c["line"].as_u64().unwrap()));
    let s = &r["stats"];
    Direct {
        matches,
        context,
        files: r["files"].as_array().unwrap().clone(),
        stats: json!([
            s["searches"],
            s["searches_with_match"],
            s["bytes_searched"],
            s["matched_lines"],
            s["matches"]
        ]),
    }
}

#[test]
fn search_results_equal_ripgreps_own_json_output() {
    let env = repo_env("");
    let queries: [(Value, Vec<&str>); 6] = [
        (json!({"pattern": "fn [a-z_]+_json\\("}), vec!["--regexp=fn [a-z_]+_json\\("]),
        (
            json!({"pattern": ".unwrap_or(", "fixed": true}),
            vec!["--fixed-strings", "--regexp=.unwrap_or("],
        ),
        (
            json!({"pattern": "verbgate", "globs": ["*.md", "!SECURITY.md"]}),
            vec!["--glob=*.md", "--glob=!SECURITY.md", "--regexp=verbgate"],
        ),
        (
            json!({"pattern": "ErrorCode::", "types": ["rust"]}),
            vec!["--type=rust", "--regexp=ErrorCode::"],
        ),
        (
            json!({"pattern": "^pub struct \\w+", "before": 2, "after": 1}),
            vec!["--before-context=2", "--after-context=1", "--regexp=^pub struct \\w+"],
        ),
        (
            json!({"pattern": "confine", "case": "insensitive", "paths": ["host/src/exec", "README.md"]}),
            vec!["--ignore-case", "--regexp=confine", "--", "host/src/exec", "README.md"],
        ),
    ];
    for (mut args, flags) in queries {
        args["limit"] = json!(10_000);
        let r = env.op("rg.search", args.clone());
        let got = from_verb(ok(&r));
        let want = rg_direct(&env.root, &flags);
        assert!(
            !want.matches.is_empty(),
            "{args}: the query finds nothing, so it compares nothing"
        );
        assert_eq!(got.matches, want.matches, "{args}");
        assert_eq!(got.context, want.context, "{args}");
        assert_eq!(got.files, want.files, "{args}");
        assert_eq!(got.stats, want.stats, "{args}");
        assert_eq!(r["result"]["truncated"], false, "{args}");
    }
    // Context lines are attached to the match they surround.
    let r = env.op(
        "rg.search",
        json!({"pattern": "^pub struct \\w+", "before": 2, "after": 1, "limit": 10_000}),
    );
    for m in ok(&r)["matches"].as_array().unwrap() {
        let line = m["line"].as_u64().unwrap();
        for c in m["before"].as_array().unwrap() {
            let l = c["line"].as_u64().unwrap();
            assert!(l < line && l + 2 >= line, "{m}");
        }
        for c in m["after"].as_array().unwrap() {
            let l = c["line"].as_u64().unwrap();
            assert!(l > line && l <= line + 1, "{m}");
        }
    }
    // The file list equals `rg --files`.
    let files = env.op("rg.files", json!({"types": ["rust"], "limit": 100_000}));
    let out = Command::new(require_test_tool("rg"))
        .current_dir(&env.root)
        .args(["--files", "--sort=path", "--type=rust"])
        .output()
        .unwrap();
    let want: Vec<&str> = std::str::from_utf8(&out.stdout).unwrap().lines().collect();
    assert_eq!(ok(&files)["files"], json!(want));
    assert_eq!(files["result"]["count"], want.len());
}

#[test]
fn caps_truncate_and_say_which() {
    let env = repo_env("");
    let full = env.op("rg.search", json!({"pattern": "fn ", "types": ["rust"], "limit": 10_000}));
    let full = ok(&full).clone();
    assert!(full["matches"].as_array().unwrap().len() > 10);

    let r = env.op("rg.search", json!({"pattern": "fn ", "types": ["rust"], "limit": 3}));
    let r = ok(&r);
    assert_eq!(r["matches"].as_array().unwrap()[..], full["matches"].as_array().unwrap()[..3]);
    assert_eq!(
        (r["truncated"].clone(), r["caps_reached"].clone()),
        (json!(true), json!(["limit"]))
    );
    assert_eq!(r["files"], full["files"], "per-file counts still cover every file");
    assert_eq!(r["stats"]["matches"], full["stats"]["matches"]);

    let r = env.op(
        "rg.search",
        json!({"pattern": "fn ", "types": ["rust"], "per_file": 1, "limit": 10_000}),
    );
    let r = ok(&r);
    assert_eq!(r["caps_reached"], json!(["per_file"]));
    assert!(r["files"].as_array().unwrap().iter().all(|f| f["lines"] == 1), "{r}");
    assert_eq!(r["matches"].as_array().unwrap().len(), r["files"].as_array().unwrap().len());

    // Past the host's capture bound the output is cut: what fits is kept.
    let small = repo_env("[limits]\ncapture_bytes = 8192");
    let r = small.op("rg.search", json!({"pattern": "e", "limit": 10_000}));
    let r = ok(&r);
    assert_eq!(
        (r["truncated"].clone(), r["caps_reached"].clone(), r["stats"].clone()),
        (json!(true), json!(["output"]), Value::Null),
        "{r}"
    );
    let kept = r["matches"].as_array().unwrap();
    assert!(!kept.is_empty());
    assert_eq!(
        kept[..],
        full_search(&small, "e")[..kept.len()],
        "the kept matches are the first ones, complete"
    );

    let r = env.op("rg.files", json!({"limit": 2}));
    assert_eq!(
        (r["result"]["count"].clone(), r["result"]["truncated"].clone()),
        (json!(2), json!(true)),
        "{r}"
    );
}

/// The matches rg prints itself for `pattern`, in the verb's shape.
fn full_search(env: &Env, pattern: &str) -> Vec<Value> {
    rg_direct(&env.root, &[&format!("--regexp={pattern}")])
        .matches
        .into_iter()
        .map(|mut m| {
            m["before"] = json!([]);
            m["after"] = json!([]);
            m
        })
        .collect()
}

#[test]
fn non_utf8_file_names_and_lines_are_replaced_not_dropped() {
    require_test_tool("rg");
    let env = Env::new();
    let name = std::ffi::OsStr::from_bytes(b"bad-\xff.txt");
    std::fs::write(env.root.join(name), b"hello \xfe world\nplain hello\n").unwrap();
    let r = env.op("rg.search", json!({"pattern": "hello"}));
    let m = &ok(&r)["matches"];
    assert_eq!(m[0]["path"], "bad-\u{fffd}.txt", "{r}");
    assert_eq!(m[0]["text"], "hello \u{fffd} world");
    assert_eq!(m[0]["submatches"], json!([{"start": 0, "end": 5, "text": "hello"}]));
    assert_eq!((m[1]["text"].clone(), m[1]["column"].clone()), (json!("plain hello"), json!(7)));
    assert_eq!(
        r["result"]["files"],
        json!([{"path": "bad-\u{fffd}.txt", "matches": 2, "lines": 2}])
    );
    let f = env.op("rg.files", json!({}));
    assert_eq!(ok(&f)["files"], json!(["bad-\u{fffd}.txt"]));
}

#[test]
fn paths_outside_the_root_are_refused_and_links_out_are_not_followed() {
    require_test_tool("rg");
    let env = Env::new();
    let outside = env.tmp.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), "needle outside\n").unwrap();
    std::fs::write(env.root.join("inside.txt"), "needle inside\n").unwrap();
    std::os::unix::fs::symlink(&outside, env.root.join("out")).unwrap();
    for paths in [
        json!(["../outside"]),
        json!(["/etc"]),
        json!(["out"]),
        json!(["out/secret.txt"]),
        json!(["inside.txt", "../outside/secret.txt"]),
    ] {
        for (verb, args) in [
            ("rg.search", json!({"pattern": "needle", "paths": paths})),
            ("rg.files", json!({"paths": paths})),
        ] {
            let r = env.op(verb, args);
            assert_eq!(r["error"]["code"], "plan_refused", "{verb} {paths}: {r}");
        }
    }
    // Searching the root does not follow the link out of it.
    let r = env.op("rg.search", json!({"pattern": "needle"}));
    let paths: Vec<&str> =
        ok(&r)["matches"].as_array().unwrap().iter().map(|m| m["path"].as_str().unwrap()).collect();
    assert_eq!(paths, ["inside.txt"]);
    let f = env.op("rg.files", json!({"hidden": true, "ignored": true}));
    assert_eq!(ok(&f)["files"], json!(["inside.txt"]));
}

#[test]
fn option_lookalikes_are_patterns_globs_and_paths_and_no_config_runs_a_program() {
    let rg = require_test_tool("rg");
    let env = Env::new().with_config("env_allow = [\"PATH\", \"RIPGREP_CONFIG_PATH\"]");
    std::fs::write(env.root.join("inj.txt"), "a line with --pre=evil in it\n").unwrap();
    let marker = env.tmp.path().join("preprocessor-ran");
    let script = env.tmp.path().join("pre.sh");
    std::fs::write(&script, format!("#!/bin/sh\ntouch {}\ncat \"$1\"\n", marker.display()))
        .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let config = env.tmp.path().join("ripgreprc");
    // (`--search-zip` would switch `--pre` off: rg keeps the last of the two.)
    std::fs::write(&config, format!("--follow\n--pre={}\n", script.display())).unwrap();

    // The attack works on a plain rg: the config makes it run the script.
    let out = Command::new(&rg)
        .current_dir(&env.root)
        .env("RIPGREP_CONFIG_PATH", &config)
        .args(["--json", "line"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(marker.exists(), "the config's --pre should have run the script on a plain rg");
    std::fs::remove_file(&marker).unwrap();

    let request = |args: Value| -> Value {
        let req = json!({"ops": [{"op": "rg.search", "args": args}]});
        let out = env
            .cmd(&["request", &req.to_string()])
            .env("RIPGREP_CONFIG_PATH", &config)
            .output()
            .unwrap();
        serde_json::from_slice::<Value>(&out.stdout).unwrap()["results"][0].clone()
    };
    let r = request(json!({"pattern": "--pre=evil", "globs": ["--pre=x", "*.txt"]}));
    let m = &ok(&r)["matches"];
    assert_eq!(
        (m[0]["path"].clone(), m[0]["submatches"][0]["text"].clone()),
        (json!("inj.txt"), json!("--pre=evil")),
        "{r}"
    );
    let r = request(json!({"pattern": "line", "paths": ["--pre=evil"]}));
    let errors = ok(&r)["errors"].to_string();
    assert!(
        errors.contains("--pre=evil") && errors.contains("No such file"),
        "a path is a path: {r}"
    );
    assert!(!marker.exists(), "RIPGREP_CONFIG_PATH reached rg through verbgate");

    let plan = env.request(
        &json!({"ops": [{"op": "rg.search", "args": {"pattern": "--pre=evil"}, "dry_run": true}]}),
    );
    let argv = plan["results"][0]["result"]["plan"]["command"].to_string();
    assert!(
        argv.contains("\"--regexp=--pre=evil\"")
            && argv.contains("\"--no-config\"")
            && argv.contains("\"--no-pre\""),
        "{plan}"
    );
}

#[test]
fn files_honour_globs_types_hidden_and_ignore_files() {
    require_test_tool("rg");
    let env = Env::new();
    for f in ["a.rs", "b.py", ".hidden/c.rs", "skipped.rs"] {
        let p: PathBuf = env.root.join(f);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, "x\n").unwrap();
    }
    std::fs::write(env.root.join(".ignore"), "skipped.rs\n").unwrap();
    let files = |args: Value| ok(&env.op("rg.files", args))["files"].clone();
    assert_eq!(files(json!({})), json!(["a.rs", "b.py"]));
    assert_eq!(files(json!({"types": ["rust"]})), json!(["a.rs"]));
    assert_eq!(files(json!({"globs": ["*.py"]})), json!(["b.py"]));
    assert_eq!(files(json!({"hidden": true})), json!([".hidden/c.rs", ".ignore", "a.rs", "b.py"]));
    assert_eq!(files(json!({"ignored": true})), json!(["a.rs", "b.py", "skipped.rs"]));
    let bad = env.op("rg.files", json!({"types": ["no-such-type"]}));
    assert_eq!(bad["error"]["code"], "invalid_args", "{bad}");
    let bad = env.op("rg.search", json!({"pattern": "("}));
    assert_eq!(bad["error"]["code"], "invalid_args", "{bad}");
    assert!(bad["error"]["message"].as_str().unwrap().contains("regex parse error"), "{bad}");
}

#[test]
fn without_ripgrep_the_verbs_are_unavailable_and_say_why() {
    let env = Env::new().with_program("rg", "/nonexistent/bin/rg");
    let r = env.op("rg.search", json!({"pattern": "x"}));
    assert_eq!(r["error"]["code"], "unavailable", "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("programs.rg"), "{r}");
    assert_eq!(r["error"]["reason_code"], "missing_program");
    let h = env.request(&json!({"help": "rg.files"}));
    assert_eq!(h["error"]["code"], "unavailable", "{h}");
    let catalog = env.request(&json!({"help": true}));
    assert!(
        catalog["help"]["unavailable"]["rg.search"]
            .as_str()
            .unwrap()
            .contains("/nonexistent/bin/rg"),
        "{catalog}"
    );
    let verbs = env.verbs();
    let listed = verbs["unavailable"]
        .as_array()
        .unwrap()
        .iter()
        .any(|u| u["verb"] == "rg.files" && u["code"] == "missing_program");
    assert!(listed, "{verbs}");
    // The other verbs are unaffected.
    assert_eq!(env.op("job.list", json!({}))["ok"], true);
}

/// Lines that are not valid globs: rg echoes each one in its errors.
const NOT_GLOBS: &str = "SECRET-ONE-{\nSECRET-TWO-[z-a]\n";

/// A test whose rg could run away with memory: rg runs under a shell that
/// caps its address space at 1 GiB, so a regression costs one failed
/// allocation, not the machine's memory.
fn capped_rg_env(env_config: &str) -> Env {
    let rg = require_test_tool("rg");
    // The wrapper runs the real rg, which the OS sandbox lets the rg verbs
    // read only because the operator says so (it is not the program named).
    let prefix = rg.parent().and_then(|b| b.parent()).unwrap().display().to_string();
    let env = Env::new().with_config(&format!(
        "{env_config}\n[[sandbox.allow]]\nverbs = [\"rg.*\"]\nread = [{prefix:?}]\n"
    ));
    let wrapper = env.tmp.path().join("rg-capped");
    std::fs::write(
        &wrapper,
        format!("#!/bin/sh\nulimit -v 1048576\nexec {:?} \"$@\"\n", rg.display().to_string()),
    )
    .unwrap();
    std::fs::set_permissions(&wrapper, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .unwrap();
    env.with_program("rg", wrapper.to_str().unwrap())
}

#[test]
fn ignore_files_linked_out_of_the_root_are_refused_and_never_echoed() {
    let env = capped_rg_env("");
    let secret = env.tmp.path().join("secret.txt");
    std::fs::write(&secret, NOT_GLOBS).unwrap();
    std::fs::write(env.root.join("a.txt"), "needle\n").unwrap();
    for dir in ["sub", ".hidden", ".git/info"] {
        std::fs::create_dir_all(env.root.join(dir)).unwrap();
    }
    // Each link, and the args that make rg read it (a hidden directory's
    // ignore file is read when the directory is searched: with `hidden`,
    // or named in `paths`).
    let cases: [(&str, Value); 6] = [
        (".gitignore", json!({})),
        (".ignore", json!({})),
        ("sub/.rgignore", json!({})),
        (".git/info/exclude", json!({})),
        (".hidden/.gitignore", json!({"hidden": true})),
        (".hidden/.gitignore", json!({"paths": [".hidden"]})),
    ];
    for (link, select) in cases {
        std::os::unix::fs::symlink(&secret, env.root.join(link)).unwrap();
        for verb in ["rg.search", "rg.files"] {
            let mut args = select.clone();
            if verb == "rg.search" {
                args["pattern"] = json!("needle");
            }
            let r = env.op(verb, args.clone());
            assert!(
                !r.to_string().contains("SECRET-"),
                "{verb} {link} {args}: the linked file's lines reached the answer: {r}"
            );
            assert_eq!(r["error"]["code"], "plan_refused", "{verb} {link} {args}: {r}");
            assert_eq!(r["error"]["path"], link, "{verb} {link}: {r}");
            let message = r["error"]["message"].as_str().unwrap();
            assert!(
                message.contains("symbolic link") && message.contains("ignored"),
                "the message says why and what to do: {r}"
            );
        }
        // rg reads no ignore file at all with `ignored`: nothing to refuse.
        let r = env.op("rg.search", json!({"pattern": "needle", "ignored": true}));
        assert_eq!(ok(&r)["matches"][0]["path"], "a.txt", "{r}");
        assert!(!r.to_string().contains("SECRET-"), "{r}");
        std::fs::remove_file(env.root.join(link)).unwrap();
    }
    // A plain ignore file in the root works as it always did.
    std::fs::write(env.root.join(".gitignore"), "skipped.txt\n").unwrap();
    std::fs::write(env.root.join("skipped.txt"), "needle\n").unwrap();
    let r = env.op("rg.files", json!({}));
    assert_eq!(ok(&r)["files"], json!(["a.txt"]), "{r}");
}

#[test]
fn an_ignore_file_that_never_ends_is_refused_before_rg_reads_it() {
    // `/dev/zero` as `.gitignore`: rg reads it as one line that never ends,
    // allocating without bound; a FIFO would block rg until its timeout.
    let env = capped_rg_env("");
    std::fs::write(env.root.join("a.txt"), "needle\n").unwrap();
    std::os::unix::fs::symlink("/dev/zero", env.root.join(".gitignore")).unwrap();
    let started = std::time::Instant::now();
    let r = env.op("rg.search", json!({"pattern": "needle"}));
    let took = started.elapsed();
    assert_eq!(r["error"]["code"], "plan_refused", "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains(".gitignore"), "{r}");
    assert!(
        took < std::time::Duration::from_secs(10),
        "refused promptly, not after rg ran: {took:?}"
    );
    std::fs::remove_file(env.root.join(".gitignore")).unwrap();

    let fifo = env.root.join("sub/.ignore");
    std::fs::create_dir(env.root.join("sub")).unwrap();
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let r = env.op("rg.files", json!({}));
    assert_eq!(r["error"]["code"], "plan_refused", "{r}");
    assert_eq!(r["error"]["path"], "sub/.ignore", "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("not a regular file"), "{r}");
    std::fs::remove_file(&fifo).unwrap();

    // Too large to be an ignore file anyone wrote by hand.
    std::fs::write(env.root.join(".ignore"), "x\n".repeat(600 * 1024)).unwrap();
    let r = env.op("rg.files", json!({}));
    assert_eq!(r["error"]["code"], "plan_refused", "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("1 MiB"), "{r}");
}

#[test]
fn ignore_files_above_the_root_and_the_global_one_are_bounded_and_never_echoed() {
    // rg reads the ignore files of every directory above the one it
    // searches, even with --no-ignore-parent (which only stops it applying
    // them), and the global gitignore under $HOME (`core.excludesFile`,
    // `~/.config/git/ignore`).
    let env = capped_rg_env("");
    std::fs::write(env.root.join("a.txt"), "needle\n").unwrap();
    // A repository: rg applies the global gitignore only in one.
    std::fs::create_dir(env.root.join(".git")).unwrap();
    let above = env.tmp.path().join(".ignore");
    std::fs::write(&above, NOT_GLOBS).unwrap();
    let home = env.tmp.path().join("fake-home");
    std::fs::create_dir_all(home.join(".config/git")).unwrap();
    std::fs::write(home.join(".config/git/ignore"), "SECRET-THREE-{\na.txt\n").unwrap();
    let request = |args: Value| -> Value {
        let req = json!({"ops": [{"op": "rg.search", "args": args}]});
        let out = env
            .cmd(&["request", &req.to_string()])
            .env("HOME", &home)
            .env_remove("XDG_CONFIG_HOME")
            .output()
            .unwrap();
        serde_json::from_slice::<Value>(&out.stdout).unwrap()["results"][0].clone()
    };
    let r = request(json!({"pattern": "needle"}));
    assert!(!r.to_string().contains("SECRET-"), "an ignore file's lines reached the answer: {r}");
    // The global gitignore's `a.txt` does not hide the file; neither does
    // a rule from above the root.
    assert_eq!(ok(&r)["matches"][0]["path"], "a.txt", "{r}");
    std::fs::write(&above, "a.txt\n").unwrap();
    let r = request(json!({"pattern": "needle"}));
    assert_eq!(
        ok(&r)["matches"][0]["path"],
        "a.txt",
        "a rule above the root hid a file in it: {r}"
    );
    // Above the root, a link is followed (a `~/.gitignore` kept in a
    // dotfiles repository is common), but what it leads to must be a
    // regular file of bounded size.
    std::fs::remove_file(&above).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &above).unwrap();
    let r = request(json!({"pattern": "needle"}));
    assert_eq!(r["error"]["code"], "plan_refused", "{r}");
    assert_eq!(r["error"]["path"], above.display().to_string(), "{r}");
}
