"""The agent card: one document that 1.0 and 0.3 clients both read.

1.0 clients read ``supportedInterfaces`` (one entry per binding and version we
serve); 0.3 clients read ``url``, ``protocolVersion``, ``preferredTransport`` and
``additionalInterfaces``. Each side ignores the other's fields, as both specs ask.
The document is the 1.0 card plus the 0.3 card's fields the 1.0 one lacks; where
both have a field in different shapes, it carries both: each security scheme is
the 1.0 oneof member plus the 0.3 ``type`` and fields beside it, each skill has
``security`` beside ``securityRequirements``. ``render_card`` gives the card of
one version alone (the extended card is answered that way, and the public card
to a request that names its version: well_known.py says when each is served).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple
from urllib.parse import urlsplit

import msgspec

from ..agent import Agent
from ..protocol.card import AgentCardInfo, SecurityScheme, card_v1
from ..protocol.v03 import card_to_03
from .extensions import SERVER_EXTENSIONS
from .types import Scope, header

__all__ = ["Interface", "agent_card", "base_url", "render_card", "with_security"]


class Interface(NamedTuple):
    """A binding served on a port of its own (gRPC), which the cards list after
    JSON-RPC and HTTP+JSON: at ``host:port``, where ``host`` is the one the
    card's reader reached the server by; or at ``address`` when given (the
    public address of a proxy in front of the port)."""

    binding: str
    version: str
    port: int
    address: str = ""

    def url(self, base: str) -> str:
        """Its bare ``host:port``, for a card served at ``base``."""
        if self.address:
            return self.address
        host = urlsplit(base).hostname or "127.0.0.1"
        if ":" in host and not host.startswith("["):  # an IPv6 address
            host = f"[{host}]"
        return f"{host}:{self.port}"


def _interfaces(base: str, more: Sequence[Interface]) -> list[dict[str, str]]:
    url = base.rstrip("/") + "/"
    # HTTP+JSON at the same URL: its paths (/message:send, /v1/message:send)
    # never collide with JSON-RPC's (/, /a2a).
    return [
        {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
        {"url": url, "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
        {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
        {"url": url, "protocolBinding": "HTTP+JSON", "protocolVersion": "0.3"},
        *(
            {"url": one.url(base), "protocolBinding": one.binding, "protocolVersion": one.version}
            for one in more
        ),
    ]


def render_card(
    info: AgentCardInfo,
    base: str,
    version: str,
    *,
    extended_card: bool,
    push: bool = True,
    interfaces: Sequence[Interface] = (),
) -> dict[str, Any]:
    """The card of ``info`` served at ``base``, in A2A ``version`` ("1.0" or "0.3");
    ``push``: whether the server delivers push notifications (its store keeps
    webhooks); ``interfaces``: the bindings served on ports of their own."""
    capabilities = {"streaming": True, "pushNotifications": push}
    if extended_card:
        capabilities["extendedAgentCard"] = True
    ours = SERVER_EXTENSIONS if push else ()  # a2ad's own are about push deliveries
    info = msgspec.structs.replace(info, extensions=(*info.extensions, *ours))
    card = card_v1(info, interfaces=_interfaces(base, interfaces), capabilities=capabilities)
    return card_to_03(card) if version == "0.3" else card


def with_security(info: AgentCardInfo, schemes: Mapping[str, SecurityScheme]) -> AgentCardInfo:
    """``info`` declaring the server's authentication ``schemes`` too (any one
    of them will do), beside the agent's own."""
    if not schemes:
        return info
    return info.replace(
        security_schemes={**info.security_schemes, **schemes},
        security_requirements=(
            *info.security_requirements,
            *({name: ()} for name in schemes),
        ),
    )


def agent_card(
    agent: Agent,
    base: str,
    *,
    schemes: Mapping[str, SecurityScheme] | None = None,
    push: bool = True,
    interfaces: Sequence[Interface] = (),
) -> dict[str, Any]:
    """The public card served at ``base``: the 1.0 card with the 0.3 one inside;
    it declares the server's authentication ``schemes``."""
    info = with_security(agent.card_info(), schemes or {})
    card = render_card(
        info,
        base,
        "1.0",
        extended_card=agent.has_extended_card,
        push=push,
        interfaces=interfaces,
    )
    old = card_to_03(card)
    for key, value in old.items():
        card.setdefault(key, value)
    if "securitySchemes" in card:
        card["securitySchemes"] = {
            name: {**old["securitySchemes"][name], **scheme}
            for name, scheme in card["securitySchemes"].items()
        }
    card["skills"] = [
        {**skill, "security": then["security"]} if "security" in then else skill
        for skill, then in zip(card["skills"], old["skills"], strict=True)
    ]
    return card


def base_url(scope: Scope) -> str:
    """The URL the client reached the server at (scheme, host, root path)."""
    host = header(scope, b"host")
    if not host:
        server = scope.get("server") or ("127.0.0.1", 80)
        host = f"{server[0]}:{server[1]}"
    root = scope.get("root_path", "")
    return f"{scope.get('scheme', 'http')}://{host}{root}"
