//! What "the rest of this session" means when a person answers "allow
//! this verb for the rest of this session", in each protocol era and
//! transport. Never wider than one caller:
//!
//! | transport | 2025-11-25 (sessions) | 2026-07-28 (no sessions) |
//! |---|---|---|
//! | stdio | the connection (the server process) | the connection (the server process) |
//! | HTTP | the MCP session (`Mcp-Session-Id`) | the token (its identity, not its name) and the client's name/version, until unused for `--session-idle-secs` |
//!
//! A 2026-07-28 HTTP request belongs to no session: every request carries
//! its own token and client info. So its grants are kept per token and
//! client ([`GrantBook`]), and end like a session does: after the idle
//! time, when the token is revoked, or when the server stops.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::dispatch::ask::Grants;

/// Grants of 2026-07-28 HTTP callers, by token identity and client.
#[derive(Debug)]
pub struct GrantBook {
    entries: Mutex<HashMap<(String, String), Entry>>,
    idle: Duration,
    per_token: usize,
}

#[derive(Debug)]
struct Entry {
    grants: Arc<Grants>,
    used: Instant,
}

impl GrantBook {
    /// A book whose entries end after `idle` unused, at most `per_token`
    /// clients a token (past it the least recently used entry goes, as a
    /// token's sessions are capped).
    pub fn new(idle: Duration, per_token: usize) -> GrantBook {
        GrantBook { entries: Mutex::default(), idle, per_token: per_token.max(1) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String), Entry>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The grants of the token with digest `identity` (empty without
    /// authentication) used by the client labelled `client`.
    pub fn grants(&self, identity: &str, client: &str) -> Arc<Grants> {
        let mut entries = self.lock();
        let idle = self.idle;
        entries.retain(|_, e| e.used.elapsed() < idle);
        let key = (identity.to_string(), client.to_string());
        if let Some(e) = entries.get_mut(&key) {
            e.used = Instant::now();
            return e.grants.clone();
        }
        let mine: Vec<((String, String), Instant)> = entries
            .iter()
            .filter(|((who, _), _)| who == identity)
            .map(|(k, e)| (k.clone(), e.used))
            .collect();
        if mine.len() >= self.per_token {
            if let Some((oldest, _)) = mine.into_iter().min_by_key(|(_, used)| *used) {
                entries.remove(&oldest);
            }
        }
        let grants = Arc::new(Grants::default());
        entries.insert(key, Entry { grants: grants.clone(), used: Instant::now() });
        grants
    }

    /// Drop the grants of every token `revoked` says is gone.
    pub fn forget(&self, revoked: impl Fn(&str) -> bool) {
        self.lock().retain(|(who, _), _| !revoked(who));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_are_per_token_and_client_and_end_when_idle_or_revoked() {
        let book = GrantBook::new(Duration::from_secs(60), 2);
        book.grants("t1", "py/1").grant("git.add");
        assert!(
            book.grants("t1", "py/1").has("git.add"),
            "the same token and client keep their grants"
        );
        assert!(
            !book.grants("t1", "other/1").has("git.add"),
            "another client of the same token does not"
        );
        assert!(
            !book.grants("t2", "py/1").has("git.add"),
            "another token with the same client name does not"
        );
        // A third client of t1 pushes out its least recently used one.
        book.grants("t1", "third/1");
        assert!(!book.grants("t1", "py/1").has("git.add"), "past the cap the oldest entry went");
        book.grants("t2", "py/1").grant("git.commit");
        book.forget(|who| who == "t2");
        assert!(!book.grants("t2", "py/1").has("git.commit"), "a revoked token's grants are gone");
        let short = GrantBook::new(Duration::from_millis(20), 4);
        short.grants("t", "c").grant("git.add");
        std::thread::sleep(Duration::from_millis(40));
        assert!(!short.grants("t", "c").has("git.add"), "idle grants end like an idle session");
    }
}
