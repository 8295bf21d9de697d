//! The verbgate guest SDK: write a verb plugin in a few lines of Rust.
//!
//! A verb is one type implementing [`Verb`]; [`plugin!`] lists the verb
//! types and generates the component's exports (`describe` and the dispatch
//! by verb name), so a verb's name is written once. The SDK owns the WIT
//! bindings ([`bindings`], `verbgate:verbs@0.2.0`), so plugin crates never
//! touch `wit-bindgen` themselves, and makes the safe thing the easy thing:
//!
//! - a verb's arguments are a serde struct and its params schema is derived
//!   from that struct ([`params`]): `#[serde(deny_unknown_fields)]` closes
//!   it, so a parameter cannot be read under a name the schema lacks;
//! - its result is a serde struct too, which `map` returns and the SDK
//!   serializes, and its result schema is derived from that struct, so the
//!   schema the host checks results against and the result cannot disagree;
//! - [`Cmd`] builds typed argv: plugin-authored literals, caller values and
//!   `--name=value` options stay distinct so the host can refuse a caller
//!   value in an option position;
//! - [`errors`] builds [`OpError`]s with the stable codes callers rely on,
//!   the [`ErrorCode`]s the host accepts from a plugin;
//! - [`Outcome::exited`] and friends build outcomes for unit tests of `map`.
//!
//! ```ignore
//! struct Hello;
//! impl verbgate_plugin_sdk::Verb for Hello { /* NAME, SUMMARY, KIND, Args, Output, plan, map */ }
//! verbgate_plugin_sdk::plugin!(MyTool { name: "mytool", version: "0.1.0", verbs: [Hello] });
//! ```
//!
//! The lower-level [`Plugin`] trait (one `describe`, string-dispatched
//! `plan`/`map_result`, hand-built [`Schema`]s and untyped [`Args`]) remains
//! for components that must say something the typed layer will not — the
//! test fixtures that play a broken or hostile plugin.

extern crate self as verbgate_plugin_sdk;

mod args;
pub mod bindings;
mod command;
pub mod errors;
mod outcome;
pub mod params;
mod schema;
mod verb;

pub use args::Args;
pub use bindings::{
    Arg, Command, Effect, ExecRead, HostCall, LongOption, OpError, Outcome, PluginInfo,
    ReadBackOutcome, Resolved, VerbKind, VerbPlan as Plan, VerbSpec, WIT_VERSION,
};
pub use command::{cmd, Cmd};
pub use errors::ErrorCode;
pub use outcome::{OutcomeExt, RunTails, RUN_TAIL_BYTES};
pub use params::{params_schema, result_schema, yes, Output, Params};
pub use schema::{Param, Schema};
pub use serde_json::{self, json, Map, Value};
pub use verb::Verb;
/// The `wit-bindgen` runtime the generated bindings refer to.
#[doc(hidden)]
pub use wit_bindgen;

#[doc(hidden)]
pub use verb::glue as __glue;

/// A verb plugin. The host validates args against the verb's schema before
/// [`Plugin::plan`] sees them, so plans can trust the shape of their input.
pub trait Plugin {
    /// The plugin's name, version and verbs. Called once per load.
    fn describe() -> PluginInfo;
    /// Turn a verb call into a plan for the host to run.
    fn plan(verb: &str, args: &Args) -> Result<Plan, OpError>;
    /// Map the outcome of the plan into the verb's result.
    fn map_result(verb: &str, args: &Args, outcome: &Outcome) -> Result<Value, OpError>;
    /// The command that kills a job by its entity id; `None` (the default)
    /// lets the host stop the job's process group.
    fn kill_plan(_verb: &str, _entity: &Value) -> Option<Command> {
        None
    }
    /// Two-stage verbs: the command that resolves `target` (empty: list).
    fn resolve_plan(verb: &str, _target: &str) -> Result<Command, OpError> {
        Err(errors::unknown_verb(verb))
    }
    /// Two-stage verbs: the target's closed schema and identity.
    fn resolve(verb: &str, _target: &str, _outcome: &Outcome) -> Result<Resolved, OpError> {
        Err(errors::unknown_verb(verb))
    }
}

