"""What the client commands (``send``, ``tasks …``, ``card``) share: the options
that name the server, one ``Client`` on an ``asyncio.Runner`` for the length of a
command, and how a failure, a bad flag or Ctrl-C ends the command.

A failure prints one line on stderr and exits 1; a bad flag value exits 2;
Ctrl-C exits 130 and leaves tasks running.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypeVar

import typer

from ..client import Client, ClientError
from ..client.grpc_transport import is_grpc_url
from ..client.overdue import parse_stale_after
from ..durations import parse_duration
from ..protocol.errors import A2AError, TaskNotFoundError
from ..protocol.model import TaskState, parse_state
from .output import console_for, fail

__all__ = [
    "INTERRUPTED_EXIT",
    "A2AVersion",
    "Binding",
    "BindingOption",
    "JsonOption",
    "Session",
    "Target",
    "TokenOption",
    "UrlOption",
    "VersionOption",
    "duration_flag",
    "exit_for",
    "left_running",
    "session",
    "stale_flag",
    "state_flag",
]

T = TypeVar("T")

# A task that ended this way makes `send` and `tasks watch` exit 1.
UNSUCCESSFUL = frozenset({TaskState.FAILED, TaskState.REJECTED, TaskState.CANCELED})
INTERRUPTED_EXIT = 130  # as a shell reports a command stopped by Ctrl-C


class A2AVersion(enum.StrEnum):
    V1 = "1.0"
    V03 = "0.3"


class Binding(enum.StrEnum):
    JSONRPC = "jsonrpc"
    GRPC = "grpc"


# The options every client command takes (after the command's name).
UrlOption = Annotated[
    str,
    typer.Option(
        "--url",
        envvar="A2AD_URL",
        help="Base URL of the A2A server, or grpc://HOST:PORT (grpcs:// for TLS) for gRPC.",
    ),
]
AgentOption = Annotated[
    str | None,
    typer.Option(
        "--agent",
        envvar="A2AD_AGENT",
        help="Of a server of several agents, the one to talk to (at URL/agents/NAME/). "
        "Default: the one at URL.",
    ),
]
TokenOption = Annotated[
    str | None,
    typer.Option("--token", envvar="A2AD_TOKEN", help="Sent as 'Authorization: Bearer TOKEN'."),
]
VersionOption = Annotated[
    A2AVersion | None,
    typer.Option(
        "--a2a-version",
        envvar="A2AD_A2A_VERSION",
        help="Speak A2A 1.0 or 0.3. Default: what the agent card offers (1.0 first).",
    ),
]
BindingOption = Annotated[
    Binding | None,
    typer.Option(
        "--binding",
        envvar="A2AD_BINDING",
        help="jsonrpc, or grpc: A2A over gRPC (1.0 unless --a2a-version 0.3), at the address "
        "the agent card gives. "
        "Default: grpc for a grpc:// URL, else jsonrpc.",
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]


@dataclass(frozen=True)
class Target:
    """Which server to talk to, and how."""

    server: str
    token: str | None
    version: A2AVersion | None
    agent: str | None = None
    binding: Binding | None = None

    @property
    def url(self) -> str:
        """The agent's URL: the server's, or beneath it for a named ``agent``."""
        if not self.agent:
            return self.server
        return f"{self.server.rstrip('/')}/agents/{self.agent}/"

    def client(self, timeout: float) -> Client:
        """The client; a flag that does not fit (a gRPC URL with --binding
        jsonrpc) ends the command with exit 2."""
        version: Literal["1.0", "0.3"] | None = None
        if self.version is not None:
            version = "1.0" if self.version is A2AVersion.V1 else "0.3"
        binding: Literal["jsonrpc", "grpc"] | None = None
        headers: dict[str, str] = {}
        if self.binding is not None:
            binding = "grpc" if self.binding is Binding.GRPC else "jsonrpc"
        if self.agent and binding == "grpc" and not is_grpc_url(self.server):
            # The card is the agent's (URL/agents/NAME/); its gRPC address is the server's.
            headers["a2ad-agent"] = self.agent
        try:
            return Client(
                self.url,
                token=self.token,
                version=version,
                binding=binding,
                headers=headers,
                timeout=timeout,
            )
        except ValueError as exc:
            fail(str(exc), code=2)


class Session:
    """One client on one event loop, for the length of a command."""

    def __init__(self, runner: asyncio.Runner, client: Client) -> None:
        self.runner = runner
        self.client = client

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self.runner.run(coro)


@contextlib.contextmanager
def session(
    target: Target,
    *,
    task_id: str | None = None,
    timeout: float = 30.0,
    interrupted: Callable[[], str] | None = None,
) -> Iterator[Session]:
    """A Session whose errors end the command with one line on stderr."""
    try:
        with asyncio.Runner() as runner:
            client = target.client(timeout)
            try:
                yield Session(runner, client)
            finally:
                runner.run(client.aclose())
    except ClientError as exc:
        fail(exc.message)
    except TaskNotFoundError:
        fail(
            f"task {task_id} not found on {target.url}; `a2ad tasks list` shows the tasks there"
            if task_id
            else f"{target.url} found no such task"
        )
    except A2AError as exc:
        about = f" about task {task_id}" if task_id else ""
        fail(f"{target.url} answered{about}: {exc.message} (A2A error {exc.code})")
    except KeyboardInterrupt:
        note = interrupted() if interrupted else "interrupted"
        console_for(stderr=True).print(note, soft_wrap=True)
        raise typer.Exit(INTERRUPTED_EXIT) from None


def duration_flag(text: str, flag: str) -> float:
    try:
        return parse_duration(text)
    except ValueError as exc:
        fail(f"{flag}: {exc}", code=2)


def stale_flag(text: str) -> float | None:
    """``--stale-after``: seconds, or None for ``off`` (deadlines only), as the tools read it."""
    try:
        return parse_stale_after(text)
    except ValueError as exc:
        fail(f"--stale-after: {exc}", code=2)


def state_flag(text: str) -> TaskState:
    try:
        return parse_state(text)
    except ValueError as exc:
        fail(f"--state: {exc}", code=2)


def left_running(task_id: str | None, what: str) -> str:
    if not task_id:
        return f"{what}; the task keeps running on the server (`a2ad tasks list` shows it)"
    return f"{what}; task {task_id} keeps running (`a2ad tasks cancel {task_id}` stops it)"


def exit_for(state: TaskState | None) -> int:
    return 1 if state in UNSUCCESSFUL else 0
