//! Which environment variables a *plan* may set. An allow list, never a
//! blocklist: the families of variables that make a program load code or run
//! another program (`GIT_*` config and external diff, `LD_*`, `GCONV_PATH`,
//! `GLIBC_TUNABLES`, `NODE_OPTIONS`, `PERL5OPT`, `PYTHON*`, `BASH_ENV`,
//! `CARGO_*` wrappers, `HOME`, `OPENSSL_CONF`, …) are too many and keep
//! growing, so a name is refused unless it is known to be inert.
//!
//! Two lists: names any plan may set (locale, colour, terminal width), and
//! names a plan may set only for one program (`GIT_OPTIONAL_LOCKS` for
//! `git`). Values are inert strings for the program, so they may not hold NUL,
//! and locale/time-zone values may not name a path (glibc reads a locale or
//! zone from a path it is given).

use crate::error::{ErrorCode, OpError};

/// Names any plan may set, whatever program it runs.
pub const ANY_PROGRAM: &[&str] =
    &["LANG", "LANGUAGE", "LC_ALL", "TZ", "NO_COLOR", "COLUMNS", "TERM"];

/// Prefixes any plan may use (the locale categories).
const ANY_PROGRAM_PREFIXES: &[&str] = &["LC_"];

/// Names a plan may set only when it runs the named program.
pub const PER_PROGRAM: &[(&str, &[&str])] = &[
    (
        "git",
        &[
            "GIT_OPTIONAL_LOCKS",
            "GIT_TERMINAL_PROMPT",
            "GIT_LITERAL_PATHSPECS",
            "GIT_NOGLOB_PATHSPECS",
            "GIT_ADVICE",
            "GIT_FLUSH",
        ],
    ),
    (
        "cargo",
        &[
            "CARGO_TERM_COLOR",
            "CARGO_TERM_VERBOSE",
            "CARGO_TERM_QUIET",
            "CARGO_TERM_PROGRESS_WHEN",
            "RUST_BACKTRACE",
        ],
    ),
    ("just", &["JUST_COLOR", "JUST_UNSTABLE"]),
];

/// Names a plan may set for one program to exactly one of a few values:
/// each value narrows what the program does, while another value of the
/// same name would widen it (`GOTOOLCHAIN=go1.99` downloads and runs a
/// toolchain; `GOPROXY=https://…` picks where modules come from).
pub const PER_PROGRAM_VALUES: &[(&str, &str, &[&str])] = &[
    // The go verbs work offline with the installed toolchain.
    ("go", "GOTOOLCHAIN", &["local"]),
    ("go", "GOPROXY", &["off"]),
    // vitest writes no new snapshot under CI.
    ("vitest", "CI", &["true"]),
];

