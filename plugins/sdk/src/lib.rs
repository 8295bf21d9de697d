//! The verbgate guest SDK: write a verb plugin in a few lines of Rust.
//!
//! A plugin implements [`Plugin`] and registers it with [`plugin!`]. The SDK
//! owns the WIT bindings (`verbgate:verbs@0.2.0`), so plugin crates never
//! touch `wit-bindgen` themselves, and provides builders that make the safe
//! thing the easy thing:
//!
//! - [`Schema`] always emits *closed* JSON Schemas
//!   (`additionalProperties: false`), as the host requires;
//! - [`Cmd`] builds typed argv: plugin-authored literals, caller values and
//!   `--name=value` options stay distinct so the host can refuse a caller
//!   value in an option position;
//! - [`Args`] reads the (already host-validated) arguments;
//! - [`errors`] builds [`OpError`]s with the stable codes callers rely on.
//!
//! ```ignore
//! struct Hello;
//! impl verbgate_plugin_sdk::Plugin for Hello { /* describe, plan, map_result */ }
//! verbgate_plugin_sdk::plugin!(Hello);
//! ```

extern crate self as verbgate_plugin_sdk;

mod args;
mod command;
pub mod errors;
mod schema;

pub use args::Args;
pub use command::{cmd, Cmd};
pub use schema::{Param, Schema};
pub use serde_json::{self, json, Map, Value};
/// The `wit-bindgen` runtime the generated bindings refer to.
#[doc(hidden)]
pub use wit_bindgen;

/// Generated bindings for `verbgate:verbs@0.2.0`.
#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "../../verbs-wit/0.2.0",
        world: "verb-plugin",
        pub_export_macro: true,
        export_macro_name: "__export_verb_plugin",
        default_bindings_module: "verbgate_plugin_sdk::bindings",
        runtime_path: "verbgate_plugin_sdk::wit_bindgen::rt",
    });
}

pub use bindings::verbgate::verbs::types::{
    Arg, Command, Effect, HostCall, LongOption, OpError, Outcome, PluginInfo, Resolved, VerbKind, VerbPlan as Plan, VerbSpec,
};

/// The WIT version this SDK builds components against.
pub const WIT_VERSION: &str = "0.2.0";

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

/// Helpers on an [`Outcome`].
pub trait OutcomeExt {
    /// Ok when the program exited 0, else an `exit_nonzero` error carrying the
    /// exit code, signal and the tail of stderr.
    fn success(&self) -> Result<(), OpError>;
    /// Stdout as text (lossy for invalid UTF-8).
    fn stdout_text(&self) -> std::borrow::Cow<'_, str>;
    /// The host call's JSON result, parsed.
    fn host_json(&self) -> Result<Value, OpError>;
    /// Whether this is the entity-extraction call for a running job.
    fn is_running(&self) -> bool;
}

impl OutcomeExt for Outcome {
    fn success(&self) -> Result<(), OpError> {
        if self.exit_code == Some(0) {
            return Ok(());
        }
        Err(errors::exit_nonzero(self))
    }
    fn stdout_text(&self) -> std::borrow::Cow<'_, str> {
        String::from_utf8_lossy(&self.stdout)
    }
    fn is_running(&self) -> bool {
        self.running
    }
    fn host_json(&self) -> Result<Value, OpError> {
        let text = self.host_result.as_deref().ok_or_else(|| errors::invalid_output("the host call returned no result"))?;
        serde_json::from_str(text).map_err(|e| errors::invalid_output(&format!("host result is not JSON: {e}")))
    }
}

#[doc(hidden)]
pub mod __private {
    use super::*;

    /// Parse args, call the plugin, keep errors structured.
    pub fn plan<P: Plugin>(verb: String, args: String) -> Result<Plan, OpError> {
        let args = Args::parse(&args)?;
        P::plan(&verb, &args)
    }

    pub fn map_result<P: Plugin>(verb: String, args: String, outcome: Outcome) -> Result<String, OpError> {
        let args = Args::parse(&args)?;
        P::map_result(&verb, &args, &outcome).map(|v| v.to_string())
    }

    pub fn kill_plan<P: Plugin>(verb: String, entity: String) -> Option<Command> {
        let entity: Value = serde_json::from_str(&entity).ok()?;
        P::kill_plan(&verb, &entity)
    }
}

/// Export a [`Plugin`] implementation as the component's `plugin` interface.
#[macro_export]
macro_rules! plugin {
    ($ty:ty) => {
        struct __VerbgateExport;
        impl $crate::bindings::exports::verbgate::verbs::plugin::Guest for __VerbgateExport {
            fn describe() -> $crate::PluginInfo {
                <$ty as $crate::Plugin>::describe()
            }
            fn plan(verb: String, args: String) -> Result<$crate::Plan, $crate::OpError> {
                $crate::__private::plan::<$ty>(verb, args)
            }
            fn map_result(
                verb: String,
                args: String,
                outcome: $crate::Outcome,
            ) -> Result<String, $crate::OpError> {
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
