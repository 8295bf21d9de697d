//! verbgate as an OAuth 2.1 resource server (MCP authorization, 2026-07-28
//! and 2025-11-25): an HTTP server with `[oauth]` in its config accepts JWT
//! access tokens from the authorization servers it names, beside its static
//! tokens. This module checks tokens and describes the resource (RFC 9728);
//! the HTTP transport ([`crate::mcp::http`]) asks it, answers 401/403 with
//! the challenge, and turns a verified token into a caller whose catalog is
//! what its scopes reach. A token never goes further: programs see nothing
//! of it (no passthrough).

pub mod cache;
pub mod fetch;
pub mod keys;
pub mod metadata;
pub mod settings;
pub mod verify;

pub use verify::{Rejection, ResourceServer, Verified};
