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

impl From<wit::PluginInfo> for model::PluginInfo {
    fn from(p: wit::PluginInfo) -> Self {
        model::PluginInfo {
            name: p.name,
            version: p.version,
            verbs: p
                .verbs
                .into_iter()
                .map(|v| model::VerbSpec {
                    name: v.name,
                    summary: v.summary,
                    kind: v.kind.into(),
                    params_schema: v.params_schema,
                    result_schema: v.result_schema,
                    aliases: v.aliases,
                    programs: v.programs,
                    two_stage: v.two_stage,
                    // 0.1.0 cannot say: the policy treats it as the most privileged.
                    effects: model::Effects::Undeclared,
                    sensitive: Vec::new(),
                })
                .collect(),
        }
    }
}

impl From<wit::VerbPlan> for model::Plan {
    fn from(p: wit::VerbPlan) -> Self {
        match p {
            wit::VerbPlan::Exec(c) => model::Plan::Exec(c.into()),
            wit::VerbPlan::Spawn(c) => model::Plan::Spawn(c.into()),
            wit::VerbPlan::Host(h) => model::Plan::Host(model::HostCall { name: h.name, args: h.args }),
        }
    }
}

/// 0.1.0 plans have no read-back, so an outcome never carries one.
impl From<&model::Outcome> for wit::Outcome {
    fn from(o: &model::Outcome) -> Self {
        wit::Outcome {
            exit_code: o.exit_code,
            signal: o.signal,
            stdout: o.stdout.clone(),
            stderr: o.stderr.clone(),
            host_result: o.host_result.clone(),
            running: o.running,
            stdout_truncated: o.stdout_truncated,
        }
    }
}

crate::runtime::conversions::shared_conversions!();
