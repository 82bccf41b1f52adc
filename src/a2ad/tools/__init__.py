"""Tools for LLM agents: list, inspect and cancel tasks on any A2A server.

``list_tasks``, ``get_task``, ``cancel_task`` and ``cancel_overdue_tasks`` are
plain blocking functions with typed parameters and Google-style docstrings,
usable as they are by frameworks that take Python callables as tools. Inside an
event loop use their coroutines ``alist_tasks``... ``OPENAI_TOOLS`` holds their
OpenAI function-calling schemas; ``acall_tool`` runs a call as a model sends it.
Every tool returns a dict of plain JSON values; a failure is ``{"error": ...}``
saying what went wrong and what to do. See docs/tools.md.
"""

from .operations import (
    ENV_TOKEN,
    ENV_URL,
    acancel_overdue_tasks,
    acancel_task,
    aget_task,
    alist_tasks,
)
from .schemas import OPENAI_TOOLS, TOOL_NAMES, acall_tool, bound_tools
from .sync import cancel_overdue_tasks, cancel_task, get_task, list_tasks

__all__ = [
    "ENV_TOKEN",
    "ENV_URL",
    "OPENAI_TOOLS",
    "TOOL_NAMES",
    "acall_tool",
    "acancel_overdue_tasks",
    "acancel_task",
    "aget_task",
    "alist_tasks",
    "bound_tools",
    "cancel_overdue_tasks",
    "cancel_task",
    "get_task",
    "list_tasks",
]
