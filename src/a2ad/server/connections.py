"""What one client can hold of ``a2ad serve``: connection limits at the HTTP layer.

uvicorn's httptools protocol keeps whatever a client sends until its headers end, and
keeps a connection open for as long as the client takes to send its first request.
`protocol_class` builds a subclass of it that adds, per connection:

- a cap on the request line and headers (``max_header_bytes``): past it, 431, and the
  bytes held so far are dropped;
- a deadline for a request's headers (``header_timeout``, from the connection's start or
  from the request's first byte) and one for its body (``body_timeout``, from the end of
  the headers): past it, 408 (a connection that sent nothing is closed without a word);
- a cap on the connections served at once (``max_connections``): one more is answered 503
  with a JSON-RPC -32000 error, and a warning says so, at most once a minute.

Nothing is timed while the server works on a request or sends its response, so an open
SSE stream (which has its own keep-alives) is never cut; between requests, uvicorn's
keep-alive timeout applies. Every refusal is a JSON-RPC error body (id null: the request
was not read) with ``connection: close``. After it, the connection reads and drops what
the client still sends for a moment before it closes, so that the client's kernel does
not discard the answer when the close resets the connection.
"""

from __future__ import annotations

import asyncio
import logging
import math
import sys
import time
from dataclasses import dataclass
from typing import Any, ClassVar

import httptools
from uvicorn.config import Config
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol
from uvicorn.server import ServerState

from ..durations import format_duration
from ..protocol.errors import A2AError, InvalidRequestError, ServerBusyError
from ..protocol.jsonrpc import encode_error
from ..wording import plural

if sys.platform != "win32":  # Windows has no limit on open files to raise
    import resource

__all__ = ["FD_RESERVE", "ConnectionLimits", "fit_to_fd_limit", "protocol_class", "raise_fd_limit"]

log = logging.getLogger("a2ad.server")

FD_RESERVE = 128  # descriptors kept for what is not a client connection: store, agent's calls
LINGER_SECONDS = 2.0  # how long a refused connection drains before it is closed
CAP_LOG_SECONDS = 60.0  # at most one "connection limit reached" line this often

# Where a connection is in its current request; module constants, not an Enum, because
# they are compared on every read.
_IDLE, _HEAD, _BODY = 0, 1, 2


@dataclass(frozen=True, kw_only=True)
class ConnectionLimits:
    """What `a2ad serve`'s ``--max-connections``, ``--max-header-bytes``,
    ``--header-timeout`` and ``--body-timeout`` set; every value must be positive."""

    max_connections: int = 1000
    max_header_bytes: int = 64 * 1024
    header_timeout: float = 10.0
    body_timeout: float = 30.0

    def __post_init__(self) -> None:
        for name in ("max_connections", "max_header_bytes", "header_timeout", "body_timeout"):
            value = getattr(self, name)
            if not (value > 0 and math.isfinite(value)):
                raise ValueError(f"{name} must be a positive number, not {value!r}")


def protocol_class(limits: ConnectionLimits) -> type[HttpToolsProtocol]:
    """The protocol class to give ``uvicorn.Config(http=...)``: uvicorn's httptools
    protocol under ``limits``. Each call makes a new class with its own count of open
    connections, so use one per server."""

    class Bound(_GuardedProtocol):
        gate = _Gate(limits)

    return Bound


def raise_fd_limit() -> int | None:
    """Raise this process's soft limit on open files to its hard limit, log the outcome
    in one line, and return the soft limit now in force (None on Windows: no limit)."""
    if sys.platform == "win32":
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    limit = soft
    if soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            limit = hard
        except (ValueError, OSError) as exc:  # e.g. an unlimited hard limit on macOS
            log.warning(
                "could not raise the file-descriptor limit to the hard limit",
                extra={"fd_limit": soft, "fd_hard_limit": _show(hard), "error": str(exc)},
            )
            return soft
    log.info(
        "file-descriptor limit",
        extra={"fd_limit": _show(limit), "fd_limit_was": _show(soft), "fd_hard_limit": _show(hard)},
    )
    return limit


