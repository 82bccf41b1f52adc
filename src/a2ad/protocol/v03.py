"""A2A 0.3 on the wire, translated to and from the 1.0 model; 0.3 lives only here.

Input is forgiving, as clients written from popular docs expect: no ``messageId``
(one is generated), parts without ``kind`` (inferred from the member present),
``null`` for optional ids. Output is exact 0.3: ``kind`` on every object,
lowercase states, ``final`` on status updates.

This module is the codec (``V03``, a ``Dialect``); the shapes are in
``v03_wire``, the translation in ``v03_convert``, the card in ``v03_card``.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, ClassVar, Literal

import msgspec
from msgspec import UNSET, UnsetType

from .errors import (
    A2AError,
    ExtendedAgentCardNotConfiguredError,
    InvalidParamsError,
    UnsupportedOperationError,
)
from .jsonrpc import decode_params
from .model import (
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    SendMessageConfiguration,
    SendMessageRequest,
    Task,
    TaskEvent,
    TaskIdRequest,
    TaskPushNotificationConfig,
    TaskStatusUpdateEvent,
)
from .requests import TaskQuery, checked_push_config, checked_send
from .types import StreamItem
from .v03_card import card_to_03
from .v03_convert import (
    artifact_to_03,
    decode_task_push_config,
    decode_task_push_configs,
    list_from_03,
    message_from_03,
    message_to_03,
    push_config_from_03,
    push_config_from_in,
    push_config_to_03,
    result_from_03,
    send_params_to_03,
    state_to_03,
    status_to_03,
    task_push_config_from_03,
    task_push_config_to_03,
    task_to_03,
)
from .v03_wire import (
    ArtifactUpdate03,
    GetIn,
    ListTasks03,
    PushIdIn,
    SendIn,
    SetPushIn,
    StatusUpdate03,
    TaskIdIn,
    TaskIdParams03,
    TaskQueryParams03,
)
from .v1 import V1

__all__ = ["V03", "card_to_03", "push_config_from_03", "push_config_to_03", "state_to_03"]

_encode = msgspec.json.Encoder().encode


class V03:
    """Codec for A2A 0.3 JSON-RPC (slash methods, ``kind`` fields); a ``Dialect``."""

    version: ClassVar[Literal["0.3"]] = "0.3"
    # 0.3 is what a request without an A2A-Version header speaks.
    headers: ClassVar[Mapping[str, str]] = MappingProxyType({})
    send_push_field: ClassVar[str] = "configuration.pushNotificationConfig"
    push_config_field: ClassVar[str] = "pushNotificationConfig"
    push_media_type: ClassVar[str] = "application/json"

    @staticmethod
    def wire_error(error: A2AError, method: str) -> A2AError:
        # 0.3 has no "not declared" answer for the extended card: only -32007.
        if method == "agent/getAuthenticatedExtendedCard" and isinstance(
            error, UnsupportedOperationError
        ):
            return ExtendedAgentCardNotConfiguredError(
                f"{method}: this agent has no authenticated extended card"
            )
        return error

    @staticmethod
    def decode_send(raw: msgspec.Raw, method: str) -> SendMessageRequest:
        p = decode_params(raw, SendIn, method=method)
        config: SendMessageConfiguration | UnsetType = UNSET
        if p.configuration is not None:
            c = p.configuration
            config = SendMessageConfiguration(
                accepted_output_modes=c.accepted_output_modes or [],
                history_length=c.history_length if c.history_length is not None else UNSET,
                return_immediately=c.blocking is False,
                task_push_notification_config=(
                    push_config_from_in(c.push_notification_config)
                    if c.push_notification_config is not None
                    else UNSET
                ),
            )
        return checked_send(
            SendMessageRequest(
                message=message_from_03(p.message),
                configuration=config,
                metadata=p.metadata if p.metadata is not None else UNSET,
            ),
            raw,
            method=method,
            push_field=V03.send_push_field,
            scheme_field="authentication.schemes[0]",
        )

    @staticmethod
    def encode_send(request: SendMessageRequest) -> bytes:
        return _encode(send_params_to_03(request))

    @staticmethod
    def decode_get(raw: msgspec.Raw, method: str) -> GetTaskRequest:
        p = decode_params(raw, GetIn, method=method)
        return GetTaskRequest(
            id=p.id, history_length=p.history_length if p.history_length is not None else UNSET
        )

    @staticmethod
    def encode_get(request: GetTaskRequest) -> bytes:
        return _encode(TaskQueryParams03(id=request.id, history_length=request.history_length))

    # 0.3 has no list method; a2ad's tasks/list takes the 1.0 ListTasks params.
    @staticmethod
    def decode_list(raw: msgspec.Raw, method: str) -> TaskQuery:
        return V1.decode_list(raw, method)

    @staticmethod
    def encode_list(request: ListTasksRequest) -> bytes:
        return V1.encode_list(request)

    @staticmethod
    def decode_task_id(raw: msgspec.Raw, method: str) -> TaskIdRequest:
        p = decode_params(raw, TaskIdIn, method=method)
        return TaskIdRequest(id=p.id, metadata=p.metadata if p.metadata is not None else UNSET)

    @staticmethod
    def encode_task_id(request: TaskIdRequest) -> bytes:
        return _encode(TaskIdParams03(id=request.id, metadata=request.metadata))

    @staticmethod
    def encode_send_result(result: Task | Message) -> bytes:
        if isinstance(result, Task):
            return _encode(task_to_03(result))
        return _encode(message_to_03(result))

    @staticmethod
    def decode_send_result(raw: bytes) -> Task | Message:
        result = result_from_03(raw)
        if not isinstance(result, Task | Message):
            raise ValueError(f"a {type(result).__name__} where a task or message belongs")
        return result

    @staticmethod
    def encode_task(task: Task) -> bytes:
        return _encode(task_to_03(task))

    @staticmethod
    def decode_task(raw: bytes) -> Task:
        result = result_from_03(raw)
        if not isinstance(result, Task):
            raise ValueError(f"a {type(result).__name__} where a task belongs")
        return result

    @staticmethod
    def encode_page(page: ListTasksResponse) -> bytes:
        return _encode(
            ListTasks03(
                tasks=[task_to_03(t) for t in page.tasks],
                next_page_token=page.next_page_token,
                page_size=page.page_size,
                total_size=page.total_size,
            )
        )

    @staticmethod
    def decode_page(raw: bytes) -> ListTasksResponse:
        return list_from_03(raw)

    @staticmethod
    def encode_stream_item(item: StreamItem, final: bool) -> bytes:
        out: Any
        if isinstance(item, Task):
            out = task_to_03(item)
        elif isinstance(item, Message):
            out = message_to_03(item)
        elif isinstance(item, TaskStatusUpdateEvent):
            out = StatusUpdate03(
                task_id=item.task_id,
                context_id=item.context_id,
                status=status_to_03(item.status),
                final=final,
                metadata=item.metadata,
            )
        else:
            out = ArtifactUpdate03(
                task_id=item.task_id,
                context_id=item.context_id,
                artifact=artifact_to_03(item.artifact),
                append=item.append,
                last_chunk=item.last_chunk,
                metadata=item.metadata,
            )
        return _encode(out)

    @staticmethod
    def decode_stream_item(raw: bytes) -> StreamItem:
        return result_from_03(raw)

    # --- push notifications ---

    @staticmethod
    def decode_push_config(raw: msgspec.Raw, method: str) -> TaskPushNotificationConfig:
        p = decode_params(raw, SetPushIn, method=method)
        config = push_config_from_in(p.push_notification_config, p.task_id)
        return checked_push_config(
            config,
            method=method,
            field=V03.push_config_field,
            scheme_field="authentication.schemes[0]",
        )

    @staticmethod
    def encode_push_config(config: TaskPushNotificationConfig) -> bytes:
        return _encode(task_push_config_to_03(config))

    @staticmethod
    def decode_push_config_result(raw: bytes) -> TaskPushNotificationConfig:
        return task_push_config_from_03(decode_task_push_config(raw))

    @staticmethod
    def decode_push_config_id(
        raw: msgspec.Raw, method: str
    ) -> GetTaskPushNotificationConfigRequest:
        p = decode_params(raw, PushIdIn, method=method)
        # A get may leave it out (the task's first config); a delete may not.
        if not p.push_notification_config_id and method.endswith("/delete"):
            raise InvalidParamsError(
                f"Invalid params for {method}: `pushNotificationConfigId` is required: the "
                "config's id (tasks/pushNotificationConfig/list lists them)",
                field="pushNotificationConfigId",
            )
        return GetTaskPushNotificationConfigRequest(
            task_id=p.id, id=p.push_notification_config_id or ""
        )

    @staticmethod
    def encode_push_config_id(request: GetTaskPushNotificationConfigRequest) -> bytes:
        params: dict[str, str] = {"id": request.task_id}
        if request.id:
            params["pushNotificationConfigId"] = request.id
        return _encode(params)

    @staticmethod
    def decode_list_push_configs(
        raw: msgspec.Raw, method: str
    ) -> ListTaskPushNotificationConfigsRequest:
        p = decode_params(raw, TaskIdIn, method=method)
        return ListTaskPushNotificationConfigsRequest(task_id=p.id)

    @staticmethod
    def encode_list_push_configs(request: ListTaskPushNotificationConfigsRequest) -> bytes:
        return _encode({"id": request.task_id})

    @staticmethod
    def encode_push_config_page(page: ListTaskPushNotificationConfigsResponse) -> bytes:
        return _encode([task_push_config_to_03(c) for c in page.configs])  # a bare array

    @staticmethod
    def decode_push_config_page(raw: bytes) -> ListTaskPushNotificationConfigsResponse:
        configs = [task_push_config_from_03(c) for c in decode_task_push_configs(raw)]
        return ListTaskPushNotificationConfigsResponse(configs=configs)

    @staticmethod
    def encode_deleted() -> bytes:
        return b"null"

    @staticmethod
    def decode_deleted(raw: bytes) -> None:
        if msgspec.json.decode(raw) is not None:
            raise ValueError("a tasks/pushNotificationConfig/delete result that is not null")

    @staticmethod
    def encode_push(item: Task | TaskEvent, snapshot: Task | None) -> bytes:
        # 0.3 receivers get the task as it stood right after the event.
        task = item if isinstance(item, Task) else snapshot
        if task is None:
            raise ValueError("a 0.3 push needs the task after the event")
        return _encode(task_to_03(task))

    @staticmethod
    def decode_push(raw: bytes) -> StreamItem:
        return V03.decode_task(raw)
