"""The ``a2ad`` command: ``serve`` runs a server (``worker`` runs the agents of
a ``serve --no-run`` front); ``send``, ``tasks …`` and
``card`` talk to any A2A server; ``usage`` reads an a2ad server's token usage;
``mcp`` serves the task tools to an MCP client; ``auth add-key`` makes the API
keys ``serve --auth`` takes; ``demo`` serves the lab's agents; ``config show``
prints what ``serve`` would run with (``config`` also gives ``serve`` and
``worker`` their ``--config`` file and ``A2AD_*`` variables); ``health`` asks
a server's ``/healthz`` or ``/readyz``, for container health checks.

One module per command group, imported only when its command runs (``lazy``);
``remote`` holds what the client commands share, ``output`` how they print,
``logs`` the server's JSON log lines.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import typer

from .help import Group
from .lazy import Lazy, LazyGroup

__all__ = ["app", "main"]


class _A2ad(Group, LazyGroup):
    # Each command's module is imported when that command runs (cli/lazy.py says why);
    # options shown as typed, and plain help when piped (cli/help.py).
    lazy: ClassVar[Mapping[str, Lazy]] = {
        "serve": Lazy("serve", "serve", cls="config:ConfiguredCommand"),
        "worker": Lazy("worker", "worker", cls="config:ConfiguredCommand"),
        "demo": Lazy("demo", "demo"),
        "mcp": Lazy("mcp", "mcp"),
        "send": Lazy("send", "send"),
        "tasks": Lazy("tasks", "tasks_app"),
        "card": Lazy("card", "card"),
        "usage": Lazy("usage", "usage"),
        "auth": Lazy("auth", "auth_app"),
        "config": Lazy("config", "config_app"),
        "health": Lazy("health", "health"),
    }


app = typer.Typer(
    name="a2ad",
    help="a2ad: an A2A task server. `a2ad serve` starts one; send, tasks and card talk to one.",
    no_args_is_help=True,
    cls=_A2ad,
)


@app.callback()
def _root() -> None:
    """a2ad: an A2A (Agent2Agent protocol) task server."""


def main() -> None:
    app()
