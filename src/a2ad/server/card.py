"""The agent card: one document that 1.0 and 0.3 clients both read.

1.0 clients read ``supportedInterfaces`` (one entry per binding and version we
serve); 0.3 clients read ``url``, ``protocolVersion``, ``preferredTransport`` and
``additionalInterfaces``.
Each side ignores the other's fields, as both specs ask.
"""

from __future__ import annotations

import hashlib
from typing import Any

import msgspec

from ..agent import Agent
from .types import Scope, Send, header, respond

__all__ = ["CARD_PATHS", "agent_card", "serve_card"]

CARD_PATHS = ("/.well-known/agent-card.json", "/.well-known/agent.json")
CACHE_SECONDS = 300


def agent_card(agent: Agent, base_url: str) -> dict[str, Any]:
    url = base_url.rstrip("/") + "/"
    skills = [msgspec.to_builtins(s) for s in agent.skills] or [
        {"id": "default", "name": agent.name, "description": agent.description, "tags": ["general"]}
    ]
    return {
        "name": agent.name,
        "description": agent.description,
        "version": agent.version,
        # HTTP+JSON at the same URL: its paths (/message:send, /v1/message:send)
        # never collide with JSON-RPC's (/, /a2a).
        "supportedInterfaces": [
            {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": url, "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
            {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
            {"url": url, "protocolBinding": "HTTP+JSON", "protocolVersion": "0.3"},
        ],
        "capabilities": {"streaming": True, "pushNotifications": True},
        "defaultInputModes": list(agent.input_modes),
        "defaultOutputModes": list(agent.output_modes),
        "skills": skills,
        # A2A 0.3 fields:
        "url": url,
        "protocolVersion": "0.3.0",
        "preferredTransport": "JSONRPC",
        "additionalInterfaces": [
            {"url": url, "transport": "JSONRPC"},
            {"url": url, "transport": "HTTP+JSON"},
        ],
    }


def _base_url(scope: Scope) -> str:
    host = header(scope, b"host")
    if not host:
        server = scope.get("server") or ("127.0.0.1", 80)
        host = f"{server[0]}:{server[1]}"
    root = scope.get("root_path", "")
    return f"{scope.get('scheme', 'http')}://{host}{root}"


async def serve_card(
    scope: Scope, send: Send, agent: Agent, cache: dict[str, tuple[bytes, bytes]]
) -> None:
    """GET the card, with an ETag, Cache-Control and 304 on a matching If-None-Match."""
    base = _base_url(scope)
    entry = cache.get(base)
    if entry is None:
        if len(cache) > 64:  # one entry per Host a client used; keep that bounded
            cache.clear()
        body = msgspec.json.encode(agent_card(agent, base))
        etag = b'"%s"' % hashlib.sha256(body).hexdigest()[:32].encode()
        entry = cache[base] = (body, etag)
    body, etag = entry
    headers = [(b"etag", etag), (b"cache-control", b"public, max-age=%d" % CACHE_SECONDS)]
    tags = [t.strip() for t in header(scope, b"if-none-match").split(",")]
    if etag.decode() in tags or "*" in tags:
        await send({"type": "http.response.start", "status": 304, "headers": headers})
        await send({"type": "http.response.body", "body": b""})
        return
    await respond(send, 200, body, headers=headers)
