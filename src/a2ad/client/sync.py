"""``SyncClient``: the client's operations without ``await``, for scripts and tools."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from typing import Any, TypeVar

from ..protocol.dialect import Version
from ..protocol.model import ListTasksResponse, Message, Part, Task
from ..protocol.usage import UsageReport
from .operations import DEFAULT_URL, Client, StreamEvent

__all__ = ["SyncClient"]

T = TypeVar("T")


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


def _no_running_loop() -> None:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise RuntimeError(
        "SyncClient can't run inside a running event loop; use a2ad.Client and await it"
    )
