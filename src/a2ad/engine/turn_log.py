"""The log context of agent turns: a TurnObserver (invocation.py) that names the
task, its context and the agent on every line logged during a turn, the agent's
own ``logging`` lines among them (log_context.py). A turn runs in a copy of the
context of the request that started it, if any; that request is told the task."""

from __future__ import annotations

from collections.abc import Mapping
from contextvars import Token

from .. import log_context
from ..agent import Agent
from .invocation import Invocation

__all__ = ["TurnLogContext"]


class TurnLogContext:
    """``agents``: the engine's, by served name (``""`` for a lone agent, which
    lines then name by its own name)."""

    def __init__(self, agents: Mapping[str, Agent]) -> None:
        self._names = {served: served or agent.name for served, agent in agents.items()}

    def began(self, invocation: Invocation) -> Token[log_context.Turn | None]:
        asked = log_context.request.get()
        if asked is not None and not asked.task_id:
            # The request that started the turn got this task: its later lines and
            # its access line name it (a streaming send learns it no other way).
            asked.task_id, asked.context_id = invocation.task_id, invocation.context_id
        name = invocation.agent_name
        turn = log_context.Turn(
            invocation.task_id, invocation.context_id, self._names.get(name, name)
        )
        return log_context.turn.set(turn)

    def ended(self, invocation: Invocation, token: Token[log_context.Turn | None]) -> None:
        log_context.turn.reset(token)
