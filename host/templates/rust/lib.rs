//! The `__NAME__` verbgate plugin.
//!
//! A plugin never runs anything itself: `describe` declares its verbs,
//! `plan` turns a call's (already validated) args into a typed command, the
//! host runs it natively, and `map_result` turns the outcome into JSON.

use verbgate_plugin_sdk::{
    cmd, errors, json, plugin_info, verb, Args, OpError, Outcome, OutcomeExt, Param, Plan, Plugin, PluginInfo,
    Schema, Value, VerbKind, VerbSpecExt,
};

struct Greeter;

impl Plugin for Greeter {
    fn describe() -> PluginInfo {
        plugin_info(
            "__NAME__",
            "0.1.0",
            vec![verb(
                "__NAME__.hello",
                VerbKind::Exec,
                "Greet someone by name",
                // The SDK's Schema is always closed (additionalProperties:
                // false), so a misspelt parameter is refused, not ignored.
                Schema::new().param("name", Param::string("who to greet").required()),
            )
            // Only declared programs may run; operators map names to paths.
            .programs(&["echo"])
            // What running it can do (Effect::ReadsRepo, WritesRepo,
            // RunsRepoCode, LongRunning, Network, Destructive): the
            // operator's policy allows, asks or denies on these. `echo`
            // touches nothing.
            .effects(&[])
            .result_schema(json!({
                "type": "object",
                "properties": { "greeting": { "type": "string" } },
                "required": ["greeting"],
                "additionalProperties": false
            }))],
        )
    }

    fn plan(verb: &str, args: &Args) -> Result<Plan, OpError> {
        match verb {
            "__NAME__.hello" => {
                let name = args.str("name")?.unwrap_or_default();
                // Caller input goes in `value` (or `path`), never in `lit`:
                // the host refuses a value that could be read as an option.
                Ok(Plan::Exec(cmd("echo").lit("hello,").value(name).into()))
            }
            other => Err(errors::unknown_verb(other)),
        }
    }

    fn map_result(_verb: &str, _args: &Args, outcome: &Outcome) -> Result<Value, OpError> {
        outcome.success()?;
        Ok(json!({ "greeting": outcome.stdout_text().trim() }))
    }
}

verbgate_plugin_sdk::plugin!(Greeter);

#[cfg(test)]
mod tests {
    use super::*;
    use verbgate_plugin_sdk::Arg;

    #[test]
    fn hello_plans_echo_with_the_name_as_a_value() {
        let args = Args::parse(r#"{"name":"-n world"}"#).unwrap();
        let Plan::Exec(c) = Greeter::plan("__NAME__.hello", &args).unwrap() else { panic!("not an exec plan") };
        assert_eq!(c.program, "echo");
        assert!(matches!(&c.args[1], Arg::Value(v) if v == "-n world"));
    }

    #[test]
    fn hello_maps_stdout_to_a_greeting() {
        let args = Args::parse(r#"{"name":"world"}"#).unwrap();
        let outcome = Outcome { exit_code: Some(0), signal: None, stdout: b"hello, world\n".to_vec(), stderr: vec![], host_result: None, running: false, stdout_truncated: false };
        assert_eq!(Greeter::map_result("__NAME__.hello", &args, &outcome).unwrap(), json!({"greeting": "hello, world"}));
    }
}
