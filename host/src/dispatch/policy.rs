//! Stage 2 of an op — the per-op policy: which ops run, which wait for a person, which are
//! refused. Decided here, in dispatch, because only dispatch sees the verb,
//! its declared effects and (for `ask`) the plan — an MCP host's own
//! permission prompt sees one tool, `request`, for every op.
//!
//! Rules are the operator's `[[policy]]` entries in order, then the
//! defaults below; the first that matches decides. A verb of a contract
//! that cannot declare effects (0.1.0) may have any effect, so every effect
//! rule matches it: it is treated as the most privileged verb there is.

use serde_json::{json, Value};

use super::caller::{Caller, Claims};
use crate::config::{Decision, EffectPattern, PolicyRule};
use crate::error::{ErrorCode, OpError};
use crate::registry::fence;
use crate::registry::Verb;
use crate::runtime::model::{Effect, Effects};

/// Where a rule comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuleSource {
    /// The operator's `[[policy]]` rule number (1-based, file order).
    Config(usize),
    /// A built-in default, by name.
    Default(&'static str),
}

/// One rule, ready to match.
#[derive(Debug, Clone)]
pub struct Rule {
    /// Where it comes from.
    pub source: RuleSource,
    /// The rule as written (or the default's equivalent).
    pub rule: PolicyRule,
}

impl Rule {
    /// A stable name for messages, the audit trail and `help`:
    /// `policy[2]` or `default:runs_repo_code`.
    pub fn name(&self) -> String {
        match &self.source {
            RuleSource::Config(n) => format!("policy[{n}]"),
            RuleSource::Default(name) => format!("default:{name}"),
        }
    }

    fn matches(
        &self,
        verb: &str,
        aliases: &[String],
        effects: &Effects,
        claims: Option<&Claims>,
    ) -> bool {
        self.matches_caller(claims) && self.matches_verb(verb, aliases, effects)
    }

    /// Whether the rule is for this caller: every rule is, unless it names
    /// OAuth `subjects` or `groups` — then only a caller whose verified
    /// token has one of them (a caller without claims matches none).
    fn matches_caller(&self, claims: Option<&Claims>) -> bool {
        let subject_ok = self
            .rule
            .subjects
            .as_deref()
            .is_none_or(|subjects| claims.is_some_and(|c| subjects.contains(&c.subject)));
        let groups_ok = self.rule.groups.as_deref().is_none_or(|groups| {
            claims.is_some_and(|c| c.groups.iter().any(|g| groups.contains(g)))
        });
        subject_ok && groups_ok
    }

    fn matches_verb(&self, verb: &str, aliases: &[String], effects: &Effects) -> bool {
        let verb_ok = self
            .rule
            .verbs
            .as_deref()
            .is_none_or(|patterns| patterns.iter().any(|p| self.names(p, verb, aliases)));
        let effects_ok = self
            .rule
            .effects
            .as_deref()
            .is_none_or(|names| names.iter().any(|n| effect_matches(*n, effects)));
        verb_ok && effects_ok
    }

    /// Whether pattern `p` of this rule names the verb `verb` (canonical)
    /// with `aliases`.
    ///
    /// A request reaches a verb by its canonical name or any alias, and
    /// dispatch resolves the alias before the policy is asked, so a rule
    /// matched against canonical names only let `deny` on an alias fail
    /// open (issue 25). Aliases are resolved, not refused: rules are read
    /// before any plugin loads (and a server's components join later, as
    /// they compile), so which names are aliases is known only per verb —
    /// here, where the verb carries its aliases — and a config must not
    /// become invalid because a plugin was installed. So:
    /// - an exact name that is one of the verb's aliases names the verb,
    ///   whatever the decision (the operator wrote that name);
    /// - a `deny` or `ask` namespace pattern (`ns.*`) also catches a verb
    ///   with an alias in `ns`: a restriction holds under every name;
    /// - an `allow` namespace pattern does not: a plugin chooses its own
    ///   aliases, and one in an allowed namespace must not carry its verb
    ///   past a later rule that denies or asks about the verb's own name.
    fn names(&self, p: &str, verb: &str, aliases: &[String]) -> bool {
        let owned = [p.to_string()];
        let pattern = &owned[..];
        fence::allowed(verb, Some(pattern))
            || aliases.iter().any(|a| a == p)
            || (self.rule.decision != Decision::Allow
                && aliases.iter().any(|a| fence::allowed(a, Some(pattern))))
    }

