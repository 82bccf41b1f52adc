"""A2A 1.0 on the wire: the internal model is already its shape, so this is thin."""

from __future__ import annotations

from typing import ClassVar

import msgspec

from .errors import InvalidParamsError
from .jsonrpc import decode_params
from .model import (
    MAX_PARTS,
    GetTaskRequest,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    SendMessageRequest,
    Task,
    TaskArtifactUpdateEvent,
    TaskIdRequest,
    TaskStatusUpdateEvent,
)

__all__ = ["V1"]

_encode = msgspec.json.Encoder().encode


class V1:
    """Codec for A2A 1.0 JSON-RPC (PascalCase methods, ProtoJSON)."""

    version = "1.0"
    methods: ClassVar[dict[str, str]] = {
        "SendMessage": "send",
        "SendStreamingMessage": "stream",
        "GetTask": "get",
        "ListTasks": "list",
        "CancelTask": "cancel",
        "SubscribeToTask": "subscribe",
        "CreateTaskPushNotificationConfig": "push_config",
        "GetTaskPushNotificationConfig": "push_config",
        "ListTaskPushNotificationConfigs": "push_config",
        "DeleteTaskPushNotificationConfig": "push_config",
        "GetExtendedAgentCard": "extended_card",
    }

    @staticmethod
    def decode_send(raw: msgspec.Raw, method: str) -> SendMessageRequest:
        request = decode_params(raw, SendMessageRequest, method=method)
        if len(request.message.parts) > MAX_PARTS:
            raise InvalidParamsError(
                f"Invalid params for {method}: `message.parts` has "
                f"{len(request.message.parts)} parts; at most {MAX_PARTS} are allowed",
                field="message.parts",
            )
        return request

    @staticmethod
    def decode_get(raw: msgspec.Raw, method: str) -> GetTaskRequest:
        return decode_params(raw, GetTaskRequest, method=method)

    @staticmethod
    def decode_list(raw: msgspec.Raw, method: str) -> ListTasksRequest:
        return decode_params(raw, ListTasksRequest, method=method)

    @staticmethod
    def decode_task_id(raw: msgspec.Raw, method: str) -> TaskIdRequest:
        return decode_params(raw, TaskIdRequest, method=method)

    @staticmethod
    def encode_task(task: Task) -> bytes:
        return _encode(task)

    @staticmethod
    def encode_send_result(result: Task | Message) -> bytes:
        key = b"task" if isinstance(result, Task) else b"message"
        return b'{"%s":%s}' % (key, _encode(result))

    @staticmethod
    def encode_list(page: ListTasksResponse) -> bytes:
        return _encode(page)

    @staticmethod
    def encode_stream_item(
        item: Task | Message | TaskStatusUpdateEvent | TaskArtifactUpdateEvent, final: bool
    ) -> bytes:
        # 1.0 has no `final` flag: the end of the stream says it.
        if isinstance(item, Task):
            key = b"task"
        elif isinstance(item, Message):
            key = b"message"
        elif isinstance(item, TaskStatusUpdateEvent):
            key = b"statusUpdate"
        else:
            key = b"artifactUpdate"
        return b'{"%s":%s}' % (key, _encode(item))
