"""The task dashboard: a page served by a2ad itself at ``/ui`` (docs/dashboard.md).

No build step and nothing fetched from elsewhere: the page, its scripts (ES
modules: ``app.js``, the router, and the modules it imports, directly or not: the
views ``list.js``, ``task.js`` and ``agents.js`` and what they share) and its style
sheet are files of this package (``assets/``), read once when the app is made.
The page is an A2A client of the server that serves it: it lists, reads, cancels
and sends through the HTTP+JSON binding, and reads the agents' index
(``/agents``), with the caller's own credential, so it shows exactly what that
caller may see.

Caching: each asset's URL carries a hash of its content
(``/ui/assets/app.3f2a9c1e.js``) and is cacheable for a year; a script's
``import ... from "./list.js"`` is written with the imported module's hashed name
before the importer is hashed (each module after those it imports), so a change to
any module changes its URL and those of all that import it, up to ``app.js``, and
reaches the browser; the page itself
(every path under ``/ui`` that is not an asset: the page routes in the browser)
is revalidated each time (``no-cache`` with an ETag, 304 when unchanged).
Every answer forbids framing and sniffing, and the page's Content-Security-Policy
allows only this server's own scripts, styles and API.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
from importlib import resources
from typing import NamedTuple

from ..types import Scope, Send, header, respond, respond_empty, response_start

__all__ = ["DEFAULT_PATH", "DashboardEndpoint", "check_path"]

DEFAULT_PATH = "/ui"

_TYPES = {
    ".js": b"text/javascript; charset=utf-8",
    ".css": b"text/css; charset=utf-8",
    ".svg": b"image/svg+xml",
}
_SECURITY = [
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
]
_CSP = (
    b"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    b"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
_YEAR = b"public, max-age=31536000, immutable"
# The page's own assets. The modules a script imports (``import { x } from
# "./list.js"``; files of assets/ too) are found by reading it, and served as well.
_ENTRIES = ("app.js", "app.css")
# A static import of a module beside the importer: ``from "./list.js"``, ``import "./x.js"``.
_IMPORT = re.compile(r"""\b(from|import)(\s*)(["'])\./([^"'/\s]+\.js)\3""")


class _Asset(NamedTuple):
    body: bytes
    content_type: bytes
    etag: bytes


def check_path(path: str) -> str:
    """``path`` as the dashboard's mount point (``/ui``, ``/ops/tasks``), or
    ValueError saying what is wrong with it."""
    trimmed = path.rstrip("/")
    segments = trimmed.split("/")[1:]
    if (
        not trimmed.startswith("/")
        or not segments
        or not all(s and all(c.isalnum() or c in "-_." for c in s) for s in segments)
    ):
        raise ValueError(
            f"dashboard path {path!r}: give an absolute path of letters, digits, '-', '_' "
            "or '.' segments, such as /ui"
        )
    taken = ("agents", "tasks", "message:send", "message:stream", "v1", "a2a", ".well-known")
    if segments[0] in taken:
        raise ValueError(f"dashboard path {path!r}: /{segments[0]} is an A2A path")
    if segments[0] in ("a2ad", "metrics", "healthz", "readyz", "extendedAgentCard"):
        raise ValueError(f"dashboard path {path!r}: /{segments[0]} is a path a2ad serves")
    return trimmed


def _load(name: str) -> bytes:
    return (resources.files(__package__) / "assets" / name).read_bytes()


def _etag(body: bytes) -> bytes:
    return b'"' + hashlib.sha256(body).hexdigest()[:16].encode() + b'"'


def _hashed_assets() -> dict[str, tuple[str, _Asset]]:
    """Each asset served (the entries and every module they import, directly or
    not), by name: the name it is served as (``list.3f2a9c1e5b7d.js``) and what it
    serves. A script's imports are rewritten to the hashed names of the modules
    they import before the script is hashed, so each module's hash covers all it
    imports: a change to one changes the URL of every module above it."""
    done: dict[str, tuple[str, _Asset]] = {}

    def visit(name: str, importers: tuple[str, ...]) -> str:
        if name in done:
            return done[name][0]
        if name in importers:
            cycle = " -> ".join((*importers[importers.index(name) :], name))
            raise ValueError(f"dashboard assets: an import cycle ({cycle}) can't be hashed")
        body = _load(name)
        if name.endswith(".js"):

            def hashed_import(match: re.Match[str]) -> str:
                keyword, space, quote, imported = match.groups()
                served_as = visit(imported, (*importers, name))
                return f"{keyword}{space}{quote}./{served_as}{quote}"

            body = _IMPORT.sub(hashed_import, body.decode()).encode()
        stem, dot, ext = name.rpartition(".")
        served_as = f"{stem}.{hashlib.sha256(body).hexdigest()[:12]}.{ext}"
        done[name] = (served_as, _Asset(body, _TYPES[dot + ext], _etag(body)))
        return served_as

    for entry in _ENTRIES:
        visit(entry, ())
    return done


class DashboardEndpoint:
    """Serves the dashboard beneath ``path``. ``agents``: the served agents'
    names, the default one first ("" when one agent is served at / alone);
    ``auth``: whether requests need a credential (the page then asks for one)."""

    def __init__(self, path: str = DEFAULT_PATH, *, agents: list[str], auth: bool) -> None:
        self.path = check_path(path)
        # What the dashboard serves: ``path`` itself and what is under it (the app
        # asks both on every request, without a call).
        self.under = self.path + "/"
        hashed = _hashed_assets()
        self._assets = {served_as: asset for served_as, asset in hashed.values()}
        urls = {name: f"{self.path}/assets/{served_as}" for name, (served_as, _) in hashed.items()}
        settings = json.dumps({"base": self.path, "agents": agents, "auth": auth})
        page = (
            _load("index.html")
            .decode()
            .replace("{{app.js}}", urls["app.js"])
            .replace("{{app.css}}", urls["app.css"])
            .replace("{{settings}}", html.escape(settings, quote=True))
        )
        body = page.encode()
        self._page = _Asset(body, b"text/html; charset=utf-8", _etag(body))

    async def __call__(self, path: str, scope: Scope, send: Send) -> None:
        if scope["method"] not in ("GET", "HEAD"):
            await respond(
                send,
                405,
                b'{"error":"the dashboard takes GET"}',
                headers=[(b"allow", b"GET, HEAD"), *_SECURITY],
            )
            return
        rest = path[len(self.path) :]
        if rest.startswith("/assets/"):
            asset = self._assets.get(rest[len("/assets/") :])
            if asset is None:
                await respond(send, 404, b"no such asset", content_type=b"text/plain")
                return
            await self._send(scope, send, asset, _YEAR)
            return
        await self._send(scope, send, self._page, b"no-cache", csp=True)

    @staticmethod
    async def _send(
        scope: Scope, send: Send, asset: _Asset, cache: bytes, *, csp: bool = False
    ) -> None:
        headers = [(b"cache-control", cache), (b"etag", asset.etag), *_SECURITY]
        if csp:
            headers.append((b"content-security-policy", _CSP))
        if asset.etag in header(scope, b"if-none-match").encode():
            await respond_empty(send, 304, headers=headers)
            return
        body = b"" if scope["method"] == "HEAD" else asset.body
        await send(
            response_start(
                200,
                [
                    (b"content-type", asset.content_type),
                    (b"content-length", str(len(asset.body)).encode()),
                    *headers,
                ],
            )
        )
        await send({"type": "http.response.body", "body": body})
