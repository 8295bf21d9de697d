//! Hostile repositories: a repository's own content (config, attributes,
//! embedded repositories, the directories around it) must never make a git
//! verb start a program, nor make git read a repository outside the root,
//! while the user's own global git config keeps working. Each test plants a
//! program that leaves a marker file if it ever runs.

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use verbgate_tests::{git, Env};

/// A repository at the root with one commit of `a.txt`, and a program that
/// touches `marker` (then copies stdin to stdout, as a filter must).
struct Hostile {
    env: Env,
    program: PathBuf,
    marker: PathBuf,
    home: PathBuf,
}

fn hostile() -> Hostile {
    hostile_with(Env::new())
}

fn hostile_with(env: Env) -> Hostile {
    let base = env.tmp.path().to_path_buf();
    let marker = base.join("PWNED");
    let program = base.join("evil.sh");
    std::fs::write(&program, format!("#!/bin/sh\necho \"$0 $*\" >> {}\ncat\n", marker.display()))
        .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    // The user's HOME for the programs verbgate starts (global git config).
    let home = base.join("user-home");
    std::fs::create_dir_all(&home).unwrap();
    let root = &env.root;
    git(root, &["init", "-q", "-b", "main"]);
    std::fs::write(root.join("a.txt"), "one\n").unwrap();
    git(root, &["add", "."]);
    git(root, &["commit", "-q", "-m", "first"]);
    Hostile { env, program, marker, home }
}

impl Hostile {
    fn append_config(&self, repo: &Path, text: &str) {
        let path = repo.join(".git/config");
        let mut old = std::fs::read_to_string(&path).unwrap();
        old.push_str(text);
        std::fs::write(path, old).unwrap();
    }

    /// Make git re-read `a.txt` (a changed mtime forces a content check,
    /// which is when a clean filter runs).
    fn touch(&self) {
        let f = std::fs::File::options().write(true).open(self.env.root.join("a.txt")).unwrap();
        f.set_modified(
            std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000_000),
        )
        .unwrap();
    }

    fn op(&self, op: &str, args: Value) -> Value {
        let req = json!({ "ops": [{ "op": op, "args": args }] });
        let out =
            self.env.cmd(&["request", &req.to_string()]).env("HOME", &self.home).output().unwrap();
        let v: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
        v["results"][0].clone()
    }

    fn ran(&self) -> bool {
        self.marker.exists()
    }

    fn assert_refused(&self, r: &Value, key: &str) {
        assert_eq!(r["ok"], false, "{r}");
        assert_eq!(r["error"]["code"], "repo_config_runs_programs", "{r}");
        let keys: Vec<&str> = r["error"]["keys"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k["key"].as_str().unwrap())
            .collect();
        assert!(keys.contains(&key), "{key} not named in {r}");
        assert!(
            r["error"]["config_line"].as_str().unwrap().starts_with("trusted_repos = ["),
            "{r}"
        );
        assert!(
            !self.ran(),
            "the repository's program ran: {}",
            std::fs::read_to_string(&self.marker).unwrap_or_default()
        );
    }
}

#[test]
fn a_clean_filter_in_the_repository_config_is_refused_and_never_runs() {
    let h = hostile();
    std::fs::write(h.env.root.join(".gitattributes"), "* filter=x\n").unwrap();
    h.append_config(&h.env.root, &format!("[filter \"x\"]\n\tclean = {}\n", h.program.display()));
    for verb in ["git.status", "git.diff"] {
        h.touch();
        h.assert_refused(&h.op(verb, json!({})), "filter.x.clean");
    }
}

#[test]
fn smudge_and_process_filters_are_refused_too() {
    for key in ["smudge", "process"] {
        let h = hostile();
        std::fs::write(h.env.root.join(".gitattributes"), "* filter=x\n").unwrap();
        h.append_config(
            &h.env.root,
            &format!("[filter \"x\"]\n\t{key} = {}\n", h.program.display()),
        );
        h.touch();
        h.assert_refused(&h.op("git.status", json!({})), &format!("filter.x.{key}"));
    }
}

