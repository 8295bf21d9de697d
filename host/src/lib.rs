//! verbgate: a large, safe surface of command-line operations for AI agents,
//! behind one MCP tool.
//!
//! Every operation is a namespaced *verb* (`git.status`, `job.wait`). A verb's
//! schema, argument mapping and result mapping live in a **signed WebAssembly
//! component**; everything that touches the operating system stays here, in
//! native Rust. Data flows one way:
//!
//! ```text
//! transport (cli, mcp) → dispatch (envelope, batch, help)
//!   → registry (verbs, fence, schemas) → runtime (component `plan`)
//!   → exec (argv rendering, bounded capture) → runtime (`map-result`)
//!   → dispatch (envelope)
//! ```
//!
//! Invariants the modules uphold together:
//! - a component from disk runs only if its signature verifies against the
//!   operator's trust store, at every load ([`trust`], [`registry`]);
//! - args are validated against the verb's closed schema before a plugin sees
//!   them ([`registry::schema`]);
//! - no caller-derived value reaches an option position of a program's argv,
//!   and no shell is ever involved ([`exec::argv`]);
//! - a misbehaving plugin costs one op, never the server ([`runtime`]);
//! - error codes are a closed vocabulary ([`error::ErrorCode`]).

pub mod audit;
pub mod cli;
pub mod config;
pub mod dispatch;
#[cfg(test)]
mod doc_citations;
pub mod error;
pub mod exec;
pub mod jobs;
pub mod json;
#[cfg(test)]
mod layering;
pub mod mcp;
pub mod oauth;
pub mod private_files;
pub mod registry;
pub mod runtime;
pub mod sandbox;
pub mod telemetry;
pub mod text;
pub mod tls;
pub mod tokens;
pub mod trust;

pub use error::{ErrorCode, LoadCode, OpError};
