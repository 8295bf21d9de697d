//! Conversions every contract version shares. Each `since_v*` module's
//! `bindgen!` generates its own Rust types for the same WIT records; this
//! macro writes their conversions once, expanded in each binding module
//! where `wit` names that version's types. Where a later version grew a
//! type (0.2.0: the `exec-read` plan, the outcome's `read-back`), the module
//! passes the extra match arms and fields.

/// Expand the shared conversions between `wit` (the module's generated
/// types) and [`super::model`]. `spec(v) { fields }` gives the
/// `model::VerbSpec` fields that differ by version, from `v: wit::VerbSpec`;
/// `plans { arms }` adds `verb-plan` cases; `outcome(o) { fields }` adds
/// `outcome` fields built from `o: &model::Outcome`.
macro_rules! shared_conversions {
    (spec($v:ident) { $($spec_field:tt)* } plans { $($plan_arm:tt)* } outcome($o:ident) { $($outcome_field:tt)* }) => {
        impl From<wit::PluginInfo> for model::PluginInfo {
            fn from(p: wit::PluginInfo) -> Self {
                model::PluginInfo {
                    name: p.name,
                    version: p.version,
                    verbs: p
                        .verbs
                        .into_iter()
                        .map(|$v| model::VerbSpec {
                            name: $v.name,
                            summary: $v.summary,
                            kind: $v.kind.into(),
                            params_schema: $v.params_schema,
                            result_schema: $v.result_schema,
                            aliases: $v.aliases,
                            programs: $v.programs,
                            two_stage: $v.two_stage,
                            $($spec_field)*
                        })
                        .collect(),
                }
            }
        }

        impl From<wit::VerbKind> for model::VerbKind {
            fn from(k: wit::VerbKind) -> Self {
                match k {
                    wit::VerbKind::Read => model::VerbKind::Read,
                    wit::VerbKind::Exec => model::VerbKind::Exec,
                    wit::VerbKind::Spawn => model::VerbKind::Spawn,
                    wit::VerbKind::Control => model::VerbKind::Control,
                }
            }
        }

        impl From<wit::Command> for model::Command {
            fn from(c: wit::Command) -> Self {
                model::Command {
                    program: c.program,
                    args: c
                        .args
                        .into_iter()
                        .map(|a| match a {
                            wit::Arg::Literal(s) => model::Arg::Literal(s),
                            wit::Arg::Value(s) => model::Arg::Value(s),
                            wit::Arg::Option(o) => model::Arg::Option { name: o.name, value: o.value },
                            wit::Arg::EndOfOptions => model::Arg::EndOfOptions,
                            wit::Arg::Path(p) => model::Arg::Path(p),
                        })
                        .collect(),
                    cwd: c.cwd,
                    env: c.env,
                    stdin: c.stdin,
                    timeout_ms: c.timeout_ms,
                    truncate_stdout: c.truncate_stdout,
                }
            }
        }

        impl From<wit::Resolved> for model::Resolved {
            fn from(r: wit::Resolved) -> Self {
                model::Resolved { params_schema: r.params_schema, summary: r.summary, identity: r.identity }
            }
        }

        impl From<wit::OpError> for model::PluginOpError {
            fn from(e: wit::OpError) -> Self {
                model::PluginOpError { code: e.code, message: e.message, details: e.details }
            }
        }

        impl From<wit::VerbPlan> for model::Plan {
            fn from(p: wit::VerbPlan) -> Self {
                match p {
                    wit::VerbPlan::Exec(c) => model::Plan::Exec(c.into()),
                    wit::VerbPlan::Spawn(c) => model::Plan::Spawn(c.into()),
                    wit::VerbPlan::Host(h) => model::Plan::Host(model::HostCall { name: h.name, args: h.args }),
                    $($plan_arm)*
                }
            }
        }

        impl From<&model::Outcome> for wit::Outcome {
            fn from($o: &model::Outcome) -> Self {
                wit::Outcome {
                    exit_code: $o.exit_code,
                    signal: $o.signal,
                    stdout: $o.stdout.clone(),
                    stderr: $o.stderr.clone(),
                    host_result: $o.host_result.clone(),
                    running: $o.running,
                    stdout_truncated: $o.stdout_truncated,
                    $($outcome_field)*
                }
            }
        }
    };
}

pub(crate) use shared_conversions;
