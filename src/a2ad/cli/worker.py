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
from collections.abc import Coroutine
from typing import Annotated, Any

import typer
from rich.markup import escape

from ..agent import Agent
from ..assembly import assemble_engine
from ..client.client import DEFAULT_URL
from ..durations import parse_duration
from ..engine import AgentStartError, Engine
from ..engine.config import EngineConfig
from ..engine.delegation import Delegations
from ..engine.secrets import KeyFileError, read_or_create_key
from ..engine.worker import Worker
from ..settings import Observability
from ..store import store_from_url
from ..store.base import MAX_ARTIFACTS, MAX_HISTORY, StoreError
from ..tools import ENV_URL
from .agent_specs import load_agents
from .agent_threads import AGENT_THREADS, AgentThreadsOption
from .collector import settle_collector
from .config import DURATION, ENV_AGENTS
from .logs import configure_logging, keep_logging
from .serve import _fail, _find_modules_here
from .serve_options import UpstreamAuth
from .serve_settings import duration, workers_store
from .startup import STARTUP_FAILURE
from .terminal import make_console

__all__ = ["worker"]

console = make_console(stderr=True)


_Store = Annotated[
    str,
    typer.Option(
        help="The PostgreSQL store the fronts share: postgresql://user@host:5432/db "
        "(the same URL as theirs).",
    ),
]

_Agent = Annotated[
    list[str] | None,
    typer.Option(
        envvar=ENV_AGENTS,
        help="'echo', 'demo', or package.module:attr: the agent the front serves. Repeat as "
        "NAME=SPEC for several, named as the front names them. Default: echo.",
    ),
]

_Concurrency = Annotated[
    int,
    typer.Option(min=1, help="Most tasks this worker runs at once; more wait for a slot."),
]

_LeaseSeconds = Annotated[
    float,
    typer.Option(
        min=0.5,
        help="Tasks of a worker that died (no heartbeat for this long) are failed.",
    ),
]

_ShutdownGrace = Annotated[
    str,
    typer.Option(
        metavar=DURATION,
        help="On Ctrl-C/SIGTERM, how long running tasks may finish before they fail.",
    ),
]

_MaxHistory = Annotated[
    int,
    typer.Option(
        min=1, max=MAX_HISTORY, help="Messages a task keeps (as the front's --max-history)."
    ),
]

_MaxArtifacts = Annotated[
    int,
    typer.Option(
        min=1,
        max=MAX_ARTIFACTS,
        help="Artifacts a task keeps (as the front's --max-artifacts).",
    ),
]

_LogLevel = Annotated[str, typer.Option(help="debug, info, warning or error.")]

_LogFormat = Annotated[
    str,
    typer.Option(help="json (for machines) or text (for people), as for a2ad serve."),
]

_Model = Annotated[
    str | None,
    typer.Option(help="The LLM an LLM-backed agent uses, instead of A2AD_MODEL."),
]

_SecretKeyFile = Annotated[
    str | None,
    typer.Option(
        envvar="A2AD_SECRET_KEY_FILE",
        help="The fronts' --secret-key-file (it must exist): with it, an agent that calls "
        "agents of its own server does so as its caller (ctx.delegation_token).",
    ),
]


def worker(
    store: _Store,
    agent: _Agent = None,
    concurrency: _Concurrency = 8,
    agent_threads: AgentThreadsOption = AGENT_THREADS,
    lease_seconds: _LeaseSeconds = 15.0,
    shutdown_grace: _ShutdownGrace = "10s",
    max_history: _MaxHistory = MAX_HISTORY,
    max_artifacts: _MaxArtifacts = MAX_ARTIFACTS,
    log_level: _LogLevel = "info",
    log_format: _LogFormat = "json",
    model: _Model = None,
    secret_key_file: _SecretKeyFile = None,
    upstream_auth: UpstreamAuth = None,
) -> None:
    """Run the agents of tasks that `a2ad serve --no-run` fronts store in PostgreSQL."""
    try:
        configure_logging(log_level, log_format=log_format)
    except ValueError as exc:
        _fail(exc, 2)
    _find_modules_here()
    try:
        config = EngineConfig(
            lease_seconds=lease_seconds,
            shutdown_grace=duration(parse_duration, shutdown_grace, "--shutdown-grace"),
            max_history=max_history,
            max_artifacts=max_artifacts,
            deliver_push=False,  # the fronts deliver: they hold the key webhook secrets need
            agent_threads=agent_threads,
        )
        task_store = store_from_url(store)
        workers_store(task_store, "a2ad worker")
        # The front's address, for agents that call their own server: $A2AD_URL.
        front = os.environ.get(ENV_URL) or DEFAULT_URL
        agents = load_agents(agent or ["echo"], None, front, model, upstream_auth)
        delegations = _delegations(secret_key_file)
    except ValueError as exc:
        _fail(exc, 2)
    keep_logging()  # an agent's library may have reconfigured logging as it loaded
    # Log lines name the task (the request log's turn context); nothing is served here.
    seen = Observability(request_log=True)
    engine = assemble_engine(
        agents, task_store, config, observability=seen, delegations=delegations
    )
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
            settle_collector()
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
