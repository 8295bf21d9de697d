//! Access tokens already checked, so a client sending the same token on
//! every request pays for one signature check, not one per request (an
//! RS256 check is ~90 µs; a hit here is a hash and a lookup).
//!
//! A kept result is only as good as what it was checked against, so it is
//! used only while all of these still hold, and the token is checked in
//! full again otherwise:
//! - the token has not reached its `exp` (no leeway is granted twice);
//! - the issuer's current key set is the very set that checked it, and is
//!   fresh: a refetch that drops (or rotates) the key, keys past
//!   `keys_max_age_secs`, and keys too old to use all end the result.
//!
//! Refusals are never kept (a forged token costs its full check each
//! time). Entries are keyed by the token's SHA-256, so a token that differs
//! in any byte — a tampered payload, another signature — is a miss; the
//! token itself is not stored.

use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::keys::KeySet;

/// Most verified tokens kept. Past it, expired and outdated entries go
/// first, then all of them (each refilled by one full check).
pub const VERIFIED_KEPT: usize = 4096;

/// One kept result.
struct Entry<V> {
    verified: V,
    /// Its token's `exp`, seconds since the epoch.
    expires: u64,
    /// Index of the issuer (in `[[oauth.issuers]]` order) that signed it.
    issuer: usize,
    /// The set its key came from.
    keys: KeySet,
}

/// The SHA-256 of a token: what an entry is found by.
pub type TokenDigest = [u8; 32];

/// The digest of `token`.
pub fn digest(token: &str) -> TokenDigest {
    Sha256::digest(token.as_bytes()).into()
}

/// Verified tokens (what each speaks for: `V`), bounded.
pub struct Verdicts<V> {
    capacity: usize,
    entries: Mutex<HashMap<TokenDigest, Entry<V>>>,
}

impl<V: Clone> Verdicts<V> {
    /// An empty cache of at most `capacity` tokens.
    pub fn new(capacity: usize) -> Verdicts<V> {
        Verdicts { capacity, entries: Mutex::default() }
    }

    /// The kept result for `digest`, if it still holds at `now` (seconds
    /// since the epoch) with `current(issuer)` giving each issuer's fresh
    /// key set (`None` when it has none).
    pub fn get(
        &self,
        digest: &TokenDigest,
        now: u64,
        current: impl Fn(usize) -> Option<KeySet>,
    ) -> Option<V> {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let entry = entries.get(digest)?;
        if holds(entry, now, &current) {
            return Some(entry.verified.clone());
        }
        entries.remove(digest);
        None
    }

    /// Keep `verified`, a token expiring at `expires` checked with `keys`
    /// of issuer number `issuer`.
    #[allow(clippy::too_many_arguments)]
    pub fn put(
        &self,
        digest: TokenDigest,
        verified: V,
        expires: u64,
        issuer: usize,
        keys: KeySet,
        now: u64,
        current: impl Fn(usize) -> Option<KeySet>,
    ) {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if entries.len() >= self.capacity && !entries.contains_key(&digest) {
            entries.retain(|_, e| holds(e, now, &current));
            if entries.len() >= self.capacity {
                entries.clear();
            }
        }
        entries.insert(digest, Entry { verified, expires, issuer, keys });
    }

    /// How many results are kept.
    pub fn len(&self) -> usize {
        self.entries.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Whether a kept result still stands (see the module comment).
fn holds<V>(entry: &Entry<V>, now: u64, current: &impl Fn(usize) -> Option<KeySet>) -> bool {
    now < entry.expires && current(entry.issuer).is_some_and(|set| Arc::ptr_eq(&set, &entry.keys))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a test token speaks for, and its `exp` (for `put`).
    fn verified(expires: u64) -> (&'static str, u64) {
        ("alice", expires)
    }

    #[test]
    fn a_result_holds_until_exp_and_not_after() {
        let set: KeySet = Arc::default();
        let current = |_| Some(set.clone());
        let cache = Verdicts::new(8);
        let d = digest("token");
        cache.put(d, verified(1000).0, verified(1000).1, 0, set.clone(), 10, current);
        assert_eq!(cache.get(&d, 999, current), Some("alice"));
        assert!(cache.get(&d, 1000, current).is_none(), "at exp the token is checked again");
        assert!(cache.is_empty(), "and the entry is gone");
    }

    #[test]
    fn a_result_ends_with_the_key_set_that_checked_it() {
        let old: KeySet = Arc::default();
        let cache = Verdicts::new(8);
        let d = digest("token");
        cache.put(d, verified(1000).0, verified(1000).1, 0, old.clone(), 10, |_| Some(old.clone()));
        // The issuer's keys were fetched again (a rotated or removed key):
        // a set equal in content but not the same fetch does not count.
        let new: KeySet = Arc::default();
        assert!(cache.get(&d, 20, |_| Some(new.clone())).is_none());
        cache.put(d, verified(1000).0, verified(1000).1, 0, old.clone(), 10, |_| Some(old.clone()));
        // Stale or unusable keys (`fresh_set` gives none) end it too.
        assert!(cache.get(&d, 20, |_| None).is_none());
        cache.put(d, verified(1000).0, verified(1000).1, 1, old.clone(), 10, |_| Some(old.clone()));
        let only_second = |i: usize| (i == 1).then(|| old.clone());
        assert!(cache.get(&d, 20, only_second).is_some(), "each issuer's own set");
        assert!(cache.get(&digest("token "), 20, only_second).is_none(), "any other byte misses");
    }

    #[test]
    fn the_cache_stays_within_its_bound() {
        let set: KeySet = Arc::default();
        let current = |_| Some(set.clone());
        let cache = Verdicts::new(4);
        for i in 0..4 {
            cache.put(
                digest(&format!("t{i}")),
                verified(100 + i).0,
                verified(100 + i).1,
                0,
                set.clone(),
                10,
                current,
            );
        }
        // Full: at 102 three entries have expired and make room.
        cache.put(digest("t4"), verified(500).0, verified(500).1, 0, set.clone(), 102, current);
        assert_eq!(cache.len(), 2);
        for i in 5..20 {
            cache.put(
                digest(&format!("t{i}")),
                verified(500).0,
                verified(500).1,
                0,
                set.clone(),
                102,
                current,
            );
            assert!(cache.len() <= 4);
        }
        assert!(cache.get(&digest("t19"), 102, current).is_some(), "the newest is kept");
    }
}
