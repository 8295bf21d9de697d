"""The __NAME__ verbgate plugin, in Python (built with componentize-py).

A plugin never runs anything itself: `describe` declares its verbs, `plan`
turns a call's (already validated) args into a typed command, the host runs
it natively, and `map_result` turns the outcome into JSON.
"""

import json

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports.types import (
    Arg_Literal,
    Arg_Value,
    Command,
    OpError,
    PluginInfo,
    VerbKind,
    VerbPlan_Exec,
    VerbSpec,
)

# Closed schemas ("additionalProperties": false): the host refuses a
# misspelt parameter instead of silently ignoring it.
HELLO_PARAMS = {
    "type": "object",
    "properties": {"name": {"type": "string", "description": "who to greet"}},
    "required": ["name"],
    "additionalProperties": False,
}
HELLO_RESULT = {
    "type": "object",
    "properties": {"greeting": {"type": "string"}},
    "required": ["greeting"],
    "additionalProperties": False,
}


def op_error(code, message, details=None):
    """An error with a stable code (`invalid_args`, `exit_nonzero`, ...)."""
    return Err(OpError(code, message, None if details is None else json.dumps(details)))


def command(program, args):
    """A command with no cwd, env, stdin or timeout of its own."""
    return Command(program, args, None, [], None, None, False)


class Plugin(exports.Plugin):
    def describe(self):
        return PluginInfo(
            "__NAME__",
            "0.1.0",
            [
                VerbSpec(
                    name="__NS__.hello",
                    summary="Greet someone by name",
                    kind=VerbKind.EXEC,
                    params_schema=json.dumps(HELLO_PARAMS),
                    result_schema=json.dumps(HELLO_RESULT),
                    aliases=[],
                    # Only declared programs may run; operators map names to paths.
                    programs=["echo"],
                    two_stage=False,
                    # What running it can do (Effect.READS_REPO, WRITES_REPO,
                    # RUNS_REPO_CODE, LONG_RUNNING, NETWORK, DESTRUCTIVE): the
                    # operator's policy allows, asks or denies on these. `echo`
                    # touches nothing.
                    effects=[],
                    # Params whose values the audit trail must not record.
                    sensitive=[],
                )
            ],
        )

    def plan(self, verb, args):
        args = json.loads(args)
        if verb == "__NS__.hello":
            # Caller input goes in Arg_Value (or Arg_Path), never Arg_Literal:
            # the host refuses a value that could be read as an option.
            return VerbPlan_Exec(command("echo", [Arg_Literal("hello,"), Arg_Value(args["name"])]))
        raise op_error("unknown_verb", f"this plugin has no verb `{verb}`", {"verb": verb})

    def map_result(self, verb, args, outcome):
        if outcome.exit_code != 0:
            # The last 2 KiB: error messages are bounded (16 KiB by default).
            stderr = outcome.stderr.decode("utf-8", "replace")[-2048:].strip()
            raise op_error("exit_nonzero", f"the program exited with status {outcome.exit_code}: {stderr}",
                           {"exit_code": outcome.exit_code, "signal": outcome.signal, "stderr": stderr})
        return json.dumps({"greeting": outcome.stdout.decode("utf-8", "replace").strip()})

    def kill_plan(self, verb, entity):
        # No entity-aware kill: the host stops the job's process group.
        return None

    def resolve_plan(self, verb, target):
        raise op_error("unknown_verb", f"`{verb}` is not a two-stage verb", {"verb": verb})

    def resolve(self, verb, target, outcome):
        raise op_error("unknown_verb", f"`{verb}` is not a two-stage verb", {"verb": verb})
