//! Bindings for `verbgate:verbs@0.2.0`, frozen: 0.1.0 plus a verb's declared
//! effects and sensitive params, and `exec-read` plans with their read-back
//! outcome. Lives beside [`super::since_v0_1_0`], which
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

crate::runtime::conversions::shared_conversions!(
    spec(v) {
        effects: model::Effects::declared(v.effects.into_iter().map(Into::into).collect()),
        sensitive: v.sensitive,
    }
    plans {
        wit::VerbPlan::ExecRead(p) => model::Plan::ExecRead { run: p.run.into(), read_back: p.read_back.into() },
    }
    outcome(o) {
        read_back: o.read_back.as_deref().map(|r| wit::ReadBackOutcome {
            exit_code: r.exit_code,
            signal: r.signal,
            stdout: r.stdout.clone(),
            stderr: r.stderr.clone(),
            stdout_truncated: r.stdout_truncated,
        }),
    }
);
