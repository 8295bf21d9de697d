//! The bundled `just` plugin: `just.run`, a two-stage verb. Its targets are
//! the justfile's recipes, resolved from `just --dump --dump-format json`
//! (never from `just --list`'s human text): each recipe's parameters become
//! a closed schema, and the recipe's whole definition is its identity, so
//! editing the recipe changes its fingerprint. Recipes run as jobs.

use schemars::JsonSchema;
use serde::Deserialize;
use verbgate_plugin_sdk::{
    cmd, errors, json, Command, Effect, ErrorCode, Map, OpError, Outcome, OutcomeExt, Plan,
    Resolved, RunTails, Value, Verb, VerbKind,
};

fn dump() -> Command {
    cmd("just").lit("--dump").lit("--dump-format").lit("json").into()
}

/// The dump's public recipes, by name.
fn recipes(outcome: &Outcome) -> Result<Map<String, Value>, OpError> {
    let stderr = String::from_utf8_lossy(&outcome.stderr);
    if outcome.exit_code != Some(0) && stderr.contains("No justfile found") {
        return Err(errors::not_found("there is no justfile in the root directory"));
    }
    outcome.success()?;
    let v: Value = verbgate_plugin_sdk::serde_json::from_slice(&outcome.stdout)
        .map_err(|e| errors::invalid_output(&format!("just --dump printed non-JSON: {e}")))?;
    Ok(v["recipes"]
        .as_object()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|(_, r)| r["private"] != true)
        .collect())
}

/// The closed schema of a recipe's parameters (plus `target`).
fn recipe_schema(name: &str, recipe: &Value) -> Value {
    let mut props = Map::new();
    props.insert("target".into(), json!({ "const": name, "description": "the recipe" }));
    let mut required = vec![json!("target")];
    for p in recipe["parameters"].as_array().cloned().unwrap_or_default() {
        let pname = p["name"].as_str().unwrap_or_default().to_string();
        let variadic = p["kind"] != "singular";
        let mut s = if variadic {
            json!({ "type": "array", "items": { "type": "string" }, "description": format!("variadic parameter `{pname}`") })
        } else {
            json!({ "type": "string", "description": format!("parameter `{pname}`") })
        };
        match &p["default"] {
            Value::Null => {
                if p["kind"] != "star" {
                    required.push(json!(pname));
                }
            }
            Value::String(d) => s["default"] = json!(d),
            other => {
                s["description"] =
                    json!(format!("parameter `{pname}` (default: the expression {other})"))
            }
        }
        if p["kind"] == "plus" {
            s["minItems"] = json!(1);
        }
        props.insert(pname, s);
    }
    json!({ "type": "object", "properties": props, "required": required, "additionalProperties": false })
}

/// `just.run` args: the recipe, and the recipe's own parameters, which
/// its resolved schema (closed, from the justfile) describes.
#[derive(Deserialize, JsonSchema)]
struct RunArgs {
    /// the recipe to run
    #[schemars(length(min = 1))]
    target: String,
    /// The recipe's parameters, in the order the caller gave them.
    #[serde(flatten)]
    #[schemars(skip)]
    params: Map<String, Value>,
}

/// `just.run`.
struct Run;

