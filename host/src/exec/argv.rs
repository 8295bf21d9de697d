//! Rendering typed argv, and the guard that makes option injection
//! impossible *by construction of the host*, whatever a plugin does:
//!
//! - a caller value (`value` or `path`) that starts with `-` is refused
//!   unless it comes after the `--` marker — so `--upload-pack=evil` or `-c`
//!   can never be read by the program as an option;
//! - a caller value that starts with `@` is refused before the marker too:
//!   Python's argparse with `fromfile_prefix_chars` (pytest, and any tool
//!   built that way) replaces `@file` with the lines of that file, read as
//!   further arguments — options included, from any file the program can
//!   open. After the marker it is allowed: the programs verbgate passes
//!   caller values to after `--` (git pathspecs, rg paths) read them as
//!   plain operands, and a plan for a program that expands `@` even after
//!   `--` (pytest does) must not put caller values there — the bundled
//!   pytest plugin uses no marker, so the refusal holds for it;
//! - a caller option (`option`) is rendered as one word, `--name=value`, so
//!   its value can never become a separate argument; its name must be a
//!   plain option name;
//! - NUL is refused anywhere (it would truncate the argument in `execve`);
//! - there is no shell: the rendered words go to `execve` as they are.

use std::path::Path;

use super::confine::confine_path;
use crate::error::{ErrorCode, OpError};
use crate::runtime::model::Arg;

/// Render typed argv into the words passed to the program. Path arguments
/// are confined to `root` as the program will resolve them: relative to
/// `cwd`, the (already confined) directory it runs in.
pub fn render_argv(args: &[Arg], root: &Path, cwd: &Path) -> Result<Vec<String>, OpError> {
    let mut out = Vec::with_capacity(args.len());
    let mut after_marker = false;
    for (index, arg) in args.iter().enumerate() {
        match arg {
            Arg::Literal(text) => {
                refuse_nul(text, index)?;
                out.push(text.clone());
            }
            Arg::Value(value) | Arg::Path(value) => {
                refuse_nul(value, index)?;
                if let Arg::Path(p) = arg {
                    confine_path(root, cwd, p)?;
                }
                if !after_marker {
                    refuse_leading(value, index)?;
                }
                out.push(value.clone());
            }
            Arg::Option { name, value } => {
                if after_marker {
                    return Err(plugin_bug(format!("option `--{name}` comes after `--`, where the program would read it as a value")));
                }
                if !is_option_name(name) {
                    return Err(plugin_bug(format!("{name:?} is not a valid option name (letters, digits and `-`, not starting with `-`)")));
                }
                refuse_nul(value, index)?;
                out.push(format!("--{name}={value}"));
            }
            Arg::EndOfOptions => {
                if after_marker {
                    return Err(plugin_bug("the plan has `--` twice".to_string()));
                }
                after_marker = true;
                out.push("--".to_string());
            }
        }
    }
    Ok(out)
}

/// Refuse a caller value (before `--`) that a program could read as
/// something other than a value: an option (`-x`) or a file of more
/// arguments (`@file`).
fn refuse_leading(value: &str, index: usize) -> Result<(), OpError> {
    let why = if value.starts_with('-') {
        format!("the value {value:?} starts with `-`, so the program would read it as an option; values that start with `-` are refused here")
    } else if value.starts_with('@') {
        format!(
            "the value {value:?} starts with `@`, which some programs (pytest, and other tools built on Python's argparse) read as \
             `@file`: a file whose lines become further arguments and options; values that start with `@` are refused here. For git, \
             name the branch: `HEAD@{{u}}` instead of `@{{u}}`, `HEAD~1` instead of `@~1`; for a file whose name starts with `@`, \
             write `./{value}`"
        )
    } else {
        return Ok(());
    };
    Err(OpError::new(ErrorCode::UnsafeArgv, why).with("value", value).with("position", index))
}

fn is_option_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

fn refuse_nul(text: &str, index: usize) -> Result<(), OpError> {
    if text.contains('\0') {
        return Err(OpError::new(
            ErrorCode::UnsafeArgv,
            "an argument contains a NUL byte, which cannot be passed to a program",
        )
        .with("position", index));
    }
    Ok(())
}

