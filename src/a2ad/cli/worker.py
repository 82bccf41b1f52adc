"""``a2ad worker``: run the agents of tasks that fronts (``a2ad serve --no-run``)
left in a PostgreSQL store; stop cleanly on Ctrl-C or SIGTERM.

On the first signal the worker takes no more tasks and gives the turns it runs
``--shutdown-grace`` to finish; those left then fail, saying the server shut
down. A second Ctrl-C cuts the grace short; a third stops at once (the tasks
still running are failed by upkeep once their lease runs out).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import Coroutine
from typing import Annotated, Any

import typer
from rich.markup import escape

from ..agent import Agent
from ..client.client import DEFAULT_URL
from ..durations import parse_duration
from ..engine import AgentStartError, Engine
from ..engine.delegation import Delegations
from ..engine.secrets import KeyFileError, read_or_create_key
from ..engine.turn_log import TurnLogContext
from ..engine.worker import Worker
from ..store import store_from_url
from ..store.base import MAX_ARTIFACTS, MAX_HISTORY, StoreError
from ..tools import ENV_URL
from .agent_threads import AGENT_THREADS, AgentThreadsOption
from .config import DURATION, ENV_AGENTS
from .logs import configure_logging, keep_logging
from .serve import _duration, _load_agents, workers_store
from .startup import STARTUP_FAILURE
from .terminal import make_console

__all__ = ["worker"]

console = make_console(stderr=True)


def worker(
    store: Annotated[
        str,
        typer.Option(
            help="The PostgreSQL store the fronts share: postgresql://user@host:5432/db "
            "(the same URL as theirs).",
        ),
    ],
    agent: Annotated[
        list[str] | None,
        typer.Option(
            envvar=ENV_AGENTS,
            help="'echo', 'demo', or package.module:attr: the agent the front serves. Repeat as "
            "NAME=SPEC for several, named as the front names them. Default: echo.",
        ),
    ] = None,
    concurrency: Annotated[
        int,
        typer.Option(min=1, help="Most tasks this worker runs at once; more wait for a slot."),
    ] = 8,
    agent_threads: AgentThreadsOption = AGENT_THREADS,
    lease_seconds: Annotated[
        float,
        typer.Option(
            min=0.5,
            help="Tasks of a worker that died (no heartbeat for this long) are failed.",
        ),
    ] = 15.0,
    shutdown_grace: Annotated[
        str,
        typer.Option(
            metavar=DURATION,
            help="On Ctrl-C/SIGTERM, how long running tasks may finish before they fail.",
        ),
    ] = "10s",
    max_history: Annotated[
        int,
        typer.Option(
            min=1, max=MAX_HISTORY, help="Messages a task keeps (as the front's --max-history)."
        ),
    ] = MAX_HISTORY,
    max_artifacts: Annotated[
        int,
        typer.Option(
            min=1,
            max=MAX_ARTIFACTS,
            help="Artifacts a task keeps (as the front's --max-artifacts).",
        ),
    ] = MAX_ARTIFACTS,
    log_level: Annotated[str, typer.Option(help="debug, info, warning or error.")] = "info",
    log_format: Annotated[
        str,
        typer.Option(help="json (for machines) or text (for people), as for a2ad serve."),
    ] = "json",
    model: Annotated[
        str | None,
        typer.Option(help="The LLM an LLM-backed agent uses, instead of A2AD_MODEL."),
    ] = None,
    secret_key_file: Annotated[
        str | None,
        typer.Option(
            envvar="A2AD_SECRET_KEY_FILE",
            help="The fronts' --secret-key-file (it must exist): with it, an agent that calls "
            "agents of its own server does so as its caller (ctx.delegation_token).",
        ),
    ] = None,
) -> None:
    """Run the agents of tasks that `a2ad serve --no-run` fronts store in PostgreSQL."""
    try:
        configure_logging(log_level, log_format=log_format)
    except ValueError as exc:
        console.print(f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True)
        raise typer.Exit(2) from None
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        grace = _duration(parse_duration, shutdown_grace, "--shutdown-grace")
        task_store = store_from_url(store)
        workers_store(task_store, "a2ad worker")
        # The front's address, for agents that call their own server: $A2AD_URL.
        agents = _load_agents(
            agent or ["echo"], None, os.environ.get(ENV_URL) or DEFAULT_URL, model
        )
        delegations = _delegations(secret_key_file)
    except ValueError as exc:
        console.print(f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True)
        raise typer.Exit(2) from None
    keep_logging()  # an agent's library may have reconfigured logging as it loaded
    engine = Engine(
        agents,
        task_store,
        lease_seconds=lease_seconds,
        shutdown_grace=grace,
        max_history=max_history,
        max_artifacts=max_artifacts,
        deliver_push=False,  # the fronts deliver: they hold the key webhook secrets need
        agent_threads=agent_threads,
    )
    engine.turn_observers.append(TurnLogContext(engine.agents))  # log lines name the task
    engine.delegations = delegations
    banner = [
        f"a2ad worker running {_what(engine.agents)} "
        f"(store {escape(getattr(task_store, 'url', store))}, "
        f"at most {concurrency} at once, lease {lease_seconds:g} s)",
        "  Press Ctrl-C to stop.",
    ]
    code = _run(_work(engine, Worker(engine, concurrency=concurrency), banner))
    if code:
        raise typer.Exit(code)
    console.print("a2ad worker stopped.")


def _delegations(key_file: str | None) -> Delegations | None:
    """The fronts' delegation tokens, with their secret key; None without it.
    Raises ValueError for a file that is missing (a key made here would not be
    theirs) or wrong."""
    if key_file is None:
        return None
    if not os.path.exists(key_file):
        raise ValueError(
            f"--secret-key-file {key_file}: no such file; give the key file the fronts "
            "were started with (a2ad serve --secret-key-file)"
        )
    try:
        return Delegations(read_or_create_key(key_file))
    except KeyFileError as exc:
        raise ValueError(f"--secret-key-file: {exc}") from None


def _run(main: Coroutine[Any, Any, int]) -> int:
    """Run ``main`` on uvloop where it is installed (as uvicorn runs ``serve``)."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(main)
    return uvloop.run(main)