impl Verb for Run {
    const NAME: &'static str = "just.run";
    const SUMMARY: &'static str =
        "Run a justfile recipe as a job; help \"just.run:<recipe>\" gives its params";
    const KIND: VerbKind = VerbKind::Spawn;
    // A recipe is the repository's code: it runs in the OS sandbox, with
    // the root writable and no network (an operator gives it the network
    // with `[[sandbox.allow]] verbs = ["just.*"] network = true`). It is no
    // more destructive than any other code run there.
    const EFFECTS: &'static [Effect] =
        &[Effect::ReadsRepo, Effect::WritesRepo, Effect::RunsRepoCode, Effect::LongRunning];
    const PROGRAMS: &'static [&'static str] = &["just"];
    const TWO_STAGE: bool = true;
    type Args = RunArgs;
    type Output = RunTails;

    fn resolve_plan(_target: &str) -> Result<Command, OpError> {
        Ok(dump())
    }

    fn resolve(target: &str, outcome: &Outcome) -> Result<Resolved, OpError> {
        let recipes = recipes(outcome)?;
        if target.is_empty() {
            let list: Vec<Value> = recipes
                .iter()
                .map(|(name, r)| {
                    let params: Vec<Value> = r["parameters"]
                        .as_array()
                        .cloned()
                        .unwrap_or_default()
                        .iter()
                        .map(|p| p["name"].clone())
                        .collect();
                    json!({ "name": name, "doc": r["doc"], "params": params })
                })
                .collect();
            return Ok(Resolved {
                params_schema: Self::params_schema().to_string(),
                summary: format!("{} recipes", list.len()),
                identity: json!({ "targets": list }).to_string(),
            });
        }
        let recipe = recipes.get(target).ok_or_else(|| {
            let names: Vec<&str> = recipes.keys().map(String::as_str).collect();
            errors::op_error(
                ErrorCode::NotFound,
                &format!(
                    "the justfile has no public recipe `{target}` (recipes: {})",
                    names.join(", ")
                ),
                Some(json!({ "target": target, "recipes": names })),
            )
        })?;
        Ok(Resolved {
            params_schema: recipe_schema(target, recipe).to_string(),
            summary: recipe["doc"]
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| format!("recipe `{target}`")),
            identity: recipe.to_string(),
        })
    }

    fn plan(args: &RunArgs) -> Result<Plan, OpError> {
        // Parameters go in the order the caller gave them; the host
        // validated them against this very recipe's closed schema a moment
        // ago, so each is a string or a list of strings.
        let mut c = cmd("just").value(&args.target);
        for value in args.params.values() {
            match value {
                Value::String(s) => c = c.value(s.clone()),
                Value::Array(items) => {
                    for i in items {
                        c = c.value(i.as_str().unwrap_or_default().to_string());
                    }
                }
                _ => {}
            }
        }
        Ok(Plan::Spawn(c.into()))
    }

    fn map(_: &RunArgs, outcome: &Outcome) -> Result<RunTails, OpError> {
        Ok(RunTails::of(outcome))
    }
}

verbgate_plugin_sdk::plugin!(Just { name: "just", version: "0.1.0", verbs: [Run] });

#[cfg(test)]
mod tests {
    use super::*;
    use verbgate_plugin_sdk::Arg;

    #[test]
    fn the_static_schema_describes_only_the_target_and_is_closed() {
        let info = Just::describe();
        let schema: Value =
            verbgate_plugin_sdk::serde_json::from_str(&info.verbs[0].params_schema).unwrap();
        assert_eq!(
            schema,
            json!({
                "type": "object",
                "properties": { "target": { "type": "string", "description": "the recipe to run", "minLength": 1 } },
                "required": ["target"],
                "additionalProperties": false
            })
        );
        assert!(info.verbs[0].two_stage);
    }

    #[test]
    fn recipe_parameters_become_values_in_the_order_given() {
        let Plan::Spawn(c) =
            Just::plan("just.run", r#"{"target":"build","mode":"-release","files":["a","b"]}"#)
                .unwrap()
        else {
            panic!("not a spawn")
        };
        let values: Vec<&str> = c
            .args
            .iter()
            .map(
                |a| if let Arg::Value(v) = a { v.as_str() } else { panic!("{a:?} is not a value") },
            )
            .collect();
        assert_eq!(
            values,
            ["build", "-release", "a", "b"],
            "values, so the host refuses the leading dash"
        );
    }

    #[test]
    fn a_finished_recipe_reports_its_exit_and_output_tails() {
        let out = Outcome::exited(3, "built\n").with_stderr("boom\n");
        let v: Value = verbgate_plugin_sdk::serde_json::from_str(
            &Just::map_result("just.run", r#"{"target":"x"}"#, &out).unwrap(),
        )
        .unwrap();
        assert_eq!(
            v,
            json!({ "success": false, "exit_code": 3, "stdout_tail": "built\n", "stderr_tail": "boom\n" })
        );
    }
}