    /// The rule as JSON for `help` and error details.
    pub fn to_json(&self) -> Value {
        json!({ "rule": self.name(), "decision": self.rule.decision.as_str(), "reason": self.rule.reason })
    }
}

fn effect_matches(pattern: EffectPattern, effects: &Effects) -> bool {
    match pattern {
        EffectPattern::Undeclared => matches!(effects, Effects::Undeclared),
        EffectPattern::Effect(e) => effects.may(e),
    }
}

/// The defaults, after the operator's rules: reads (and the host's own job
/// verbs) run; anything that changes the repository, runs its code, talks
/// to the network, destroys data, or cannot say what it does asks first.
/// With the OS sandbox enforced (`sandboxed`), repository code without the
/// network runs without asking — it cannot touch anything outside the
/// root — and what is asked about is leaving the sandbox (the network) or
/// what cannot be undone.
fn defaults(sandboxed: bool) -> Vec<Rule> {
    let rule =
        |name: &'static str, effects: &[EffectPattern], decision: Decision, reason: &str| Rule {
            source: RuleSource::Default(name),
            rule: PolicyRule {
                verbs: None,
                effects: (!effects.is_empty()).then(|| effects.to_vec()),
                subjects: None,
                groups: None,
                decision,
                reason: Some(reason.to_string()),
            },
        };
    let undeclared = rule(
        "undeclared",
        &[EffectPattern::Undeclared],
        Decision::Ask,
        "the verb's component cannot declare its effects (contract 0.1.0), so it may do anything",
    );
    let writes = rule(
        "writes_repo",
        &[EffectPattern::Effect(Effect::WritesRepo)],
        Decision::Ask,
        "the verb changes the repository",
    );
    let destructive = rule(
        "destructive",
        &[EffectPattern::Effect(Effect::Destructive)],
        Decision::Ask,
        "the verb discards data that cannot be recovered",
    );
    let network = rule(
        "network",
        &[EffectPattern::Effect(Effect::Network)],
        Decision::Ask,
        "the verb talks to the network",
    );
    let allow = rule(
        "allow",
        &[],
        Decision::Allow,
        "reads and the host's own job verbs run without asking",
    );
    if sandboxed {
        let network = rule(
            "network",
            &[EffectPattern::Effect(Effect::Network)],
            Decision::Ask,
            "the verb talks to the network, outside the sandbox",
        );
        let confined = rule(
            "sandboxed_repo_code",
            &[EffectPattern::Effect(Effect::RunsRepoCode)],
            Decision::Allow,
            "the repository's code runs in the OS sandbox: the root and no network",
        );
        vec![undeclared, network, destructive, confined, writes, allow]
    } else {
        let code = rule(
            "runs_repo_code",
            &[EffectPattern::Effect(Effect::RunsRepoCode)],
            Decision::Ask,
            "the verb runs code the repository controls (build scripts, tests, recipes, hooks)",
        );
        vec![undeclared, code, writes, destructive, network, allow]
    }
}

/// The rules in force: the operator's, then the defaults.
#[derive(Debug, Clone)]
pub struct Policy {
    rules: Vec<Rule>,
}

impl Policy {
    /// The operator's rules followed by the defaults of a machine without
    /// the OS sandbox.
    pub fn new(configured: &[PolicyRule]) -> Policy {
        Policy::with_sandbox(configured, false)
    }

    /// The operator's rules followed by the defaults; `sandboxed` when every
    /// program runs in the OS sandbox (see [`defaults`]).
    pub fn with_sandbox(configured: &[PolicyRule], sandboxed: bool) -> Policy {
        let mut rules: Vec<Rule> = configured
            .iter()
            .enumerate()
            .map(|(i, r)| Rule { source: RuleSource::Config(i + 1), rule: r.clone() })
            .collect();
        rules.extend(defaults(sandboxed));
        Policy { rules }
    }

    /// The first rule matching `verb` under its name or any of its aliases,
    /// for `caller` (there always is one: the last default matches
    /// everything).
    pub fn decide(&self, verb: &Verb, caller: &Caller) -> &Rule {
        self.decide_as(&verb.name, &verb.aliases, &verb.effects, caller.claims.as_deref())
    }

    /// [`Policy::decide`] by name and effects, for a verb without aliases.
    pub fn decide_for(&self, verb: &str, effects: &Effects) -> &Rule {
        self.decide_named(verb, &[], effects)
    }

