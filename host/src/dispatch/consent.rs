//! Stage 6 of an op — applying the policy's decision once the plan shows
//! what will run: `ask` holds the op until a person answers (or says why
//! nobody can be asked), `allow` lets it through (`deny` never reaches a
//! plan: [`super::policy::denied`]). Every refusal names the rule and what
//! would change it. After a yes the op's checks are made again, since the
//! root may have changed while the person thought.

use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

use super::ask::{Answer, Question};
use super::caller::Caller;
use super::policy::{allow_line, Rule};
use super::prepare::Planned;
use super::record::Trail;
use super::turns::Slot;
use super::Dispatcher;
use crate::config::Decision;
use crate::error::{ErrorCode, OpError};
use crate::registry::Verb;

/// What a person would be asked about: the op as decided and planned.
pub struct Asking<'a> {
    /// The verb.
    pub verb: &'a Verb,
    /// The rule the op was decided by (once, before its plan was made).
    pub rule: &'a Rule,
    /// The op's args.
    pub args: &'a Value,
    /// Everything the op will run (nothing for a host call; an
    /// `exec-read` plan's read-back second): the person is shown it all.
    pub planned: &'a Planned,
}

impl Dispatcher {
    /// Settle an `ask` before the op runs: a session grant, or a person's
    /// answer through the caller's [`super::ask::Asker`]. Ops the policy
    /// allows pass at once. The op's turn on the root (`slot`) is given
    /// back while the person is asked.
    pub(crate) async fn consent(
        &self,
        op: &Asking<'_>,
        caller: &Caller,
        trail: &mut Trail,
        slot: &mut Slot<'_>,
    ) -> Result<(), OpError> {
        let Asking { verb, rule, args, planned } = *op;
        if rule.rule.decision != Decision::Ask {
            return Ok(());
        }
        if caller.grants.has(&verb.name) {
            trail.decided_by = Some("session_grant".into());
            return Ok(());
        }
        let Some(asker) = caller.asker.as_ref().filter(|a| a.unavailable().is_none()) else {
            let why = caller
                .asker
                .as_ref()
                .and_then(|a| a.unavailable())
                .unwrap_or_else(|| "this caller has no way to ask a person".into());
            return Err(required(verb, rule, &why));
        };
        let (prepared, read_back) = (planned.first(), planned.read_back());
        let question = Question {
            verb: verb.name.clone(),
            args: args.clone(),
            effects: verb.effects.clone(),
            rule: rule.name(),
            reason: rule.rule.reason.clone(),
            program: prepared.map(|p| p.program.display().to_string()),
            argv: prepared.map(|p| p.argv.clone()).unwrap_or_default(),
            cwd: prepared.map(|p| p.cwd.display().to_string()),
            read_back: read_back.map(|p| {
                std::iter::once(p.program.display().to_string())
                    .chain(p.argv.iter().cloned())
                    .collect()
            }),
            read_back_cwd: read_back
                .filter(|r| prepared.is_none_or(|p| p.cwd != r.cwd))
                .map(|r| r.cwd.display().to_string()),
            timeout: Duration::from_millis(self.config.consent.timeout_ms),
        };
        // Nobody waits on a person: other ops take their turns meanwhile,
        // and the op checks its plan again when its turn comes back.
        slot.give_back();
        let answer = asker.ask(&question).await;
        trail.answer = Some(answer);
        trail.decided_by = Some(asker.who().to_string());
        match answer {
            Answer::AllowOnce => Ok(()),
            Answer::AllowSession => {
                caller.grants.grant(&verb.name);
                Ok(())
            }
            Answer::Failed => Err(required(
                verb,
                rule,
                "the client could not show the question (its elicitation request failed)",
            )),
            Answer::Decline | Answer::Dismissed | Answer::Timeout | Answer::Cancelled => {
                Err(declined(verb, rule, answer, self.config.consent.timeout_ms))
            }
        }
    }

    /// After a person was asked (the op's turn given back meanwhile), take
    /// the turn again and make the checks again: the root may have changed
    /// while the question was open, so the op runs only if its commands
    /// still resolve to exactly what the person was shown.
    /// A two-stage verb's target is resolved again too: its recipe may
    /// have changed (a branch switched) while the argv stayed the same.
    pub(crate) async fn recheck(
        &self,
        verb: &Arc<Verb>,
        caller: &Caller,
        slot: &mut Slot<'_>,
        shown: &Planned,
    ) -> Result<(), OpError> {
        if !slot.take_again().await? {
            return Ok(());
        }
        if let Some((name, fingerprint)) = slot.target.clone() {
            let now = self.resolve_target(verb, &name, caller).await?;
            if now.fingerprint != fingerprint {
                return Err(OpError::new(
                    ErrorCode::PlanRefused,
                    format!("the target `{name}` changed while the person was asked (its fingerprint is now {}); nothing ran. Send the op again to be asked about it as it is now", now.fingerprint),
                )
                .with("target", name.as_str())
                .with("target_fingerprint", now.fingerprint.as_str()));
            }
        }
        for step in &shown.steps {
            let again = self.prepare(verb, &step.command).await?;
            if again != step.prepared {
                return Err(OpError::new(
                    ErrorCode::PlanRefused,
                    "what the op would run changed while the person was asked (a path, directory or program now resolves differently); nothing ran. Send the op again to be asked about what it runs now",
                )
                .with("plugin", verb.plugin.name.as_str()));
            }
        }
        Ok(())
    }
}

/// `consent_required`: the rule asks, nobody can be asked.
fn required(verb: &Verb, rule: &Rule, why: &str) -> OpError {
    let line = allow_line(&verb.name);
    OpError::new(
        ErrorCode::ConsentRequired,
        format!(
            "`{}` needs a person's consent ({}: {}), but {why}; nothing ran. Use a client that supports MCP elicitation, or let the operator allow it in verbgate.toml:\n{line}",
            verb.name,
            rule.name(),
            rule.rule.reason.as_deref().unwrap_or("the policy asks"),
        ),
    )
    .with("verb", verb.name.as_str())
    .with("rule", rule.name())
    .with("effects", verb.effects.to_json())
    .with("config", line)
}

/// `consent_declined`: the person said no, or did not answer in time.
fn declined(verb: &Verb, rule: &Rule, answer: Answer, timeout_ms: u64) -> OpError {
    let what = match answer {
        Answer::Timeout => format!("nobody answered within {timeout_ms} ms (consent.timeout_ms)"),
        Answer::Cancelled => "the request was cancelled while waiting for the answer".to_string(),
        Answer::Dismissed => "the person dismissed the question without answering".to_string(),
        _ => "the person declined".to_string(),
    };
    OpError::new(ErrorCode::ConsentDeclined, format!("`{}` was not run: {what}", verb.name))
        .with("verb", verb.name.as_str())
        .with("rule", rule.name())
        .with("answer", answer.as_str())
}
