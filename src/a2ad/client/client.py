"""An A2A client for any server (a2ad or not), in A2A 1.0 or 0.3.

The version comes from the server's agent card: 1.0 when the card offers a
JSON-RPC interface of version 1.x, otherwise 0.3. Results are the same typed
values either way (``Task``, ``Message``, the two update events), so callers
never see the dialect. Errors the server answers are raised as the A2A error
classes of ``a2ad.protocol.errors`` (``TaskNotFoundError`` and so on, each with
its ``code``); a server that cannot be reached, or that answers something that
is not A2A, raises ``ClientError`` naming the server.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from typing import Any, TypeVar

import httpx
import msgspec
from httpx_sse import aconnect_sse
from msgspec import UNSET

from ..protocol.dialect import CARD_PATHS, DIALECTS, Dialect, Operation, Version, method_name
from ..protocol.errors import (
    ERROR_DOMAIN,
    ERRORS_BY_CODE,
    ERRORS_BY_REASON,
    A2AError,
    StreamFellBehindError,
    UnsupportedOperationError,
)
from ..protocol.model import (
    GetTaskRequest,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    Task,
    TaskIdRequest,
    TaskState,
    TaskStatusUpdateEvent,
    TextPart,
    new_id,
    parse_state,
)
from ..protocol.types import StreamItem
from ..protocol.usage import USAGE_METHOD, UsageReport
from .traced import CALL_TRACER

__all__ = [
    "DEFAULT_URL",
    "Client",
    "ClientError",
    "RemoteError",
    "StreamEvent",
    "SyncClient",
]

DEFAULT_URL = "http://127.0.0.1:8000"

StreamEvent = StreamItem  # what streams yield: a Task or Message, then update events
T = TypeVar("T")
_decode_usage = msgspec.json.Decoder(UsageReport).decode


class ClientError(Exception):
    """The server could not be reached, or did not answer as an A2A server does."""

    def __init__(self, message: str, *, url: str) -> None:
        super().__init__(message)
        self.message = message
        self.url = url


class RemoteError(A2AError):
    """An A2A error whose code a2ad does not know (another server's own)."""

    def __init__(self, message: str, *, code: int) -> None:
        super().__init__(message)
        self.code = code  # type: ignore[misc]  # per instance: the server's code


def _error_from(payload: Any, url: str) -> A2AError:
    if not isinstance(payload, dict) or not isinstance(payload.get("code"), int):
        return RemoteError(f"{url} answered a malformed JSON-RPC error: {payload!r}", code=-32603)
    code, message = payload["code"], str(payload.get("message") or "(no message)")
    metadata: dict[str, str] = {}
    cls: type[A2AError] | None = None
    data = payload.get("data")
    for detail in data if isinstance(data, list) else []:
        if isinstance(detail, dict) and isinstance(detail.get("metadata"), dict):
            metadata.update({str(k): str(v) for k, v in detail["metadata"].items()})
        if isinstance(detail, dict) and detail.get("domain") == ERROR_DOMAIN:
            # The reason tells apart errors that share a code (a reader that fell
            # behind is -32000 like a busy server).
            by_reason = ERRORS_BY_REASON.get(str(detail.get("reason")))
            if by_reason is not None and by_reason.code == code:
                cls = by_reason
    cls = cls or ERRORS_BY_CODE.get(code)
    error = cls(message, metadata=metadata) if cls else RemoteError(message, code=code)
    error.data = payload.get("data")  # type: ignore[attr-defined]
    return error


def _message(
    content: str | Message | Part | Sequence[Part],
    *,
    context_id: str | None,
    task_id: str | None,
) -> Message:
    if isinstance(content, Message):
        changes: dict[str, str] = {}
        if context_id:
            changes["context_id"] = context_id
        if task_id:
            changes["task_id"] = task_id
        return msgspec.structs.replace(content, **changes) if changes else content
    if isinstance(content, str):
        parts = [TextPart(content)]
    elif isinstance(content, Part):
        parts = [content]
    else:
        parts = list(content)
    return Message(
        message_id=new_id(),
        role=Role.USER,
        parts=parts,
        context_id=context_id or "",
        task_id=task_id or "",
    )


def _terminal(item: StreamEvent) -> bool:
    if isinstance(item, Message):
        return True
    if isinstance(item, Task):
        return item.status.state.terminal
    if isinstance(item, TaskStatusUpdateEvent):
        return item.status.state.terminal
    return False


class Client:
    """Async A2A client. Use as ``async with Client(url) as client: ...``.

    ``url`` is the server's base URL (where its agent card is served).
    ``token`` is sent as ``Authorization: Bearer``; ``api_key`` in the header
    ``api_key_header``. ``timeout`` bounds connecting and every answer except a
    stream's silences (streams wait as long as the task runs; ``stream_timeout``
    bounds those if set). ``version`` forces "1.0" or "0.3" instead of reading
    the card.
    """

    def __init__(
        self,
        url: str = DEFAULT_URL,
        *,
        token: str | None = None,
        api_key: str | None = None,
        api_key_header: str = "X-API-Key",
        headers: dict[str, str] | None = None,
        timeout: float = 30.0,
        stream_timeout: float | None = None,
        version: Version | None = None,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        if version not in (None, "1.0", "0.3"):
            raise ValueError(f"version must be '1.0' or '0.3', not {version!r}")
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.stream_timeout = stream_timeout
        self._dialect: Dialect | None = DIALECTS[version] if version else None
        self._endpoint: str | None = self.url + "/" if version else None
        self._card: dict[str, Any] | None = None
        auth: dict[str, str] = dict(headers or {})
        if token:
            auth["Authorization"] = f"Bearer {token}"
        if api_key:
            auth[api_key_header] = api_key
        self._own_http = http is None
        self._http = http or httpx.AsyncClient(timeout=timeout)
        self._headers = auth
        self._ids = 0

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._own_http:
            await self._http.aclose()

    # --- the card and the version ---

    async def card(self) -> dict[str, Any]:
        """The server's agent card (fetched once, then kept)."""
        if self._card is None:
            last: str = ""
            for path in CARD_PATHS:
                response = await self._request("GET", self.url + path, rpc_method="")
                if response.status_code == 200:
                    try:
                        card = response.json()
                    except ValueError:
                        raise ClientError(
                            f"{self.url}{path} is not JSON; is {self.url} an A2A server?",
                            url=self.url,
                        ) from None
                    if isinstance(card, dict):
                        self._card = card
                        break
                last = f"HTTP {response.status_code}"
            else:
                raise ClientError(
                    f"{self.url} serves no agent card at {CARD_PATHS[0]} ({last}); "
                    "is this the base URL of an A2A server?",
                    url=self.url,
                )
        return self._card

    async def version(self) -> Version:
        """The A2A version this client speaks to the server: "1.0" when its card
        offers JSON-RPC 1.x, else "0.3"."""
        return (await self._speaking()).version

    async def _speaking(self) -> Dialect:
        if self._dialect is None:
            version, self._endpoint = _choose(await self.card(), self.url)
            self._dialect = DIALECTS[version]
        return self._dialect

    # --- operations ---

    async def send(
        self,
        content: str | Message | Part | Sequence[Part],
        *,
        context_id: str | None = None,
        task_id: str | None = None,
        wait: bool = True,
        history_length: int | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> Task | Message:
        """Send a message; with ``wait`` (the default) the answer comes when the
        task ends or needs input, without it at once (``returnImmediately``)."""
        request = self._send_request(content, context_id, task_id, wait, history_length, metadata)
        dialect = await self._speaking()
        raw = await self._call(Operation.SEND, dialect.encode_send(request))
        return self._decode(dialect.decode_send_result, raw)

    async def stream(
        self,
        content: str | Message | Part | Sequence[Part],
        *,
        context_id: str | None = None,
        task_id: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> AsyncIterator[StreamEvent]:
        """Send a message and yield what the server streams: the task (or a
        single message), then status and artifact updates, until the task ends
        or needs input. Raises ``StreamFellBehindError`` if the server cut the
        stream off because the caller read too slowly; its ``last_event_id``
        is where ``subscribe`` can pick the task up."""
        request = self._send_request(content, context_id, task_id, True, None, metadata)
        dialect = await self._speaking()
        async for _, item in self._sse(Operation.STREAM, dialect.encode_send(request)):
            yield item

    async def get_task(self, task_id: str, *, history_length: int | None = None) -> Task:
        dialect = await self._speaking()
        request = GetTaskRequest(
            id=task_id, history_length=history_length if history_length is not None else UNSET
        )
        raw = await self._call(Operation.GET, dialect.encode_get(request))
        return self._decode(dialect.decode_task, raw)

    async def cancel_task(self, task_id: str) -> Task:
        """Cancel a task; returns it as the server holds it afterwards."""
        dialect = await self._speaking()
        raw = await self._call(Operation.CANCEL, dialect.encode_task_id(TaskIdRequest(id=task_id)))
        return self._decode(dialect.decode_task, raw)

    async def list_page(
        self,
        *,
        context_id: str | None = None,
        state: TaskState | str | None = None,
        page_size: int = 50,
        page_token: str = "",
        status_timestamp_after: str | None = None,
        history_length: int | None = None,
        include_artifacts: bool = False,
    ) -> ListTasksResponse:
        """One page of ListTasks (newest first), as the server answers it."""
        if isinstance(state, str):
            state = parse_state(state)
        request = ListTasksRequest(
            context_id=context_id or "",
            status=state.value if state is not None else "",
            page_size=page_size,
            page_token=page_token,
            status_timestamp_after=status_timestamp_after or "",
            history_length=history_length if history_length is not None else UNSET,
            include_artifacts=include_artifacts,
        )
        dialect = await self._speaking()
        raw = await self._call(Operation.LIST, dialect.encode_list(request))
        return self._decode(dialect.decode_page, raw)

    async def list_tasks(
        self,
        *,
        context_id: str | None = None,
        state: TaskState | str | None = None,
        limit: int | None = None,
        page_size: int = 50,
        status_timestamp_after: str | None = None,
        history_length: int | None = None,
        include_artifacts: bool = False,
    ) -> AsyncIterator[Task]:
        """Every matching task, newest first, fetching page after page (at most
        ``limit`` tasks if given)."""
        token, seen = "", 0
        while True:
            size = page_size if limit is None else max(1, min(page_size, limit - seen))
            page = await self.list_page(
                context_id=context_id,
                state=state,
                page_size=size,
                page_token=token,
                status_timestamp_after=status_timestamp_after,
                history_length=history_length,
                include_artifacts=include_artifacts,
            )
            for task in page.tasks:
                if limit is not None and seen >= limit:
                    return
                seen += 1
                yield task
            token = page.next_page_token
            if not token or (limit is not None and seen >= limit):
                return

    async def usage(
        self,
        *,
        from_day: str = "",
        to_day: str = "",
        tenant: str | None = None,
        group_by: Sequence[str] = (),
    ) -> UsageReport:
        """An a2ad server's token usage totals (``a2ad/GetUsage``, for operators:
        docs/protocol.md): from ``from_day`` to ``to_day`` (``YYYY-MM-DD``; by
        default from the first of the month to today), of ``tenant`` (by
        default every tenant the caller may read), one row per group of
        ``group_by`` (tenant, principal, day, model)."""
        await self._speaking()  # the JSON-RPC endpoint, from the card
        params: dict[str, Any] = {"groupBy": list(group_by)}
        if from_day:
            params["from"] = from_day
        if to_day:
            params["to"] = to_day
        if tenant is not None:
            params["tenant"] = tenant
        self._ids += 1
        body = {"jsonrpc": "2.0", "id": self._ids, "method": USAGE_METHOD, "params": params}
        headers = {"Content-Type": "application/json", **self._headers}
        assert self._endpoint is not None
        response = await self._request(
            "POST",
            self._endpoint,
            content=msgspec.json.encode(body),
            headers=headers,
            rpc_method=USAGE_METHOD,
        )
        raw = self._result(response.content, response.status_code)
        return self._decode(_decode_usage, raw)

    async def subscribe(
        self,
        task_id: str,
        *,
        last_event_id: int | str | None = None,
        reconnect: int = 5,
        backoff: float = 0.5,
    ) -> AsyncIterator[StreamEvent]:
        """Follow a task until it ends: its current state, then its updates.

        ``last_event_id`` (an event id the server issued, int or str) asks the
        server to replay the events after it instead of starting with the
        current state; 0 asks for the task's whole event log. a2ad keeps one; a
        server that does not starts with the current state.

        A stream that breaks, ends before the task does, or is cut off because
        the caller read too slowly, is reopened with ``Last-Event-ID``, so a
        server that keeps an event log (a2ad does) replays what was missed. Up
        to ``reconnect`` attempts in a row without a new update, waiting
        ``backoff`` seconds, doubled each time (at most 10 s)."""
        params = (await self._speaking()).encode_task_id(TaskIdRequest(id=task_id))
        resume = None if last_event_id is None else str(last_event_id)
        failures = 0
        seen_any = False  # an event arrived: from then on a broken stream is retried
        while True:
            try:
                async for event_id, item in self._sse(
                    Operation.SUBSCRIBE, params, last_event_id=resume
                ):
                    if not isinstance(item, Task):
                        failures = 0  # an update: progress (a snapshot may be a repeat)
                    seen_any = True
                    if event_id:
                        resume = event_id
                    yield item
                    if _terminal(item):
                        return
                # Ended before the task did: the server went away or closed it.
                failure: Exception = ClientError(
                    f"{self.url} ended the stream of task {task_id} before the task ended",
                    url=self.url,
                )
            except UnsupportedOperationError:
                if not seen_any:
                    raise  # the task had already ended when we asked
                # It ended while we were away: its final state is all there is left.
                yield await self.get_task(task_id)
                return
            except ClientError as exc:
                if not seen_any:
                    raise  # never got going: wrong URL, server down, not a stream
                failure = exc
            except StreamFellBehindError as exc:
                failure = exc  # we read too slowly; the log has what we missed
            failures += 1
            if failures > reconnect:
                raise failure
            await asyncio.sleep(min(10.0, backoff * 2 ** (failures - 1)))

    # --- plumbing ---

    def _send_request(
        self,
        content: str | Message | Part | Sequence[Part],
        context_id: str | None,
        task_id: str | None,
        wait: bool,
        history_length: int | None,
        metadata: dict[str, Any] | None,
    ) -> SendMessageRequest:
        config = SendMessageConfiguration(
            return_immediately=not wait,
            history_length=history_length if history_length is not None else UNSET,
        )
        return SendMessageRequest(
            message=_message(content, context_id=context_id, task_id=task_id),
            configuration=config,
            metadata=metadata if metadata is not None else UNSET,
        )

    def _rpc_body(self, op: Operation, params: bytes) -> tuple[str, bytes, dict[str, str]]:
        """(method, body, headers) of a JSON-RPC call."""
        assert self._dialect is not None
        self._ids += 1
        method = method_name(self._dialect, op)
        body = {"jsonrpc": "2.0", "id": self._ids, "method": method, "params": msgspec.Raw(params)}
        headers = {"Content-Type": "application/json", **self._headers, **self._dialect.headers}
        return method, msgspec.json.encode(body), headers

    async def _call(self, op: Operation, params: bytes) -> bytes:
        """One JSON-RPC call; returns the raw JSON of its ``result``."""
        method, body, headers = self._rpc_body(op, params)
        assert self._endpoint is not None
        response = await self._request(
            "POST", self._endpoint, content=body, headers=headers, rpc_method=method
        )
        return self._result(response.content, response.status_code)

    def _result(self, content: bytes, status: int) -> bytes:
        try:
            envelope = msgspec.json.decode(content, type=dict[str, msgspec.Raw])
        except msgspec.DecodeError:
            raise self._bad(f"HTTP {status} with a body that is not JSON-RPC") from None
        if "error" in envelope:
            raise _error_from(msgspec.json.decode(envelope["error"]), self.url)
        if "result" not in envelope:
            raise self._bad(f"HTTP {status}: a JSON-RPC answer with neither result nor error")
        return bytes(envelope["result"])

    async def _sse(
        self, op: Operation, params: bytes, *, last_event_id: str | None = None
    ) -> AsyncIterator[tuple[str, StreamEvent]]:
        dialect = await self._speaking()
        method, body, headers = self._rpc_body(op, params)
        headers["Accept"] = "text/event-stream"
        if last_event_id is not None:
            headers["Last-Event-ID"] = last_event_id
        assert self._endpoint is not None
        timeout = httpx.Timeout(self.timeout, read=self.stream_timeout)
        tracer = CALL_TRACER.get()
        traced = (
            tracer(method, "POST", self._endpoint, headers)
            if tracer is not None
            else contextlib.nullcontext(_unnoted)
        )
        try:
            with traced as answered:
                async with aconnect_sse(
                    self._http,
                    "POST",
                    self._endpoint,
                    content=body,
                    headers=headers,
                    timeout=timeout,
                ) as source:
                    answered(source.response.status_code)
                    kind = source.response.headers.get("content-type", "")
                    if not kind.startswith("text/event-stream"):
                        # An error comes back as a plain JSON-RPC answer.
                        await source.response.aread()
                        self._result(source.response.content, source.response.status_code)
                        raise self._bad(f"a {kind or 'untyped'} answer where a stream belongs")
                    async for sse in source.aiter_sse():
                        if not sse.data:
                            continue
                        raw = self._result(sse.data.encode(), 200)
                        yield sse.id, self._decode(dialect.decode_stream_item, raw)
        except httpx.HTTPError as exc:
            raise self._unreachable(exc) from None

    async def _request(
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

    def _decode(self, decode: Callable[[bytes], T], raw: bytes) -> T:
        try:
            return decode(raw)
        except (msgspec.DecodeError, A2AError, ValueError) as exc:
            assert self._dialect is not None  # chosen before any call
            raise self._bad(
                f"a result that is not valid A2A {self._dialect.version}: {exc}"
            ) from None

    def _bad(self, what: str) -> ClientError:
        return ClientError(f"{self.url} answered {what}", url=self.url)


def _unnoted(status: int) -> None:
    """What an untraced call does with its status."""


def _no_running_loop() -> None:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise RuntimeError(
        "SyncClient can't run inside a running event loop; use a2ad.Client and await it"
    )


def _choose(card: dict[str, Any], base: str) -> tuple[Version, str]:
    """(version, JSON-RPC endpoint) from an agent card: 1.0 when offered."""
    interfaces = card.get("supportedInterfaces") or []
    for entry in interfaces if isinstance(interfaces, list) else []:
        if (
            isinstance(entry, dict)
            and str(entry.get("protocolBinding", "")).upper() == "JSONRPC"
            and str(entry.get("protocolVersion", "")).startswith("1.")
            and entry.get("url")
        ):
            return "1.0", str(entry["url"])
    url = card.get("url")
    if isinstance(url, str) and url:
        return "0.3", url
    return "0.3", base + "/"


class SyncClient:
    """The same operations without ``await``, for scripts and tools: each call
    runs on a private event loop. Not for use inside a running event loop."""

    def __init__(self, url: str = DEFAULT_URL, **options: Any) -> None:
        _no_running_loop()
        self._loop = asyncio.new_event_loop()
        self._client = Client(url, **options)
        self.url = self._client.url

    def __enter__(self) -> SyncClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        _no_running_loop()
        if not self._loop.is_closed():
            self._loop.run_until_complete(self._client.aclose())
            self._loop.close()

    def _run(self, make: Callable[[], Awaitable[T]]) -> T:
        # Checked before the awaitable exists, so none is left never awaited.
        _no_running_loop()
        return self._loop.run_until_complete(make())

    def _iterate(self, agen: AsyncIterator[T]) -> Iterator[T]:
        try:
            while True:
                try:
                    yield self._run(agen.__anext__)
                except StopAsyncIteration:
                    return
        finally:
            close = getattr(agen, "aclose", None)
            if close is not None:
                with contextlib.suppress(RuntimeError):
                    self._run(close)

    def card(self) -> dict[str, Any]:
        return self._run(self._client.card)

    def version(self) -> Version:
        return self._run(self._client.version)

    def send(
        self, content: str | Message | Part | Sequence[Part], **options: Any
    ) -> Task | Message:
        return self._run(lambda: self._client.send(content, **options))

    def stream(
        self, content: str | Message | Part | Sequence[Part], **options: Any
    ) -> Iterator[StreamEvent]:
        return self._iterate(self._client.stream(content, **options))

    def get_task(self, task_id: str, *, history_length: int | None = None) -> Task:
        return self._run(lambda: self._client.get_task(task_id, history_length=history_length))

    def cancel_task(self, task_id: str) -> Task:
        return self._run(lambda: self._client.cancel_task(task_id))

    def list_page(self, **options: Any) -> ListTasksResponse:
        return self._run(lambda: self._client.list_page(**options))

    def list_tasks(self, **options: Any) -> Iterator[Task]:
        return self._iterate(self._client.list_tasks(**options))

    def subscribe(self, task_id: str, **options: Any) -> Iterator[StreamEvent]:
        return self._iterate(self._client.subscribe(task_id, **options))

    def usage(self, **options: Any) -> UsageReport:
        return self._run(lambda: self._client.usage(**options))
