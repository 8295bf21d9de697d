//! Stage 5 of an op: every command of its plan checked, resolved and
//! confined — what will run, exactly, before anyone is asked about it.
//!
//! Every plan kind becomes a [`Planned`]: its prepared commands in the
//! order they run, and how to run them ([`RunKind`]). From here the op has
//! one path whatever its kind: one dry run, one question to a person, one
//! audit row.

use serde_json::{json, Value};
use std::time::Duration;

use super::Dispatcher;
use crate::error::{ErrorCode, OpError};
use crate::exec::Prepared;
use crate::registry::Verb;
use crate::runtime::bounds::{check_command, Exceeded};
use crate::runtime::model::{Command, HostCall, Plan};

/// One command of a plan: the plugin's command and what it resolved to.
/// The command is kept to prepare it again after a person was asked.
#[derive(Debug)]
pub struct Step {
    /// As the plugin planned it.
    pub command: Command,
    /// Checked, resolved and confined.
    pub prepared: Prepared,
}

/// How a plan's commands run.
#[derive(Debug)]
pub enum RunKind {
    /// Its one command, to its end.
    Exec,
    /// Its first command, then — only when that exited 0 with its stdout
    /// whole — the second (the read-back).
    ExecRead,
    /// Its one command as a supervised background job.
    Spawn {
        /// The job's time limit, if the plan set one.
        time_limit: Option<Duration>,
    },
    /// A native job operation of the bundled core; no command.
    Host(HostCall),
}

/// A plan with every command prepared.
#[derive(Debug)]
pub struct Planned {
    /// The commands, in the order they run.
    pub steps: Vec<Step>,
    /// How they run.
    pub run: RunKind,
}

impl Planned {
    /// The command the op runs first, if any.
    pub fn first(&self) -> Option<&Prepared> {
        self.steps.first().map(|s| &s.prepared)
    }

    /// An `exec-read` plan's read-back.
    pub fn read_back(&self) -> Option<&Prepared> {
        self.steps.get(1).map(|s| &s.prepared)
    }

    /// Whether running it acts (so its audit row must be durable first):
    /// every command does; of the host's job operations only a kill (the
    /// others read the job store, and their rows are queued like a
    /// refusal's).
    pub fn acts(&self) -> bool {
        match &self.run {
            RunKind::Host(call) => crate::jobs::ops::acts(&call.name),
            _ => true,
        }
    }

    /// The plan as a dry run shows it.
    fn to_json(&self) -> Value {
        let command = |i: usize| self.steps.get(i).map(|s| s.prepared.to_json());
        match &self.run {
            RunKind::Exec => json!({ "kind": "exec", "command": command(0) }),
            RunKind::ExecRead => {
                json!({ "kind": "exec_read", "command": command(0), "read_back": command(1) })
            }
            RunKind::Spawn { .. } => json!({ "kind": "spawn", "command": command(0) }),
            RunKind::Host(call) => {
                let args = serde_json::from_str::<Value>(&call.args).unwrap_or(Value::Null);
                json!({ "kind": "host", "call": call.name, "args": args })
            }
        }
    }
}

impl Dispatcher {
    /// Prepare every command of `plan`. Every command passes its checks
    /// before any runs, so a refused read-back never leaves a write
    /// half-reported.
    pub(crate) async fn prepare_plan(&self, verb: &Verb, plan: Plan) -> Result<Planned, OpError> {
        let (commands, run) = match plan {
            Plan::Exec(cmd) => (vec![cmd], RunKind::Exec),
            Plan::ExecRead { run, read_back } => (vec![run, read_back], RunKind::ExecRead),
            Plan::Spawn(cmd) => {
                let time_limit = cmd.timeout_ms.map(|ms| Duration::from_millis(ms.into()));
                (vec![cmd], RunKind::Spawn { time_limit })
            }
            Plan::Host(call) => (vec![], RunKind::Host(call)),
        };
        let mut steps = Vec::with_capacity(commands.len());
        for command in commands {
            let prepared = self.prepare(verb, &command).await?;
            steps.push(Step { command, prepared });
        }
        Ok(Planned { steps, run })
    }

    /// A dry run's answer: the plan as it would run, bounded like a
    /// plugin's result (it is made of the plugin's plan).
    pub(crate) fn dry_run(&self, verb: &Verb, planned: &Planned) -> Result<Value, OpError> {
        let answer = json!({ "dry_run": true, "plan": planned.to_json() });
        let bound = self.runtime.limits().bounds.dry_run_bytes;
        Exceeded::check("dry_run_bytes", bound, answer.to_string().len()).map_err(|e| {
            e.to_op_error(
                &verb.plugin.name,
                "the dry run's plan as JSON (limits.plugin_output_bytes)",
            )
        })?;
        Ok(answer)
    }

