"""What a log line is about: the request being served and the agent turn being
run, kept in context variables so that every line logged while they last (the
server's own and the agent's, through plain ``logging``) can name them.

The app (server/app.py) sets ``request`` for each HTTP request it observes;
the engine's turn observer (engine/turn_log.py) sets ``turn`` in each turn's
asyncio task. A turn started by a request runs in a copy of the
request's context, so its lines carry the request's id and principal too. The
log formatter (cli/logs.py) reads them through ``fields``. This module imports
nothing of a2ad's (only msgspec), so any layer may use it.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Protocol

import msgspec

__all__ = ["CONTEXT_FIELDS", "Request", "Turn", "fields", "request", "turn"]

# The keys a line may carry from its context, in the order they are written.
CONTEXT_FIELDS = ("task_id", "context_id", "agent", "request_id", "principal")


class Request(Protocol):
    """The request being served, as the server's RequestRecord offers it; read
    when a line is written, so what is learnt later (the principal, once
    authenticated; the task) is on the lines written after that."""

    request_id: str
    principal: str
    agent: str
    task_id: str
    context_id: str
    status: int  # the response's HTTP status, noted as it starts (server/types.py)
    started: float  # time.perf_counter() as it arrived (metrics: when a new task was asked for)


class Turn(msgspec.Struct, frozen=True, gc=False):
    """The agent turn being run (a Struct, made in C: every turn makes one)."""

    task_id: str
    context_id: str
    agent: str


request: ContextVar[Request | None] = ContextVar("a2ad_log_request", default=None)
turn: ContextVar[Turn | None] = ContextVar("a2ad_log_turn", default=None)


def fields() -> dict[str, str]:
    """The context of a line written now: those of ``CONTEXT_FIELDS`` that are
    known (empty ones left out), the turn's over the request's."""
    found: dict[str, str] = {}
    asked = request.get()
    about = turn.get() or asked  # what the line is about: the turn, else the request
    if about is not None:
        for name in ("task_id", "context_id", "agent"):
            if value := getattr(about, name):
                found[name] = value
    if asked is not None:
        for name in ("request_id", "principal"):
            if value := getattr(asked, name):
                found[name] = value
    return found
