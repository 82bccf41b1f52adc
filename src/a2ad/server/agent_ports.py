"""Each of some named agents at ``/`` on a port of its own, beside the server's
main port: a request that arrives on an agent's port is served as if sent to
``/agents/<name>/`` on the main one. Servers written one agent to a process (the
A2A lab's stock agent at ``:8101``, its pricing agent at ``:8102``) are then
reachable at the URLs their clients were written for, while the tasks stay in the
one server's store."""

from __future__ import annotations

from .app import AGENTS_PREFIX
from .types import ASGIApp, Receive, Scope, Send

__all__ = ["AgentPorts"]


class AgentPorts:
    """Wraps an a2ad app serving named agents; ``ports`` maps a local port to the
    agent served at ``/`` there. Paths already beneath ``/agents/`` pass as they
    are, so the URLs an agent's card names on its port work there too."""

    def __init__(self, app: ASGIApp, ports: dict[int, str]) -> None:
        self.app = app
        self._prefixes = {port: f"{AGENTS_PREFIX}{name}" for port, name in ports.items()}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            server = scope.get("server")
            prefix = self._prefixes.get(server[1]) if server else None
            if prefix is not None and not scope["path"].startswith(AGENTS_PREFIX):
                raw = scope.get("raw_path") or scope["path"].encode()
                scope = {**scope, "path": prefix + scope["path"], "raw_path": prefix.encode() + raw}
        await self.app(scope, receive, send)
