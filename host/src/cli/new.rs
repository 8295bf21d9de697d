//! `verbgate new <name> [--lang rust|python|js] [--dir DIR]`: scaffold a
//! plugin project that builds, signs, passes `verbgate check` and answers
//! its example verb unchanged.
//!
//! Everything a project needs ships inside the binary (the templates, the
//! contract's WIT and, for Rust, the guest SDK), so scaffolding works
//! offline and always matches the contract this verbgate speaks.

use anyhow::{bail, Context as _, Result};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::global::{print_json, GlobalArgs};
use crate::registry::bundled::BUNDLED;
use crate::registry::fence::{CORE_NAMESPACE, RESERVED_NAMESPACES};
use crate::registry::lint::plugin_name_problem;

/// The language of a scaffolded plugin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Lang {
    /// Rust with the verbgate guest SDK (cargo, wasm32-wasip2).
    Rust,
    /// Python with componentize-py.
    Python,
    /// JavaScript with componentize-js.
    Js,
}

/// Arguments of `new`.
#[derive(Debug, clap::Args)]
pub struct NewArgs {
    /// Plugin name: lower-case letters, digits and `-`. It is also the verbs'
    /// namespace (`<name>.hello`).
    name: String,
    /// The guest language.
    #[arg(long, value_enum, default_value = "rust")]
    lang: Lang,
    /// Where to create the project. Default: ./<name>.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

/// The contract every template targets.
const WIT: &str = include_str!("../../../verbs-wit/0.2.0/verbs.wit");

/// The guest SDK, vendored into Rust projects; its bindings read `../wit`.
const SDK_FILES: &[(&str, &str)] = &[
    ("sdk/src/lib.rs", include_str!("../../../plugins/sdk/src/lib.rs")),
    ("sdk/src/args.rs", include_str!("../../../plugins/sdk/src/args.rs")),
    ("sdk/src/bindings.rs", include_str!("../../../plugins/sdk/src/bindings.rs")),
    ("sdk/src/command.rs", include_str!("../../../plugins/sdk/src/command.rs")),
    ("sdk/src/errors.rs", include_str!("../../../plugins/sdk/src/errors.rs")),
    ("sdk/src/outcome.rs", include_str!("../../../plugins/sdk/src/outcome.rs")),
    ("sdk/src/params.rs", include_str!("../../../plugins/sdk/src/params.rs")),
    ("sdk/src/schema.rs", include_str!("../../../plugins/sdk/src/schema.rs")),
    ("sdk/src/verb.rs", include_str!("../../../plugins/sdk/src/verb.rs")),
];

/// The SDK's manifest outside our workspace (same pins as plugins/Cargo.toml).
const SDK_MANIFEST: &str = r#"[package]
name = "verbgate-plugin-sdk"
description = "Write verbgate verbs in Rust: one type per verb, params schemas derived from typed args, typed argv"
version = "0.1.0"
edition = "2021"
license = "Apache-2.0"
publish = false

[dependencies]
wit-bindgen = { version = "0.61", default-features = false, features = ["macros", "realloc"] }
serde_json = { version = "1", features = ["preserve_order"] }
serde = { version = "1", features = ["derive"] }
schemars = { version = "1.2", default-features = false, features = ["derive", "std", "preserve_order"] }
"#;

/// (path in the project, contents, executable)
type File = (String, String, bool);

fn template_files(lang: Lang) -> Vec<(&'static str, &'static str, bool)> {
    let common = [
        ("wit/verbs.wit", WIT, false),
        ("test.sh", include_str!("../../templates/common/test.sh"), true),
        ("README.md", include_str!("../../templates/common/README.md"), false),
        (".gitignore", include_str!("../../templates/common/gitignore"), false),
    ];
    let own: Vec<(&str, &str, bool)> = match lang {
        Lang::Rust => vec![
            ("Cargo.toml", include_str!("../../templates/rust/Cargo.toml"), false),
            ("src/lib.rs", include_str!("../../templates/rust/lib.rs"), false),
            ("build.sh", include_str!("../../templates/rust/build.sh"), true),
            ("sdk/Cargo.toml", SDK_MANIFEST, false),
        ],
        Lang::Python => {
            vec![
                ("app.py", include_str!("../../templates/python/app.py"), false),
                ("build.sh", include_str!("../../templates/python/build.sh"), true),
            ]
        }
        Lang::Js => vec![
            ("guest.js", include_str!("../../templates/js/guest.js"), false),
            ("build.sh", include_str!("../../templates/js/build.sh"), true),
        ],
    };
    let mut files: Vec<_> = common.into_iter().chain(own).collect();
    if lang == Lang::Rust {
        files.extend(SDK_FILES.iter().map(|(p, c)| (*p, *c, false)));
    }
    files
}

/// The files of a new project, placeholders filled in.
pub fn render(name: &str, lang: Lang) -> Vec<File> {
    let (lang_name, source) = match lang {
        Lang::Rust => ("Rust", "src/lib.rs"),
        Lang::Python => ("Python", "app.py"),
        Lang::Js => ("JavaScript", "guest.js"),
    };
    template_files(lang)
        .into_iter()
        .map(|(path, text, exec)| {
            let text = if path.starts_with("sdk/") {
                // The vendored SDK reads the project's copy of the WIT.
                text.replace("\"../../verbs-wit/0.2.0\"", "\"../wit\"")
            } else {
                text.replace("__NAME__", name)
                    .replace("__NS__", name)
                    .replace("__CRATE__", &name.replace('-', "_"))
                    .replace("__LANG__", lang_name)
                    .replace("__SOURCE__", source)
            };
            (path.to_string(), text, exec)
        })
        .collect()
}

/// Why `name` cannot name a new plugin, if it cannot.
pub fn name_problem(name: &str) -> Option<String> {
    if let Some(f) = plugin_name_problem(name) {
        return Some(f.message);
    }
    if RESERVED_NAMESPACES.contains(&name) || name == CORE_NAMESPACE {
        return Some(format!("`{name}.` is a reserved namespace; pick a name of your own"));
    }
    if BUNDLED.iter().any(|b| b.name == name) {
        return Some(format!(
            "`{name}` is a bundled plugin here, so its verbs would collide; pick another name"
        ));
    }
    None
}

/// Write the project. Refuses a non-empty directory: nothing is overwritten.
pub fn scaffold(name: &str, lang: Lang, dir: &Path) -> Result<Vec<PathBuf>> {
    if let Some(p) = name_problem(name) {
        bail!("{p}");
    }
    if dir.exists() && std::fs::read_dir(dir).map(|mut d| d.next().is_some()).unwrap_or(true) {
        bail!("{} already exists and is not empty; choose another --dir", dir.display());
    }
    let mut written = Vec::new();
    for (path, text, exec) in render(name, lang) {
        let dest = dir.join(&path);
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        std::fs::write(&dest, text).with_context(|| format!("cannot write {}", dest.display()))?;
        if exec {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&dest, std::fs::Permissions::from_mode(0o755))?;
        }
        written.push(dest);
    }
    Ok(written)
}

