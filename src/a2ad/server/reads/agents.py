"""``GET /agents``: the agents a server hosts, so a client or an orchestrator can
find them (a2ad's own, beside A2A's cards).

Each agent with its name, its description, whether it is the one at ``/`` too,
where it is served (its JSON-RPC URL, the base of its HTTP+JSON paths) and its
card, and its skills (id, name, description, tags). The URLs start where the
caller reached the server (``Host``, the root path). With auth on, it is for
callers who proved who they are, as the 404 naming a server's agents is.
"""

from __future__ import annotations

import msgspec

from ...engine import Engine
from ...protocol.dialect import CARD_PATHS
from ...protocol.errors import A2AError, InvalidRequestError
from ..card import base_url
from ..errors import error_body
from ..types import Scope, Send, respond

__all__ = ["AGENTS_PATH", "AgentsEndpoint"]

AGENTS_PATH = "/agents"

_encode = msgspec.json.Encoder().encode


class AgentsEndpoint:
    """Answers ``GET /agents`` for ``engine``'s agents."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def __call__(self, scope: Scope, send: Send) -> None:
        if scope["method"] not in ("GET", "HEAD"):
            error: A2AError = InvalidRequestError(
                f"{scope['method']} {AGENTS_PATH}: the agents' index takes GET"
            )
            await respond(send, 405, error_body(error, v03=False), headers=[(b"allow", b"GET")])
            return
        await respond(send, 200, _encode({"agents": self.index(base_url(scope))}))

    def index(self, base: str) -> list[dict[str, object]]:
        """Each agent as the index lists it, for a server reached at ``base``."""
        engine, listed = self.engine, []
        for key, agent in engine.agents.items():
            where = f"{base}/agents/{key}/" if key else f"{base}/"
            info = agent.card_info()
            listed.append(
                {
                    "name": key or info.name,
                    "description": info.description,
                    "default": key == engine.default_agent,
                    "url": where,
                    "card": where + CARD_PATHS[0].lstrip("/"),
                    "skills": [
                        {
                            "id": skill.id,
                            "name": skill.name,
                            "description": skill.description,
                            "tags": list(skill.tags),
                        }
                        for skill in info.skills
                    ],
                }
            )
        return listed
