//! Dispatch over the WIT versions this host supports. Adding a version
//! means: a frozen `verbs-wit/<version>/`, a `since_v*` module, one variant
//! here, and its arm in [`versioned!`]. Everything above this file sees only
//! [`super::model`] types.

use wasmtime::component::InstancePre;
use wasmtime::Store;

use super::model::{Command, Outcome, Plan, PluginInfo, PluginOpError, Resolved};
use super::sandbox::SandboxState;
use super::{since_v0_1_0, since_v0_2_0};

/// Contract versions this host can load, oldest first.
pub const SUPPORTED_VERSIONS: &[&str] = &["0.1.0", "0.2.0"];

/// A pre-linked component for one contract version.
pub enum PluginPre {
    /// `verbgate:verbs@0.1.0`.
    V0_1_0(since_v0_1_0::Pre<SandboxState>),
    /// `verbgate:verbs@0.2.0`.
    V0_2_0(since_v0_2_0::Pre<SandboxState>),
}

/// A live instance (one per call).
pub enum PluginInstance {
    /// `verbgate:verbs@0.1.0`.
    V0_1_0(since_v0_1_0::Instance),
    /// `verbgate:verbs@0.2.0`.
    V0_2_0(since_v0_2_0::Instance),
}

/// Run the same body for whichever version an instance is, so each export
/// is written once rather than once per version.
macro_rules! versioned {
    ($inst:expr, $guest:ident => $body:expr) => {
        match $inst {
            PluginInstance::V0_1_0(i) => {
                let $guest = i.verbgate_verbs_plugin();
                $body
            }
            PluginInstance::V0_2_0(i) => {
                let $guest = i.verbgate_verbs_plugin();
                $body
            }
        }
    };
}

impl PluginPre {
    /// Bind an `InstancePre` with the bindings for `version`; `None` when the
    /// version is not supported.
    pub fn new(version: &str, pre: InstancePre<SandboxState>) -> wasmtime::Result<Option<Self>> {
        Ok(match version {
            "0.1.0" => Some(PluginPre::V0_1_0(since_v0_1_0::Pre::new(pre)?)),
            "0.2.0" => Some(PluginPre::V0_2_0(since_v0_2_0::Pre::new(pre)?)),
            _ => None,
        })
    }

    /// A fresh instance in `store`.
    pub async fn instantiate(
        &self,
        store: &mut Store<SandboxState>,
    ) -> wasmtime::Result<PluginInstance> {
        match self {
            PluginPre::V0_1_0(p) => Ok(PluginInstance::V0_1_0(p.instantiate_async(store).await?)),
            PluginPre::V0_2_0(p) => Ok(PluginInstance::V0_2_0(p.instantiate_async(store).await?)),
        }
    }
}

impl PluginInstance {
    /// `describe`.
    pub async fn describe(&self, store: &mut Store<SandboxState>) -> wasmtime::Result<PluginInfo> {
        versioned!(self, g => Ok(g.call_describe(store).await?.into()))
    }

    /// `plan`.
    pub async fn plan(
        &self,
        store: &mut Store<SandboxState>,
        verb: &str,
        args: &str,
    ) -> wasmtime::Result<Result<Plan, PluginOpError>> {
        versioned!(self, g => Ok(g.call_plan(store, verb, &args.to_owned()).await?.map(Into::into).map_err(Into::into)))
    }

    /// `map-result`.
    pub async fn map_result(
        &self,
        store: &mut Store<SandboxState>,
        verb: &str,
        args: &str,
        outcome: &Outcome,
    ) -> wasmtime::Result<Result<String, PluginOpError>> {
        versioned!(self, g => Ok(g.call_map_result(store, verb, &args.to_owned(), &outcome.into()).await?.map_err(Into::into)))
    }

    /// `resolve-plan`.
    pub async fn resolve_plan(
        &self,
        store: &mut Store<SandboxState>,
        verb: &str,
        target: &str,
    ) -> wasmtime::Result<Result<Command, PluginOpError>> {
        versioned!(self, g => Ok(g.call_resolve_plan(store, verb, target).await?.map(Into::into).map_err(Into::into)))
    }

    /// `resolve`.
    pub async fn resolve(
        &self,
        store: &mut Store<SandboxState>,
        verb: &str,
        target: &str,
        outcome: &Outcome,
    ) -> wasmtime::Result<Result<Resolved, PluginOpError>> {
        versioned!(self, g => Ok(g.call_resolve(store, verb, target, &outcome.into()).await?.map(Into::into).map_err(Into::into)))
    }

    /// `kill-plan`.
    pub async fn kill_plan(
        &self,
        store: &mut Store<SandboxState>,
        verb: &str,
        entity: &str,
    ) -> wasmtime::Result<Option<Command>> {
        versioned!(self, g => Ok(g.call_kill_plan(store, verb, &entity.to_owned()).await?.map(Into::into)))
    }
}
