//! Bounds on what a component's `describe` declares as a whole, checked
//! before any per-verb work: 50,000 verbs once took 94 s and 386 MiB to
//! lint and index before anything said no. Per-verb text (names,
//! summaries, schemas) is checked with the other per-verb findings in
//! [`super::lint`], so one bad verb costs only itself.

use super::lint::{Finding, Severity};
use crate::error::LoadCode;
use crate::runtime::bounds::{control_character, Exceeded, PluginBounds, PLUGIN_TEXT_BYTES};
use crate::runtime::model::PluginInfo;

/// Why the whole component is refused, if it is: too many verbs, too much
/// text altogether, an over-long or control-character-bearing plugin name
/// or version. The codes are `plugin_limit` and `control_characters`.
pub fn check_describe(info: &PluginInfo, b: &PluginBounds) -> Option<Finding> {
    let limit = |e: Exceeded, what: &str, fix: &'static str| Finding {
        code: LoadCode::PluginLimit,
        severity: Severity::Error,
        verb: None,
        pointer: None,
        message: e.describe(what),
        fix,
    };
    if let Err(e) = Exceeded::check("verbs", b.verbs, info.verbs.len()) {
        return Some(limit(
            e,
            "the number of verbs describe() declares (limits.plugin_verbs)",
            "declare fewer verbs, or split the plugin",
        ));
    }
    let total: usize = info.name.len()
        + info.version.len()
        + info
            .verbs
            .iter()
            .map(|v| {
                v.name.len()
                    + v.summary.len()
                    + v.params_schema.len()
                    + v.result_schema.as_ref().map_or(0, String::len)
                    + v.aliases.iter().chain(&v.programs).map(String::len).sum::<usize>()
            })
            .sum::<usize>();
    if let Err(e) = Exceeded::check("describe_bytes", b.describe_bytes, total) {
        return Some(limit(
            e,
            "the text describe() returns (limits.plugin_output_bytes)",
            "return shorter summaries and schemas",
        ));
    }
    if let Err(e) = Exceeded::check("plugin_name_bytes", PLUGIN_TEXT_BYTES, info.name.len()) {
        return Some(limit(e, "the plugin name", "use a short plugin name"));
    }
    if let Err(e) = Exceeded::check("version_bytes", PLUGIN_TEXT_BYTES, info.version.len()) {
        return Some(limit(e, "the plugin version", "use a plain version like 1.2.3"));
    }
    for (what, text) in [("name", &info.name), ("version", &info.version)] {
        if let Some(c) = control_character(text) {
            return Some(Finding {
                code: LoadCode::ControlCharacters,
                severity: Severity::Error,
                verb: None,
                pointer: None,
                message: format!("the plugin {what} contains the control character {c:?}; plugin text is refused, not cleaned"),
                fix: "remove newlines, escapes and other control characters",
            });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::model::{VerbKind, VerbSpec};

    fn info(verbs: usize) -> PluginInfo {
        let spec = VerbSpec {
            name: "a.b".into(),
            summary: "s".into(),
            kind: VerbKind::Read,
            params_schema: "{}".into(),
            result_schema: None,
            aliases: vec![],
            programs: vec![],
            two_stage: false,
            effects: crate::runtime::model::Effects::Undeclared,
            sensitive: vec![],
        };
        PluginInfo { name: "p".into(), version: "1.0.0".into(), verbs: vec![spec; verbs] }
    }

    #[test]
    fn the_whole_describe_is_bounded() {
        let b = PluginBounds::default();
        assert_eq!(check_describe(&info(3), &b), None);
        let f = check_describe(&info(b.verbs + 1), &b).unwrap();
        assert_eq!(f.code, LoadCode::PluginLimit);
        assert!(
            f.message.contains("`verbs`") && f.message.contains(&(b.verbs + 1).to_string()),
            "{}",
            f.message
        );
        let mut big = info(1);
        big.verbs[0].summary = "x".repeat(b.describe_bytes);
        assert!(check_describe(&big, &b).unwrap().message.contains("describe_bytes"));
        let mut long = info(1);
        long.version = "1".repeat(5 << 20);
        assert!(check_describe(&long, &b).unwrap().message.contains("`describe_bytes`"));
        long.version = "1".repeat(65);
        assert!(check_describe(&long, &b).unwrap().message.contains("version_bytes"));
        let mut escaped = info(1);
        escaped.version = "1.0\u{1b}[2J".into();
        assert_eq!(check_describe(&escaped, &b).unwrap().code, LoadCode::ControlCharacters);
        escaped.version = "1.0\n".into();
        assert_eq!(check_describe(&escaped, &b).unwrap().code, LoadCode::ControlCharacters);
    }
}