def fit_to_fd_limit(max_connections: int, fd_limit: int | None) -> int:
    """``max_connections``, lowered (and logged) if need be so that the connections
    leave ``FD_RESERVE`` descriptors of ``fd_limit`` for the rest."""
    if fd_limit is None:
        return max_connections
    fit = max(1, fd_limit - FD_RESERVE)
    if max_connections <= fit:
        return max_connections
    log.warning(
        "max connections lowered to fit the file-descriptor limit",
        extra={"max_connections": fit, "asked": max_connections, "fd_limit": fd_limit},
    )
    return fit


def _show(limit: int) -> int | str:
    return "unlimited" if limit == resource.RLIM_INFINITY else limit


class _Gate:
    """What the connections of one server share: how many are served, and when the cap
    was last logged."""

    def __init__(self, limits: ConnectionLimits) -> None:
        self.limits = limits
        self.replies = _Replies(limits)
        self.served = 0
        self.refused = 0  # since the last log line
        self.logged_at = -math.inf

    def admit(self) -> bool:
        if self.served < self.limits.max_connections:
            self.served += 1
            return True
        self.refused += 1
        now = time.monotonic()
        if now - self.logged_at >= CAP_LOG_SECONDS:
            log.warning(
                "connection limit reached: new connections are answered 503 until some "
                "close (--max-connections)",
                extra={"max_connections": self.limits.max_connections, "refused": self.refused},
            )
            self.logged_at, self.refused = now, 0
        return False

    def leave(self) -> None:
        self.served -= 1


class _Replies:
    """The refusals, encoded once, each as its status line and what follows the
    server's own headers (date, server): the rest of the headers and the body."""

    def __init__(self, limits: ConnectionLimits) -> None:
        self.too_large = _reply(
            431,
            InvalidRequestError(
                f"The request line and headers are larger than {limits.max_header_bytes} "
                "bytes; send fewer or smaller headers",
                metadata={"maxHeaderBytes": str(limits.max_header_bytes)},
            ),
        )
        self.slow_headers = _reply(
            408,
            InvalidRequestError(
                "The request's headers did not arrive within "
                f"{format_duration(limits.header_timeout)}; send each request whole and promptly",
                metadata={"headerTimeoutSeconds": f"{limits.header_timeout:g}"},
            ),
        )
        self.slow_body = _reply(
            408,
            InvalidRequestError(
                "The request's body did not arrive within "
                f"{format_duration(limits.body_timeout)} of its headers; "
                "send the body promptly",
                metadata={"bodyTimeoutSeconds": f"{limits.body_timeout:g}"},
            ),
        )
        self.busy = _reply(
            503,
            ServerBusyError(
                "The server is serving its limit of "
                f"{plural(limits.max_connections, 'connection')}; "
                "retry shortly, or reuse an open connection",
                metadata={"maxConnections": str(limits.max_connections)},
            ),
            b"retry-after: 1\r\n",
        )


def _reply(status: int, error: A2AError, extra: bytes = b"") -> tuple[bytes, bytes]:
    body = encode_error(None, error)
    headers = (
        b"content-type: application/json\r\ncontent-length: %d\r\nconnection: close\r\n%s\r\n"
        % (len(body), extra)
    )
    return STATUS_LINE[status], headers + body


class _Refused(Exception):
    """Raised from a parser callback to stop the parser once the request is refused."""


