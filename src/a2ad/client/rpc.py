"""JSON-RPC over HTTP to one A2A server: the client's transport.

``JsonRpc`` makes the HTTP exchanges (each handed to the call tracer when one is
set, ``client/traced.py``), frames JSON-RPC calls in the dialect the client
chose, reads their ``result`` or raises the error they carry, and reads
Server-Sent Events streams. Every failure to reach the server, or an answer
that is not A2A, is a ``ClientError`` naming the server.
"""

from __future__ import annotations

import contextlib
import http.cookiejar
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, TypeVar

import httpx
import msgspec

from ..protocol.dialect import Dialect, Operation, method_name
from ..protocol.errors import A2AError
from ..protocol.types import StreamItem
from .errors import ClientError, error_from
from .sse import sse_events
from .traced import CALL_TRACER

__all__ = ["JsonRpc", "NoCookies"]

T = TypeVar("T")


class NoCookies(http.cookiejar.CookieJar):
    """A cookie jar that keeps none: A2A uses no cookies, and a client that
    calls for many callers (a front) must not hand one caller's to another."""

    def extract_cookies(self, response: Any, request: Any) -> None:
        return None

    def add_cookie_header(self, request: Any) -> None:
        return None

    def set_cookie(self, cookie: Any) -> None:
        return None


