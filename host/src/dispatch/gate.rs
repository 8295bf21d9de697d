//! Applying the policy's decision to one op: `deny` refuses it, `ask` holds
//! it until a person answers (or says why nobody can be asked), `allow`
//! lets it through. Every refusal names the rule and what would change it.

use std::time::Duration;

use super::audit::Trail;
use super::caller::Caller;
use super::consent::{Answer, Question};
use super::policy::{allow_line, Rule};
use super::request::OpRequest;
use super::turns::Slot;
use super::Dispatcher;
use crate::config::Decision;
use crate::error::{ErrorCode, OpError};
use crate::exec::Prepared;
use crate::registry::Verb;

/// `policy_denied` for `verb` under `rule`.
pub fn denied(verb: &Verb, rule: &Rule) -> OpError {
    let why = rule.rule.reason.as_deref().map(|r| format!(" ({r})")).unwrap_or_default();
    OpError::new(
        ErrorCode::PolicyDenied,
        format!("`{}` is denied by {}{why}; nothing ran. The operator can change that rule in verbgate.toml", verb.name, rule.name()),
    )
    .with("verb", verb.name.as_str())
    .with("rule", rule.name())
    .with("effects", verb.effects.to_json())
}

impl Dispatcher {
    /// Settle an `ask` before the op runs: a session grant, or a person's
    /// answer through the caller's [`super::consent::Asker`]. Ops the policy
    /// allows pass at once. `runs` is every command the op will run (none
    /// for a host call; an `exec-read` plan's read-back second): the person
    /// is shown them all. `rule` is the one the op was decided by (once,
    /// before its plan was made). The op's turn on the root (`slot`) is
    /// given back while the person is asked.
    #[allow(clippy::too_many_arguments)] // the op's parts as the pipeline has them; issue 26 gathers them
    pub(crate) async fn consent(
        &self,
        verb: &Verb,
        req: &OpRequest,
        rule: &Rule,
        runs: &[&Prepared],
        caller: &Caller,
        trail: &mut Trail,
        slot: &mut Slot<'_>,
    ) -> Result<(), OpError> {
        if rule.rule.decision != Decision::Ask {
            return Ok(());
        }
        if caller.grants.has(&verb.name) {
            trail.decided_by = Some("session_grant".into());
            return Ok(());
        }
        let Some(asker) = caller.asker.as_ref().filter(|a| a.unavailable().is_none()) else {
            let why = caller.asker.as_ref().and_then(|a| a.unavailable()).unwrap_or_else(|| "this caller has no way to ask a person".into());
            return Err(required(verb, rule, &why));
        };
        let (prepared, read_back) = (runs.first(), runs.get(1));
        let question = Question {
            verb: verb.name.clone(),
            args: req.args.clone(),
            effects: verb.effects.clone(),
            rule: rule.name(),
            reason: rule.rule.reason.clone(),
            program: prepared.map(|p| p.program.display().to_string()),
            argv: prepared.map(|p| p.argv.clone()).unwrap_or_default(),
            cwd: prepared.map(|p| p.cwd.display().to_string()),
            read_back: read_back.map(|p| std::iter::once(p.program.display().to_string()).chain(p.argv.iter().cloned()).collect()),
            read_back_cwd: read_back.filter(|r| prepared.is_none_or(|p| p.cwd != r.cwd)).map(|r| r.cwd.display().to_string()),
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
            Answer::Failed => Err(required(verb, rule, "the client could not show the question (its elicitation request failed)")),
            Answer::Decline | Answer::Timeout | Answer::Cancelled => Err(declined(verb, rule, answer, self.config.consent.timeout_ms)),
        }
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
        _ => "the person declined".to_string(),
    };
    OpError::new(ErrorCode::ConsentDeclined, format!("`{}` was not run: {what}", verb.name))
        .with("verb", verb.name.as_str())
        .with("rule", rule.name())
        .with("answer", answer.as_str())
}
