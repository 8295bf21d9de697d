//! Every test SECURITY.md and docs/ cite by name exists (a test only).
//!
//! SECURITY.md lists each promise with the test that attacks it, and a
//! promise without a test is not listed; a citation of a test that was
//! renamed or never written would make that rule a claim. Citations are the
//! code spans shaped like test paths: `e2e/<file>::<test>`,
//! `<module>::tests::<test>`, `host/tests/<file>.rs::<test>`, `…::<test>`
//! (the module of the citation before it), `…_<end>` (the name before it
//! with another ending) and `<…>::*` (every test of a module, whose file must
//! exist). A name exists when some `.rs` file under host/, tests/ or
//! plugins/ declares `fn <name>`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The repository's top directory.
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("host/ has a parent").to_path_buf()
}

/// The `.rs` files under `dir`, skipping build output and hidden directories.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || name == "target" || name == "node_modules" {
            continue;
        }
        match entry.file_type() {
            Ok(t) if t.is_dir() => rust_files(&path, out),
            Ok(t) if t.is_file() && name.ends_with(".rs") => out.push(path),
            _ => {}
        }
    }
}

/// Every name declared with `fn` in the project's Rust sources.
fn declared_fns() -> BTreeSet<String> {
    let mut files = Vec::new();
    for dir in ["host", "tests", "plugins"] {
        rust_files(&repo().join(dir), &mut files);
    }
    let mut names = BTreeSet::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        for (i, _) in text.match_indices("fn ") {
            if i > 0 && text.as_bytes()[i - 1].is_ascii_alphanumeric() {
                continue;
            }
            let name: String = text[i + 3..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                names.insert(name);
            }
        }
    }
    names
}

/// One cited test: the whole span as written, and what must exist.
#[derive(Debug)]
enum Cited {
    /// A test by name.
    Test { span: String, name: String },
    /// Every test of a module: its file must exist.
    Module { span: String, files: Vec<PathBuf> },
}

fn is_ident(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// The files a module citation may name (`e2e/jobs`, `dispatch::policy`).
fn module_files(module: &str) -> Option<Vec<PathBuf>> {
    let repo = repo();
    if let Some(file) = module.strip_prefix("e2e/") {
        return is_ident(file).then(|| vec![repo.join("tests/e2e").join(format!("{file}.rs"))]);
    }
    if module.starts_with("host/tests/") && module.ends_with(".rs") {
        return Some(vec![repo.join(module)]);
    }
    let parts: Vec<&str> = module.split("::").collect();
    if !parts.iter().all(|p| is_ident(p)) {
        return None;
    }
    let base = repo.join("host/src").join(parts.join("/"));
    Some(vec![base.with_extension("rs"), base.join("mod.rs")])
}

/// The citations in one document, in order.
fn citations(text: &str) -> Vec<Cited> {
    let mut out = Vec::new();
    let mut last_module: Option<String> = None;
    let mut last_name: Option<String> = None;
    for (i, span) in text.split('`').enumerate() {
        if i % 2 == 0 || span.contains(char::is_whitespace) {
            continue;
        }
        // `…_over_http` after `…_over_stdio`: the name before, another ending.
        if let Some(end) = span.strip_prefix('…').filter(|e| e.starts_with('_') && is_ident(e)) {
            let Some(prev) = &last_name else { continue };
            let word = end[1..].find('_').map_or(end, |j| &end[..j + 1]);
            if let Some(at) = prev.rfind(word) {
                out.push(Cited::Test {
                    span: span.to_string(),
                    name: format!("{}{end}", &prev[..at]),
                });
            } else {
                out.push(Cited::Test { span: span.to_string(), name: span.to_string() });
            }
            continue;
        }
        let Some((module, last)) = span.rsplit_once("::") else {
            // `e2e/argv`: a whole file of end-to-end tests.
            if let Some(files) = span.strip_prefix("e2e/").and_then(|_| module_files(span)) {
                out.push(Cited::Module { span: span.to_string(), files });
            }
            continue;
        };
        let module = if module == "…" {
            match &last_module {
                Some(m) => m.clone(),
                None => continue,
            }
        } else if module.starts_with("e2e/")
            || module.starts_with("host/tests/")
            || module.ends_with("::tests")
        {
            module.to_string()
        } else {
            // `Env::spawn`, `::1`, `file.py::test`: not a test's path.
            continue;
        };
        let Some(files) = module_files(module.strip_suffix("::tests").unwrap_or(&module)) else {
            continue;
        };
        last_module = Some(module.clone());
        if last == "*" {
            out.push(Cited::Module { span: span.to_string(), files });
        } else if is_ident(last) {
            last_name = Some(last.to_string());
            out.push(Cited::Test { span: span.to_string(), name: last.to_string() });
        }
    }
    out
}

#[test]
fn every_test_security_md_and_the_docs_cite_exists() {
    let repo = repo();
    let mut docs = vec![repo.join("SECURITY.md"), repo.join("README.md")];
    let mut in_docs: Vec<PathBuf> = std::fs::read_dir(repo.join("docs"))
        .expect("docs/ exists")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    in_docs.sort();
    docs.extend(in_docs);
    let fns = declared_fns();
    let mut missing = Vec::new();
    let mut count = 0;
    for doc in &docs {
        let text = std::fs::read_to_string(doc)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", doc.display()));
        let shown = doc.strip_prefix(&repo).unwrap_or(doc).display().to_string();
        for cited in citations(&text) {
            count += 1;
            match cited {
                Cited::Test { span, name } if !fns.contains(&name) => {
                    missing.push(format!("{shown}: `{span}` (no `fn {name}`)"))
                }
                Cited::Module { span, files } if !files.iter().any(|f| f.is_file()) => {
                    missing.push(format!("{shown}: `{span}` (none of {files:?} exists)"));
                }
                _ => {}
            }
        }
    }
    let security = citations(&std::fs::read_to_string(repo.join("SECURITY.md")).unwrap());
    assert!(
        security.len() > 100,
        "SECURITY.md cites its tests; found only {} citations, so this check reads it wrong",
        security.len()
    );
    assert!(
        missing.is_empty(),
        "{} of {count} cited tests do not exist; cite the test that proves the claim, or drop the claim:\n  {}",
        missing.len(),
        missing.join("\n  ")
    );
}

#[test]
fn citation_shapes_are_read_as_meant() {
    let text = "`e2e/mrtr::python_sdk_consent_over_stdio`, `…_over_http`, `…::other_test`; `exec::confine::tests::*`, \
                `write::tests::a_commit_is_read_back`, `e2e/argv`, `host/tests/properties.rs::any_change`; not: `Env::spawn`, `::1`, `file.py::test`";
    let got: Vec<String> = citations(text)
        .into_iter()
        .map(|c| match c {
            Cited::Test { name, .. } => name,
            Cited::Module { span, .. } => format!("module {span}"),
        })
        .collect();
    assert_eq!(
        got,
        [
            "python_sdk_consent_over_stdio",
            "python_sdk_consent_over_http",
            "other_test",
            "module exec::confine::tests::*",
            "a_commit_is_read_back",
            "module e2e/argv",
            "any_change"
        ]
    );
}