/// Scaffold a plugin.
pub fn run(_g: &GlobalArgs, a: NewArgs) -> Result<ExitCode> {
    let dir = a.dir.clone().unwrap_or_else(|| PathBuf::from(&a.name));
    let files = scaffold(&a.name, a.lang, &dir)?;
    print_json(&json!({
        "ok": true,
        "plugin": a.name,
        "lang": format!("{:?}", a.lang).to_lowercase(),
        "dir": dir,
        "files": files,
        "verb": format!("{}.hello", a.name),
        "next": format!("cd {} && verbgate dev .   (build, sign, install, show the catalog line); ./test.sh runs it end to end", dir.display()),
    }));
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked_before_anything_is_written() {
        assert!(name_problem("hello-x").is_none());
        assert!(name_problem("Hello").unwrap().contains("lower-case"));
        assert!(name_problem("trust").unwrap().contains("reserved"));
        assert!(name_problem("job").unwrap().contains("reserved"));
        assert!(name_problem("git").unwrap().contains("bundled"));
        let dir = tempfile::tempdir().unwrap();
        let err = scaffold("Bad Name", Lang::Rust, &dir.path().join("x")).unwrap_err();
        assert!(err.to_string().contains("Bad Name"), "{err}");
        assert!(!dir.path().join("x").exists());
    }

    #[test]
    fn every_placeholder_is_filled_and_the_sdk_reads_the_project_wit() {
        for lang in [Lang::Rust, Lang::Python, Lang::Js] {
            for (path, text, _) in render("demo-x", lang) {
                assert!(
                    !text.contains("__NAME__")
                        && !text.contains("__CRATE__")
                        && !text.contains("__NS__"),
                    "{path} of {lang:?}"
                );
            }
        }
        let files = render("demo-x", Lang::Rust);
        let sdk = &files.iter().find(|f| f.0 == "sdk/src/bindings.rs").unwrap().1;
        assert!(sdk.contains("path: \"../wit\""), "the vendored SDK must read the project's WIT");
    }

    /// docs/authoring.md shows each template's example verb as
    /// `verbgate new mytool` writes it: the guide cannot drift from the code.
    #[test]
    fn the_authoring_guide_shows_the_templates_as_written() {
        let guide = include_str!("../../../docs/authoring.md");
        for (lang, source) in
            [(Lang::Rust, "src/lib.rs"), (Lang::Python, "app.py"), (Lang::Js, "guest.js")]
        {
            let files = render("mytool", lang);
            let text = &files.iter().find(|f| f.0 == source).unwrap().1;
            assert!(
                guide.contains(text.trim_end()),
                "docs/authoring.md does not show the {lang:?} template ({source}) as written"
            );
        }
    }

    #[test]
    fn a_non_empty_directory_is_never_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("keep.txt"), "mine").unwrap();
        let err = scaffold("demo", Lang::Js, dir.path()).unwrap_err();
        assert!(err.to_string().contains("not empty"), "{err}");
        assert_eq!(std::fs::read_to_string(dir.path().join("keep.txt")).unwrap(), "mine");
    }
}
