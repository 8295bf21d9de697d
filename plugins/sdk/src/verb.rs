//! One verb, one type.
//!
//! A verb is a type implementing [`Verb`]: its name, summary and kind are
//! associated constants, its arguments an associated `Args` struct (serde
//! reads it, schemars describes it — see [`crate::params`]), and `plan` /
//! `map` receive that struct already typed. Its result is an associated
//! `Output` struct that `map` returns: serde writes it, schemars describes
//! it, so the result schema and the result cannot disagree.
//! [`crate::plugin!`] lists the verb types once and generates `describe`
//! and the dispatch by name, so a verb's name is written exactly once, in
//! its `NAME`.
//!
//! ```ignore
//! #[derive(Deserialize, JsonSchema)]
//! #[serde(deny_unknown_fields)]
//! struct HelloArgs {
//!     /// who to greet
//!     name: String,
//! }
//!
//! #[derive(Serialize, JsonSchema)]
//! struct Greeting {
//!     /// the program's answer
//!     greeting: String,
//! }
//!
//! struct Hello;
//! impl Verb for Hello {
//!     const NAME: &'static str = "mytool.hello";
//!     const SUMMARY: &'static str = "Greet someone by name";
//!     const KIND: VerbKind = VerbKind::Exec;
//!     const PROGRAMS: &'static [&'static str] = &["echo"];
//!     const EFFECTS: &'static [Effect] = &[];
//!     type Args = HelloArgs;
//!     type Output = Greeting;
//!     fn plan(args: &HelloArgs) -> Result<Plan, OpError> {
//!         Ok(Plan::Exec(cmd("echo").lit("hello,").value(&args.name).into()))
//!     }
//!     fn map(_: &HelloArgs, outcome: &Outcome) -> Result<Greeting, OpError> {
//!         outcome.success()?;
//!         Ok(Greeting { greeting: outcome.stdout_text().trim().to_string() })
//!     }
//! }
//!
//! verbgate_plugin_sdk::plugin!(MyTool { name: "mytool", version: "0.1.0", verbs: [Hello] });
//! ```

use crate::errors::{self, ErrorCode};
use crate::params::{params_schema, result_schema, Output, Params};
use crate::{Command, Effect, OpError, Outcome, Plan, Resolved, Value, VerbKind, VerbSpec};

/// A verb: everything the host needs to list, check, plan and map it.
pub trait Verb {
    /// Namespaced name, `<plugin>.<verb>` in lower case (`git.log`).
    const NAME: &'static str;
    /// One line saying what the verb does (and, for a verb that writes,
    /// that it writes).
    const SUMMARY: &'static str;
    /// What calling it does: read, exec, spawn or control.
    const KIND: VerbKind;
    /// Program names (not paths) its plans may run.
    const PROGRAMS: &'static [&'static str] = &[];
    /// Other names accepted in `op`; never listed in the catalog.
    const ALIASES: &'static [&'static str] = &[];
    /// What running it can do, from the closed set the host's policy
    /// decides on: reads run, while writing the repository, running its
    /// code, the network, destroying data ask a person by default. Required:
    /// a verb says what it does. `&[]` means it touches only the host's own
    /// state (the job verbs).
    const EFFECTS: &'static [Effect];
    /// Top-level params whose values are secrets: the audit trail records
    /// them (and any argv word containing them) as `"<redacted>"`.
    const SENSITIVE: &'static [&'static str] = &[];
    /// A two-stage verb (see [`Verb::resolve`]): its `Args` describe only
    /// what resolving needs (`target`); the target's own closed schema
    /// comes from [`Verb::resolve`], and `Args` must accept its fields
    /// (e.g. with a `#[serde(flatten)]` map).
    const TWO_STAGE: bool = false;

    /// The arguments: a serde struct with `#[serde(deny_unknown_fields)]`,
    /// deriving `JsonSchema`; its schema is the verb's params schema.
    type Args: Params;

    /// The result: a struct deriving `Serialize` and `JsonSchema` that
    /// [`Verb::map`] returns; its schema is the verb's result schema (see
    /// [`crate::params`]), which the host checks every result against. A
    /// result that is any JSON at all is `Value` (no result schema).
    type Output: Output;

    /// Turn the call's arguments into a plan for the host to run.
    fn plan(args: &Self::Args) -> Result<Plan, OpError>;

    /// Map the finished plan's outcome into the verb's result.
    fn map(args: &Self::Args, outcome: &Outcome) -> Result<Self::Output, OpError>;

    /// Spawn verbs: the entity id the fronted CLI gave its run, read from a
    /// running job's output so far (`outcome.running`), so that `job.kill`
    /// can use [`Verb::kill_plan`]. `None` (the default): the host stops
    /// the job's process group. [`Verb::map`] never sees a running job.
    fn entity(_args: &Self::Args, _outcome: &Outcome) -> Option<Value> {
        None
    }

    /// The command that kills a job by its entity id; `None` (the default)
    /// lets the host stop the job's process group.
    fn kill_plan(_entity: &Value) -> Option<Command> {
        None
    }

    /// Two-stage verbs: the command whose output resolves `target` (empty:
    /// list the targets).
    fn resolve_plan(_target: &str) -> Result<Command, OpError> {
        Err(not_two_stage(Self::NAME))
    }

    /// Two-stage verbs: the target's closed schema, summary and identity
    /// from the outcome of [`Verb::resolve_plan`]'s command.
    fn resolve(_target: &str, _outcome: &Outcome) -> Result<Resolved, OpError> {
        Err(not_two_stage(Self::NAME))
    }

    /// The verb's params schema, derived from [`Verb::Args`].
    fn params_schema() -> Value {
        let mut schema = params_schema::<Self::Args>();
        if Self::TWO_STAGE {
            // Describe only what resolving needs; the target's schema,
            // closed, comes from `resolve`.
            schema["additionalProperties"] = Value::Bool(false);
        }
        schema
    }

    /// The verb's result schema, derived from [`Verb::Output`].
    fn result_schema() -> Option<Value> {
        result_schema::<Self::Output>()
    }

    /// Read the call's arguments (JSON) into [`Verb::Args`]. The host has
    /// validated them against [`Verb::params_schema`], so a failure here
    /// means the struct and its schema disagree: `invalid_args`, with
    /// serde's account of the field.
    fn parse_args(args: Value) -> Result<Self::Args, OpError> {
        let args = if args.is_null() { Value::Object(Default::default()) } else { args };
        serde_json::from_value(args).map_err(|e| {
            errors::op_error(
                ErrorCode::InvalidArgs,
                &format!("`{}`: the args do not fit the verb's parameters: {e}", Self::NAME),
                Some(serde_json::json!({ "verb": Self::NAME })),
            )
        })
    }

    /// Whether `name` (from the host) names this verb.
    fn answers_to(name: &str) -> bool {
        name == Self::NAME || Self::ALIASES.contains(&name)
    }
}

