//! The host's layering, checked: no module imports one that (through any
//! chain) imports it. Data flows one way — transport → dispatch → registry
//! → runtime → exec — and a back-edge is how a codebase stops being
//! readable one file at a time (issue 26 found four dispatch files in a
//! circle).
//!
//! A module is a source file. An edge is a path that names another file's
//! module — `use crate::a::b`, `super::x`, or a `crate::a::b::f()` in code —
//! resolved to the deepest file it reaches. Comments and `#[cfg(test)]`
//! modules are left out: tests may look anywhere.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

type Module = Vec<String>;

/// Every source file under `src` as its module path, with its text.
fn modules(src: &Path) -> BTreeMap<Module, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("the source tree is readable") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path.strip_prefix(src).expect("under src").with_extension("");
            let mut module: Module = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
            if matches!(module.last().map(String::as_str), Some("mod" | "lib" | "main")) {
                module.pop();
            }
            out.insert(module, std::fs::read_to_string(&path).expect("a source file is readable"));
        }
    }
    out
}

/// The code of a file without comments and without its test module.
fn code(text: &str) -> String {
    let mut end = text.len();
    for (at, _) in text.match_indices("#[cfg(test)]\n") {
        let next = text[at..].lines().nth(1).unwrap_or("").trim_start();
        if next.starts_with("mod ")
            || next.starts_with("pub(crate) mod ")
            || next.starts_with("pub mod ")
        {
            end = at;
            break;
        }
    }
    let text = &text[..end];
    text.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n")
}

/// Every path (`crate::…`, `super::…`, `self::…`) the code names,
/// with `use` groups (`a::{b, c::d}`) expanded.
fn paths(code: &str, children: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    // `use` items start a line (after any visibility); a "use " inside a
    // string is not one.
    let mut offset = 0;
    for line in code.split_inclusive('\n') {
        let trimmed = line.trim_start();
        let item = ["use ", "pub use ", "pub(crate) use ", "pub(super) use "]
            .iter()
            .find_map(|p| trimmed.strip_prefix(p));
        if let Some(item) = item {
            let start = offset + (line.len() - item.len());
            let end = code[start..].find(';').map_or(code.len(), |e| start + e);
            expand(&code[start..end], &mut Vec::new(), &mut out);
        }
        offset += line.len();
    }
    // Paths written out in code, from the crate, a parent, this module or
    // a child module (whose names `children` gives).
    let bytes = code.as_bytes();
    let roots: Vec<String> = ["crate", "super", "self"]
        .iter()
        .map(|r| r.to_string())
        .chain(children.iter().cloned())
        .map(|r| r + "::")
        .collect();
    for root in &roots {
        let mut from = 0;
        while let Some(i) = code[from..].find(root.as_str()) {
            let at = from + i;
            from = at + root.len();
            if at > 0
                && (bytes[at - 1].is_ascii_alphanumeric()
                    || bytes[at - 1] == b'_'
                    || bytes[at - 1] == b':')
            {
                continue;
            }
            let len = code[at..]
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .unwrap_or(code.len() - at);
            let path: Vec<String> = code[at..at + len]
                .split("::")
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect();
            // `super::{…}` is a `use` group, expanded above.
            if path.len() > 1 {
                out.push(path);
            }
        }
    }
    out
}

/// One `use` tree into its paths.
fn expand(tree: &str, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    let tree = tree.trim();
    if let Some(open) = tree.find('{').filter(|&o| tree.rfind('}').is_some_and(|c| c > o)) {
        let head: Vec<String> = tree[..open]
            .split("::")
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
        let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
        let (mut depth, mut item) = (0, String::new());
        let mut items = Vec::new();
        for c in inner.chars() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    items.push(std::mem::take(&mut item));
                    continue;
                }
                _ => {}
            }
            item.push(c);
        }
        items.push(item);
        let len = prefix.len();
        prefix.extend(head);
        for item in items.iter().filter(|i| !i.trim().is_empty()) {
            expand(item, prefix, out);
        }
        prefix.truncate(len);
    } else {
        let tree = tree.split(" as ").next().unwrap_or(tree);
        let mut path = prefix.clone();
        path.extend(
            tree.split("::")
                .map(str::trim)
                .filter(|s| !s.is_empty() && *s != "self")
                .map(str::to_string),
        );
        out.push(path);
    }
}

