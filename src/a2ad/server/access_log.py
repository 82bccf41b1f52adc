"""Request ids, the request's log context, and access logs: one request
observer (observed.py).

Each request gets an id: the client's ``X-Request-ID`` when it is sane (1 to
128 visible ASCII characters, no spaces), else a new one (16 hex digits: the
next of a count that starts at a random number); the response echoes it in its
``X-Request-ID`` (server/types.py). While the request is served, every line
logged carries it and, once authenticated, the principal (log_context.py, set
by the app). When it has ended (a stream: when the stream has), one access
line on the ``a2ad.access`` logger says what it was and how long it took,
for all requests, a sample of them, or none.

An access line holds no header and no body: nothing a client sent but the
path, the method and its request id, so never a credential.
"""

from __future__ import annotations

import itertools
import logging
import random
import re
import time

from .observed import REQUEST_ID_HEADER, RequestRecord
from .types import Scope, request_headers

__all__ = ["RequestLog"]

log = logging.getLogger("a2ad.access")

_SANE_ID = re.compile(r"[!-~]{1,128}")
_PATH_MAX = 256
_ID_MASK = (1 << 64) - 1


class RequestLog:
    """``access``: which requests get an access line: None for none, else the
    fraction (0 to 1) of those answered without an error; a request answered
    with one (HTTP status 400 or more, or an A2A error code) always gets its
    line. Raises ValueError for a fraction outside 0..1."""

    def __init__(self, *, access: float | None = 1.0) -> None:
        if access is not None and not 0.0 <= access <= 1.0:
            raise ValueError(f"access: {access!r} is not a fraction from 0 to 1")
        self.access = access
        self._random = random.Random()  # ids and sampling; nothing secret rides on them
        # Ids counted on from a random start: unique in this process, unlikely to
        # meet another's, and made with a quarter of the work of 64 random bits.
        self._ids = itertools.count(self._random.getrandbits(64))

    def began(self, record: RequestRecord, scope: Scope) -> Scope:
        given = request_headers(scope).get(REQUEST_ID_HEADER)
        if given and _SANE_ID.fullmatch(text := given.decode("latin-1")):
            record.request_id = text
        else:
            record.request_id = (next(self._ids) & _ID_MASK).to_bytes(8, "big").hex()
        return scope  # what ended's line reads of the request: its method, its client

    def ended(self, record: RequestRecord, token: Scope) -> None:
        access = self.access
        if access is None:
            return
        if record.status >= 400 or record.code is not None:  # an error: always its line
            self._write(record, token)
        elif access >= 1.0 or (access > 0.0 and self._random.random() < access):
            self._write(record, token)

    def _write(self, record: RequestRecord, scope: Scope) -> None:
        if not log.isEnabledFor(logging.INFO):
            return
        duration_ms = round((time.perf_counter() - record.started) * 1000, 3)
        path = record.path[:_PATH_MAX]
        method = record.method
        client = scope.get("client")
        http_method = scope["method"]
        fields: dict[str, object] = {
            "http_method": http_method,
            "path": path,
            "binding": record.binding,
            "status": record.status,
            "duration_ms": duration_ms,
            "request_id": record.request_id,
            "remote": f"{client[0]}:{client[1]}" if client else "",
        }
        if method:
            fields["method"] = method
        if record.code is not None:
            fields["code"] = record.code
        if record.principal:
            fields["principal"] = record.principal
        if record.task_id:
            fields["task_id"] = record.task_id[:_PATH_MAX]
        if record.agent:
            fields["agent"] = record.agent
        said = f"{http_method} {path} {record.status}"
        log.info(f"{said} {method}" if method else said, extra=fields)
