"""``a2ad mcp``: the task tools as an MCP server on stdin/stdout.

Any MCP client (Claude Desktop, an IDE, an agent framework) then gets
``list_tasks``, ``get_task``, ``cancel_task`` and ``cancel_overdue_tasks`` for
one A2A server, with the same arguments and answers as ``a2ad.tools``.
``server_url`` is limited to that server: the token configured here must not
be sent wherever a model points it. A tool's ``{"error": ...}`` answer is an
MCP result with ``isError`` set, so the model sees it and can correct itself.

The MCP SDK is optional (``pip install 'a2ad[mcp]'``) and imported only here,
when the server starts. Run it as ``python -m a2ad.tools.mcp --url URL``.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..client.client import DEFAULT_URL
from .operations import ENV_TOKEN, ENV_URL, Remote
from .schemas import acall_tool, bound_tools

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

__all__ = ["build_server", "main", "run_stdio"]

INSTRUCTIONS = (
    "Tools to list, inspect and cancel tasks on the A2A (Agent2Agent protocol) server at {url}. "
    "A task is active while submitted, working, input-required or auth-required; overdue when "
    "active and past its deadline or without a status change for longer than stale_after."
)


def _missing_sdk() -> RuntimeError:
    return RuntimeError(
        "the MCP server needs the MCP Python SDK, which is not installed: pip install 'a2ad[mcp]'"
    )


def build_server(server_url: str = DEFAULT_URL, token: str | None = None) -> Server[Any]:
    """The MCP server (not yet running) for the A2A server at ``server_url``,
    sending it ``token`` (None: no token). Raises RuntimeError if the MCP SDK is
    not installed."""
    try:
        import mcp.types as types
        from mcp.server.lowlevel import Server
    except ImportError:
        raise _missing_sdk() from None
    from .. import __version__

    url = server_url.rstrip("/")
    tools = [
        types.Tool(
            name=t["function"]["name"],
            description=t["function"]["description"],
            input_schema=t["function"]["parameters"],
        )
        for t in bound_tools([url])
    ]

    async def list_tools(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        result = await acall_tool(params.name, params.arguments, servers=[url], token=token)
        return types.CallToolResult(
            content=[types.TextContent(text=json.dumps(result))],
            structured_content=result,
            is_error="error" in result,
        )

    return Server(
        "a2ad",
        version=__version__,
        instructions=INSTRUCTIONS.format(url=url),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def run_stdio(server_url: str = DEFAULT_URL, token: str | None = None) -> None:
    """Serve the tools over MCP on stdin/stdout until the client closes them
    (blocking). See ``build_server`` for the arguments; raises RuntimeError
    saying ``pip install 'a2ad[mcp]'`` if the MCP SDK is not installed."""
    _serve_stdio(build_server(server_url, token))


def _serve_stdio(server: Server[Any]) -> None:
    import anyio
    from mcp.server.stdio import stdio_server

    async def serve() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(serve)


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m a2ad.tools.mcp [--url URL] [--token TOKEN]``."""
    parser = argparse.ArgumentParser(
        prog="python -m a2ad.tools.mcp",
        description="Serve a2ad's task tools over MCP on stdin/stdout.",
    )
    parser.add_argument(
        "--url",
        default=None,
        help=f"the A2A server's base URL (default ${ENV_URL}, else http://127.0.0.1:8000)",
    )
    parser.add_argument(
        "--token",
        default=None,
        help=f"bearer token for it (default ${ENV_TOKEN}, which keeps it out of `ps`)",
    )
    args = parser.parse_args(argv)
    # This is a command line, like `a2ad mcp`: the edge where the environment is read.
    remote = Remote.default(args.url, args.token)
    try:
        server = build_server(remote.url, remote.token)
    except RuntimeError as exc:
        parser.exit(1, f"error: {exc}\n")
    _serve_stdio(server)


if __name__ == "__main__":
    main()