#[test]
fn an_included_config_file_is_checked_like_the_config_itself() {
    let h = hostile();
    std::fs::write(h.env.root.join(".gitattributes"), "* filter=x\n").unwrap();
    std::fs::write(
        h.env.root.join("inc.cfg"),
        format!("[filter \"x\"]\n\tclean = {}\n", h.program.display()),
    )
    .unwrap();
    h.append_config(&h.env.root, "[include]\n\tpath = ../inc.cfg\n");
    h.touch();
    h.assert_refused(&h.op("git.status", json!({})), "filter.x.clean");
}

#[test]
fn a_diff_driver_in_the_repository_config_is_refused() {
    let h = hostile();
    std::fs::write(h.env.root.join(".gitattributes"), "* diff=x\n").unwrap();
    h.append_config(
        &h.env.root,
        &format!(
            "[diff \"x\"]\n\tcommand = {}\n\ttextconv = {}\n",
            h.program.display(),
            h.program.display()
        ),
    );
    std::fs::write(h.env.root.join("a.txt"), "two\n").unwrap();
    for verb in ["git.diff", "git.show", "git.log"] {
        h.assert_refused(&h.op(verb, json!({})), "diff.x.command");
    }
}

/// A commit carrying a `gpgsig` header: git hands it to the signature
/// program when asked to show signatures.
fn signed_commit(root: &Path) -> String {
    let tree = git(root, &["rev-parse", "HEAD^{tree}"]);
    let parent = git(root, &["rev-parse", "HEAD"]);
    let body = format!(
        "tree {}\nparent {}\nauthor A <a@example.com> 1700000000 +0000\ncommitter A <a@example.com> 1700000000 +0000\ngpgsig -----BEGIN PGP SIGNATURE-----\n \n iQEzBAABCAAdFiEE\n -----END PGP SIGNATURE-----\n\nsigned\n",
        tree.trim(),
        parent.trim()
    );
    let file = root.join(".git/signed-commit");
    std::fs::write(&file, body).unwrap();
    let oid = git(root, &["hash-object", "-t", "commit", "-w", file.to_str().unwrap()]);
    git(root, &["update-ref", "refs/heads/main", oid.trim()]);
    oid.trim().to_string()
}

#[test]
fn signature_programs_never_run_on_a_signed_commit() {
    let h = hostile();
    signed_commit(&h.env.root);
    // The repository asks to show signatures, the user's own config names
    // a signature program: the repository's request is overridden.
    h.append_config(&h.env.root, "[log]\n\tshowSignature = true\n");
    std::fs::write(
        h.home.join(".gitconfig"),
        format!("[gpg]\n\tprogram = {}\n", h.program.display()),
    )
    .unwrap();
    for verb in ["git.log", "git.show"] {
        let r = h.op(verb, json!({}));
        assert_eq!(r["ok"], true, "{r}");
        assert!(!h.ran(), "{verb} ran the signature program");
    }
    // A repository that names its own signature program is refused.
    for key in ["gpg.program", "gpg.ssh.program"] {
        let (section, name) = key.rsplit_once('.').unwrap();
        let section = section.replace("gpg.ssh", "gpg \"ssh\"");
        h.append_config(&h.env.root, &format!("[{section}]\n\t{name} = {}\n", h.program.display()));
        h.assert_refused(&h.op("git.log", json!({})), key);
    }
}

#[test]
fn an_embedded_bare_repository_is_never_used() {
    let h = hostile();
    let bare = h.env.root.join("vendor/x.git");
    std::fs::create_dir_all(bare.parent().unwrap()).unwrap();
    git(&h.env.root, &["init", "-q", "--bare", bare.to_str().unwrap()]);
    // Its own config points the work tree at the root and names a filter.
    let cfg = bare.join("config");
    let mut text = std::fs::read_to_string(&cfg).unwrap();
    text.push_str(&format!(
        "[core]\n\tworktree = ../..\n\tbare = false\n[filter \"x\"]\n\tclean = {}\n",
        h.program.display()
    ));
    std::fs::write(&cfg, text).unwrap();
    std::fs::write(h.env.root.join(".gitattributes"), "* filter=x\n").unwrap();
    h.touch();
    for verb in ["git.status", "git.log"] {
        let r = h.op(verb, json!({"repo": "vendor/x.git"}));
        assert_eq!(r["ok"], false, "{verb} used the embedded repository: {r}");
        assert!(!h.ran(), "{verb} ran the embedded repository's filter");
    }
}

