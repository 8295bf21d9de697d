//! `help`: the catalog (one compact line per verb) and one verb's full
//! contract. Discovery is a call, never part of the advertised tool.

use serde_json::{json, Value};
use std::sync::Arc;

use super::caller::Caller;
use super::policy::Policy;
use super::resolve::unknown_verb;
use super::turns::{Access, Slot};
use super::Dispatcher;
use crate::config::Decision;
use crate::error::{ErrorCode, OpError};
use crate::json::sha256_hex;
use crate::registry::{Registry, Source, Verb};
use crate::runtime::model::VerbKind;

/// A version of the whole surface: changes whenever any reachable verb's
/// name, schema or providing component changes.
pub fn surface_version(registry: &Registry) -> String {
    surface_version_of(registry.verbs())
}

fn surface_version_of<'a>(verbs: impl Iterator<Item = &'a std::sync::Arc<Verb>>) -> String {
    let mut text = String::new();
    for v in verbs {
        text.push_str(&format!("{}\n{}\n{}\n", v.name, v.fingerprint, v.plugin.digest));
    }
    format!("sha256:{}", &sha256_hex(text.as_bytes())[..16])
}

/// `help: true`: one line per verb, grouped by kind (which also says which
/// verbs need a fingerprint: the `spawn` group). Grouping, the short lines
/// ([`catalog_line`]) and the namespace parameters keep the catalog under
/// 100 bytes a verb.
pub fn catalog(registry: &Registry, batch_cap: usize, loading: &[String]) -> Value {
    catalog_for(registry, batch_cap, loading, &Caller::local(), &Policy::new(&[]))
}

/// The catalog as `caller` sees it: only the verbs its allow list reaches
/// (and a surface version over those), with each verb's effects and the
/// verbs the policy asks about or denies, compactly (`ns.*` when a whole
/// namespace shares the mark).
pub fn catalog_for(
    registry: &Registry,
    batch_cap: usize,
    loading: &[String],
    caller: &Caller,
    policy: &Policy,
) -> Value {
    let verbs = || registry.verbs().filter(|v| caller.permits(&v.name));
    let reachable: Vec<&Arc<Verb>> = verbs().collect();
    let shared = namespace_params(reachable.iter().copied());
    let mut groups = serde_json::Map::new();
    for kind in [VerbKind::Read, VerbKind::Exec, VerbKind::Spawn, VerbKind::Control] {
        let lines: Vec<String> = verbs()
            .filter(|v| v.kind == kind)
            .map(|v| catalog_line(v, shared.get(namespace(&v.name)).map_or(&[][..], Vec::as_slice)))
            .collect();
        if !lines.is_empty() {
            groups.insert(kind.as_str().to_string(), json!(lines));
        }
    }
    let mut out = json!({
        "surface_version": surface_version_of(verbs()),
        "batch_cap": batch_cap,
        "usage": "{\"ops\":[{\"op\":\"<verb>\",\"args\":{}}]}; {\"help\":\"<verb>\"}: schema, schema_fingerprint",
        "fingerprint_required": ["spawn"],
        "verbs": Value::Object(groups),
        // Parameters every verb of a namespace takes, listed once here
        // instead of on each line.
        "namespace_params": shared.iter().map(|(ns, params)| (ns.to_string(), json!(params.join(",")))).collect::<serde_json::Map<String, Value>>(),
        // Effects as letters (`x`: runs repository code) and what the
        // policy asks about or denies: an agent knows before it calls.
        "effects": effect_marks(reachable.iter().copied()),
        "effect_letters": EFFECT_LETTERS,
        "policy": policy_marks(reachable.iter().copied(), policy, caller),
    });
    let missing: serde_json::Map<String, Value> = registry
        .unavailable()
        .iter()
        .filter(|u| u.code == crate::error::LoadCode::MissingProgram)
        .filter_map(|u| {
            u.verb
                .as_deref()
                .filter(|v| caller.permits(v))
                .map(|v| (v.to_string(), json!(u.reason)))
        })
        .collect();
    if !missing.is_empty() {
        // Verbs a trusted plugin offers whose program is not installed here:
        // an agent learns why they are missing instead of guessing.
        out["unavailable"] = Value::Object(missing);
    }
    if !loading.is_empty() {
        // Components compiling in the background: their verbs join soon,
        // and an op naming one waits for it.
        out["loading"] = json!(loading);
    }
    out
}

/// A verb name's namespace.
fn namespace(name: &str) -> &str {
    name.split_once('.').map_or(name, |(ns, _)| ns)
}

