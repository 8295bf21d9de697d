//! Stage 1 of an op: resolve its name to a verb the caller may reach.
//!
//! A verb outside the caller's allow list (an HTTP token's `--allow`)
//! answers exactly as a verb that does not exist, with suggestions drawn
//! only from what the caller reaches, so a narrowed client can neither run
//! nor discover it.

use std::sync::Arc;
use std::time::Duration;

use super::caller::Caller;
use super::Dispatcher;
use crate::error::{ErrorCode, OpError};
use crate::json::near_matches;
use crate::registry::{Registry, Verb};

/// How long the catalog waits for background compiles (an op waits
/// `limits.loading_wait_ms`).
pub(crate) const LOADING_WAIT: Duration = Duration::from_secs(60);

impl Dispatcher {
    /// The registry to look `name` up in for `caller`: if it names no verb
    /// the caller reaches while components are still compiling in the
    /// background, wait until it joins or they are all done (it may be one
    /// of theirs) rather than call it unknown.
    pub(crate) async fn registry_for(&self, name: &str, caller: &Caller) -> Arc<Registry> {
        let registry = self.registry();
        let reaches = |n: &str| caller.permits(n);
        if registry.resolve(name).is_some_and(|v| reaches(&v.name))
            || registry.deferred().is_empty()
        {
            return registry;
        }
        let wait = Duration::from_millis(self.config().limits.loading_wait_ms);
        self.live_registry().wait_for_verb(name, reaches, wait).await;
        self.registry()
    }

    /// The verb `name` (canonical or alias) names, if `caller` may reach
    /// it; otherwise `unknown_verb` (or the reason a known component is
    /// unavailable).
    pub(crate) async fn resolve_verb(
        &self,
        name: &str,
        caller: &Caller,
    ) -> Result<Arc<Verb>, OpError> {
        let registry = self.registry_for(name, caller).await;
        match registry.resolve(name) {
            Some(verb) if caller.permits(&verb.name) => Ok(Arc::clone(verb)),
            // A verb whose component loaded but whose program is missing
            // is known: say why it cannot run (`unknown_verb` does), not
            // "retry".
            _ if caller.permits(name) && registry.missing_program(name).is_some() => {
                Err(unknown_verb(&registry, name, |n| caller.permits(n)))
            }
            // The wait ended with components still compiling: the verb may
            // be one of theirs, so "no such verb" would be a guess. Said the
            // same way for every name the caller does not reach, whether it
            // exists or not, so the answer tells a narrowed caller nothing.
            _ if !registry.deferred().is_empty() => Err(still_loading(&registry, name)),
            _ => Err(unknown_verb(&registry, name, |n| caller.permits(n))),
        }
    }
}

/// `unavailable` for a name that resolved to nothing the caller reaches
/// while components are still compiling: retry, naming what is loading.
fn still_loading(registry: &Registry, name: &str) -> OpError {
    let loading: Vec<String> = registry.deferred().iter().map(|d| d.file_name()).collect();
    OpError::new(
        ErrorCode::Unavailable,
        format!(
            "no verb named `{name}` has loaded yet, and {} component(s) are still compiling ({}): it may be one of theirs. Retry shortly, or ask {{\"help\": true}} (its `loading` list) to see when they are done",
            loading.len(),
            loading.join(", ")
        ),
    )
    .with("verb", name)
    .with("loading", loading)
    .with("reason_code", "loading")
}

/// The one error for a name that resolves to no verb the caller reaches:
/// why its component is unavailable (when the caller may reach the name),
/// or `unknown_verb` with the nearest names the caller `reaches`.
pub fn unknown_verb(registry: &Registry, name: &str, reaches: impl Fn(&str) -> bool) -> OpError {
    if reaches(name) {
        if let Some(err) = registry.unavailable_error(name) {
            return err;
        }
    }
    let hints = near_matches(name, registry.verb_names().filter(|n| reaches(n)));
    let msg = match hints.first() {
        Some(h) => format!("no verb named `{name}`; did you mean `{h}`?"),
        None => format!("no verb named `{name}`; ask {{\"help\": true}} for the catalog"),
    };
    OpError::new(ErrorCode::UnknownVerb, msg).with("verb", name).with("did_you_mean", hints)
}
