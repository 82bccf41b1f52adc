"""The tools as OpenAI function-calling schemas, and calling one by name.

``OPENAI_TOOLS`` describes the functions of ``a2ad.tools`` exactly (a test
checks every parameter against the signatures). ``bound_tools`` narrows them
for an agent that may only reach some servers, and ``acall_tool`` runs a call
as a model sends it (a name and JSON arguments), checking the arguments first,
so a model's mistake comes back to it as ``{"error": ...}`` it can correct.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from typing import Any

from ..protocol.model import TaskState
from .operations import (
    DEFAULT_LIMIT,
    DEFAULT_STALE_AFTER,
    MAX_LIMIT,
    Remote,
    cancel_overdue_tasks_on,
    cancel_task_on,
    get_task_on,
    list_tasks_on,
)

__all__ = ["OPENAI_TOOLS", "TOOL_NAMES", "acall_tool", "bound_tools"]

_SERVER_URL = {
    "type": "string",
    "description": "The A2A server's base URL (where its agent card is served); "
    "omit for the default server.",
}
_TASK_ID = {"type": "string", "description": "The task's id, as list_tasks shows it."}
_STATES = ["active", "all"] + [s.word for s in TaskState if s is not TaskState.UNSPECIFIED]


def _function(name: str, description: str, properties: dict[str, Any], required: list[str]) -> Any:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


# Of a server of several agents (a2ad serve --agent NAME=SPEC ...), whose tasks.
_AGENT = {
    "type": "string",
    "pattern": "^[A-Za-z0-9_-]{1,64}$",
    "description": "Of a server of several agents, the one whose tasks (it answers at "
    "server_url/agents/NAME/); omit for the agent at server_url.",
}

OPENAI_TOOLS: list[dict[str, Any]] = [
    _function(
        "list_tasks",
        "List tasks on an A2A server, newest first, as short summaries: id, state, contextId, "
        "updated (last status change), request (first words), and for an active task past its "
        "deadline or quiet for longer than stale_after, overdue (why). "
        "Returns {tasks, more} or {error}.",
        {
            "state": {
                "type": "string",
                "enum": _STATES,
                "description": "Which tasks: 'active' (submitted, working, input-required, "
                "auth-required), 'all' (the default), or one state.",
            },
            "context_id": {
                "type": "string",
                "description": "Only tasks of this conversation (contextId).",
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_LIMIT,
                "default": DEFAULT_LIMIT,
                "description": "How many tasks at most.",
            },
            "stale_after": {
                "type": "string",
                "default": DEFAULT_STALE_AFTER,
                "description": "Mark active tasks without a status change for this long as "
                "overdue: '90s', '10m', '2h', or 'off'.",
            },
            "server_url": _SERVER_URL,
            "agent": _AGENT,
        },
        [],
    ),
    _function(
        "get_task",
        "Show one task on an A2A server: its summary, its newest messages and its artifacts. "
        "Returns {task} or {error}.",
        {"task_id": _TASK_ID, "server_url": _SERVER_URL, "agent": _AGENT},
        ["task_id"],
    ),
    _function(
        "cancel_task",
        "Cancel one active task on an A2A server; its work stops. Returns {canceled, task} or "
        "{error} (for instance when the task has already ended).",
        {"task_id": _TASK_ID, "server_url": _SERVER_URL, "agent": _AGENT},
        ["task_id"],
    ),
    _function(
        "cancel_overdue_tasks",
        "Find the overdue tasks on an A2A server (active, i.e. submitted, working, "
        "input-required or auth-required, and past their deadline or without a status change "
        "for longer than stale_after) and cancel them, or with dry_run only list them. "
        "Returns {found, canceled, failed} or {error}.",
        {
            "stale_after": {
                "type": "string",
                "default": DEFAULT_STALE_AFTER,
                "description": "How long without a status change makes an active task overdue: "
                "'90s', '10m', '2h', or 'off' for deadlines only.",
            },
            "dry_run": {
                "type": "boolean",
                "default": False,
                "description": "true to only report what is overdue, canceling nothing.",
            },
            "server_url": _SERVER_URL,
            "agent": _AGENT,
        },
        [],
    ),
]

_ON: dict[str, Callable[..., Awaitable[dict[str, Any]]]] = {
    "list_tasks": list_tasks_on,
    "get_task": get_task_on,
    "cancel_task": cancel_task_on,
    "cancel_overdue_tasks": cancel_overdue_tasks_on,
}
TOOL_NAMES = tuple(_ON)
_PARAMETERS = {t["function"]["name"]: t["function"]["parameters"] for t in OPENAI_TOOLS}
_AGENT_NAME = re.compile(_AGENT["pattern"][1:-1])
_JSON_TYPES: dict[str, type] = {"string": str, "integer": int, "boolean": bool}


def bound_tools(servers: Sequence[str]) -> list[dict[str, Any]]:
    """``OPENAI_TOOLS`` for a caller that may reach only ``servers``: ``server_url``
    must be one of them (the first is the default)."""
    tools = copy.deepcopy(OPENAI_TOOLS)
    for tool in tools:
        tool["function"]["parameters"]["properties"]["server_url"] = {
            "type": "string",
            "enum": list(servers),
            "description": f"Which A2A server; omit for {servers[0]}.",
        }
    return tools


def _arguments(name: str, raw: Mapping[str, Any] | str | None) -> dict[str, Any]:
    """The call's arguments, checked against the schema; raises ValueError saying
    what is wrong. A null counts as absent (models send them for optionals)."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw or "{}")
        except ValueError:
            raise ValueError(f"{name}: the arguments are not valid JSON") from None
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise ValueError(f"{name}: the arguments must be a JSON object")
    schema = _PARAMETERS[name]
    properties: dict[str, Any] = schema["properties"]
    arguments = {key: value for key, value in raw.items() if value is not None}
    unknown = sorted(set(arguments) - set(properties))
    if unknown:
        raise ValueError(f"{name} takes no {', '.join(unknown)}; it takes {', '.join(properties)}")
    missing = [key for key in schema["required"] if key not in arguments]
    if missing:
        raise ValueError(f"{name} needs {', '.join(missing)}")
    for key, value in arguments.items():
        kind = properties[key]["type"]
        # bool is an int in Python but not in JSON Schema.
        wrong_bool = isinstance(value, bool) and kind != "boolean"
        if wrong_bool or not isinstance(value, _JSON_TYPES[kind]):
            raise ValueError(f"{name}: {key} must be a JSON {kind}, not {json.dumps(value)}")
    return arguments