/// Declare a verb, for [`Plugin::describe`].
pub fn verb(name: &str, kind: VerbKind, summary: &str, params: Schema) -> VerbSpec {
    VerbSpec {
        name: name.to_string(),
        summary: summary.to_string(),
        kind,
        params_schema: params.to_json(),
        result_schema: None,
        aliases: Vec::new(),
        programs: Vec::new(),
        two_stage: false,
        effects: Vec::new(),
        sensitive: Vec::new(),
    }
}

/// Builder-style additions to a [`VerbSpec`].
pub trait VerbSpecExt {
    /// Declare the programs the verb's plans may run.
    fn programs(self, programs: &[&str]) -> Self;
    /// Declare the result schema the host checks results against.
    fn result_schema(self, schema: Value) -> Self;
    /// Declare other accepted names (never listed in the catalog).
    fn aliases(self, aliases: &[&str]) -> Self;
    /// Make it a two-stage verb (see [`Plugin::resolve`]).
    fn two_stage(self) -> Self;
    /// Declare what running the verb can do (the host's policy decides on
    /// these: reads run, writes and repository code ask a person first). A
    /// verb declaring none touches only the host's own state.
    fn effects(self, effects: &[Effect]) -> Self;
    /// Name top-level params whose values are secrets: the audit trail
    /// records them as `"<redacted>"`.
    fn sensitive(self, params: &[&str]) -> Self;
}

impl VerbSpecExt for VerbSpec {
    fn programs(mut self, programs: &[&str]) -> Self {
        self.programs = programs.iter().map(|p| p.to_string()).collect();
        self
    }
    fn result_schema(mut self, schema: Value) -> Self {
        self.result_schema = Some(schema.to_string());
        self
    }
    fn aliases(mut self, aliases: &[&str]) -> Self {
        self.aliases = aliases.iter().map(|a| a.to_string()).collect();
        self
    }
    fn two_stage(mut self) -> Self {
        self.two_stage = true;
        self
    }
    fn effects(mut self, effects: &[Effect]) -> Self {
        self.effects = effects.to_vec();
        self
    }
    fn sensitive(mut self, params: &[&str]) -> Self {
        self.sensitive = params.iter().map(|p| p.to_string()).collect();
        self
    }
}

/// The plugin info for [`Plugin::describe`].
pub fn plugin_info(name: &str, version: &str, verbs: Vec<VerbSpec>) -> PluginInfo {
    PluginInfo { name: name.to_string(), version: version.to_string(), verbs }
}

#[doc(hidden)]
pub mod __private {
    use super::*;

    /// Parse args, call the plugin, keep errors structured.
    pub fn plan<P: Plugin>(verb: String, args: String) -> Result<Plan, OpError> {
        let args = Args::parse(&args)?;
        P::plan(&verb, &args)
    }

    pub fn map_result<P: Plugin>(
        verb: String,
        args: String,
        outcome: Outcome,
    ) -> Result<String, OpError> {
        let args = Args::parse(&args)?;
        P::map_result(&verb, &args, &outcome).map(|v| v.to_string())
    }

    pub fn kill_plan<P: Plugin>(verb: String, entity: String) -> Option<Command> {
        let entity: Value = serde_json::from_str(&entity).ok()?;
        P::kill_plan(&verb, &entity)
    }
}

