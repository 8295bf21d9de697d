//! Conversions every contract version shares. The `verb-kind`, `command`,
//! `arg`, `resolved` and `op-error` types have not changed since 0.1.0 (`verb-plan`
//! and `outcome` have: each binding module converts its own), but each `since_v*` module's `bindgen!` generates its own
//! Rust types for them; this macro writes their conversions once, expanded in
//! each binding module where `wit` names that version's types.

/// Expand the shared conversions between `wit` (the module's generated
/// types) and [`super::model`].
macro_rules! shared_conversions {
    () => {
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
    };
}

pub(crate) use shared_conversions;
