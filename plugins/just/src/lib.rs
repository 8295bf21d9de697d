//! The bundled `just` plugin: `just.run`, a two-stage verb. Its targets are
//! the justfile's recipes, resolved from `just --dump --dump-format json`
//! (never from `just --list`'s human text): each recipe's parameters become
//! a closed schema, and the recipe's whole definition is its identity, so
//! editing the recipe changes its fingerprint. Recipes run as jobs.

use verbgate_plugin_sdk::{
    cmd, errors, json, plugin_info, verb, Args, Command, Effect, Map, OpError, Outcome, OutcomeExt, Param, Plan, Plugin, PluginInfo, Resolved, Schema, Value,
    VerbKind, VerbSpecExt,
};

struct Just;

/// Most output kept in a recipe's result (the tail); the rest is in job.output.
const OUTPUT_TAIL: usize = 16 * 1024;

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
    let v: Value =
        verbgate_plugin_sdk::serde_json::from_slice(&outcome.stdout).map_err(|e| errors::invalid_output(&format!("just --dump printed non-JSON: {e}")))?;
    Ok(v["recipes"].as_object().cloned().unwrap_or_default().into_iter().filter(|(_, r)| r["private"] != true).collect())
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
            other => s["description"] = json!(format!("parameter `{pname}` (default: the expression {other})")),
        }
        if p["kind"] == "plus" {
            s["minItems"] = json!(1);
        }
        props.insert(pname, s);
    }
    json!({ "type": "object", "properties": props, "required": required, "additionalProperties": false })
}

impl Plugin for Just {
    fn describe() -> PluginInfo {
        plugin_info(
            "just",
            "0.1.0",
            vec![verb(
                "just.run",
                VerbKind::Spawn,
                "Run a justfile recipe as a job; help \"just.run:<recipe>\" gives its params",
                Schema::new().param("target", Param::string("the recipe to run").min_length(1).required()),
            )
            .programs(&["just"])
            // A recipe is the repository's code: it may do anything its
            // author wrote, from writing files to fetching.
            .effects(&[Effect::ReadsRepo, Effect::WritesRepo, Effect::RunsRepoCode, Effect::LongRunning, Effect::Network, Effect::Destructive])
            .two_stage()
            .result_schema(json!({ "type": "object", "required": ["success", "exit_code", "stdout_tail", "stderr_tail"] }))],
        )
    }

    fn resolve_plan(verb: &str, _target: &str) -> Result<Command, OpError> {
        match verb {
            "just.run" => Ok(dump()),
            other => Err(errors::unknown_verb(other)),
        }
    }

    fn resolve(verb: &str, target: &str, outcome: &Outcome) -> Result<Resolved, OpError> {
        if verb != "just.run" {
            return Err(errors::unknown_verb(verb));
        }
        let recipes = recipes(outcome)?;
        if target.is_empty() {
            let list: Vec<Value> = recipes
                .iter()
                .map(|(name, r)| {
                    let params: Vec<Value> = r["parameters"].as_array().cloned().unwrap_or_default().iter().map(|p| p["name"].clone()).collect();
                    json!({ "name": name, "doc": r["doc"], "params": params })
                })
                .collect();
            return Ok(Resolved {
                params_schema: Schema::new().param("target", Param::string("the recipe")).to_json(),
                summary: format!("{} recipes", list.len()),
                identity: json!({ "targets": list }).to_string(),
            });
        }
        let recipe = recipes.get(target).ok_or_else(|| {
            let names: Vec<&str> = recipes.keys().map(String::as_str).collect();
            errors::op_error(
                "not_found",
                &format!("the justfile has no public recipe `{target}` (recipes: {})", names.join(", ")),
                Some(json!({ "target": target, "recipes": names })),
            )
        })?;
        Ok(Resolved {
            params_schema: recipe_schema(target, recipe).to_string(),
            summary: recipe["doc"].as_str().map(str::to_string).unwrap_or_else(|| format!("recipe `{target}`")),
            identity: recipe.to_string(),
        })
    }

    fn plan(verb: &str, args: &Args) -> Result<Plan, OpError> {
        if verb != "just.run" {
            return Err(errors::unknown_verb(verb));
        }
        let target = args.req_str("target")?;
        // Parameters go in the order the schema lists them: the host
        // validated the args against this very recipe a moment ago.
        let mut c = cmd("just").value(target);
        let order: Vec<String> = args.as_map().keys().filter(|k| *k != "target").cloned().collect();
        for name in order {
            match args.get(&name) {
                Some(Value::String(s)) => c = c.value(s.clone()),
                Some(Value::Array(items)) => {
                    for i in items {
                        c = c.value(i.as_str().unwrap_or_default().to_string());
                    }
                }
                _ => {}
            }
        }
        Ok(Plan::Spawn(c.into()))
    }

    fn map_result(_verb: &str, _args: &Args, outcome: &Outcome) -> Result<Value, OpError> {
        if outcome.is_running() {
            return Ok(json!({}));
        }
        let tail = |b: &[u8]| {
            let start = b.len().saturating_sub(OUTPUT_TAIL);
            String::from_utf8_lossy(&b[start..]).into_owned()
        };
        Ok(json!({
            "success": outcome.exit_code == Some(0),
            "exit_code": outcome.exit_code,
            "stdout_tail": tail(&outcome.stdout),
            "stderr_tail": tail(&outcome.stderr),
        }))
    }
}

verbgate_plugin_sdk::plugin!(Just);