/// Check one variable a plan sets for `program` (its declared name).
pub fn check_plan_env(program: &str, name: &str, value: &str) -> Result<(), OpError> {
    let refuse = |why: String| {
        OpError::new(ErrorCode::PlanRefused, why).with("env", name).with("program", program)
    };
    let well_formed = !name.is_empty()
        && name.len() <= 64
        && name.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
    if !well_formed {
        return Err(refuse(format!(
            "the plan sets environment variable {name:?}, which is not a plain upper-case name"
        )));
    }
    if let Some((_, _, values)) =
        PER_PROGRAM_VALUES.iter().find(|(prog, n, _)| *prog == program && *n == name)
    {
        if !values.contains(&value) {
            return Err(refuse(format!(
                "the plan sets {name}={value:?} for `{program}`; plugins may set it only to {}",
                values.join(" or ")
            )));
        }
        return Ok(());
    }
    let allowed = ANY_PROGRAM.contains(&name)
        || ANY_PROGRAM_PREFIXES.iter().any(|p| name.starts_with(p))
        || PER_PROGRAM.iter().any(|(prog, names)| *prog == program && names.contains(&name));
    if !allowed {
        return Err(refuse(format!(
            "the plan sets environment variable {name} for `{program}`, which plugins may not set: only locale, colour and terminal \
             names, and a few inert names per program, are allowed (variables like it can make a program run code)"
        )));
    }
    if value.contains('\0') {
        return Err(refuse(format!("the plan's value for {name} contains NUL")));
    }
    let is_locale = name == "LANG" || name == "LANGUAGE" || name.starts_with("LC_");
    let zone_path =
        name == "TZ" && (value.trim_start_matches(':').starts_with('/') || value.contains(".."));
    if (is_locale && (value.contains('/') || value.contains(".."))) || zone_path {
        return Err(refuse(format!("the plan's value for {name} names a path ({value:?}); a locale or time zone is a plain name")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_narrowing_name_is_allowed_only_with_its_narrowing_value() {
        assert!(check_plan_env("go", "GOTOOLCHAIN", "local").is_ok());
        assert!(check_plan_env("go", "GOPROXY", "off").is_ok());
        assert!(check_plan_env("vitest", "CI", "true").is_ok());
        for (program, name, value) in [
            ("go", "GOTOOLCHAIN", "go1.99.0"),
            ("go", "GOPROXY", "https://proxy.example"),
            ("vitest", "CI", ""),
            ("cargo", "GOPROXY", "off"),
        ] {
            let e = check_plan_env(program, name, value).unwrap_err();
            assert_eq!(e.code, ErrorCode::PlanRefused, "{program} {name}={value}");
        }
    }

    #[test]
    fn code_loading_families_are_refused_for_every_program() {
        let attacks = [
            ("git", "GIT_EXTERNAL_DIFF"),
            ("git", "GIT_CONFIG_PARAMETERS"),
            ("git", "GIT_CONFIG_COUNT"),
            ("git", "GIT_CONFIG_KEY_0"),
            ("git", "GIT_SSH_COMMAND"),
            ("git", "GIT_DIR"),
            ("git", "GIT_EXEC_PATH"),
            ("git", "HOME"),
            ("git", "PATH"),
            ("git", "LD_PRELOAD"),
            ("git", "GCONV_PATH"),
            ("git", "GLIBC_TUNABLES"),
            ("git", "BASH_ENV"),
            ("git", "BASHOPTS"),
            ("git", "ENV"),
            ("git", "OPENSSL_CONF"),
            ("cargo", "RUSTC_WRAPPER"),
            ("cargo", "CARGO_BUILD_RUSTC_WRAPPER"),
            ("cargo", "CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER"),
            ("cargo", "RUSTFLAGS"),
            ("cargo", "CARGO_HOME"),
            ("just", "JUST_JUSTFILE"),
            ("node", "NODE_OPTIONS"),
            ("perl", "PERL5OPT"),
            ("python", "PYTHONPATH"),
            ("python", "PYTHONSTARTUP"),
            ("cargo", "GIT_OPTIONAL_LOCKS"),
        ];
        for (program, name) in attacks {
            let e = check_plan_env(program, name, "x").unwrap_err();
            assert_eq!(e.code, ErrorCode::PlanRefused, "{program} {name}");
            assert_eq!(e.details["env"], name);
        }
    }

    #[test]
    fn inert_names_pass_and_locale_values_may_not_be_paths() {
        assert!(check_plan_env("git", "TZ", "Europe/Paris").is_ok());
        assert!(check_plan_env("git", "TZ", ":/etc/evil").is_err());
        for (program, name) in [
            ("git", "GIT_OPTIONAL_LOCKS"),
            ("git", "LC_ALL"),
            ("cargo", "CARGO_TERM_COLOR"),
            ("anything", "TZ"),
        ] {
            assert!(check_plan_env(program, name, "C").is_ok(), "{program} {name}");
        }
        assert!(check_plan_env("git", "LC_ALL", "../../tmp/evil").is_err());
        assert!(check_plan_env("git", "TZ", "/tmp/zone").is_err());
        assert!(check_plan_env("git", "lower", "x").is_err());
        assert!(check_plan_env("git", "LANG", "a\0b").is_err());
    }
}
