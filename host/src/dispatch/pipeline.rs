//! The life of one op, top to bottom: resolve → policy → args → plan →
//! prepare → consent → run → map → record. Each stage is a module of its
//! own that owns its whole step ([`super::resolve`], [`super::policy`],
//! [`super::args`], [`super::plan`], [`super::prepare`],
//! [`super::consent`], [`super::run`], [`super::map`], [`super::record`]);
//! this function is the only place that strings them together, so the
//! order every op passes its checks in is read here and nowhere else.

use serde_json::Value;
use std::sync::Arc;

use super::args;
use super::caller::Caller;
use super::consent::Asking;
use super::outcome::OpOutcome;
use super::policy;
use super::record::Trail;
use super::request::OpRequest;
use super::run::Ran;
use super::turns::{Access, Slot};
use super::Dispatcher;
use crate::config::Decision;
use crate::error::OpError;
use crate::registry::Verb;

impl Dispatcher {
    /// Run one op for `caller` to its outcome, and record it (`trail`
    /// holds what arrived). Never panics on caller input.
    pub(crate) async fn run_op(
        &self,
        req: OpRequest,
        caller: &Caller,
        mut trail: Trail,
    ) -> OpOutcome {
        // 1. resolve: a verb outside the caller's allow list is unknown.
        let outcome = match self.resolve_verb(&req.op, caller).await {
            Ok(verb) => {
                let result = self.run_verb(&verb, &req, caller, &mut trail).await;
                OpOutcome { op: req.op, verb: Some(verb), result }
            }
            Err(e) => OpOutcome { op: req.op, verb: None, result: Err(e) },
        };
        // 9. record: the row begun before the op acted is completed (or,
        // for an op refused before it acted, written).
        self.ledger.finish(caller, &outcome, trail);
        outcome
    }

    async fn run_verb(
        &self,
        verb: &Arc<Verb>,
        req: &OpRequest,
        caller: &Caller,
        trail: &mut Trail,
    ) -> Result<Value, OpError> {
        // 2. policy: a denied verb is refused before anything about it
        // runs, even its plugin's `plan`; an `ask` is settled once the plan
        // shows what will run.
        let rule = self.policy.decide(verb, caller);
        trail.decision = Some(rule.rule.decision);
        trail.decided_by = Some(rule.name());
        if rule.rule.decision == Decision::Deny {
            return Err(policy::denied(verb, rule));
        }
        // From here the op's checks look at the root: it holds its turn
        // (alone if it may change the root) until its program is done.
        let mut slot = Slot::take(&self.turns, Access::of(verb)).await?;

        // 3. args: against the verb's schema, or a two-stage verb's target
        // as resolved now (and then in the target's parameter order).
        let (target, args) = if verb.two_stage {
            let name = args::target_name(verb, req)?;
            let resolved = self.resolve_target(verb, name, caller).await?;
            slot.target = Some((name.to_string(), resolved.fingerprint.clone()));
            let (target, args) = args::check_against_target(verb, req, name, &resolved)?;
            (Some(target), args)
        } else {
            args::check(verb, req)?;
            (None, req.args.clone())
        };
        let args_text = args.to_string();

        // 4. plan, 5. prepare: what will run, checked and confined.
        let plan = self.plan(verb, &args_text).await?;
        let planned = self.prepare_plan(verb, plan).await?;
        if let Some(first) = planned.first() {
            trail.ran(first);
        }
        if let Some(read_back) = planned.read_back() {
            trail.reads_back(read_back);
        }
        if req.dry_run {
            trail.dry_run = true;
            return self.dry_run(verb, &planned);
        }

        // 6. consent: a person may be asked (the turn given back
        // meanwhile); after a yes, the checks are made again.
        self.consent(
            &Asking { verb, rule, args: &args, planned: &planned },
            caller,
            trail,
            &mut slot,
        )
        .await?;
        self.recheck(verb, caller, &mut slot, &planned).await?;

        // 7. run: the audit row is durable before anything acts.
        let mut result = match self.run(verb, &args_text, &planned, caller, trail).await? {
            Ran::Started(job) => job,
            // 8. map: the plugin's result, checked against its schema.
            Ran::Ended(outcome, ready) => {
                self.map_outcome(verb, &args_text, &outcome, ready).await?
            }
        };
        if let (Some(t), Value::Object(map)) = (target, &mut result) {
            map.insert("target".into(), t);
        }
        Ok(result)
    }
}