class JsonRpc:
    """Calls to the server at ``url``; ``headers`` (credentials) go on every
    request. ``dialect`` and ``endpoint`` are unset until the client has chosen
    them (from the card, or forced) and set before any call."""

    def __init__(
        self,
        url: str,
        *,
        headers: dict[str, str],
        timeout: float,
        stream_timeout: float | None,
        http: httpx.AsyncClient | None,
    ) -> None:
        self.url = url
        self.timeout = timeout
        self.stream_timeout = stream_timeout
        self.dialect: Dialect | None = None
        self.endpoint: str | None = None
        self._own_http = http is None
        self._http = http or httpx.AsyncClient(timeout=timeout, cookies=NoCookies())
        self._headers = headers
        self._ids = 0

    async def aclose(self) -> None:
        if self._own_http:
            await self._http.aclose()

    async def call(self, op: Operation, params: bytes) -> bytes:
        """One JSON-RPC call of an A2A operation; returns the raw JSON of its ``result``."""
        assert self.dialect is not None
        method = method_name(self.dialect, op)
        body, headers = self._body(method, msgspec.Raw(params), self.dialect.headers)
        return await self._post(method, body, headers)

    async def call_method(self, method: str, params: dict[str, Any]) -> bytes:
        """One JSON-RPC call of a method outside the dialects (a2ad's own, which
        no version header selects); returns the raw JSON of its ``result``."""
        body, headers = self._body(method, params, {})
        return await self._post(method, body, headers)

    async def events(
        self, op: Operation, params: bytes, *, last_event_id: str | None = None
    ) -> AsyncIterator[tuple[str, StreamItem]]:
        """A streaming call: (event id, item) for each event the server sends."""
        assert self.dialect is not None and self.endpoint is not None
        dialect, endpoint = self.dialect, self.endpoint
        method = method_name(dialect, op)
        body, headers = self._body(method, msgspec.Raw(params), dialect.headers)
        headers["Accept"] = "text/event-stream"
        if last_event_id is not None:
            headers["Last-Event-ID"] = last_event_id
        timeout = httpx.Timeout(self.timeout, read=self.stream_timeout)
        tracer = CALL_TRACER.get()
        traced = (
            tracer(method, "POST", endpoint, headers)
            if tracer is not None
            else contextlib.nullcontext(_unnoted)
        )
        try:
            with traced as answered:
                async with self._http.stream(
                    "POST", endpoint, content=body, headers=headers, timeout=timeout
                ) as response:
                    answered(response.status_code)
                    kind = response.headers.get("content-type", "")
                    if not kind.startswith("text/event-stream"):
                        await response.aread()
                        self.result(response.content, response.status_code)
                        raise self.bad(f"a {kind or 'untyped'} answer where a stream belongs")
                    async for event_id, data in sse_events(response):
                        raw = self.result(data, 200)
                        yield event_id, self.decode(dialect.decode_stream_item, raw)
        except httpx.HTTPError as exc:
            raise self._unreachable(exc) from None

    async def request(
        self,
        method: str,
        url: str,
        *,
        rpc_method: str,
        headers: dict[str, str] | None = None,
        **kwargs: Any,
    ) -> httpx.Response:
        """One HTTP exchange; ``rpc_method``: the A2A method it calls, if any (for a trace)."""
        tracer = CALL_TRACER.get()
        try:
            if tracer is None:
                return await self._http.request(
                    method, url, headers=headers or self._headers, **kwargs
                )
            headers = dict(headers or self._headers)  # the trace context goes in a copy
            with tracer(rpc_method, method, url, headers) as answered:
                response = await self._http.request(method, url, headers=headers, **kwargs)
                answered(response.status_code)
                return response
        except httpx.HTTPError as exc:
            raise self._unreachable(exc) from None

    def result(self, content: bytes, status: int) -> bytes:
        """The raw ``result`` of a JSON-RPC answer; raises the error it carries."""
        try:
            envelope = msgspec.json.decode(content, type=dict[str, msgspec.Raw])
        except msgspec.DecodeError:
            raise self.bad(f"HTTP {status} with a body that is not JSON-RPC") from None
        if "error" in envelope:
            raise error_from(msgspec.json.decode(envelope["error"]), self.url)
        if "result" not in envelope:
            raise self.bad(f"HTTP {status}: a JSON-RPC answer with neither result nor error")
        return bytes(envelope["result"])

    def decode(self, decode: Callable[[bytes], T], raw: bytes) -> T:
        """``decode(raw)``, a result that does not decode being a ``ClientError``."""
        try:
            return decode(raw)
        except (msgspec.DecodeError, A2AError, ValueError) as exc:
            assert self.dialect is not None  # chosen before any call
            raise self.bad(
                f"a result that is not valid A2A {self.dialect.version}: {exc}"
            ) from None

    def bad(self, what: str) -> ClientError:
        return ClientError(f"{self.url} answered {what}", url=self.url)

    def _body(
        self, method: str, params: object, extra: Mapping[str, str]
    ) -> tuple[bytes, dict[str, str]]:
        """(body, headers) of a JSON-RPC call."""
        self._ids += 1
        body = {"jsonrpc": "2.0", "id": self._ids, "method": method, "params": params}
        headers = {"Content-Type": "application/json", **self._headers, **extra}
        return msgspec.json.encode(body), headers

    async def _post(self, method: str, body: bytes, headers: dict[str, str]) -> bytes:
        assert self.endpoint is not None
        response = await self.request(
            "POST", self.endpoint, content=body, headers=headers, rpc_method=method
        )
        return self.result(response.content, response.status_code)

    def _unreachable(self, exc: httpx.HTTPError) -> ClientError:
        if isinstance(exc, httpx.ConnectTimeout):
            what = f"no connection within {self.timeout:g} s; is the URL right?"
        elif isinstance(exc, httpx.TimeoutException):
            what = (
                f"no answer within {self.timeout:g} s (the server took the request; a task "
                "may still be running: raise the timeout, or send without waiting)"
            )
        elif isinstance(exc, httpx.ConnectError):
            what = "connection refused; is the server running, and is the URL right?"
        else:
            what = f"{type(exc).__name__}: {exc}"
        verb = "can't reach" if not isinstance(exc, httpx.ReadTimeout) else "waited on"
        return ClientError(f"{verb} {self.url}: {what}", url=self.url)


def _unnoted(status: int) -> None:
    """What an untraced call does with its status."""
