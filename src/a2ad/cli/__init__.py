"""The ``a2ad`` command: ``serve`` runs a server (``worker`` runs the agents of
a ``serve --no-run`` front); ``send``, ``tasks …`` and
``card`` talk to any A2A server; ``usage`` reads an a2ad server's token usage;
``mcp`` serves the task tools to an MCP client; ``auth add-key`` makes the API
keys ``serve --auth`` takes; ``demo`` serves the lab's agents; ``config show``
prints what ``serve`` would run with (``config`` also gives ``serve`` and
``worker`` their ``--config`` file and ``A2AD_*`` variables); ``health`` asks
a server's ``/healthz`` or ``/readyz``, for container health checks.

One module per command group; ``remote`` holds what the client commands share,
``output`` how they print, ``logs`` the server's JSON log lines.
"""

from __future__ import annotations

import typer

from . import auth, card, config, demo, health, mcp, send, serve, tasks, usage, worker
from .help import Group

__all__ = ["app", "main"]

app = typer.Typer(
    name="a2ad",
    cls=Group,  # options shown as typed; piped, plain help (help.py)
    help="a2ad: an A2A task server. `a2ad serve` starts one; send, tasks and card talk to one.",
    no_args_is_help=True,
)


@app.callback()
def _root() -> None:
    """a2ad: an A2A (Agent2Agent protocol) task server."""


app.command("serve", cls=config.ConfiguredCommand)(serve.serve)
app.command("worker", cls=config.ConfiguredCommand)(worker.worker)
app.command("demo")(demo.demo)
app.command("mcp")(mcp.mcp)
app.command("send")(send.send)
app.add_typer(tasks.tasks_app)
app.command("card")(card.card)
app.command("usage")(usage.usage)
app.add_typer(auth.auth_app)
app.add_typer(config.config_app)
app.command("health")(health.health)


def main() -> None:
    app()