#[test]
fn git_never_walks_above_the_root() {
    let env = Env::new();
    // The root is not a repository; the directory above it is.
    let parent = env.tmp.path();
    git(parent, &["init", "-q", "-b", "outside"]);
    std::fs::write(parent.join("secret.txt"), "outside the root\n").unwrap();
    git(parent, &["add", "secret.txt"]);
    git(parent, &["commit", "-q", "-m", "outside history"]);
    for verb in ["git.log", "git.status"] {
        let r = env.op(verb, json!({}));
        assert_eq!(r["ok"], false, "{verb} read the repository above the root: {r}");
        assert!(!r.to_string().contains("outside history"), "{r}");
    }
}

#[test]
fn a_git_file_pointing_outside_the_root_is_refused() {
    let env = Env::new();
    let elsewhere = env.tmp.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    git(&elsewhere, &["init", "-q", "-b", "main"]);
    std::fs::write(elsewhere.join("f"), "x").unwrap();
    git(&elsewhere, &["add", "f"]);
    git(&elsewhere, &["commit", "-q", "-m", "elsewhere history"]);
    std::fs::write(
        env.root.join(".git"),
        format!("gitdir: {}\n", elsewhere.join(".git").display()),
    )
    .unwrap();
    let r = env.op("git.log", json!({}));
    // The guard's own git runs in the OS sandbox too: it cannot read the
    // repository outside the root, so it finds none (not_a_repository);
    // unconfined it names where the repository is (repo_outside_root).
    let code = r["error"]["code"].as_str().unwrap_or_default();
    assert!(code == "repo_outside_root" || code == "not_a_repository", "{r}");
    assert!(!r.to_string().contains("elsewhere history"), "{r}");
}

#[test]
fn the_git_directory_itself_gets_no_pass() {
    let h = hostile();
    h.append_config(&h.env.root, &format!("[filter \"x\"]\n\tclean = {}\n", h.program.display()));
    h.assert_refused(&h.op("git.log", json!({"repo": ".git"})), "filter.x.clean");
}