class _GuardedProtocol(HttpToolsProtocol):
    gate: ClassVar[_Gate]

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self._limits = self.gate.limits
        self._phase = _IDLE
        self._head_bytes = 0  # read since the last request ended, while no body was due
        self._read = 0  # the size of the read being parsed
        self._timer: asyncio.TimerHandle | None = None
        self._timed: int | None = None  # the phase the timer is for
        self._served = False  # counted by the gate
        self._closing = False  # refused: draining until closed

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if not self.gate.admit():
            self._refuse(self.gate.replies.busy)
            return
        self._served = True
        self._time(_HEAD, self._limits.header_timeout)

    def connection_lost(self, exc: Exception | None) -> None:
        self._untime()
        self._leave()
        super().connection_lost(exc)

    def _leave(self) -> None:
        if self._served:
            self._served = False
            self.gate.leave()

    def data_received(self, data: bytes) -> None:
        # uvicorn's, plus the limits, and no 400 for a refusal raised in a parser callback.
        # Where the request stands is read after each read rather than kept by more
        # callbacks: this runs once a read, they would run several times a request.
        if self._closing:
            return
        self._unset_keepalive_if_required()
        self._read = len(data)
        if self._phase != _BODY:
            self._phase = _HEAD  # bytes with no body due begin (or continue) headers
            self._head_bytes += self._read
        cycle = self.cycle
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            if self._should_upgrade():
                # The connection becomes a websocket's, with its own timeouts.
                self._untime()
                self._leave()
                self.handle_websocket_upgrade()
            else:
                self._unsupported_upgrade_warning()
            return
        except httptools.HttpParserError:
            if not self._closing:
                msg = "Invalid HTTP request received."
                self.logger.warning(msg)
                self.send_400_response(msg)
            return
        if self.cycle is not cycle or self._phase == _BODY:
            # A request's headers ended in this read, or its body was due: is it all in?
            if self.cycle.more_body:
                self._phase = _BODY
                if self._timed != _BODY:
                    self._time(_BODY, self._limits.body_timeout)
                return
            self._phase, self._head_bytes = _IDLE, 0
            if self._timer is not None:
                self._untime()
        elif self._head_bytes > self._limits.max_header_bytes:
            self._refuse(self.gate.replies.too_large)
        elif self._timed != _HEAD:
            self._time(_HEAD, self._limits.header_timeout)

    def on_headers_complete(self) -> None:
        # Headers that end in the read that brought them past the cap: refused before
        # their request starts. Counted as sent, give or take optional whitespace (a
        # one-letter method, two spaces, "HTTP/1.1\r\n", ": " and "\r\n" per header, the
        # blank line), and only when the reads could hold that much.
        limit = self._limits.max_header_bytes
        if self._head_bytes + self._read > limit:
            size = len(self.url) + 15
            for name, value in self.headers:
                size += len(name) + len(value) + 4
            if size > limit:
                self._phase = _HEAD
                self._refuse(self.gate.replies.too_large)
                raise _Refused
        HttpToolsProtocol.on_headers_complete(self)

    def _time(self, phase: int, seconds: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = self.loop.call_later(seconds, self._expire)
        self._timed = phase

    def _untime(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._timed = None

    def _expire(self) -> None:
        self._timer = self._timed = None
        if self._phase == _IDLE:  # nothing of a request came
            self._refuse(None)
        elif self._phase == _HEAD:
            self._refuse(self.gate.replies.slow_headers)
        else:
            self._refuse(self.gate.replies.slow_body)

    def _refuse(self, reply: tuple[bytes, bytes] | None) -> None:
        """Answer ``reply`` if it can be the next response on the wire, then close. The
        connection stops counting as served at once: it only drains now."""
        self._untime()
        self._leave()
        self._closing = True
        if log.isEnabledFor(logging.DEBUG):
            answer = reply[0].decode().strip() if reply else "no answer"
            log.debug("connection ended by a limit: %s", answer, extra={"client": self.client})
        if reply is None or not self._can_answer():
            self.transport.close()
            return
        status_line, rest = reply
        default = b"".join(b"%s: %s\r\n" % pair for pair in self.server_state.default_headers)
        self.transport.write(status_line + default + rest)
        if not self.transport.can_write_eof():
            self.transport.close()
            return
        self.transport.write_eof()
        self.flow.resume_reading()
        self._timer = self.loop.call_later(LINGER_SECONDS, self.transport.close)

    def _can_answer(self) -> bool:
        """Whether a response written now would be the next one the client reads."""
        cycle = self.cycle
        if self._phase == _BODY:
            # This request's body is late: answer unless its app has begun a response
            # or the request waits behind another one.
            return not cycle.response_started and not self.pipeline
        return cycle is None or cycle.response_complete
