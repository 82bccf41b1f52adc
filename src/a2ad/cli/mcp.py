"""``a2ad mcp``: the task tools for an MCP client, over stdio."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

__all__ = ["mcp"]


def mcp(
    url: Annotated[
        str, typer.Option(envvar="A2AD_URL", help="The A2A server the tools manage.")
    ] = "http://127.0.0.1:8000",
    token: Annotated[
        str | None, typer.Option(envvar="A2AD_TOKEN", help="Bearer token for that server.")
    ] = None,
) -> None:
    """Serve the task tools (list, get, cancel, cancel overdue) to an MCP client over stdio."""
    from ..tools.mcp import run_stdio

    try:
        run_stdio(url, token)
    except RuntimeError as exc:
        Console(stderr=True).print(f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True)
        raise typer.Exit(1) from None