async def acall_tool(
    name: str,
    arguments: Mapping[str, Any] | str | None,
    *,
    servers: Sequence[str],
    token: str | None = None,
    keep: Collection[str] = (),
) -> dict[str, Any]:
    """Run the tool ``name`` with ``arguments`` (a dict or its JSON text) as a model
    sends them, on one of ``servers`` (its ``server_url``, else the first),
    sending ``token`` (None: no token; the environment is not read).
    ``keep``: ids of tasks the call must not cancel (the caller's own task).
    Returns the tool's result, or ``{"error": ...}`` for a bad call."""
    if name not in _ON:
        return {"error": f"there is no tool {name!r}; the tools are {', '.join(TOOL_NAMES)}"}
    try:
        args = _arguments(name, arguments)
    except ValueError as exc:
        return {"error": str(exc)}
    url = str(args.pop("server_url", servers[0])).rstrip("/")
    if url not in [s.rstrip("/") for s in servers]:
        return {
            "error": f"server_url {url!r} is not a server this agent manages; "
            f"use one of {', '.join(servers)}"
        }
    agent = args.pop("agent", None)
    if agent is not None:
        if not _AGENT_NAME.fullmatch(agent):
            return {"error": f"agent {agent!r}: a name of 1 to 64 letters, digits, '-' or '_'"}
        url = f"{url}/agents/{agent}"
    if name == "cancel_task" and args["task_id"] in keep:
        return {
            "error": f"task {args['task_id']} is the one running this call; it can't cancel itself"
        }
    if name == "cancel_overdue_tasks":
        args["keep"] = keep
    return await _ON[name](Remote(url, token), **args)