    /// [`Policy::decide`] by canonical name, aliases and effects.
    pub fn decide_named(&self, verb: &str, aliases: &[String], effects: &Effects) -> &Rule {
        self.decide_as(verb, aliases, effects, None)
    }

    /// [`Policy::decide_named`] for a caller with these OAuth claims.
    pub fn decide_as(
        &self,
        verb: &str,
        aliases: &[String],
        effects: &Effects,
        claims: Option<&Claims>,
    ) -> &Rule {
        self.rules
            .iter()
            .find(|r| r.matches(verb, aliases, effects, claims))
            .unwrap_or_else(|| self.rules.last().expect("the defaults end with a catch-all"))
    }
}

/// `policy_denied` for `verb` under `rule`: nothing about the verb runs,
/// not even its plugin's `plan`.
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

/// The `verbgate.toml` lines that would let `verb` run without asking
/// (for `consent_required` and `policy_denied` messages).
pub fn allow_line(verb: &str) -> String {
    format!("[[policy]]\nverbs = [\"{verb}\"]\ndecision = \"allow\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(verbs: Option<&[&str]>, effects: Option<&[&str]>, decision: Decision) -> PolicyRule {
        PolicyRule {
            verbs: verbs.map(|v| v.iter().map(|s| s.to_string()).collect()),
            effects: effects.map(|v| {
                v.iter()
                    .map(|s| toml::Value::String(s.to_string()).try_into().expect("a known effect"))
                    .collect()
            }),
            subjects: None,
            groups: None,
            decision,
            reason: None,
        }
    }

    #[test]
    fn rules_naming_subjects_or_groups_match_only_those_oauth_callers() {
        let read = Effects::declared(vec![Effect::ReadsRepo]);
        let mut for_alice = rule(Some(&["git.*"]), None, Decision::Deny);
        for_alice.subjects = Some(vec!["alice".into()]);
        let mut for_ops = rule(None, None, Decision::Allow);
        for_ops.groups = Some(vec!["ops".into()]);
        let mut everyone_else = rule(None, None, Decision::Ask);
        everyone_else.verbs = Some(vec!["git.*".into()]);
        let p = Policy::new(&[for_alice, for_ops, everyone_else]);
        let claims = |sub: &str, groups: &[&str]| Claims {
            issuer: "https://as".into(),
            subject: sub.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
        };
        let decide = |c: Option<&Claims>| p.decide_as("git.log", &[], &read, c).name();
        assert_eq!(decide(Some(&claims("alice", &["ops"]))), "policy[1]");
        assert_eq!(decide(Some(&claims("bob", &["dev", "ops"]))), "policy[2]");
        assert_eq!(decide(Some(&claims("bob", &["dev"]))), "policy[3]");
        // A static token or stdio has no claims: no subject or group rule is for it,
        // even one naming a subject equal to its caller name.
        assert_eq!(decide(None), "policy[3]");
    }

    #[test]
    fn in_the_sandbox_repository_code_runs_and_leaving_it_asks() {
        let p = Policy::with_sandbox(&[], true);
        let code = Effects::declared(vec![
            Effect::ReadsRepo,
            Effect::WritesRepo,
            Effect::RunsRepoCode,
            Effect::LongRunning,
        ]);
        assert_eq!(p.decide_for("cargo.test", &code).name(), "default:sandboxed_repo_code");
        assert_eq!(p.decide_for("cargo.test", &code).rule.decision, Decision::Allow);
        let online = Effects::declared(vec![Effect::RunsRepoCode, Effect::Network]);
        assert_eq!(p.decide_for("npm.install", &online).name(), "default:network");
        let gone = Effects::declared(vec![Effect::RunsRepoCode, Effect::Destructive]);
        assert_eq!(p.decide_for("x.clean", &gone).name(), "default:destructive");
        assert_eq!(
            p.decide_for("git.commit", &Effects::declared(vec![Effect::WritesRepo])).name(),
            "default:writes_repo"
        );
        assert_eq!(p.decide_for("echo.argv", &Effects::Undeclared).name(), "default:undeclared");
        assert_eq!(
            Policy::new(&[]).decide_for("cargo.test", &code).name(),
            "default:runs_repo_code",
            "without the sandbox it asks"
        );
    }

    #[test]
    fn defaults_allow_reads_and_ask_for_the_rest() {
        let p = Policy::new(&[]);
        let read = Effects::declared(vec![Effect::ReadsRepo]);
        assert_eq!(p.decide_for("git.log", &read).name(), "default:allow");
        assert_eq!(
            p.decide_for("job.status", &Effects::declared(vec![])).rule.decision,
            Decision::Allow
        );
        let test =
            Effects::declared(vec![Effect::ReadsRepo, Effect::RunsRepoCode, Effect::LongRunning]);
        assert_eq!(p.decide_for("cargo.test", &test).name(), "default:runs_repo_code");
        assert_eq!(
            p.decide_for("git.commit", &Effects::declared(vec![Effect::WritesRepo])).rule.decision,
            Decision::Ask
        );
        // 0.1.0: may do anything, so it asks, under its own rule.
        assert_eq!(p.decide_for("echo.argv", &Effects::Undeclared).name(), "default:undeclared");
    }

    #[test]
    fn first_match_wins_and_undeclared_matches_every_effect_rule() {
        let p = Policy::new(&[
            rule(Some(&["git.status"]), None, Decision::Deny),
            rule(None, Some(&["writes_repo"]), Decision::Deny),
            rule(Some(&["git.*"]), None, Decision::Allow),
        ]);
        let read = Effects::declared(vec![Effect::ReadsRepo]);
        assert_eq!(p.decide_for("git.status", &read).name(), "policy[1]");
        assert_eq!(p.decide_for("git.log", &read).name(), "policy[3]");
        assert_eq!(
            p.decide_for("git.commit", &Effects::declared(vec![Effect::WritesRepo])).name(),
            "policy[2]"
        );
        // A verb that cannot declare effects may write: the deny rule for
        // writes catches it before anything allows it.
        assert_eq!(p.decide_for("other.x", &Effects::Undeclared).name(), "policy[2]");
        assert_eq!(p.decide_for("git.anything", &Effects::Undeclared).name(), "policy[2]");
    }

    #[test]
    fn a_rule_naming_an_alias_decides_for_its_verb() {
        let read = Effects::declared(vec![Effect::ReadsRepo]);
        let aliases = vec!["echo.args".to_string(), "say.it".to_string()];
        // Exact alias names resolve to the verb, for every decision.
        for decision in [Decision::Deny, Decision::Ask, Decision::Allow] {
            let p = Policy::new(&[rule(Some(&["echo.args"]), None, decision)]);
            assert_eq!(
                p.decide_named("echo.argv", &aliases, &read).name(),
                "policy[1]",
                "{decision:?}"
            );
            assert_eq!(p.decide_named("echo.other", &[], &read).name(), "default:allow");
        }
        // A deny or ask pattern over an alias's namespace catches the verb.
        let p = Policy::new(&[rule(Some(&["say.*"]), None, Decision::Deny)]);
        assert_eq!(p.decide_named("echo.argv", &aliases, &read).name(), "policy[1]");
        let p = Policy::new(&[rule(Some(&["say.*"]), None, Decision::Ask)]);
        assert_eq!(p.decide_named("echo.argv", &aliases, &read).name(), "policy[1]");
        // An allow pattern does not: an alias a plugin chose cannot carry its
        // verb past a later rule about the verb's own name.
        let p = Policy::new(&[
            rule(Some(&["say.*"]), None, Decision::Allow),
            rule(Some(&["echo.*"]), None, Decision::Deny),
        ]);
        assert_eq!(p.decide_named("echo.argv", &aliases, &read).name(), "policy[2]");
        // Canonical names match as before.
        assert_eq!(p.decide_named("say.other", &[], &read).name(), "policy[1]");
    }

    #[test]
    fn verbs_and_effects_must_both_match() {
        let p =
            Policy::new(&[rule(Some(&["cargo.*"]), Some(&["runs_repo_code"]), Decision::Allow)]);
        let code = Effects::declared(vec![Effect::RunsRepoCode]);
        assert_eq!(p.decide_for("cargo.test", &code).name(), "policy[1]");
        assert_eq!(
            p.decide_for("cargo.metadata", &Effects::declared(vec![Effect::ReadsRepo])).name(),
            "default:allow"
        );
        assert_eq!(p.decide_for("just.run", &code).name(), "default:runs_repo_code");
        let p = Policy::new(&[rule(None, Some(&["undeclared"]), Decision::Deny)]);
        assert_eq!(p.decide_for("x.y", &Effects::Undeclared).name(), "policy[1]");
        assert_eq!(
            p.decide_for("git.commit", &Effects::declared(vec![Effect::WritesRepo])).name(),
            "default:writes_repo"
        );
    }
}