/// A verb's parameters as its signature shows them (`name`, `name?`,
/// `name?=default`; required first): see `registry::schema::signature`.
fn params_shown(v: &Verb) -> Vec<String> {
    let schema = &v.params_schema;
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for want_required in [true, false] {
        for (name, p) in
            props.iter().filter(|(name, _)| required.contains(&name.as_str()) == want_required)
        {
            let mut text = name.clone();
            if !want_required {
                text.push('?');
            }
            if let Some(d) = p.get("default").filter(|d| **d != Value::Bool(false)) {
                text.push('=');
                text.push_str(&d.to_string());
            }
            out.push(text);
        }
    }
    out
}

/// Parameters (as shown) that every verb of a namespace with more than one
/// verb takes, by namespace; namespaces with none are left out.
fn namespace_params<'a>(
    verbs: impl Iterator<Item = &'a Arc<Verb>>,
) -> std::collections::BTreeMap<&'a str, Vec<String>> {
    let mut by_ns: std::collections::BTreeMap<&str, Vec<Vec<String>>> =
        std::collections::BTreeMap::new();
    for v in verbs {
        by_ns.entry(namespace(&v.name)).or_default().push(params_shown(v));
    }
    by_ns
        .into_iter()
        .filter(|(_, lists)| lists.len() > 1)
        .map(|(ns, lists)| {
            (
                ns,
                lists[0]
                    .iter()
                    .filter(|p| lists[1..].iter().all(|l| l.contains(p)))
                    .cloned()
                    .collect::<Vec<_>>(),
            )
        })
        .filter(|(_, common)| !common.is_empty())
        .collect()
}

/// A verb's catalog line: `name(params) summary` — its signature (which
/// `help "<verb>"` shows whole) made short for the catalog every discovery
/// call pays for: parameters joined by `,`, the namespace's shared
/// parameters left out, no ` — `, and no `-> job` (the `spawn` group says
/// it).
fn catalog_line(v: &Verb, shared: &[String]) -> String {
    let params: Vec<String> = params_shown(v).into_iter().filter(|p| !shared.contains(p)).collect();
    format!("{}({}) {}", v.name, params.join(","), v.summary.trim())
}

/// `help: "<verb>"`.
pub fn verb_help(registry: &Registry, name: &str) -> Result<Value, OpError> {
    let verb = registry.resolve(name).ok_or_else(|| unknown_verb(registry, name, |_| true))?;
    Ok(verb_contract(verb))
}

/// Whether the verb runs code from the repository (build scripts, recipes,
/// tests): callers and people deciding what to allow must know.
fn runs_repo_code(v: &Verb) -> bool {
    // What the verb declares, or, for a 0.1.0 verb, what its programs are
    // known to do.
    matches!(&v.effects, crate::runtime::model::Effects::Declared(e) if e.contains(&crate::runtime::model::Effect::RunsRepoCode))
        || crate::exec::guard::runs_repository_code(v.programs.keys().map(String::as_str))
}

/// What each letter in the catalog's `effects` stands for.
pub const EFFECT_LETTERS: &str =
    "r reads, w writes, x runs repo code, l long, n network, d destroys, ? undeclared";

/// Each verb's effects as letters (see [`EFFECT_LETTERS`]), compactly: a
/// namespace's most common set under `ns.*`, then the verbs that differ
/// under their own names; verbs with no effects in a namespace of such
/// verbs are left out (`job.*`).
fn effect_marks<'a>(verbs: impl Iterator<Item = &'a Arc<Verb>>) -> Value {
    let mut by_ns: std::collections::BTreeMap<&str, Vec<(&str, String)>> =
        std::collections::BTreeMap::new();
    for v in verbs {
        let ns = v.name.split_once('.').map_or(v.name.as_str(), |(ns, _)| ns);
        by_ns.entry(ns).or_default().push((v.name.as_str(), v.effects.letters()));
    }
    let mut out = serde_json::Map::new();
    for (ns, verbs) in by_ns {
        let mut counts: Vec<(&str, usize)> = Vec::new();
        for (_, letters) in &verbs {
            match counts.iter_mut().find(|(l, _)| l == letters) {
                Some((_, n)) => *n += 1,
                None => counts.push((letters, 1)),
            }
        }
        let common = counts.iter().max_by_key(|(_, n)| *n).map_or("", |(l, _)| *l).to_string();
        if !common.is_empty() {
            out.insert(format!("{ns}.*"), json!(common));
        }
        for (name, letters) in verbs.iter().filter(|(_, l)| *l != common) {
            out.insert(name.to_string(), json!(letters));
        }
    }
    Value::Object(out)
}

