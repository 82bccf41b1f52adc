"""The extension headers: what a request activates, and the answer's echo.

A request lists the extension URIs it activates in ``A2A-Extensions`` (0.3
clients send ``X-A2A-Extensions``; both are read, whatever the version), comma
separated, in one header or several. The answer names those the agent took up
in the header of the request's version.
"""

from __future__ import annotations

from ..protocol.card import AgentExtension
from .request import Headers

__all__ = [
    "EXTENSIONS_HEADERS",
    "PUSH_DELIVERY",
    "SERVER_EXTENSIONS",
    "echo_headers",
    "requested_extensions",
]

# a2ad's own extension: the delivery status of each push config, in an extra
# member that strict ProtoJSON parsers (the official 0.3 SDK's REST client)
# would refuse, so it is sent only to clients that ask for it.
PUSH_DELIVERY = AgentExtension(
    uri="urn:a2ad:ext:push-delivery:v1",
    description=(
        "GetTaskPushNotificationConfig and ListTaskPushNotificationConfigs answer each "
        "config with `a2adDelivery`: pending, delivered, deadLettered and lastError"
    ),
)
SERVER_EXTENSIONS = (PUSH_DELIVERY,)  # declared on every card, beside the agent's

EXTENSIONS_HEADERS = (b"a2a-extensions", b"x-a2a-extensions")  # 1.0's, then 0.3's


def requested_extensions(headers: Headers) -> frozenset[str]:
    """The URIs the request's extension headers list. (A binding need not read
    them for an agent that declares no extension: nothing could be activated.)"""
    found: set[str] = set()
    for key, value in headers.pairs:
        if key in EXTENSIONS_HEADERS:
            found.update(u for u in (v.strip() for v in value.decode("latin-1").split(",")) if u)
    return frozenset(found)


def echo_headers(version: str, activated: frozenset[str]) -> list[tuple[bytes, bytes]]:
    """The response header naming the ``activated`` extensions, if any."""
    if not activated:
        return []
    name = b"x-a2a-extensions" if version == "0.3" else b"a2a-extensions"
    return [(name, ", ".join(sorted(activated)).encode("latin-1"))]
