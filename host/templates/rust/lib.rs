//! The `__NAME__` verbgate plugin.
//!
//! A plugin never runs anything itself. Each verb is one type: its `Args`
//! struct is both what `plan` reads and (derived) the closed schema the host
//! checks calls against; `plan` turns a call into a typed command, the host
//! runs it natively, and `map` turns the outcome into the verb's `Output`
//! struct, which is both the JSON the caller gets and (derived) the result
//! schema the host checks it against.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use verbgate_plugin_sdk::{cmd, Effect, OpError, Outcome, OutcomeExt, Plan, Verb, VerbKind};

/// `__NAME__.hello` args. `deny_unknown_fields` closes the schema, so a
/// misspelt parameter is refused, not ignored; doc comments become the
/// parameters' descriptions.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct HelloArgs {
    /// who to greet
    name: String,
}

/// `__NAME__.hello`'s result: `map` returns it and the SDK writes it as
/// JSON. Doc comments on its fields become their descriptions (a type used
/// *inside* a result keeps its own comment plain, `//`, or it becomes the
/// description wherever it is used).
#[derive(Serialize, JsonSchema)]
struct Greeting {
    /// what echo printed
    greeting: String,
}

/// `__NAME__.hello`: greet someone by name.
struct Hello;

impl Verb for Hello {
    const NAME: &'static str = "__NAME__.hello";
    const SUMMARY: &'static str = "Greet someone by name";
    const KIND: VerbKind = VerbKind::Exec;
    const EFFECTS: &'static [Effect] = &[];
    // Only declared programs may run; operators map names to paths.
    const PROGRAMS: &'static [&'static str] = &["echo"];
    type Args = HelloArgs;
    type Output = Greeting;

    fn plan(args: &HelloArgs) -> Result<Plan, OpError> {
        // Caller input goes in `value` (or `path`), never in `lit`: the
        // host refuses a value that could be read as an option.
        Ok(Plan::Exec(cmd("echo").lit("hello,").value(&args.name).into()))
    }

    fn map(_: &HelloArgs, outcome: &Outcome) -> Result<Greeting, OpError> {
        // A failure is an error with a stable code (`exit_nonzero` here);
        // `verbgate_plugin_sdk::errors` builds the others from `ErrorCode`.
        outcome.success()?;
        Ok(Greeting { greeting: outcome.stdout_text().trim().to_string() })
    }
}

verbgate_plugin_sdk::plugin!(Greeter { name: "__NAME__", version: "0.1.0", verbs: [Hello] });

#[cfg(test)]
mod tests {
    use super::*;
    use verbgate_plugin_sdk::Arg;

    #[test]
    fn hello_plans_echo_with_the_name_as_a_value() {
        let Plan::Exec(c) = Hello::plan(&HelloArgs { name: "-n world".into() }).unwrap() else { panic!("not an exec plan") };
        assert_eq!(c.program, "echo");
        assert!(matches!(&c.args[1], Arg::Value(v) if v == "-n world"));
    }

    #[test]
    fn hello_maps_stdout_to_a_greeting() {
        let args = HelloArgs { name: "world".into() };
        let greeting = Hello::map(&args, &Outcome::exited(0, "hello, world\n")).unwrap();
        assert_eq!(greeting.greeting, "hello, world");
        // What the host gets: the same struct, as JSON.
        let json = Greeter::map_result("__NAME__.hello", r#"{"name":"x"}"#, &Outcome::exited(0, "hi\n"));
        assert_eq!(json.unwrap(), r#"{"greeting":"hi"}"#);
    }

    #[test]
    fn a_misspelt_parameter_is_refused() {
        assert_eq!(Greeter::plan("__NAME__.hello", r#"{"nmae":"x"}"#).unwrap_err().code, "invalid_args");
    }
}
