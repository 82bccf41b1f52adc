"""An A2A client for any server (a2ad or not), in A2A 1.0 or 0.3.

The version comes from the server's agent card: 1.0 when the card offers a
JSON-RPC interface of version 1.x, otherwise 0.3. Over gRPC (a ``grpc://`` or
``grpcs://`` URL, or ``binding="grpc"`` and the card's GRPC interface) it is
1.0 unless 0.3 is asked for (or the card offers gRPC in 0.3 only). Results
are the same typed
values either way (``Task``, ``Message``, the two update events), so callers
never see the dialect. Errors the server answers are raised as the A2A error
classes of ``a2ad.protocol.errors`` (``TaskNotFoundError`` and so on, each with
its ``code``); a server that cannot be reached, or that answers something that
is not A2A, raises ``ClientError`` naming the server. This module holds the
operations (``Client``); the HTTP and JSON-RPC framing is ``rpc.py``'s, gRPC's
``grpc_transport.py``'s.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any, Literal
from urllib.parse import urlsplit

import httpx
import msgspec
from msgspec import UNSET

from ..protocol.dialect import CARD_PATHS, DIALECTS, Dialect, Operation, Version
from ..protocol.errors import StreamFellBehindError, UnsupportedOperationError
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
from .errors import ClientError
from .grpc_transport import GrpcTransport, card_grpc_address, is_grpc_url, parse_grpc_url
from .rpc import JsonRpc
from .transport import Codec, Transport

__all__ = ["DEFAULT_URL", "Binding", "Client", "StreamEvent"]

Binding = Literal["jsonrpc", "grpc"]

DEFAULT_URL = "http://127.0.0.1:8000"

StreamEvent = StreamItem  # what streams yield: a Task or Message, then update events
_decode_usage = msgspec.json.Decoder(UsageReport).decode


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

    ``binding`` "grpc" calls the operations over gRPC, at the GRPC interface
    the card at ``url`` names (as secure as ``url``: TLS for https) of
    ``version``, or without one of 1.0 if the card offers it, else of 0.3; a
    ``url`` of ``grpc://HOST:PORT`` (``grpcs://`` for TLS) calls it there with
    no card, in ``version`` (1.0 by default), and ``/agents/NAME`` after it
    names one agent of an a2ad server. 0.3's gRPC service has no ListTasks:
    listing raises ClientError without calling it. Credentials and ``headers`` go
    as call metadata. Raises ValueError for a bad ``version``, ``binding`` or
    gRPC URL, and ClientError when gRPC is asked for and the ``grpc`` extra
    is missing.
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
        binding: Binding | None = None,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        if version not in (None, "1.0", "0.3"):
            raise ValueError(f"version must be '1.0' or '0.3', not {version!r}")
        if binding not in (None, "jsonrpc", "grpc"):
            raise ValueError(f"binding must be 'jsonrpc' or 'grpc', not {binding!r}")
        grpc_url = is_grpc_url(url)
        if grpc_url and binding == "jsonrpc":
            raise ValueError(f"{url} is a gRPC URL: binding 'jsonrpc' needs the HTTP one")
        card_url = None
        if not grpc_url and urlsplit(url).path.endswith(".json"):
            card_url, url = url, _card_base(url)  # a card's own URL: read there
        self.url = url.rstrip("/")
        self._card_urls = (card_url,) if card_url else tuple(self.url + p for p in CARD_PATHS)
        self._card: dict[str, Any] | None = None
        auth: dict[str, str] = dict(headers or {})
        if token:
            auth["Authorization"] = f"Bearer {token}"
        if api_key:
            auth[api_key_header] = api_key
        self._rpc = JsonRpc(
            self.url, headers=auth, timeout=timeout, stream_timeout=stream_timeout, http=http
        )
        if version and not grpc_url:
            self._rpc.dialect, self._rpc.endpoint = DIALECTS[version], self.url + "/"
        self._grpc_url = grpc_url  # no HTTP: no card, no a2ad/GetUsage
        self._version = version
        self._grpc: GrpcTransport | None = None
        self._calls: Transport = self._rpc  # what carries the A2A operations
        if grpc_url or binding == "grpc":
            self._grpc = self._calls = GrpcTransport(
                self.url,
                metadata=auth,
                timeout=timeout,
                stream_timeout=stream_timeout,
                target=parse_grpc_url(url) if grpc_url else None,
                version=version or "1.0",
            )

    @property
    def timeout(self) -> float:
        """Seconds allowed for connecting and for every answer but a stream's silences."""
        return self._rpc.timeout

    @property
    def stream_timeout(self) -> float | None:
        """Seconds a stream may stay silent (None: as long as the task runs)."""
        return self._rpc.stream_timeout

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    @property
    def binding(self) -> Binding:
        """What carries the A2A operations: "jsonrpc" or "grpc"."""
        return "jsonrpc" if self._grpc is None else "grpc"

    async def aclose(self) -> None:
        if self._grpc is not None:
            await self._grpc.aclose()
        await self._rpc.aclose()

    # --- the card and the version ---

    async def card(self) -> dict[str, Any]:
        """The server's agent card (fetched once, then kept). A ``grpc://`` URL
        has none: ClientError."""
        if self._card is None and self._grpc_url:
            raise ClientError(
                f"{self.url} is a gRPC address, and agent cards are served over HTTP: "
                "give the server's HTTP URL (with binding grpc to call it over gRPC)",
                url=self.url,
            )
        if self._card is None:
            last: str = ""
            for card_url in self._card_urls:
                response = await self._rpc.request("GET", card_url, rpc_method="")
                if response.status_code == 200:
                    try:
                        card = response.json()
                    except ValueError:
                        raise ClientError(
                            f"{card_url} is not JSON; is {self.url} an A2A server?",
                            url=self.url,
                        ) from None
                    if isinstance(card, dict):
                        self._card = card
                        break
                last = f"HTTP {response.status_code}"
            else:
                raise ClientError(
                    f"no agent card at {self._card_urls[0]} ({last}); is {self.url} "
                    "the base URL of an A2A server, or that its card's URL?",
                    url=self.url,
                )
        return self._card

    async def version(self) -> Version:
        """The A2A version this client speaks to the server: "1.0" when its card
        offers JSON-RPC 1.x (over gRPC, gRPC 1.x), else "0.3"; over gRPC by a
        URL, the one forced (1.0 by default)."""
        return (await self._speaking()).version

    async def _speaking(self) -> Codec:
        """The dialect of the operations' calls, chosen from the card when not
        forced; over gRPC by a URL, the forced one or 1.0 without asking."""
        if self._grpc is None:
            return await self._json_rpc()
        if self._grpc.dialect is not None:
            return self._grpc.dialect
        card = await self.card()
        versions: tuple[Version, ...] = (self._version,) if self._version else ("1.0", "0.3")
        for version in versions:
            address = card_grpc_address(card, self.url, version)
            if address is not None:
                return self._grpc.aim(address, version)
        of = " or ".join(f"A2A {v}" for v in versions)
        raise ClientError(
            f"{self.url}'s agent card offers no gRPC interface of {of}; call it over JSON-RPC",
            url=self.url,
        )

    async def _json_rpc(self) -> Dialect:
        """The JSON-RPC dialect and endpoint, from the card when not forced."""
        if self._rpc.dialect is None:
            version, self._rpc.endpoint = _choose(await self.card(), self.url)
            self._rpc.dialect = DIALECTS[version]
        return self._rpc.dialect

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
        raw = await self._calls.call(Operation.SEND, dialect.encode_send(request))
        return self._calls.decode(dialect.decode_send_result, raw)

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
        async for _, item in self._calls.events(Operation.STREAM, dialect.encode_send(request)):
            yield item

    async def get_task(self, task_id: str, *, history_length: int | None = None) -> Task:
        dialect = await self._speaking()
        request = GetTaskRequest(
            id=task_id, history_length=history_length if history_length is not None else UNSET
        )
        raw = await self._calls.call(Operation.GET, dialect.encode_get(request))
        return self._calls.decode(dialect.decode_task, raw)

    async def cancel_task(self, task_id: str) -> Task:
        """Cancel a task; returns it as the server holds it afterwards."""
        dialect = await self._speaking()
        raw = await self._calls.call(
            Operation.CANCEL, dialect.encode_task_id(TaskIdRequest(id=task_id))
        )
        return self._calls.decode(dialect.decode_task, raw)

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
        raw = await self._calls.call(Operation.LIST, dialect.encode_list(request))
        return self._calls.decode(dialect.decode_page, raw)

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
        agent: str | None = None,
    ) -> UsageReport:
        """An a2ad server's token usage totals (``a2ad/GetUsage``, for operators:
        docs/protocol.md): from ``from_day`` to ``to_day`` (``YYYY-MM-DD``; by
        default from the first of the month to today), of ``tenant`` (by
        default every tenant the caller may read), of ``agent`` (the served
        agent's name, "" for the unnamed one; by default every agent), one row
        per group of ``group_by`` (tenant, principal, agent, day, model). A JSON-RPC method: with
        binding "grpc" it goes to the card's JSON-RPC endpoint all the same,
        and a ``grpc://`` URL, which has no HTTP, raises ClientError."""
        if self._grpc_url:
            raise ClientError(
                f"{self.url}: a2ad/GetUsage is a JSON-RPC method, and a gRPC address has no "
                "HTTP; give the server's HTTP URL",
                url=self.url,
            )
        await self._json_rpc()  # the JSON-RPC endpoint, from the card
        params: dict[str, Any] = {"groupBy": list(group_by)}
        if from_day:
            params["from"] = from_day
        if to_day:
            params["to"] = to_day
        if tenant is not None:
            params["tenant"] = tenant
        if agent is not None:
            params["agent"] = agent
        raw = await self._rpc.call_method(USAGE_METHOD, params)
        return self._rpc.decode(_decode_usage, raw)

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
        the caller read too slowly, is reopened with ``Last-Event-ID`` (over
        gRPC, ``last-event-id`` metadata), so a server that keeps an event log
        (a2ad does) replays what was missed. Up
        to ``reconnect`` attempts in a row without a new update, waiting
        ``backoff`` seconds, doubled each time (at most 10 s)."""
        params = (await self._speaking()).encode_task_id(TaskIdRequest(id=task_id))
        resume = None if last_event_id is None else str(last_event_id)
        failures = 0
        seen_any = False  # an event arrived: from then on a broken stream is retried
        while True:
            try:
                async for event_id, item in self._calls.events(
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


def _card_base(card_url: str) -> str:
    """The server beneath a card's URL: what precedes a well-known card path,
    else the card's folder."""
    for path in CARD_PATHS:
        if card_url.endswith(path):
            return card_url[: -len(path)]
    return card_url.rsplit("/", 1)[0]


