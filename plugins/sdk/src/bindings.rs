//! The one place the SDK touches the WIT contract (`verbgate:verbs@0.2.0`).
//!
//! Everything else in the SDK, and every plugin, uses the types re-exported
//! from the crate root (`Plan`, `Outcome`, `Command`, …) and the export
//! macro below. Moving to another contract version means regenerating here
//! and adapting the few `__private` glue functions in `verb.rs`; plugins do
//! not change.

wit_bindgen::generate!({
    path: "../../verbs-wit/0.2.0",
    world: "verb-plugin",
    pub_export_macro: true,
    export_macro_name: "__export_verb_plugin",
    default_bindings_module: "verbgate_plugin_sdk::bindings",
    runtime_path: "verbgate_plugin_sdk::wit_bindgen::rt",
});

/// The exported interface a plugin implements (used by [`crate::plugin!`]).
pub use exports::verbgate::verbs::plugin::Guest;
pub use verbgate::verbs::types::{
    Arg, Command, Effect, ExecRead, HostCall, LongOption, OpError, Outcome, PluginInfo,
    ReadBackOutcome, Resolved, VerbKind, VerbPlan, VerbSpec,
};

/// The WIT version this SDK builds components against.
pub const WIT_VERSION: &str = "0.2.0";
