//! Bindings for `verbgate:verbs@0.2.0`, frozen: 0.1.0 plus a verb's declared
//! effects and sensitive params. Lives beside [`super::since_v0_1_0`], which
//! keeps loading components built against 0.1.0.

use super::model;

wasmtime::component::bindgen!({
    path: "../verbs-wit/0.2.0",
    world: "verb-plugin",
    exports: { default: async },
});

pub use self::exports::verbgate::verbs::plugin::Guest;
use self::verbgate::verbs::types as wit;
pub use self::VerbPlugin as Instance;
pub use self::VerbPluginPre as Pre;

impl From<wit::Effect> for model::Effect {
    fn from(e: wit::Effect) -> Self {
        match e {
            wit::Effect::ReadsRepo => model::Effect::ReadsRepo,
            wit::Effect::WritesRepo => model::Effect::WritesRepo,
            wit::Effect::RunsRepoCode => model::Effect::RunsRepoCode,
            wit::Effect::LongRunning => model::Effect::LongRunning,
            wit::Effect::Network => model::Effect::Network,
            wit::Effect::Destructive => model::Effect::Destructive,
        }
    }
}

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
                    effects: model::Effects::declared(v.effects.into_iter().map(Into::into).collect()),
                    sensitive: v.sensitive,
                })
                .collect(),
        }
    }
}

crate::runtime::conversions::shared_conversions!();