def _choose(card: dict[str, Any], base: str) -> tuple[Version, str]:
    """(version, JSON-RPC endpoint) from an agent card: 1.0 when offered, else
    0.3. Raises ClientError for a card that offers bindings, none of them
    JSON-RPC (HTTP+JSON alone, or gRPC alone, which a ``grpc://`` URL reaches)."""
    offered: set[str] = set()
    older = ""
    interfaces = card.get("supportedInterfaces")
    for entry in interfaces if isinstance(interfaces, list) else []:
        if not isinstance(entry, dict):
            continue
        binding = str(entry.get("protocolBinding", "")).upper()
        offered.add(binding)
        url, version = entry.get("url"), str(entry.get("protocolVersion", ""))
        if binding == "JSONRPC" and isinstance(url, str) and url:
            if version.startswith("1."):
                return "1.0", url
            older = older or url
    if older:
        return "0.3", older
    preferred = card.get("preferredTransport")
    url = card.get("url")
    if isinstance(url, str) and url and str(preferred or "JSONRPC").upper() == "JSONRPC":
        return "0.3", url
    more = card.get("additionalInterfaces")
    for entry in more if isinstance(more, list) else []:
        if isinstance(entry, dict):
            transport, url = str(entry.get("transport", "")).upper(), entry.get("url")
            offered.add(transport)
            if transport == "JSONRPC" and isinstance(url, str) and url:
                return "0.3", url
    if isinstance(preferred, str):
        offered.add(preferred.upper())
    offered.discard("")
    if offered and "JSONRPC" not in offered:
        grpc = " (call a gRPC one at grpc://HOST:PORT)" if "GRPC" in offered else ""
        raise ClientError(
            f"{base}'s agent card offers no JSON-RPC interface, only {', '.join(sorted(offered))}"
            f"; a2ad's client speaks JSON-RPC and gRPC{grpc}",
            url=base,
        )
    return "0.3", base + "/"