/// The file module a path from `module` leads to, if it names one.
fn target(module: &Module, path: &[String], files: &BTreeMap<Module, String>) -> Option<Module> {
    let (mut base, rest): (Module, &[String]) = match path.first().map(String::as_str) {
        Some("crate") => (vec![], &path[1..]),
        Some("self") => (module.clone(), &path[1..]),
        Some("super") => {
            let mut base = module.clone();
            let mut rest = path;
            while rest.first().is_some_and(|s| s == "super") {
                base.pop();
                rest = &rest[1..];
            }
            (base, rest)
        }
        // A path from a child module's name (`use request::Request;`,
        // `turns::phases(…)`): relative to this module.
        Some(_) => (module.clone(), path),
        None => return None,
    };
    base.extend(rest.iter().cloned());
    (0..=base.len())
        .rev()
        .map(|n| base[..n].to_vec())
        .find(|m| files.contains_key(m))
        .filter(|m| m != module)
}

/// The import graph of the files under `src`.
fn graph(src: &Path) -> BTreeMap<Module, BTreeSet<Module>> {
    let files = modules(src);
    files
        .iter()
        .map(|(m, text)| {
            let children: Vec<String> = files
                .keys()
                .filter(|c| c.len() == m.len() + 1 && c.starts_with(m))
                .filter_map(|c| c.last().cloned())
                .collect();
            (
                m.clone(),
                paths(&code(text), &children).iter().filter_map(|p| target(m, p, &files)).collect(),
            )
        })
        .collect()
}

/// The import cycles: strongly connected components of more than one
/// module (Tarjan's algorithm).
fn cycles(graph: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<Vec<String>> {
    struct State<'a> {
        graph: &'a BTreeMap<Module, BTreeSet<Module>>,
        index: BTreeMap<&'a Module, usize>,
        low: BTreeMap<&'a Module, usize>,
        stack: Vec<&'a Module>,
        found: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a Module) {
        let i = s.index.len();
        s.index.insert(v, i);
        s.low.insert(v, i);
        s.stack.push(v);
        for w in s.graph.get(v).into_iter().flatten() {
            let Some((w, _)) = s.graph.get_key_value(w) else { continue };
            if !s.index.contains_key(w) {
                visit(s, w);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v, low);
            } else if s.stack.contains(&w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                component.push(if w.is_empty() { "crate".to_string() } else { w.join("::") });
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.found.push(component);
            }
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.found
}

#[test]
fn no_module_of_the_host_imports_one_that_imports_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = graph(&src);
    assert!(graph.len() > 80, "the walk found the host's files ({})", graph.len());
    let dispatch = &graph[&vec!["dispatch".to_string()]];
    assert!(
        dispatch.contains(&vec!["dispatch".to_string(), "request".to_string()]),
        "edges are found: {dispatch:?}"
    );
    let found = cycles(&graph);
    // Each cycle with its edges, so a failure says which import to undo.
    let name = |m: &Module| if m.is_empty() { "crate".to_string() } else { m.join("::") };
    let edges: Vec<String> = found
        .iter()
        .flat_map(|c| {
            graph.iter().filter(|(m, _)| c.contains(&name(m))).flat_map(|(m, to)| {
                to.iter()
                    .filter(|t| c.contains(&name(t)))
                    .map(move |t| format!("{} -> {}", name(m), name(t)))
            })
        })
        .collect();
    assert!(
        found.is_empty(),
        "import cycles among host modules: {found:?}\nedges in them:\n{}",
        edges.join("\n")
    );
}

#[test]
fn a_cycle_is_found() {
    // The checker itself: two files naming each other, through a `use`
    // group and through a path in code, are one cycle; a third is not in it.
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("a")).unwrap();
    std::fs::write(dir.path().join("lib.rs"), "mod a; mod c;\n").unwrap();
    std::fs::write(
        dir.path().join("a/mod.rs"),
        "mod b;\nuse self::{b::{X, Y as Z}};\n// use crate::c;\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("a/b.rs"), "fn f() { super::g(); }\n").unwrap();
    std::fs::write(
        dir.path().join("c.rs"),
        "use crate::a::b::X;\n#[cfg(test)]\nmod tests { use crate::c; }\n",
    )
    .unwrap();
    assert_eq!(cycles(&graph(dir.path())), vec![vec!["a".to_string(), "a::b".to_string()]]);
}