    /// Check and resolve a plan's command, then apply the program's guard
    /// (host-set environment, the repository checks); a refusal caused by
    /// the plan itself names the plugin that made it. Every command a plugin
    /// plans (exec, spawn, a target's resolution, an entity kill) comes
    /// through here, so its size is bounded before anything is prepared
    /// from it.
    pub(crate) async fn prepare(&self, verb: &Verb, cmd: &Command) -> Result<Prepared, OpError> {
        check_command(cmd, &self.runtime.limits().bounds)
            .map_err(|e| e.to_op_error(&verb.plugin.name, "the plan"))?;
        let root = &self.config.root;
        let name_plugin = |e: OpError| {
            if e.code == ErrorCode::PlanRefused {
                e.with("plugin", verb.plugin.name.as_str())
            } else {
                e
            }
        };
        let mut prepared = Prepared::from_command(
            cmd,
            &verb.programs,
            root,
            &self.config.env_allow,
            &self.run_limits,
        )
        .map_err(name_plugin)?;
        self.guards.harden(&mut prepared, root).map_err(name_plugin)?;
        self.confine(verb, &mut prepared)?;
        self.guards.check(&prepared, root).await?;
        Ok(prepared)
    }

    /// Give the command its OS sandbox profile, from the verb's effects
    /// (none only when the operator turned the sandbox off). Refused with
    /// `sandbox_unavailable` where the kernel cannot enforce it, or where
    /// the profile would reach `$VERBGATE_HOME` (inside the root).
    fn confine(&self, verb: &Verb, prepared: &mut Prepared) -> Result<(), OpError> {
        if self.config.sandbox.mode == crate::config::SandboxMode::Off {
            return Ok(());
        }
        if let Some(why) = &crate::sandbox::support().missing {
            return Err(crate::sandbox::unavailable(why));
        }
        let root = &self.config.root;
        private_caches(&self.config, prepared)?;
        let profile =
            profile_for(&self.config, verb, &prepared.name, &prepared.program, &prepared.env);
        let home = &self.config.home;
        if let Some(p) = profile
            .read
            .iter()
            .chain(&profile.write)
            .find(|p| home.starts_with(p) && p.starts_with(root))
        {
            return Err(crate::sandbox::unavailable(&format!(
                "VERBGATE_HOME {} lies inside {}, which the program may reach; serve a root that does not hold verbgate's home, or move the home",
                home.display(),
                p.display()
            )));
        }
        if !profile.network
            && crate::exec::guard::Guarded::of(prepared) == Some(crate::exec::guard::Guarded::Cargo)
        {
            // Without the network cargo works offline, and says so when a
            // dependency is missing, instead of failing on a refused socket.
            prepared.env.insert("CARGO_NET_OFFLINE".into(), "true".into());
        }
        prepared.sandbox = Some(profile);
        Ok(())
    }
}

/// Point a toolchain's cache at verbgate's private one for this root
/// (`$VERBGATE_HOME/toolcache/<16 hex of the root's SHA-256>/<tool>`, made
/// 0700), set after the plan's environment so no plan moves it: a cache a
/// confined program writes must never be one the user's own builds run
/// code from (`~/.cache/go-build`), nor one another repository's programs
/// read (hence one per root).
fn private_caches(
    config: &crate::config::Config,
    prepared: &mut crate::exec::Prepared,
) -> Result<(), OpError> {
    let caches: Vec<_> = crate::sandbox::profile::private_caches(&prepared.program).collect();
    if caches.is_empty() {
        return Ok(());
    }
    let root = crate::json::sha256_hex(config.root.to_string_lossy().as_bytes());
    for (var, dir) in caches {
        let path = config.home.join("toolcache").join(&root[..16]).join(dir);
        // A link planted in the home would aim the grant (and the cache) at
        // the user's own cache: refused, not followed.
        let linked = path
            .ancestors()
            .take(3)
            .find(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink()));
        if let Some(link) = linked {
            return Err(OpError::new(
                ErrorCode::LaunchFailed,
                format!(
                    "{} (for the private {var}) is a link; remove it: verbgate makes its own",
                    link.display()
                ),
            ));
        }
        crate::private_files::ensure_private_dir(&path).map_err(|e| {
            OpError::new(
                ErrorCode::LaunchFailed,
                format!("cannot make the private {var} directory {}: {e:#}", path.display()),
            )
        })?;
        prepared.env.insert(var.to_string(), path.display().to_string());
    }
    Ok(())
}

/// The OS sandbox profile of `verb`'s program `name` (resolved to
/// `program`, run with `env`) under `config`.
pub fn profile_for(
    config: &crate::config::Config,
    verb: &Verb,
    name: &str,
    program: &std::path::Path,
    env: &std::collections::BTreeMap<String, String>,
) -> crate::sandbox::Profile {
    let root = &config.root;
    let mut profile = crate::sandbox::Profile::derive(&crate::sandbox::profile::Inputs {
        verb: &verb.name,
        effects: &verb.effects,
        root,
        program,
        env,
        widen: &config.sandbox.allow,
        verbgate_home: &config.home,
        also_read: crate::exec::guard::ancestors::read_above_root(name, program, root),
    });
    if cfg!(target_os = "linux") && config.sandbox.namespaces {
        profile.processes = Some(config.limits.max_processes);
        profile.memory_mib = Some(config.limits.max_memory_mib).filter(|&m| m > 0);
    }
    profile
}