#[test]
fn submodules_are_not_entered_even_when_gitmodules_asks() {
    let h = hostile();
    let root = &h.env.root;
    // A submodule whose own git directory names a filter and an external diff.
    let sub_src = h.env.tmp.path().join("sub-src");
    std::fs::create_dir_all(&sub_src).unwrap();
    git(&sub_src, &["init", "-q", "-b", "main"]);
    std::fs::write(sub_src.join("f"), "f\n").unwrap();
    git(&sub_src, &["add", "f"]);
    git(&sub_src, &["commit", "-q", "-m", "sub"]);
    git(
        root,
        &[
            "-c",
            "protocol.file.allow=always",
            "submodule",
            "add",
            "-q",
            sub_src.to_str().unwrap(),
            "sub",
        ],
    );
    // .gitmodules asks git to look inside; committed, so git also finds it
    // in the index and HEAD once the work-tree copy is gone.
    git(root, &["config", "-f", ".gitmodules", "submodule.sub.ignore", "none"]);
    git(root, &["add", ".gitmodules"]);
    git(root, &["commit", "-q", "-m", "add sub"]);
    std::fs::write(sub_src.join("f"), "f2\n").unwrap();
    git(&sub_src, &["commit", "-q", "-am", "sub 2"]);
    git(&root.join("sub"), &["-c", "protocol.file.allow=always", "pull", "-q", "origin", "main"]);
    git(root, &["commit", "-q", "-am", "bump sub"]);
    let modcfg = root.join(".git/modules/sub/config");
    let mut text = std::fs::read_to_string(&modcfg).unwrap();
    text.push_str(&format!(
        "[filter \"x\"]\n\tclean = {p}\n[diff]\n\texternal = {p}\n",
        p = h.program.display()
    ));
    std::fs::write(&modcfg, text).unwrap();
    std::fs::write(root.join("sub/.gitattributes"), "* filter=x\n").unwrap();
    let touch_sub = || {
        let f = std::fs::File::options().write(true).open(root.join("sub/f")).unwrap();
        f.set_modified(
            std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000_000),
        )
        .unwrap();
    };
    // The superproject asks for submodule diffs in full.
    h.append_config(root, "[diff]\n\tsubmodule = diff\n");
    for gitmodules in ["in the work tree", "only in the index and HEAD"] {
        if gitmodules == "only in the index and HEAD" {
            std::fs::remove_file(root.join(".gitmodules")).unwrap();
        }
        touch_sub();
        let r = h.op("git.status", json!({}));
        assert_eq!(r["ok"], true, "{r}");
        touch_sub();
        let r = h.op("git.diff", json!({"rev_range": "HEAD~1..HEAD"}));
        assert_eq!(r["ok"], true, "{r}");
        assert!(
            !h.ran(),
            "git ran a program from the submodule's config (.gitmodules {gitmodules})"
        );
    }
}

#[test]
fn repository_hooks_never_run() {
    let h = hostile();
    let hook = h.env.root.join(".git/hooks/post-index-change");
    std::fs::create_dir_all(hook.parent().unwrap()).unwrap();
    std::fs::copy(&h.program, &hook).unwrap();
    for verb in ["git.diff", "git.status", "git.log", "git.show", "git.branches"] {
        h.touch();
        let r = h.op(verb, json!({}));
        assert_eq!(r["ok"], true, "{verb}: {r}");
        assert!(!h.ran(), "{verb} ran the repository's hook");
    }
}

#[test]
fn a_lazy_fetch_never_starts_a_transport_program() {
    // A partial clone whose promisor remote is a shell command (directly,
    // or through a URL rewrite), and a missing object a read would fetch.
    let promisor = |h: &Hostile, url_config: &str| {
        h.append_config(
            &h.env.root,
            &format!("[core]\n\trepositoryformatversion = 1\n[extensions]\n\tpartialClone = origin\n[protocol \"ext\"]\n\tallow = always\n{url_config}"),
        );
        let blob = git(&h.env.root, &["rev-parse", "HEAD:a.txt"]);
        let blob = blob.trim();
        std::fs::remove_file(h.env.root.join(format!(
            ".git/objects/{}/{}",
            &blob[..2],
            &blob[2..]
        )))
        .unwrap();
    };
    let direct = |h: &Hostile| {
        format!(
            "[remote \"origin\"]\n\tpromisor = true\n\turl = ext::sh -c {}\n",
            h.program.display()
        )
    };
    let rewrite = |h: &Hostile| {
        format!(
            "[remote \"origin\"]\n\tpromisor = true\n\turl = https://example.invalid/x\n[url \"ext::sh -c {} \"]\n\tinsteadOf = https://\n",
            h.program.display()
        )
    };
    for (name, url) in
        [("remote url", &direct as &dyn Fn(&Hostile) -> String), ("url rewrite", &rewrite)]
    {
        let h = hostile();
        promisor(&h, &url(&h));
        let r = h.op("git.show", json!({}));
        assert_eq!(r["error"]["code"], "repo_config_runs_programs", "{name}: {r}");
        assert!(!h.ran());
    }
    // Even for a repository the operator vouches for, git fetches nothing:
    // transports are off in command scope and lazy fetches are disabled.
    let env = Env::new();
    let root = env.root.canonicalize().unwrap();
    let h = hostile_with(
        env.with_config(&format!("trusted_repos = [{:?}]", root.display().to_string())),
    );
    promisor(&h, &direct(&h));
    let r = h.op("git.show", json!({}));
    assert!(!h.ran(), "a lazy fetch ran a transport program: {r}");
}

