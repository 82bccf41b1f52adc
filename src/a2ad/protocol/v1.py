"""A2A 1.0 on the wire: the internal model is already its shape, so this is thin."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import ClassVar, Literal

import msgspec
from msgspec import UNSET

from .errors import A2AError, InvalidParamsError
from .model import (
    MAX_PARTS,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    SendMessageRequest,
    SendMessageResponse,
    StreamResponse,
    Task,
    TaskEvent,
    TaskIdRequest,
    TaskPushNotificationConfig,
    TaskStatusUpdateEvent,
)
from .protojson import decode_params
from .requests import TaskQuery, checked_push_config, checked_send, task_query
from .types import StreamItem

__all__ = ["V1"]

_encode = msgspec.json.Encoder().encode
_send_result = msgspec.json.Decoder(SendMessageResponse).decode
_stream_item = msgspec.json.Decoder(StreamResponse).decode
_task = msgspec.json.Decoder(Task).decode
_page = msgspec.json.Decoder(ListTasksResponse).decode
_push_config = msgspec.json.Decoder(TaskPushNotificationConfig).decode
_push_config_page = msgspec.json.Decoder(ListTaskPushNotificationConfigsResponse).decode


class V1:
    """Codec for A2A 1.0 JSON-RPC (PascalCase methods, ProtoJSON); a ``Dialect``."""

    version: ClassVar[Literal["1.0"]] = "1.0"
    headers: ClassVar[Mapping[str, str]] = MappingProxyType({"A2A-Version": "1.0"})
    send_push_field: ClassVar[str] = "configuration.taskPushNotificationConfig"
    push_config_field: ClassVar[str] = ""
    push_media_type: ClassVar[str] = "application/a2a+json"

    @staticmethod
    def wire_error(error: A2AError, method: str) -> A2AError:
        return error

    @staticmethod
    def decode_send(raw: msgspec.Raw, method: str) -> SendMessageRequest:
        request = decode_params(raw, SendMessageRequest, method=method)
        if len(request.message.parts) > MAX_PARTS:
            raise InvalidParamsError(
                f"Invalid params for {method}: `message.parts` has "
                f"{len(request.message.parts)} parts; at most {MAX_PARTS} are allowed",
                field="message.parts",
            )
        return checked_send(request, raw, method=method, push_field=V1.send_push_field)

    @staticmethod
    def encode_send(request: SendMessageRequest) -> bytes:
        return _encode(request)

    @staticmethod
    def decode_get(raw: msgspec.Raw, method: str) -> GetTaskRequest:
        return decode_params(raw, GetTaskRequest, method=method)

    @staticmethod
    def encode_get(request: GetTaskRequest) -> bytes:
        return _encode(request)

    @staticmethod
    def decode_list(raw: msgspec.Raw, method: str) -> TaskQuery:
        return task_query(decode_params(raw, ListTasksRequest, method=method))

    @staticmethod
    def encode_list(request: ListTasksRequest) -> bytes:
        # pageSize goes out even at its default: another server's default may differ.
        params = msgspec.to_builtins(request)
        params["pageSize"] = request.page_size
        return _encode(params)

    @staticmethod
    def decode_task_id(raw: msgspec.Raw, method: str) -> TaskIdRequest:
        return decode_params(raw, TaskIdRequest, method=method)

    @staticmethod
    def encode_task_id(request: TaskIdRequest) -> bytes:
        return _encode(request)

    @staticmethod
    def encode_send_result(result: Task | Message) -> bytes:
        key = b"task" if isinstance(result, Task) else b"message"
        return b'{"%s":%s}' % (key, _encode(result))

    @staticmethod
    def decode_send_result(raw: bytes) -> Task | Message:
        result = _send_result(raw)
        if result.task is not UNSET:
            return result.task
        if result.message is not UNSET:
            return result.message
        raise ValueError("a SendMessage result with neither `task` nor `message`")

    @staticmethod
    def encode_task(task: Task) -> bytes:
        return _encode(task)

    @staticmethod
    def decode_task(raw: bytes) -> Task:
        return _task(raw)

    @staticmethod
    def encode_page(page: ListTasksResponse) -> bytes:
        return _encode(page)

    @staticmethod
    def decode_page(raw: bytes) -> ListTasksResponse:
        return _page(raw)

    @staticmethod
    def encode_stream_item(item: StreamItem, final: bool) -> bytes:
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

    @staticmethod
    def decode_stream_item(
        raw: bytes,
    ) -> StreamItem:
        item = _stream_item(raw)
        for value in (item.task, item.message, item.status_update, item.artifact_update):
            if value is not UNSET:
                return value
        raise ValueError("a stream event with none of task, message, statusUpdate, artifactUpdate")

    # --- push notifications ---

    @staticmethod
    def decode_push_config(raw: msgspec.Raw, method: str) -> TaskPushNotificationConfig:
        config = decode_params(raw, TaskPushNotificationConfig, method=method)
        if not config.task_id:
            raise InvalidParamsError(
                f"Invalid params for {method}: `taskId` is required: the task whose "
                "events go to this webhook",
                field="taskId",
            )
        return checked_push_config(config, method=method, field="")

    @staticmethod
    def encode_push_config(config: TaskPushNotificationConfig) -> bytes:
        return _encode(config)

    @staticmethod
    def decode_push_config_result(raw: bytes) -> TaskPushNotificationConfig:
        return _push_config(raw)

    @staticmethod
    def decode_push_config_id(
        raw: msgspec.Raw, method: str
    ) -> GetTaskPushNotificationConfigRequest:
        request = decode_params(raw, GetTaskPushNotificationConfigRequest, method=method)
        if not request.id:
            raise InvalidParamsError(
                f"Invalid params for {method}: `id` is required: the config's id "
                "(ListTaskPushNotificationConfigs lists them)",
                field="id",
            )
        return request

    @staticmethod
    def encode_push_config_id(request: GetTaskPushNotificationConfigRequest) -> bytes:
        return _encode(request)

    @staticmethod
    def decode_list_push_configs(
        raw: msgspec.Raw, method: str
    ) -> ListTaskPushNotificationConfigsRequest:
        return decode_params(raw, ListTaskPushNotificationConfigsRequest, method=method)

    @staticmethod
    def encode_list_push_configs(request: ListTaskPushNotificationConfigsRequest) -> bytes:
        return _encode(request)

    @staticmethod
    def encode_push_config_page(page: ListTaskPushNotificationConfigsResponse) -> bytes:
        return _encode(page)

    @staticmethod
    def decode_push_config_page(raw: bytes) -> ListTaskPushNotificationConfigsResponse:
        return _push_config_page(raw)

    @staticmethod
    def encode_deleted() -> bytes:
        return b"{}"  # google.protobuf.Empty

    @staticmethod
    def decode_deleted(raw: bytes) -> None:
        if msgspec.json.decode(raw) not in ({}, None):
            raise ValueError("a DeleteTaskPushNotificationConfig result that is not empty")

    @staticmethod
    def encode_push(item: Task | TaskEvent, snapshot: Task | None) -> bytes:
        # The StreamResponse a stream would carry for the same event.
        return V1.encode_stream_item(item, False)

    @staticmethod
    def decode_push(raw: bytes) -> StreamItem:
        return V1.decode_stream_item(raw)