fn plugin_bug(message: String) -> OpError {
    OpError::new(ErrorCode::UnsafeArgv, format!("the plugin's plan is unsafe: {message}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render_argv_test(args: &[Arg]) -> Result<Vec<String>, OpError> {
        render_argv(args, Path::new("/"), Path::new("/"))
    }

    fn v(s: &str) -> Arg {
        Arg::Value(s.into())
    }
    fn lit(s: &str) -> Arg {
        Arg::Literal(s.into())
    }

    #[test]
    fn option_like_values_are_refused_before_the_marker() {
        for evil in ["--upload-pack=evil", "-c", "-", "--"] {
            let err = render_argv_test(&[lit("log"), v(evil)]).unwrap_err();
            assert_eq!(err.code, ErrorCode::UnsafeArgv, "{evil}");
            assert_eq!(err.details["value"], evil);
        }
    }

    #[test]
    fn option_like_values_are_fine_after_the_marker() {
        let words =
            render_argv_test(&[lit("log"), Arg::EndOfOptions, v("-c"), v("--x=y")]).unwrap();
        assert_eq!(words, ["log", "--", "-c", "--x=y"]);
    }

    #[test]
    fn at_file_values_and_paths_are_refused_before_the_marker() {
        // pytest (argparse `fromfile_prefix_chars="@"`) would read `-k
        // @/tmp/x` or a node id `@opts.txt` as a file of more arguments.
        for evil in ["@/tmp/opts", "@opts.txt", "@", "@{u}", "@~1"] {
            for arg in [v(evil), Arg::Path(evil.into())] {
                let err = render_argv_test(&[lit("-k"), arg]).unwrap_err();
                assert_eq!(err.code, ErrorCode::UnsafeArgv, "{evil}");
                assert_eq!(err.details["value"], evil);
                assert_eq!(err.details["position"], 1);
                assert!(
                    err.message.contains("`@`") && err.message.contains("HEAD@{u}"),
                    "why and what to do: {}",
                    err.message
                );
            }
        }
        // Not at the start, or written another way, it is a plain value.
        let words =
            render_argv_test(&[v("HEAD@{u}"), v("a@b"), Arg::Path("./@opts.txt".into())]).unwrap();
        assert_eq!(words, ["HEAD@{u}", "a@b", "./@opts.txt"]);
    }

    #[test]
    fn at_file_values_and_paths_are_fine_after_the_marker() {
        // git pathspecs and rg paths after `--` are operands, never `@file`.
        let words = render_argv_test(&[
            lit("log"),
            Arg::EndOfOptions,
            v("@{u}"),
            Arg::Path("@scoped/pkg".into()),
        ])
        .unwrap();
        assert_eq!(words, ["log", "--", "@{u}", "@scoped/pkg"]);
    }

    #[test]
    fn options_render_as_one_word_whatever_the_value() {
        let words = render_argv_test(&[Arg::Option {
            name: "format".into(),
            value: "x --exec=rm -c".into(),
        }])
        .unwrap();
        assert_eq!(words, ["--format=x --exec=rm -c"]);
        let bad =
            render_argv_test(&[Arg::Option { name: "-x".into(), value: "1".into() }]).unwrap_err();
        assert_eq!(bad.code, ErrorCode::UnsafeArgv);
        let bad =
            render_argv_test(&[Arg::Option { name: "a b".into(), value: "1".into() }]).unwrap_err();
        assert_eq!(bad.code, ErrorCode::UnsafeArgv);
        let after = render_argv_test(&[
            Arg::EndOfOptions,
            Arg::Option { name: "a".into(), value: "1".into() },
        ])
        .unwrap_err();
        assert_eq!(after.code, ErrorCode::UnsafeArgv);
    }

    #[test]
    fn nul_is_refused_everywhere() {
        assert!(render_argv_test(&[lit("a\0b")]).is_err());
        assert!(render_argv_test(&[Arg::EndOfOptions, v("a\0")]).is_err());
        assert!(render_argv_test(&[Arg::Option { name: "n".into(), value: "\0".into() }]).is_err());
    }

    #[test]
    fn a_second_marker_is_refused() {
        assert!(render_argv_test(&[Arg::EndOfOptions, Arg::EndOfOptions]).is_err());
    }
}