def _what(agents: dict[str, Agent]) -> str:
    if len(agents) == 1 and "" in agents:
        return f"agent [bold]{escape(agents[''].name)}[/bold]"
    return "agents " + ", ".join(f"[bold]{escape(name)}[/bold]" for name in agents)


async def _work(engine: Engine, work: Worker, banner: list[str]) -> int:
    """Run until a signal, then stop in order; the exit status."""
    loop = asyncio.get_running_loop()
    stopping = asyncio.Event()
    signals = 0
    main = asyncio.current_task()
    assert main is not None

    def on_signal(sig: signal.Signals) -> None:
        nonlocal signals
        signals += 1
        if signals == 1:
            stopping.set()
        elif sig == signal.SIGINT and signals == 2:
            engine.begin_shutdown(graceful=False)  # cut the grace short
        elif sig == signal.SIGINT:
            main.cancel()  # don't wait for anything

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, on_signal, sig)
    try:
        try:
            await engine.start()
        except (StoreError, AgentStartError) as exc:
            console.print(f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True)
            await engine.aclose()
            return STARTUP_FAILURE
        running = asyncio.ensure_future(work.run())
        stop = asyncio.ensure_future(stopping.wait())
        listening = asyncio.ensure_future(work.listening.wait())
        await asyncio.wait({running, stop, listening}, return_when=asyncio.FIRST_COMPLETED)
        if listening.done():
            for line in banner:
                console.print(line)
            await asyncio.wait({running, stop}, return_when=asyncio.FIRST_COMPLETED)
        listening.cancel()
        if running.done():  # it ends only when stopped, or when it can't listen
            stop.cancel()
            failure = running.exception()
            console.print(f"[red]error:[/red] {escape(str(failure))}", soft_wrap=True)
            await engine.aclose()
            return STARTUP_FAILURE
        work.stop()
        await running
        await engine.shutdown(graceful=True)
        await work.aclose()
        await engine.aclose()
        return 0
    except asyncio.CancelledError:
        return 1
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