/// The verbs the policy asks about (`ask`) or refuses (`deny`); everything
/// else runs without asking.
fn policy_marks<'a>(
    verbs: impl Iterator<Item = &'a Arc<Verb>> + Clone,
    policy: &Policy,
    caller: &Caller,
) -> Value {
    let mut out = serde_json::Map::new();
    for decision in [Decision::Ask, Decision::Deny] {
        let names = patterns(verbs.clone(), |v| policy.decide(v, caller).rule.decision == decision);
        if !names.is_empty() {
            out.insert(decision.as_str().to_string(), json!(names));
        }
    }
    Value::Object(out)
}

/// The verbs for which `has` holds, compactly: `ns.*` when every verb of a
/// namespace does, else the verb names (the catalog stays small).
fn patterns<'a>(
    verbs: impl Iterator<Item = &'a Arc<Verb>>,
    has: impl Fn(&Verb) -> bool,
) -> Vec<String> {
    let mut by_ns: std::collections::BTreeMap<&str, (Vec<&str>, bool)> =
        std::collections::BTreeMap::new();
    for v in verbs {
        let ns = v.name.split_once('.').map_or(v.name.as_str(), |(ns, _)| ns);
        let entry = by_ns.entry(ns).or_insert((Vec::new(), true));
        if has(v) {
            entry.0.push(v.name.as_str());
        } else {
            entry.1 = false;
        }
    }
    let mut out = Vec::new();
    for (ns, (names, all)) in by_ns {
        match (names.is_empty(), all) {
            (true, _) => {}
            (false, true) => out.push(format!("{ns}.*")),
            (false, false) => out.extend(names.into_iter().map(String::from)),
        }
    }
    out
}

/// What the policy does with `v`, for its contract: the decision, the rule
/// and, for a verb that cannot run or waits for a person, why.
pub fn policy_note(v: &Verb, policy: &Policy, caller: &Caller) -> Value {
    let rule = policy.decide(v, caller);
    let note = match rule.rule.decision {
        Decision::Allow => "runs without asking",
        Decision::Ask => {
            "a person is asked before each op runs (MCP elicitation; `verbgate request` asks on the terminal); a client that cannot ask gets consent_required"
        }
        Decision::Deny => "cannot run: the operator's policy denies it (policy_denied)",
    };
    json!({ "decision": rule.rule.decision.as_str(), "rule": rule.name(), "reason": rule.rule.reason, "note": note })
}

/// A verb's full contract.
pub fn verb_contract(v: &Verb) -> Value {
    let source = match &v.plugin.source {
        Source::Bundled => "bundled".to_string(),
        Source::File { path } => path.display().to_string(),
    };
    json!({
        "verb": v.name,
        "kind": v.kind.as_str(),
        "summary": v.summary,
        "signature": v.signature,
        "params_schema": v.params_schema,
        "result_schema": v.result_schema,
        "schema_fingerprint": v.fingerprint,
        "fingerprint_required": v.kind == VerbKind::Spawn,
        "runs_repository_code": runs_repo_code(v),
        "effects": v.effects.to_json(),
        "plugin": {
            "name": v.plugin.name,
            "version": v.plugin.version,
            "digest": format!("sha256:{}", v.plugin.digest),
            "signer": v.plugin.signer,
            "source": source,
        },
    })
}

impl Dispatcher {
    /// `help: true` for `caller`: the catalog of what it reaches. On a
    /// fresh home it waits for the bundled components (compiled in the
    /// background so `initialize` is not kept waiting): the first catalog
    /// an agent reads is never missing `git.*`; plugins still compiling
    /// after them are listed as `loading`.
    pub(crate) async fn catalog(&self, caller: &Caller) -> Value {
        self.live_registry().wait_bundled(super::resolve::LOADING_WAIT).await;
        catalog_for(
            &self.registry(),
            self.batch_cap(),
            &self.live_registry().loading(),
            caller,
            self.policy(),
        )
    }

    /// `help: "<verb>"` (or `"<verb>:<target>"`) for `caller`: a verb
    /// outside its allow list answers as one that does not exist.
    pub(crate) async fn help_as(&self, name: &str, caller: &Caller) -> Result<Value, OpError> {
        if caller.allow.is_some() {
            let verb_name = name.split_once(':').map_or(name, |(v, _)| v);
            self.resolve_verb(verb_name, caller).await?;
        }
        self.help_with_target(name, caller).await
    }