/// Export a plugin's verbs as the component's `plugin` interface.
///
/// The typed form lists [`Verb`] types; it defines the plugin type (a unit
/// struct) whose associated functions are the component's exports, so
/// tests can call them as the host would (`Git::plan("git.log", "{}")`):
///
/// ```ignore
/// plugin!(Git { name: "git", version: "0.1.0", verbs: [Status, Log, Diff] });
/// ```
///
/// The low-level form, `plugin!(MyPlugin)`, exports a [`Plugin`]
/// implementation as is.
#[macro_export]
macro_rules! plugin {
    ($plugin:ident { name: $name:expr, version: $version:expr, verbs: [$($verb:ty),+ $(,)?] $(,)? }) => {
        /// The plugin: its verbs, dispatched by name.
        pub struct $plugin;

        impl $plugin {
            /// The plugin's name, version and verbs.
            pub fn describe() -> $crate::PluginInfo {
                $crate::plugin_info($name, $version, vec![$($crate::__glue::spec::<$verb>()),+])
            }
            /// Plan a call of `verb` with `args` (JSON text).
            pub fn plan(verb: &str, args: &str) -> Result<$crate::Plan, $crate::OpError> {
                $(if <$verb as $crate::Verb>::answers_to(verb) { return $crate::__glue::plan::<$verb>(args); })+
                Err($crate::errors::unknown_verb(verb))
            }
            /// Map the outcome of a call of `verb` (result as JSON text).
            pub fn map_result(verb: &str, args: &str, outcome: &$crate::Outcome) -> Result<String, $crate::OpError> {
                $(if <$verb as $crate::Verb>::answers_to(verb) { return $crate::__glue::map::<$verb>(args, outcome); })+
                Err($crate::errors::unknown_verb(verb))
            }
            /// The command that kills a job of `verb` by its entity.
            pub fn kill_plan(verb: &str, entity: &str) -> Option<$crate::Command> {
                $(if <$verb as $crate::Verb>::answers_to(verb) { return $crate::__glue::kill_plan::<$verb>(entity); })+
                None
            }
            /// Two-stage verbs: the command that resolves `target`.
            pub fn resolve_plan(verb: &str, target: &str) -> Result<$crate::Command, $crate::OpError> {
                $(if <$verb as $crate::Verb>::answers_to(verb) { return <$verb as $crate::Verb>::resolve_plan(target); })+
                Err($crate::errors::unknown_verb(verb))
            }
            /// Two-stage verbs: the target's schema and identity.
            pub fn resolve(verb: &str, target: &str, outcome: &$crate::Outcome) -> Result<$crate::Resolved, $crate::OpError> {
                $(if <$verb as $crate::Verb>::answers_to(verb) { return <$verb as $crate::Verb>::resolve(target, outcome); })+
                Err($crate::errors::unknown_verb(verb))
            }
        }

        impl $crate::bindings::Guest for $plugin {
            fn describe() -> $crate::PluginInfo {
                $plugin::describe()
            }
            fn plan(verb: String, args: String) -> Result<$crate::Plan, $crate::OpError> {
                $plugin::plan(&verb, &args)
            }
            fn map_result(verb: String, args: String, outcome: $crate::Outcome) -> Result<String, $crate::OpError> {
                $plugin::map_result(&verb, &args, &outcome)
            }
            fn kill_plan(verb: String, entity: String) -> Option<$crate::Command> {
                $plugin::kill_plan(&verb, &entity)
            }
            fn resolve_plan(verb: String, target: String) -> Result<$crate::Command, $crate::OpError> {
                $plugin::resolve_plan(&verb, &target)
            }
            fn resolve(verb: String, target: String, outcome: $crate::Outcome) -> Result<$crate::Resolved, $crate::OpError> {
                $plugin::resolve(&verb, &target, &outcome)
            }
        }
        $crate::bindings::__export_verb_plugin!($plugin with_types_in $crate::bindings);
    };
    ($ty:ty) => {
        struct __VerbgateExport;
        impl $crate::bindings::Guest for __VerbgateExport {
            fn describe() -> $crate::PluginInfo {
                <$ty as $crate::Plugin>::describe()
            }
            fn plan(verb: String, args: String) -> Result<$crate::Plan, $crate::OpError> {
                $crate::__private::plan::<$ty>(verb, args)
            }
            fn map_result(verb: String, args: String, outcome: $crate::Outcome) -> Result<String, $crate::OpError> {
                $crate::__private::map_result::<$ty>(verb, args, outcome)
            }
            fn kill_plan(verb: String, entity: String) -> Option<$crate::Command> {
                $crate::__private::kill_plan::<$ty>(verb, entity)
            }
            fn resolve_plan(verb: String, target: String) -> Result<$crate::Command, $crate::OpError> {
                <$ty as $crate::Plugin>::resolve_plan(&verb, &target)
            }
            fn resolve(verb: String, target: String, outcome: $crate::Outcome) -> Result<$crate::Resolved, $crate::OpError> {
                <$ty as $crate::Plugin>::resolve(&verb, &target, &outcome)
            }
        }
        $crate::bindings::__export_verb_plugin!(__VerbgateExport with_types_in $crate::bindings);
    };
}
