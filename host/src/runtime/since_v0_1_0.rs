//! Bindings for `verbgate:verbs@0.1.0`, frozen. When the contract changes, a
//! new `since_v*` module is added beside this one over its own frozen WIT
//! directory; this one keeps loading components built against 0.1.0.

use super::model;

wasmtime::component::bindgen!({
    path: "../verbs-wit/0.1.0",
    world: "verb-plugin",
    exports: { default: async },
});

pub use self::exports::verbgate::verbs::plugin::Guest;
use self::verbgate::verbs::types as wit;
pub use self::VerbPlugin as Instance;
pub use self::VerbPluginPre as Pre;

crate::runtime::conversions::shared_conversions!(
    spec(v) {
        // 0.1.0 cannot say: the policy treats it as the most privileged.
        effects: model::Effects::Undeclared,
        sensitive: Vec::new(),
    }
    plans {}
    outcome(o) {}
);
