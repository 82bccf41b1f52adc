"""The server's half of a ``protocol.dialect.Dialect``: the one type every
binding (dispatch.py, bindings/rest.py) and the request handler (handler.py) share
about a protocol version, in a module of its own so that none of them needs
another for it."""

from __future__ import annotations

from typing import Protocol

import msgspec

from ..protocol.dialect import Version
from ..protocol.errors import A2AError
from ..protocol.model import (
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    ListTasksResponse,
    Message,
    SendMessageRequest,
    Task,
    TaskIdRequest,
    TaskPushNotificationConfig,
)
from ..protocol.requests import TaskQuery
from ..protocol.types import StreamItem

__all__ = ["ServerDialect"]


class ServerDialect(Protocol):
    """The server's half of a ``protocol.dialect.Dialect``: what the dispatcher
    decodes requests and encodes results with. ``V1`` and ``V03`` (both bindings
    of 1.0, JSON-RPC 0.3) and ``V03Rest`` (0.3 over HTTP+JSON) are ones."""

    @property
    def version(self) -> Version: ...

    @property
    def send_push_field(self) -> str: ...

    @property
    def push_config_field(self) -> str: ...

    def wire_error(self, error: A2AError, method: str) -> A2AError: ...

    def decode_send(self, raw: msgspec.Raw, method: str) -> SendMessageRequest: ...

    def decode_get(self, raw: msgspec.Raw, method: str) -> GetTaskRequest: ...

    def decode_list(self, raw: msgspec.Raw, method: str) -> TaskQuery: ...

    def decode_task_id(self, raw: msgspec.Raw, method: str) -> TaskIdRequest: ...

    def encode_send_result(self, result: Task | Message) -> bytes: ...

    def encode_task(self, task: Task) -> bytes: ...

    def encode_page(self, page: ListTasksResponse) -> bytes: ...

    def encode_stream_item(self, item: StreamItem, final: bool) -> bytes: ...

    def decode_push_config(self, raw: msgspec.Raw, method: str) -> TaskPushNotificationConfig: ...

    def encode_push_config(self, config: TaskPushNotificationConfig) -> bytes: ...

    def decode_push_config_id(
        self, raw: msgspec.Raw, method: str
    ) -> GetTaskPushNotificationConfigRequest: ...

    def decode_list_push_configs(
        self, raw: msgspec.Raw, method: str
    ) -> ListTaskPushNotificationConfigsRequest: ...

    def encode_push_config_page(self, page: ListTaskPushNotificationConfigsResponse) -> bytes: ...

    def encode_deleted(self) -> bytes: ...