    /// What the OS sandbox does to `verb`'s programs, for its contract: the
    /// root's access and the network, or why nothing can run confined.
    fn sandbox_note(&self, verb: &Verb) -> Value {
        if self.config.sandbox.mode == crate::config::SandboxMode::Off {
            return json!({ "enforced": false, "note": "the operator turned the sandbox off: programs run with the user's full rights" });
        }
        if let Some(why) = &crate::sandbox::support().missing {
            return json!({ "enforced": false, "note": format!("ops that start a program answer sandbox_unavailable: {why}") });
        }
        let Some((name, program)) = verb.programs.iter().next() else {
            return json!({ "enforced": true, "note": "runs no program" });
        };
        let env: std::collections::BTreeMap<String, String> = self
            .config
            .env_allow
            .iter()
            .filter_map(|n| std::env::var(n).ok().map(|v| (n.clone(), v)))
            .collect();
        let p = super::prepare::profile_for(&self.config, verb, name, program, &env);
        let root = &self.config.root;
        let access = if p.write.iter().any(|w| w == root) {
            "read-write"
        } else if p.read.iter().any(|r| r == root) {
            "read-only"
        } else {
            "none"
        };
        json!({ "enforced": true, "root": access, "network": p.network, "note": "`verbgate doctor` lists every path" })
    }

    /// `help: "<verb>"` for a two-stage verb gets its targets listed;
    /// `help: "<verb>:<target>"` gets the resolved contract.
    ///
    /// A verb the policy denies gets its contract but runs nothing, not
    /// even its target resolution; a resolution takes a shared turn on the
    /// root like any reading op.
    pub(crate) async fn help_with_target(
        &self,
        name: &str,
        caller: &Caller,
    ) -> Result<Value, OpError> {
        let (verb_name, target) = match name.split_once(':') {
            Some((v, t)) => (v, Some(t)),
            None => (name, None),
        };
        let registry = self.registry_for(verb_name, caller).await;
        let mut contract = verb_help(&registry, verb_name)?;
        let verb = registry.resolve(verb_name).cloned().expect("verb_help found it");
        contract["policy"] = policy_note(&verb, &self.policy, caller);
        contract["sandbox"] = self.sandbox_note(&verb);
        if !verb.two_stage {
            if target.is_some() {
                return Err(OpError::new(
                    ErrorCode::InvalidRequest,
                    format!("`{}` has no targets; ask {{\"help\": \"{}\"}}", verb.name, verb.name),
                )
                .with("verb", verb.name.as_str()));
            }
            return Ok(contract);
        }
        let rule = self.policy().decide(&verb, caller);
        let denied =
            (rule.rule.decision == Decision::Deny).then(|| super::policy::denied(&verb, rule));
        let _turn = match denied {
            Some(_) => None,
            None => Some(Slot::take(&self.turns, Some(Access::Shared)).await?),
        };
        match target {
            None | Some("") => {
                // The contract stands even when the targets cannot be listed
                // (no justfile here, say): the reason is shown beside it.
                let listing = match denied {
                    Some(e) => Err(e),
                    None => self.resolve_target(&verb, "", caller).await,
                };
                match listing {
                    Ok(listing) => {
                        contract["targets"] =
                            listing.identity.get("targets").cloned().unwrap_or(Value::Array(vec![]))
                    }
                    Err(e) => {
                        contract["targets"] = Value::Null;
                        contract["targets_error"] = e.to_json();
                    }
                }
                contract["target_help"] = json!(format!(
                    "{{\"help\": \"{}:<target>\"}} gives a target's parameters and fingerprint",
                    verb.name
                ));
                Ok(contract)
            }
            Some(t) => {
                if let Some(e) = denied {
                    return Err(e);
                }
                let r = self.resolve_target(&verb, t, caller).await?;
                Ok(json!({
                    "verb": verb.name,
                    "target": t,
                    "kind": verb.kind.as_str(),
                    "summary": r.summary,
                    "params_schema": r.schema,
                    "schema_fingerprint": r.fingerprint,
                    "fingerprint_required": verb.kind == crate::runtime::model::VerbKind::Spawn,
                    "resolved": r.identity,
                    "effects": contract["effects"],
                    "policy": contract["policy"],
                    "plugin": contract["plugin"],
                }))
            }
        }
    }
}
