// The __NAME__ verbgate plugin, in JavaScript (built with componentize-js).
//
// A plugin never runs anything itself: `describe` declares its verbs, `plan`
// turns a call's (already validated) args into a typed command, the host runs
// it natively, and `mapResult` turns the outcome into JSON.
//
// Bindings: WIT records are objects with camelCase fields, enums are strings
// ('exec'), variants are { tag, val }, `option` is a value or undefined, and
// a `result` error is returned by throwing the error record itself.

// Closed schemas ("additionalProperties": false): the host refuses a
// misspelt parameter instead of silently ignoring it.
const HELLO_PARAMS = {
  type: "object",
  properties: { name: { type: "string", description: "who to greet" } },
  required: ["name"],
  additionalProperties: false,
};
const HELLO_RESULT = {
  type: "object",
  properties: { greeting: { type: "string" } },
  required: ["greeting"],
  additionalProperties: false,
};

// An error with a stable code (`invalid_args`, `exit_nonzero`, ...).
function opError(code, message, details) {
  return { code, message, details: details === undefined ? undefined : JSON.stringify(details) };
}

// A command with no cwd, env, stdin or timeout of its own.
function command(program, args) {
  return { program, args, cwd: undefined, env: [], stdin: undefined, timeoutMs: undefined, truncateStdout: false };
}

export const plugin = {
  describe() {
    return {
      name: "__NAME__",
      version: "0.1.0",
      verbs: [
        {
          name: "__NS__.hello",
          summary: "Greet someone by name",
          kind: "exec",
          paramsSchema: JSON.stringify(HELLO_PARAMS),
          resultSchema: JSON.stringify(HELLO_RESULT),
          aliases: [],
          // Only declared programs may run; operators map names to paths.
          programs: ["echo"],
          twoStage: false,
          // What running it can do ("reads-repo", "writes-repo",
          // "runs-repo-code", "long-running", "network", "destructive"): the
          // operator's policy allows, asks or denies on these. `echo` touches
          // nothing.
          effects: [],
          // Params whose values the audit trail must not record.
          sensitive: [],
        },
      ],
    };
  },

  plan(verb, argsJson) {
    const args = JSON.parse(argsJson);
    if (verb === "__NS__.hello") {
      // Caller input goes in a `value` (or `path`) arg, never a `literal`:
      // the host refuses a value that could be read as an option.
      return { tag: "exec", val: command("echo", [{ tag: "literal", val: "hello," }, { tag: "value", val: args.name }]) };
    }
    throw opError("unknown_verb", `this plugin has no verb \`${verb}\``, { verb });
  },

  mapResult(verb, argsJson, outcome) {
    const text = (bytes) => new TextDecoder().decode(bytes).trim();
    if (outcome.exitCode !== 0) {
      // The last 2 KiB: error messages are bounded (16 KiB by default).
      const stderr = text(outcome.stderr).slice(-2048);
      throw opError("exit_nonzero", `the program exited with status ${outcome.exitCode}: ${stderr}`, {
        exit_code: outcome.exitCode ?? null,
        signal: outcome.signal ?? null,
        stderr,
      });
    }
    return JSON.stringify({ greeting: text(outcome.stdout) });
  },

  killPlan(verb, entity) {
    // No entity-aware kill: the host stops the job's process group.
    return undefined;
  },

  resolvePlan(verb, target) {
    throw opError("unknown_verb", `\`${verb}\` is not a two-stage verb`, { verb });
  },

  resolve(verb, target, outcome) {
    throw opError("unknown_verb", `\`${verb}\` is not a two-stage verb`, { verb });
  },
};
