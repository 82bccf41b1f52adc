"""The extension headers: what a request activates, and the answer's echo.

A request lists the extension URIs it activates in ``A2A-Extensions`` (0.3
clients send ``X-A2A-Extensions``; both are read, whatever the version), comma
separated, in one header or several. The answer names those the agent took up
in the header of the request's version.
"""

from __future__ import annotations

from .types import Scope

__all__ = ["echo_headers", "requested_extensions"]

_NAMES = (b"a2a-extensions", b"x-a2a-extensions")


def requested_extensions(scope: Scope) -> frozenset[str]:
    """The URIs the request's extension headers list. (A binding need not read
    them for an agent that declares no extension: nothing could be activated.)"""
    found: set[str] = set()
    for key, value in scope["headers"]:
        if key in _NAMES:
            found.update(u for u in (v.strip() for v in value.decode("latin-1").split(",")) if u)
    return frozenset(found)


def echo_headers(version: str, activated: frozenset[str]) -> list[tuple[bytes, bytes]]:
    """The response header naming the ``activated`` extensions, if any."""
    if not activated:
        return []
    name = b"x-a2a-extensions" if version == "0.3" else b"a2a-extensions"
    return [(name, ", ".join(sorted(activated)).encode("latin-1"))]
