"""The public agent card at its well-known paths, by version, cacheable.

Which card a request gets is the version it asks for (``A2A-Version``, the header
or the query parameter, as for every other request):

- ``1.0`` (or ``1.0.x``): the 1.0 card alone, with no field the 1.0 AgentCard lacks;
- ``0.3``: the 0.3 card alone;
- none: the combined card (card.py), the 1.0 card with the 0.3 fields beside.
  The spec says a missing version means 0.3, so this is a 0.3 answer; it carries
  the 1.0 fields too because clients fetch the card before they choose a
  version. The official a2a-sdk 1.x ``A2ACardResolver`` sends no ``A2A-Version``
  and reads ``supportedInterfaces``; 0.3 clients (a2a-sdk 0.3.x, whose models
  skip unknown fields) read ``url`` and ``preferredTransport``. Both find theirs.
- any other: 400 with the VersionNotSupported error every request gets for it,
  as a google.rpc.Status (the HTTP+JSON binding's error body: the card is HTTP).

Every answer says ``Vary: A2A-Version``. Each variant has its own ETag (a hash of
its body). ``Last-Modified`` is when the app was created, which is when its card
was fixed. ``If-None-Match`` (weak comparison) gives 304 on a matching tag; only
without it, ``If-Modified-Since`` gives 304 when the card is not newer than the
date (RFC 9110 §13.2.2); an unparsable date is ignored.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from email.utils import format_datetime, parsedate_to_datetime
from typing import Any

import msgspec

from ..agent import Agent
from ..protocol.card import SecurityScheme
from ..protocol.dialect import dialect_of, requested_version
from ..protocol.errors import VersionNotSupportedError
from .card import Interface, agent_card, base_url, render_card, with_security
from .dispatch import version_text
from .errors import error_body
from .request import Headers
from .types import Scope, Send, header, respond, respond_empty

__all__ = ["CACHE_SECONDS", "CardEndpoint"]

CACHE_SECONDS = 300
_MAX_CACHED = 64  # one entry per Host a client used and variant; keep that bounded


class CardEndpoint:
    """Serves ``agent``'s public card, declaring the server's authentication
    ``schemes``; its ``last_modified`` is when it was made."""

    def __init__(
        self,
        agent: Agent,
        *,
        schemes: Mapping[str, SecurityScheme] | None = None,
        push: bool = True,
        interfaces: Sequence[Interface] = (),
    ) -> None:
        self.agent = agent
        self.schemes = dict(schemes or {})
        self.push = push  # the store keeps webhooks: the card says pushNotifications
        self.interfaces = tuple(interfaces)  # bindings on ports of their own (gRPC)
        # HTTP dates have whole seconds: a client echoing ours must compare equal.
        self.last_modified = datetime.now(UTC).replace(microsecond=0)
        self._headers = [
            (b"last-modified", format_datetime(self.last_modified, usegmt=True).encode()),
            (b"cache-control", b"public, max-age=%d" % CACHE_SECONDS),
            (b"vary", b"A2A-Version"),
        ]
        self._cache: dict[tuple[str, str | None], tuple[bytes, bytes]] = {}

    async def __call__(self, scope: Scope, send: Send) -> None:
        """Answer a GET (or HEAD) of the card: 200, 304 or 400."""
        text = version_text(Headers(scope["headers"]), scope.get("query_string", b""))
        try:
            version = dialect_of(requested_version(text)).version if text else None
        except VersionNotSupportedError as exc:
            await respond(
                send, exc.http_status, error_body(exc), headers=[(b"vary", b"A2A-Version")]
            )
            return
        body, etag = self._variant(base_url(scope), version)
        headers = [(b"etag", etag), *self._headers]
        if self._not_modified(scope, etag.decode()):
            await respond_empty(send, 304, headers=headers)
            return
        await respond(send, 200, body, headers=headers)

    def _variant(self, base: str, version: str | None) -> tuple[bytes, bytes]:
        key = (base, version)
        entry = self._cache.get(key)
        if entry is None:
            if len(self._cache) >= _MAX_CACHED:
                self._cache.clear()
            body = msgspec.json.encode(self._render(base, version))
            etag = b'"%s"' % hashlib.sha256(body).hexdigest()[:32].encode()
            entry = self._cache[key] = (body, etag)
        return entry

    def _render(self, base: str, version: str | None) -> dict[str, Any]:
        if version is None:
            return agent_card(
                self.agent,
                base,
                schemes=self.schemes,
                push=self.push,
                interfaces=self.interfaces,
            )
        info = with_security(self.agent.card_info(), self.schemes)
        return render_card(
            info,
            base,
            version,
            extended_card=self.agent.has_extended_card,
            push=self.push,
            interfaces=self.interfaces,
        )

    def _not_modified(self, scope: Scope, etag: str) -> bool:
        if_none_match = header(scope, b"if-none-match")
        if if_none_match:  # it alone decides when present (RFC 9110 §13.2.2)
            tags = [t.strip().removeprefix("W/") for t in if_none_match.split(",")]
            return etag in tags or "*" in tags
        since_text = header(scope, b"if-modified-since")
        if not since_text:
            return False
        try:
            since = parsedate_to_datetime(since_text)
        except (TypeError, ValueError):
            return False  # not an HTTP-date: ignored, as RFC 9110 §13.1.3 says
        if since.tzinfo is None:  # "-0000": UTC, source unknown
            since = since.replace(tzinfo=UTC)
        return self.last_modified <= since
