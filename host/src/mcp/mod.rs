//! The MCP transport: exactly one tool, `request`, over stdio or
//! Streamable HTTP (rmcp, the official SDK). This module only speaks the protocol: every call goes to
//! [`crate::dispatch`], the same code `verbgate request` uses, so the two
//! give byte-identical JSON.
//!
//! Errors follow MCP's split: a request that could not run
//! (`invalid_request`, `batch_too_large`, an unknown verb in help) is a tool
//! result with `isError: true` and a structured error object; only a call to
//! a tool that does not exist is a protocol error.

pub(crate) mod client;
mod consent;
mod fixtures;
mod fixtures_mrtr;
pub mod http;
pub mod mrtr;
pub mod scope;
mod server;
pub mod tasks;
pub mod tool;

pub use server::{serve_stdio, Eras, TokenIdentity, VerbgateServer};
