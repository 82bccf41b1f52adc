"""``--agent-threads``, shared by ``a2ad serve`` and ``a2ad worker``: how many
threads blocking agent code may run in at once (engine/agent_threads.py)."""

from __future__ import annotations

from typing import Annotated

import typer

__all__ = ["AGENT_THREADS", "AgentThreadsOption"]

AGENT_THREADS = 64

AgentThreadsOption = Annotated[
    int,
    typer.Option(
        min=1,
        help="Threads for blocking agent code (plain sync functions, asyncio.to_thread): "
        "that many such tasks run at once, more wait for a thread. A CPU-bound one slows "
        "every request (the GIL); run heavy work in processes.",
        rich_help_panel="Limits",
    ),
]