fn not_two_stage(verb: &str) -> OpError {
    errors::op_error(
        ErrorCode::UnknownVerb,
        &format!("`{verb}` is not a two-stage verb: it has no targets to resolve"),
        Some(serde_json::json!({ "verb": verb })),
    )
}

/// The glue [`crate::plugin!`] expands to: WIT strings in, typed calls out.
#[doc(hidden)]
pub mod glue {
    use super::*;

    /// The [`VerbSpec`] the host sees for `V`.
    pub fn spec<V: Verb>() -> VerbSpec {
        VerbSpec {
            name: V::NAME.to_string(),
            summary: V::SUMMARY.to_string(),
            kind: V::KIND,
            params_schema: V::params_schema().to_string(),
            result_schema: V::result_schema().map(|s| s.to_string()),
            aliases: V::ALIASES.iter().map(|a| a.to_string()).collect(),
            programs: V::PROGRAMS.iter().map(|p| p.to_string()).collect(),
            two_stage: V::TWO_STAGE,
            effects: V::EFFECTS.to_vec(),
            sensitive: V::SENSITIVE.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn args<V: Verb>(text: &str) -> Result<V::Args, OpError> {
        let value: Value = serde_json::from_str(text)
            .map_err(|e| errors::invalid_args(&format!("args are not valid JSON: {e}")))?;
        V::parse_args(value)
    }

    /// Parse the args and plan.
    pub fn plan<V: Verb>(args_json: &str) -> Result<Plan, OpError> {
        V::plan(&args::<V>(args_json)?)
    }

    /// Parse the args and map the outcome into the result's JSON text; for
    /// a running job, `{"entity": …}` or `{}` ([`Verb::entity`]).
    pub fn map<V: Verb>(args_json: &str, outcome: &Outcome) -> Result<String, OpError> {
        let args = args::<V>(args_json)?;
        if outcome.running {
            return Ok(match V::entity(&args, outcome) {
                Some(entity) => serde_json::json!({ "entity": entity }).to_string(),
                None => "{}".to_string(),
            });
        }
        let output = V::map(&args, outcome)?;
        serde_json::to_string(&output).map_err(|e| {
            errors::invalid_output(&format!("`{}`: the result does not serialize: {e}", V::NAME))
        })
    }

    /// Parse the entity and ask for the kill command.
    pub fn kill_plan<V: Verb>(entity_json: &str) -> Option<Command> {
        let entity: Value = serde_json::from_str(entity_json).ok()?;
        V::kill_plan(&entity)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{json, Map, OutcomeExt};
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};

    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct PingArgs {
        /// how many
        #[serde(default)]
        count: u64,
    }

    struct Ping;
    impl Verb for Ping {
        const NAME: &'static str = "t.ping";
        const SUMMARY: &'static str = "Ping";
        const KIND: VerbKind = VerbKind::Exec;
        const EFFECTS: &'static [Effect] = &[];
        const ALIASES: &'static [&'static str] = &["t.p"];
        type Args = PingArgs;
        type Output = Pong;
        fn plan(args: &PingArgs) -> Result<Plan, OpError> {
            Ok(Plan::Exec(crate::cmd("ping").lit_owned(format!("-c{}", args.count)).into()))
        }
        fn map(_: &PingArgs, outcome: &Outcome) -> Result<Pong, OpError> {
            outcome.success()?;
            Ok(Pong { out: outcome.stdout_text().into_owned(), rtt_ms: None, hops: None })
        }
    }

    // A ping's answer (a plain comment: a type's doc comment would become
    // its schema's description).
    #[derive(Serialize, JsonSchema)]
    struct Pong {
        /// what ping printed
        out: String,
        /// round trip; null when none came back
        rtt_ms: Option<f64>,
        /// routers on the way, when traced
        #[serde(skip_serializing_if = "Option::is_none")]
        #[schemars(with = "u32")]
        hops: Option<u32>,
    }

    #[derive(Deserialize, JsonSchema)]
    struct TargetArgs {
        /// the target
        target: String,
        #[serde(flatten)]
        #[schemars(skip)]
        _rest: Map<String, Value>,
    }

    struct Staged;
    impl Verb for Staged {
        const NAME: &'static str = "t.staged";
        const SUMMARY: &'static str = "Two stages";
        const KIND: VerbKind = VerbKind::Spawn;
        const EFFECTS: &'static [Effect] = &[];
        const TWO_STAGE: bool = true;
        type Args = TargetArgs;
        type Output = Value;
        fn plan(args: &TargetArgs) -> Result<Plan, OpError> {
            Ok(Plan::Spawn(crate::cmd("x").value(&args.target).into()))
        }
        fn map(_: &TargetArgs, _: &Outcome) -> Result<Value, OpError> {
            Ok(json!({ "done": true }))
        }
        fn entity(args: &TargetArgs, _: &Outcome) -> Option<Value> {
            Some(json!(args.target))
        }
    }

    #[test]
    fn args_parse_from_null_and_refuse_a_misspelt_name() {
        assert_eq!(Ping::parse_args(Value::Null).unwrap().count, 0);
        let e = Ping::parse_args(json!({ "cuont": 2 })).unwrap_err();
        assert_eq!(e.code, "invalid_args");
        assert!(e.message.contains("cuont") && e.message.contains("t.ping"), "{}", e.message);
        assert!(
            Ping::answers_to("t.p") && Ping::answers_to("t.ping") && !Ping::answers_to("t.pin")
        );
    }

    #[test]
    fn the_spec_carries_the_derived_schema_and_the_constants() {
        let spec = glue::spec::<Ping>();
        assert_eq!(
            (spec.name.as_str(), spec.aliases.as_slice(), spec.two_stage),
            ("t.ping", &["t.p".to_string()][..], false)
        );
        let schema: Value = serde_json::from_str(&spec.params_schema).unwrap();
        assert_eq!(schema["additionalProperties"], false);
        assert_eq!(schema["properties"]["count"]["default"], 0);
        let err =
            glue::map::<Ping>("{}", &Outcome::exited(2, "").with_stderr("no route")).unwrap_err();
        assert_eq!(err.code, "exit_nonzero");
        assert!(err.message.contains("no route"), "{}", err.message);
        assert_eq!(
            glue::map::<Ping>("{}", &Outcome::exited(0, "pong")).unwrap(),
            r#"{"out":"pong","rtt_ms":null}"#
        );
    }

    #[test]
    fn the_result_schema_is_derived_from_the_output_type() {
        let spec = glue::spec::<Ping>();
        let schema: Value = serde_json::from_str(spec.result_schema.as_deref().unwrap()).unwrap();
        assert_eq!(
            schema,
            json!({
                "type": "object",
                "required": ["out", "rtt_ms"],
                "properties": {
                    "out": { "type": "string", "description": "what ping printed" },
                    "rtt_ms": { "type": ["number", "null"], "description": "round trip; null when none came back" },
                    "hops": { "type": "integer", "description": "routers on the way, when traced" }
                }
            })
        );
        // Key order is part of the shape (golden files print it).
        let keys: Vec<&String> = schema.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["type", "required", "properties"]);
        assert_eq!(glue::spec::<Staged>().result_schema, None, "a Value result declares no shape");
    }

    #[test]
    fn a_running_job_is_asked_for_its_entity_not_mapped() {
        assert_eq!(
            glue::map::<Staged>(r#"{"target":"t7"}"#, &Outcome::running("")).unwrap(),
            r#"{"entity":"t7"}"#
        );
        assert_eq!(
            glue::map::<Staged>(r#"{"target":"t7"}"#, &Outcome::exited(0, "")).unwrap(),
            r#"{"done":true}"#
        );
        assert_eq!(
            glue::map::<Ping>("{}", &Outcome::running("")).unwrap(),
            "{}",
            "no entity: the host stops the process group"
        );
    }

    #[test]
    fn a_two_stage_schema_describes_the_target_closed_and_plans_take_the_rest() {
        let schema = Staged::params_schema();
        assert_eq!(schema["additionalProperties"], false);
        assert_eq!(schema["required"], json!(["target"]));
        assert!(schema["properties"].get("_rest").is_none());
        assert!(glue::plan::<Staged>(r#"{"target":"t","extra":"x"}"#).is_ok());
        assert_eq!(Ping::resolve_plan("x").unwrap_err().code, "unknown_verb");
    }
}
