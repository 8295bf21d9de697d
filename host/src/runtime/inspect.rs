//! Reading a component's shape without compiling it: which WIT version of
//! our contract it exports (so the right bindings are chosen, and an unknown
//! version is refused by name before any code is compiled), and what it
//! imports (so anything outside the policy is refused with the import named).

use thiserror::Error;
use wasmparser::{Parser, Payload};

/// The interface every plugin exports, without its version.
pub const PLUGIN_INTERFACE: &str = "verbgate:verbs/plugin";

/// WASI packages a plugin may import. They are linked with a deny-by-default
/// context: no preopened directories, no environment, no arguments, no
/// network. Guest language runtimes (Rust std, CPython, SpiderMonkey) import
/// them even when they never use them.
///
/// `verbgate:verbs/types` holds only type definitions (no functions): a
/// component imports it because its exports use those types.
pub const ALLOWED_IMPORT_PACKAGES: &[&str] = &[
    "verbgate:verbs/types@",
    "wasi:io/",
    "wasi:cli/",
    "wasi:clocks/",
    "wasi:random/",
    "wasi:filesystem/",
    "wasi:sockets/",
];

/// A component's contract-relevant shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shape {
    /// The version in its `verbgate:verbs/plugin@<version>` export.
    pub wit_version: String,
    /// Every top-level import name.
    pub imports: Vec<String>,
}

/// Why a component's shape is unacceptable.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum ShapeError {
    /// Not parseable as a component.
    #[error("not a valid WebAssembly component: {0}")]
    Invalid(String),
    /// Exports no `verbgate:verbs/plugin@…`.
    #[error("exports no `{PLUGIN_INTERFACE}@<version>` interface; is this a verbgate plugin?")]
    NoPluginExport,
    /// Imports something the policy does not allow (every such import, in
    /// the component's order).
    #[error("imports `{}`, which verbgate does not provide (plugins may import only {allowed})", .0.join("`, `"), allowed = ALLOWED_IMPORT_PACKAGES.join(", "))]
    ForbiddenImports(Vec<String>),
}

/// Inspect component bytes.
pub fn inspect(bytes: &[u8]) -> Result<Shape, ShapeError> {
    let mut depth = 0usize;
    let mut wit_version = None;
    let mut imports = Vec::new();
    for payload in Parser::new(0).parse_all(bytes) {
        let payload = payload.map_err(|e| ShapeError::Invalid(e.to_string()))?;
        match payload {
            Payload::Version { encoding, .. }
                if depth == 0 && encoding != wasmparser::Encoding::Component =>
            {
                return Err(ShapeError::Invalid("a core module, not a component".into()));
            }
            Payload::ModuleSection { .. } | Payload::ComponentSection { .. } => depth += 1,
            Payload::End(_) => depth = depth.saturating_sub(1),
            Payload::ComponentImportSection(reader) if depth == 0 => {
                for import in reader {
                    let import = import.map_err(|e| ShapeError::Invalid(e.to_string()))?;
                    imports.push(import.name.name.to_string());
                }
            }
            Payload::ComponentExportSection(reader) if depth == 0 => {
                for export in reader {
                    let export = export.map_err(|e| ShapeError::Invalid(e.to_string()))?;
                    if let Some(v) = export
                        .name
                        .name
                        .strip_prefix(PLUGIN_INTERFACE)
                        .and_then(|r| r.strip_prefix('@'))
                    {
                        wit_version = Some(v.to_string());
                    }
                }
            }
            _ => {}
        }
    }
    let wit_version = wit_version.ok_or(ShapeError::NoPluginExport)?;
    Ok(Shape { wit_version, imports })
}

impl Shape {
    /// Check imports against the policy, naming every import outside it.
    pub fn check_imports(&self) -> Result<(), ShapeError> {
        let bad: Vec<String> = self
            .imports
            .iter()
            .filter(|i| !ALLOWED_IMPORT_PACKAGES.iter().any(|p| i.starts_with(p)))
            .cloned()
            .collect();
        if bad.is_empty() {
            Ok(())
        } else {
            Err(ShapeError::ForbiddenImports(bad))
        }
    }
}