#[test]
fn the_users_global_filter_keeps_working() {
    // A filter program outside the system directories runs only where the
    // operator lets git's sandbox reach it (here: the test's own directory,
    // where the program also writes its marker).
    let env = Env::new();
    let base = env.tmp.path().display().to_string();
    let h = hostile_with(env.with_config(&format!(
        "[[sandbox.allow]]\nverbs = [\"git.*\"]\nread = [{base:?}]\nwrite = [{base:?}]\n"
    )));
    // A git-lfs-style filter in the user's own global config.
    std::fs::write(
        h.home.join(".gitconfig"),
        format!("[filter \"lfs\"]\n\tclean = {}\n\trequired = true\n", h.program.display()),
    )
    .unwrap();
    std::fs::write(h.env.root.join(".gitattributes"), "a.txt filter=lfs\n").unwrap();
    h.touch();
    let r = h.op("git.status", json!({}));
    assert_eq!(r["ok"], true, "{r}");
    assert!(h.ran(), "the user's own global filter should run as git would run it");
}

#[test]
fn an_operator_can_trust_a_repository_by_path() {
    let env = Env::new();
    let root = env.root.canonicalize().unwrap();
    let base = env.tmp.path().display().to_string();
    let env = env.with_config(&format!(
        "trusted_repos = [{:?}]\n[[sandbox.allow]]\nverbs = [\"git.*\"]\nread = [{base:?}]\nwrite = [{base:?}]\n",
        root.display().to_string()
    ));
    let h = hostile_with(env);
    std::fs::write(h.env.root.join(".gitattributes"), "* filter=x\n").unwrap();
    h.append_config(&h.env.root, &format!("[filter \"x\"]\n\tclean = {}\n", h.program.display()));
    h.touch();
    let r = h.op("git.status", json!({}));
    assert_eq!(r["ok"], true, "{r}");
    assert!(h.ran(), "a trusted repository's filter runs, as git would run it");
}

#[test]
fn ancestor_cargo_config_writable_by_others_is_refused() {
    let env = Env::new().allowing(&["cargo.metadata"]);
    // The directory above the root holds a cargo config anyone could have
    // written (as a shared /tmp would).
    let planted = env.tmp.path().join(".cargo/config.toml");
    std::fs::create_dir_all(planted.parent().unwrap()).unwrap();
    std::fs::write(&planted, "[target.x86_64-unknown-linux-gnu]\nrunner = \"/bin/false\"\n")
        .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o666)).unwrap();
    std::fs::write(
        env.root.join("Cargo.toml"),
        "[package]\nname = \"p\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    )
    .unwrap();
    std::fs::create_dir_all(env.root.join("src")).unwrap();
    std::fs::write(env.root.join("src/lib.rs"), "").unwrap();
    let r = env.op("cargo.metadata", json!({}));
    assert_eq!(r["error"]["code"], "untrusted_config", "{r}");
    assert_eq!(r["error"]["path"], planted.canonicalize().unwrap().display().to_string(), "{r}");
    std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o644)).unwrap();
    let r = env.op("cargo.metadata", json!({}));
    assert_eq!(r["ok"], true, "{r}");
}

