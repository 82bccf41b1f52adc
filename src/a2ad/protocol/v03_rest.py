"""A2A 0.3 over HTTP+JSON: the 0.3 proto's JSON mapping, translated to and from the model.

0.3's JSON-RPC and HTTP+JSON bindings carry different JSON. The REST paths of the
0.3 proto (``/v1/message:send``, ...) carry its messages as ProtoJSON, which
v03_proto_in.py reads and v03_proto_out.py writes (parts under ``content``, enum
names, no ``kind``). The official SDKs for Python and Java read and write that;
so does this codec (output is exact ProtoJSON, camelCase).

Input is forgiving: field names in camelCase or as in the proto (``message_id``,
which the Python SDK's 0.3 client sends); the message under ``message`` or
``request``; and, for clients written from the 0.3 JSON-RPC shapes (the JS SDK),
``parts`` with ``kind`` and lowercase roles. Only the send body differs from the
JSON-RPC params: the server builds the other operations' params from the path
and query in V03's JSON-RPC shape, so they are decoded by V03.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, ClassVar, Literal

import msgspec
from msgspec import UNSET, UnsetType

from .errors import A2AError, InvalidParamsError
from .jsonrpc import decode_params
from .model import (
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    HistoryLength,
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    ListTasksResponse,
    Message,
    SendMessageConfiguration,
    SendMessageRequest,
    Task,
    TaskIdRequest,
    TaskPushNotificationConfig,
    TaskStatusUpdateEvent,
)
from .requests import TaskQuery, checked_push_config, checked_send
from .types import StreamItem
from .v03 import V03, push_config_from_03, push_config_to_03
from .v03_proto_in import MessageIn, ProtoIn, message_in
from .v03_proto_out import (
    ArtifactUpdateOut,
    PageOut,
    StatusUpdateOut,
    artifact_out,
    message_out,
    status_out,
    task_out,
)
from .v03_wire import Id, Json

__all__ = ["V03Rest"]

_SEND_PUSH_FIELD = "configuration.pushNotification"

_encode = msgspec.json.Encoder().encode

# --- input: a request body (v03_proto_in.py reads its messages) ---

_OPAQUE = frozenset({"metadata", "data", "params"})  # user JSON: its keys are not renamed


def _camel_keys(value: Any) -> Any:
    """``value`` with proto field names (``message_id``) as JSON names
    (``messageId``), except inside user JSON (metadata, data)."""
    if isinstance(value, dict):
        return {
            _camel(key): (item if key in _OPAQUE else _camel_keys(item))
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_camel_keys(item) for item in value]
    return value


def _body_in(raw: msgspec.Raw, method: str) -> Json:
    """The body's fields, proto names as JSON names; one nested past Python's
    stack is InvalidParamsError, as ``decode_params`` says it."""
    try:
        body: Json = _camel_keys(decode_params(raw, dict[str, Any], method=method))
        return body
    except RecursionError:
        raise InvalidParamsError(
            f"Invalid params for {method}: the JSON is nested too deeply to process; flatten it"
        ) from None


def _camel(key: str) -> str:
    if "_" not in key:
        return key
    head, *rest = key.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


class _ConfigIn(ProtoIn):
    accepted_output_modes: list[str] | None = None
    history_length: HistoryLength | None = None
    blocking: bool | None = None
    push_notification: Json | None = None
    push_notification_config: Json | None = None  # the 0.3 JSON-RPC name


class _TaskPushIn(ProtoIn):
    name: str | None = None
    push_notification_config: Json | None = None


class _CreatePushIn(ProtoIn):
    """The body of ``POST /v1/tasks/{id}/pushNotificationConfigs`` (with the path's
    ``taskId``): the config itself (the proto's ``body: "config"``), the whole
    CreateTaskPushNotificationConfigRequest (what the official SDKs send), or
    the 0.3 JSON-RPC params."""

    task_id: Id
    push_notification_config: Json | None = None
    config: _TaskPushIn | None = None
    config_id: str | None = None
    parent: str | None = None
    name: str | None = None


class _PushIdIn(ProtoIn):
    id: Id
    push_notification_config_id: Id


class _SendIn(ProtoIn):
    message: MessageIn | None = None
    request: MessageIn | None = None  # the proto field name of `message`
    configuration: _ConfigIn | None = None
    metadata: Json | None = None


class V03Rest:
    """The server side of A2A 0.3 over HTTP+JSON (a ``server.dialect.ServerDialect``).
    a2ad's client speaks JSON-RPC, so there is no client side."""

    version: ClassVar[Literal["0.3"]] = "0.3"
    headers: ClassVar[Mapping[str, str]] = MappingProxyType({})
    send_push_field: ClassVar[str] = _SEND_PUSH_FIELD
    push_config_field: ClassVar[str] = "pushNotificationConfig"

    @staticmethod
    def wire_error(error: A2AError, method: str) -> A2AError:
        return V03.wire_error(error, method)

    @staticmethod
    def decode_send(raw: msgspec.Raw, method: str) -> SendMessageRequest:
        body = _body_in(raw, method)
        try:
            p = msgspec.convert(body, _SendIn)
        except msgspec.ValidationError as exc:
            raise InvalidParamsError(
                f"Invalid params for {method}: {str(exc).replace('`$.', '`')}"
            ) from None
        message = p.message if p.message is not None else p.request
        if message is None:
            raise InvalidParamsError(
                f"Invalid params for {method}: the body needs `message`", field="message"
            )
        # In the proto, `blocking` is a plain bool: absent is false, and the SDKs
        # leave it out to ask for the task at once. A body in the JSON-RPC shapes
        # (`message` with `parts`) keeps 0.3 JSON-RPC's meaning: absent blocks.
        proto = p.request is not None or message.content is not None
        config: SendMessageConfiguration | UnsetType = UNSET
        push: TaskPushNotificationConfig | UnsetType = UNSET
        if p.configuration is not None:
            c = p.configuration
            blocking = c.blocking if c.blocking is not None else not proto
            push_config = c.push_notification or c.push_notification_config
            if push_config is not None:
                push = push_config_from_03(
                    push_config, task_id="", method=method, field=_SEND_PUSH_FIELD
                )
            config = SendMessageConfiguration(
                accepted_output_modes=c.accepted_output_modes or [],
                # proto3 int32 without presence: 0 is "not set", so the whole history.
                history_length=c.history_length if c.history_length else UNSET,
                return_immediately=not blocking,
                task_push_notification_config=push,
            )
        return checked_send(
            SendMessageRequest(
                message=message_in(message),
                configuration=config,
                metadata=p.metadata if p.metadata is not None else UNSET,
            ),
            raw,
            method=method,
            push_field=_SEND_PUSH_FIELD,
            scheme_field="authentication.schemes[0]",
        )

    @staticmethod
    def decode_get(raw: msgspec.Raw, method: str) -> GetTaskRequest:
        return V03.decode_get(raw, method)

    @staticmethod
    def decode_list(raw: msgspec.Raw, method: str) -> TaskQuery:
        return V03.decode_list(raw, method)

    @staticmethod
    def decode_task_id(raw: msgspec.Raw, method: str) -> TaskIdRequest:
        return V03.decode_task_id(raw, method)

    @staticmethod
    def encode_send_result(result: Task | Message) -> bytes:
        if isinstance(result, Task):
            return b'{"task":%s}' % _encode(task_out(result))
        return b'{"message":%s}' % _encode(message_out(result))

    @staticmethod
    def encode_task(task: Task) -> bytes:
        return _encode(task_out(task))

    @staticmethod
    def encode_page(page: ListTasksResponse) -> bytes:
        return _encode(
            PageOut(
                tasks=[task_out(t) for t in page.tasks],
                next_page_token=page.next_page_token,
                page_size=page.page_size,
                total_size=page.total_size,
            )
        )

    @staticmethod
    def encode_stream_item(item: StreamItem, final: bool) -> bytes:
        if isinstance(item, Task):
            return b'{"task":%s}' % _encode(task_out(item))
        if isinstance(item, Message):
            return b'{"message":%s}' % _encode(message_out(item))
        if isinstance(item, TaskStatusUpdateEvent):
            update = StatusUpdateOut(
                task_id=item.task_id,
                context_id=item.context_id,
                status=status_out(item.status),
                final=final,
                metadata=item.metadata,
            )
            return b'{"statusUpdate":%s}' % _encode(update)
        artifact = ArtifactUpdateOut(
            task_id=item.task_id,
            context_id=item.context_id,
            artifact=artifact_out(item.artifact),
            append=item.append,
            last_chunk=item.last_chunk,
            metadata=item.metadata,
        )
        return b'{"artifactUpdate":%s}' % _encode(artifact)

    # --- push notifications: 0.3's proto names a config by its resource name ---

    @staticmethod
    def decode_push_config(raw: msgspec.Raw, method: str) -> TaskPushNotificationConfig:
        body = _body_in(raw, method)
        try:
            p = msgspec.convert(body, _CreatePushIn)
        except msgspec.ValidationError as exc:
            raise InvalidParamsError(
                f"Invalid params for {method}: {str(exc).replace('`$.', '`')}"
            ) from None
        inner = p.config.push_notification_config if p.config is not None else None
        value = inner if inner is not None else p.push_notification_config
        if value is None:
            raise InvalidParamsError(
                f"Invalid params for {method}: the body needs `pushNotificationConfig` "
                "(or `config.pushNotificationConfig`)",
                field="pushNotificationConfig",
            )
        config = push_config_from_03(
            value, task_id=p.task_id, method=method, field="pushNotificationConfig"
        )
        if not config.id and p.config_id:
            config = msgspec.structs.replace(config, id=p.config_id)
        return checked_push_config(
            config,
            method=method,
            field="pushNotificationConfig",
            scheme_field="authentication.schemes[0]",
        )

    @staticmethod
    def encode_push_config(config: TaskPushNotificationConfig) -> bytes:
        out: dict[str, Any] = {
            "name": f"tasks/{config.task_id}/pushNotificationConfigs/{config.id}",
            "pushNotificationConfig": msgspec.to_builtins(push_config_to_03(config)),
        }
        if config.a2ad_delivery is not UNSET:  # a2ad's extension, as in JSON-RPC
            out["a2adDelivery"] = msgspec.to_builtins(config.a2ad_delivery)
        return _encode(out)

    @staticmethod
    def decode_push_config_id(
        raw: msgspec.Raw, method: str
    ) -> GetTaskPushNotificationConfigRequest:
        p = decode_params(raw, _PushIdIn, method=method)  # both from the path
        return GetTaskPushNotificationConfigRequest(task_id=p.id, id=p.push_notification_config_id)

    @staticmethod
    def decode_list_push_configs(
        raw: msgspec.Raw, method: str
    ) -> ListTaskPushNotificationConfigsRequest:
        return V03.decode_list_push_configs(raw, method)

    @staticmethod
    def encode_push_config_page(page: ListTaskPushNotificationConfigsResponse) -> bytes:
        configs = [msgspec.json.decode(V03Rest.encode_push_config(c)) for c in page.configs]
        out: dict[str, Any] = {"configs": configs}
        if page.next_page_token:
            out["nextPageToken"] = page.next_page_token
        return _encode(out)

    @staticmethod
    def encode_deleted() -> bytes:
        return b"{}"  # google.protobuf.Empty