#[test]
fn just_uses_exactly_the_justfile_of_its_directory() {
    let env = Env::new();
    // A justfile above the root, and a root justfile that falls back to it.
    let marker = env.tmp.path().join("OUTER-RAN");
    std::fs::write(
        env.tmp.path().join("justfile"),
        format!("outer:\n    touch {}\n", marker.display()),
    )
    .unwrap();
    let help = env.request(&json!({"help": "just.run"}));
    assert_eq!(
        help["help"]["targets_error"]["code"], "not_found",
        "just found a justfile above the root: {help}"
    );
    std::fs::write(env.root.join("justfile"), "set fallback\n\ninner:\n    echo inner\n").unwrap();
    let list = env.request(&json!({"help": "just.run"}));
    let names: Vec<&str> = list["help"]["targets"]
        .as_array()
        .unwrap_or_else(|| panic!("{list}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["inner"], "{list}");
    let outer = env.request(&json!({"help": "just.run:outer"}));
    assert_eq!(outer["ok"], Value::Null, "{outer}");
    assert!(
        outer.to_string().contains("not_found"),
        "the parent justfile's recipe was reachable: {outer}"
    );
    assert!(!marker.exists());
}

#[test]
fn code_running_verbs_say_so() {
    let env = Env::new();
    for verb in [
        "cargo.build",
        "cargo.test",
        "cargo.check",
        "cargo.clippy",
        "cargo.metadata",
        "just.run",
        "pytest.run",
        "npm.run",
        "vitest.run",
        "jest.run",
        "eslint.check",
        "go.test",
    ] {
        let h = env.request(&json!({"help": verb}));
        assert_eq!(h["help"]["runs_repository_code"], true, "{verb}: {h}");
    }
    for verb in [
        "git.status",
        "git.log",
        "job.list",
        "rg.search",
        "rg.files",
        "tsc.check",
        "go.build",
        "go.vet",
        "ruff.check",
    ] {
        let h = env.request(&json!({"help": verb}));
        assert_eq!(h["help"]["runs_repository_code"], false, "{verb}: {h}");
    }
    // The catalog marks them with the `x` effect (runs repository code).
    let catalog = env.request(&json!({"help": true}));
    let effects = catalog["help"]["effects"].as_object().unwrap_or_else(|| panic!("{catalog}"));
    let marked: Vec<&str> = effects
        .iter()
        .filter(|(_, l)| l.as_str().unwrap().contains('x'))
        .map(|(k, _)| k.as_str())
        .collect();
    assert_eq!(
        marked,
        [
            "cargo.*",
            "cargo.metadata",
            "eslint.*",
            "go.test",
            "jest.*",
            "just.*",
            "npm.*",
            "pytest.*",
            "vitest.*"
        ],
        "{catalog}"
    );
    assert!(catalog["help"]["effect_letters"].as_str().unwrap().contains("x runs repo code"));
}

#[test]
fn a_plan_cannot_make_git_run_a_program_through_the_environment() {
    let h = hostile_with(Env::with_plugin("fixture-env"));
    std::fs::write(h.env.root.join("a.txt"), "changed\n").unwrap();
    let program = h.program.display().to_string();
    let attacks = [
        ("GIT_EXTERNAL_DIFF", program.clone()),
        ("GIT_CONFIG_PARAMETERS", format!("'diff.external'='{program}'")),
        ("GIT_CONFIG_COUNT", "1".to_string()),
        ("GIT_PAGER", program.clone()),
        ("GIT_EXEC_PATH", "/tmp".to_string()),
        ("LD_PRELOAD", "/tmp/evil.so".to_string()),
        ("GCONV_PATH", "/tmp".to_string()),
        ("GLIBC_TUNABLES", "glibc.malloc.check=3".to_string()),
        ("HOME", h.env.tmp.path().display().to_string()),
        ("BASH_ENV", program.clone()),
        ("NODE_OPTIONS", "--require /tmp/x.js".to_string()),
        ("PYTHONPATH", "/tmp".to_string()),
        ("PERL5OPT", "-Mevil".to_string()),
        ("OPENSSL_CONF", "/tmp/x.cnf".to_string()),
    ];
    for (name, value) in attacks {
        let r = h.op("envfix.diff", json!({"name": name, "value": value}));
        assert_eq!(r["error"]["code"], "plan_refused", "{name}: {r}");
        assert_eq!(r["error"]["env"], name, "{r}");
        assert!(!h.ran(), "{name} made git run the planted program");
    }
    // An inert name passes.
    let r = h.op("envfix.diff", json!({"name": "LC_ALL", "value": "C"}));
    assert_eq!(r["ok"], true, "{r}");
}

/// Each write verb with args that would work in a clean repository.
fn write_ops() -> Vec<(&'static str, Value)> {
    vec![
        ("git.add", json!({ "paths": ["a.txt"] })),
        ("git.commit", json!({ "message": "change", "allow_empty": true })),
        ("git.restore", json!({ "paths": ["a.txt"] })),
        ("git.switch", json!({ "branch": "topic", "create": true })),
    ]
}

#[test]
fn write_verbs_are_refused_in_a_repository_whose_config_runs_programs() {
    let h = hostile();
    std::fs::write(h.env.root.join(".gitattributes"), "* filter=x\n").unwrap();
    h.append_config(
        &h.env.root,
        &format!(
            "[filter \"x\"]\n\tclean = {}\n\tsmudge = {}\n",
            h.program.display(),
            h.program.display()
        ),
    );
    std::fs::write(h.env.root.join("a.txt"), "two\n").unwrap();
    for (verb, args) in write_ops() {
        h.assert_refused(&h.op(verb, args), "filter.x.clean");
    }
    let signing = hostile();
    signing.append_config(
        &signing.env.root,
        &format!("[commit]\n\tgpgSign = true\n[gpg]\n\tprogram = {}\n", signing.program.display()),
    );
    signing.assert_refused(
        &signing.op("git.commit", json!({ "message": "signed?", "allow_empty": true })),
        "gpg.program",
    );
}

#[test]
fn write_verbs_run_no_repository_hooks_and_never_sign() {
    let h = hostile_with(Env::new().allowing(&["git.*"]));
    let hooks = h.env.root.join(".git/hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    for hook in [
        "pre-commit",
        "prepare-commit-msg",
        "commit-msg",
        "post-commit",
        "post-checkout",
        "post-index-change",
        "reference-transaction",
    ] {
        std::fs::copy(&h.program, hooks.join(hook)).unwrap();
    }
    // Signing asked for by the repository (with the default program):
    // `--no-gpg-sign` wins, so no signature program runs either.
    h.append_config(
        &h.env.root,
        "[user]\n\tname = Ada\n\temail = ada@example.com\n[commit]\n\tgpgSign = true\n",
    );
    std::fs::write(h.env.root.join("a.txt"), "two\n").unwrap();
    for (verb, args) in write_ops() {
        let r = h.op(verb, args);
        assert_eq!(r["ok"], true, "{verb}: {r}");
        assert!(
            !h.ran(),
            "{verb} ran a repository hook: {}",
            std::fs::read_to_string(&h.marker).unwrap_or_default()
        );
    }
    let commit = git(&h.env.root, &["cat-file", "commit", "HEAD"]);
    assert!(!commit.contains("gpgsig"), "the commit was signed: {commit}");
    assert_eq!(git(&h.env.root, &["rev-parse", "--abbrev-ref", "HEAD"]).trim(), "topic");
}

#[test]
fn git_verbs_refuse_a_root_that_is_no_repository() {
    // Seen before: in a root that is not a repository git falls back to
    // `--no-index`, so git.diff with an absolute `rev` compared a file
    // outside the root with one inside and answered with its lines.
    let env = Env::new();
    let outside = env.tmp.path().join("outside.txt");
    std::fs::write(&outside, "OUTSIDE-LINE\n").unwrap();
    std::fs::write(env.root.join("a.txt"), "inside\n").unwrap();
    let r = env.op("git.diff", json!({"rev": outside.to_str().unwrap(), "path": "a.txt"}));
    assert!(!r.to_string().contains("OUTSIDE-LINE"), "{r}");
    assert_eq!(r["error"]["code"], "not_a_repository", "{r}");
    for verb in ["git.status", "git.log", "git.branches"] {
        let r = env.op(verb, json!({}));
        assert_eq!(r["error"]["code"], "not_a_repository", "{verb}: {r}");
        assert!(
            r["error"]["message"].as_str().unwrap().contains("not inside a git repository"),
            "{r}"
        );
    }
}
