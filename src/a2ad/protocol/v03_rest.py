"""A2A 0.3 over HTTP+JSON: the 0.3 proto's JSON mapping, translated to and from the model.

0.3's JSON-RPC and HTTP+JSON bindings carry different JSON. The REST paths of the
0.3 proto (``/v1/message:send``, ...) carry its messages as ProtoJSON: a message's
parts are ``content``, a file part is ``{"file": {"fileWithUri" | "fileWithBytes",
"mimeType", "name"}}`` (the bytes base64 twice, as the official SDKs write and
read them), a data part is ``{"data": {"data": {...}}}``, states and
roles are enum names (``TASK_STATE_CANCELLED``, with two Ls, ``ROLE_USER``) and
nothing has ``kind``. The official SDKs for Python and Java read and write that;
so does this codec (output is exact ProtoJSON, camelCase).

Input is forgiving: field names in camelCase or as in the proto (``message_id``,
which the Python SDK's 0.3 client sends); the message under ``message`` or
``request``; and, for clients written from the 0.3 JSON-RPC shapes (the JS SDK),
``parts`` with ``kind`` and lowercase roles. Only the send body differs from the
JSON-RPC params: the server builds the other operations' params from the path
and query in V03's JSON-RPC shape, so they are decoded by V03.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from types import MappingProxyType
from typing import Annotated, Any, ClassVar, Literal

import msgspec
from msgspec import UNSET, Meta, UnsetType

from .errors import A2AError, InvalidParamsError
from .jsonrpc import decode_params
from .model import (
    MAX_ID_LENGTH,
    MAX_PARTS,
    Artifact,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    HistoryLength,
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    ListTasksResponse,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    Task,
    TaskIdRequest,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
    new_id,
)
from .requests import TaskQuery, checked_push_config, checked_send
from .types import StreamItem
from .v03 import V03, push_config_from_03, push_config_to_03
from .v03_wire import Id, Json

__all__ = ["V03Rest"]

_SEND_PUSH_FIELD = "configuration.pushNotification"

_encode = msgspec.json.Encoder().encode
OptionalId = Annotated[str, Meta(max_length=MAX_ID_LENGTH)] | None

# --- input (lenient) ---

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


class _In(msgspec.Struct, rename="camel", kw_only=True):
    pass


class _FileIn(_In):
    file_with_uri: str | None = None
    file_with_bytes: str | None = None
    uri: str | None = None  # the 0.3 JSON-RPC spellings
    bytes: str | None = None
    mime_type: str | None = None
    name: str | None = None


class _PartIn(_In):
    kind: str | None = None
    text: str | UnsetType = UNSET
    file: _FileIn | UnsetType = UNSET
    data: Any = UNSET
    metadata: Json | None = None


_PartsIn = Annotated[list[_PartIn], Meta(max_length=MAX_PARTS)]


class _MessageIn(_In):
    role: str
    content: _PartsIn | None = None
    parts: _PartsIn | None = None  # the 0.3 JSON-RPC name
    message_id: Id | None = None
    context_id: OptionalId = None
    task_id: OptionalId = None
    metadata: Json | None = None
    extensions: list[str] | None = None
    reference_task_ids: list[str] | None = None


class _ConfigIn(_In):
    accepted_output_modes: list[str] | None = None
    history_length: HistoryLength | None = None
    blocking: bool | None = None
    push_notification: Json | None = None
    push_notification_config: Json | None = None  # the 0.3 JSON-RPC name


class _TaskPushIn(_In):
    name: str | None = None
    push_notification_config: Json | None = None


class _CreatePushIn(_In):
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


class _PushIdIn(_In):
    id: Id
    push_notification_config_id: Id


class _SendIn(_In):
    message: _MessageIn | None = None
    request: _MessageIn | None = None  # the proto field name of `message`
    configuration: _ConfigIn | None = None
    metadata: Json | None = None


_ROLES = {"ROLE_USER": Role.USER, "ROLE_AGENT": Role.AGENT, "user": Role.USER, "agent": Role.AGENT}


def _part_in(part: _PartIn, where: str) -> Part:
    present = [
        name
        for name, value in (("text", part.text), ("file", part.file), ("data", part.data))
        if value is not UNSET
    ]
    if len(present) != 1 or (part.kind is not None and part.kind != present[0]):
        raise InvalidParamsError(
            f"Invalid params: `{where}` needs exactly one of `text`, `file`, `data`",
            field=where,
        )
    metadata = part.metadata if part.metadata is not None else UNSET
    if isinstance(part.text, str):
        return Part(text=part.text, metadata=metadata)
    if isinstance(part.file, _FileIn):
        return _file_in(part.file, metadata, f"{where}.file")
    data = part.data
    if part.kind is None and isinstance(data, dict) and data.keys() == {"data"}:
        data = data["data"]  # the proto's DataPart wraps the value: {"data": {...}}
    return Part(data=data, metadata=metadata)


def _file_in(f: _FileIn, metadata: Json | UnsetType, where: str) -> Part:
    uri = f.file_with_uri if f.file_with_uri is not None else f.uri
    encoded = f.file_with_bytes if f.file_with_bytes is not None else f.bytes
    common: dict[str, Any] = {
        "metadata": metadata,
        "filename": f.name or "",
        "media_type": f.mime_type or "",
    }
    if uri is not None and encoded is None:
        return Part(url=uri, **common)
    if encoded is not None and uri is None:
        try:
            raw = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            raise InvalidParamsError(
                f"Invalid params: `{where}.fileWithBytes` is not valid base64",
                field=f"{where}.fileWithBytes",
            ) from None
        if f.file_with_bytes is not None:
            raw = _unwrap_base64(raw)
        return Part(raw=raw, **common)
    raise InvalidParamsError(
        f"Invalid params: `{where}` needs exactly one of `fileWithUri` or `fileWithBytes`",
        field=where,
    )


def _unwrap_base64(raw: bytes) -> bytes:
    """The file's bytes from a decoded ``fileWithBytes``. The official SDKs put the
    0.3 JSON-RPC base64 *text* into the proto's bytes field, so on the wire it is
    base64 twice (a2a-python's compat proto_utils; a2a-go#367 followed it for
    compatibility); a client that encoded once sent bytes that are (almost
    always) not base64 text, and those are the file."""
    try:
        return base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError):
        return raw


def _message_in(m: _MessageIn) -> Message:
    role = _ROLES.get(m.role)
    if role is None:
        raise InvalidParamsError(
            f"Invalid params: `message.role` must be ROLE_USER or ROLE_AGENT, not {m.role!r}",
            field="message.role",
        )
    parts = m.content if m.content is not None else m.parts
    if not parts:
        raise InvalidParamsError(
            "Invalid params: `message.content` needs at least one part", field="message.content"
        )
    return Message(
        message_id=m.message_id or new_id(),
        role=role,
        parts=[_part_in(p, f"message.content[{i}]") for i, p in enumerate(parts)],
        context_id=m.context_id or "",
        task_id=m.task_id or "",
        metadata=m.metadata if m.metadata is not None else UNSET,
        extensions=m.extensions or [],
        reference_task_ids=m.reference_task_ids or [],
    )


# --- output (exact ProtoJSON of the 0.3 proto) ---


class _Out(msgspec.Struct, rename="camel", omit_defaults=True, kw_only=True):
    pass


class _FileOut(_Out):
    file_with_uri: str | UnsetType = UNSET
    file_with_bytes: str | UnsetType = UNSET
    mime_type: str = ""
    name: str = ""


class _DataOut(_Out):
    data: Json


class _PartOut(_Out):
    text: str | UnsetType = UNSET
    file: _FileOut | UnsetType = UNSET
    data: _DataOut | UnsetType = UNSET
    metadata: Json | UnsetType = UNSET


class _MessageOut(_Out):
    message_id: str
    role: str
    content: list[_PartOut]
    context_id: str = ""
    task_id: str = ""
    metadata: Json | UnsetType = UNSET
    extensions: list[str] | UnsetType = UNSET


class _StatusOut(_Out):
    state: str
    message: _MessageOut | UnsetType = UNSET
    timestamp: str | UnsetType = UNSET


class _ArtifactOut(_Out):
    artifact_id: str
    parts: list[_PartOut]
    name: str = ""
    description: str = ""
    metadata: Json | UnsetType = UNSET
    extensions: list[str] | UnsetType = UNSET


class _TaskOut(_Out):
    id: str
    context_id: str
    status: _StatusOut
    artifacts: list[_ArtifactOut] | UnsetType = UNSET
    history: list[_MessageOut] | UnsetType = UNSET
    metadata: Json | UnsetType = UNSET


class _StatusUpdateOut(_Out):
    task_id: str
    context_id: str
    status: _StatusOut
    final: bool
    metadata: Json | UnsetType = UNSET


class _ArtifactUpdateOut(_Out):
    task_id: str
    context_id: str
    artifact: _ArtifactOut
    append: bool = False
    last_chunk: bool = False
    metadata: Json | UnsetType = UNSET


class _PageOut(_Out):
    tasks: list[_TaskOut]
    next_page_token: str
    page_size: int
    total_size: int


def _state_out(state: TaskState) -> str:
    return "TASK_STATE_CANCELLED" if state is TaskState.CANCELED else state.value


def _part_out(p: Part) -> _PartOut:
    if isinstance(p.text, str):
        return _PartOut(text=p.text, metadata=p.metadata)
    if p.data is not UNSET:
        # A Struct is an object; any other JSON value goes inside one, as V03 does.
        data = p.data if isinstance(p.data, dict) else {"value": p.data}
        return _PartOut(data=_DataOut(data=data), metadata=p.metadata)
    if isinstance(p.raw, bytes):
        # base64 twice, as the official 0.3 clients read it (see _unwrap_base64)
        file = _FileOut(
            file_with_bytes=base64.b64encode(base64.b64encode(p.raw)).decode(),
            mime_type=p.media_type,
            name=p.filename,
        )
    else:
        assert isinstance(p.url, str)
        file = _FileOut(file_with_uri=p.url, mime_type=p.media_type, name=p.filename)
    return _PartOut(file=file, metadata=p.metadata)


def _message_out(m: Message) -> _MessageOut:
    return _MessageOut(
        message_id=m.message_id,
        role=m.role.value,
        content=[_part_out(p) for p in m.parts],
        context_id=m.context_id,
        task_id=m.task_id,
        metadata=m.metadata,
        extensions=m.extensions or UNSET,
    )


def _status_out(s: TaskStatus) -> _StatusOut:
    return _StatusOut(
        state=_state_out(s.state),
        message=_message_out(s.message) if isinstance(s.message, Message) else UNSET,
        timestamp=s.timestamp,
    )


def _artifact_out(a: Artifact) -> _ArtifactOut:
    return _ArtifactOut(
        artifact_id=a.artifact_id,
        parts=[_part_out(p) for p in a.parts],
        name=a.name,
        description=a.description,
        metadata=a.metadata,
        extensions=a.extensions or UNSET,
    )


def _task_out(t: Task) -> _TaskOut:
    return _TaskOut(
        id=t.id,
        context_id=t.context_id,
        status=_status_out(t.status),
        artifacts=[_artifact_out(a) for a in t.artifacts] if t.artifacts else UNSET,
        history=[_message_out(m) for m in t.history] if t.history else UNSET,
        metadata=t.metadata,
    )


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
                message=_message_in(message),
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
            return b'{"task":%s}' % _encode(_task_out(result))
        return b'{"message":%s}' % _encode(_message_out(result))

    @staticmethod
    def encode_task(task: Task) -> bytes:
        return _encode(_task_out(task))

    @staticmethod
    def encode_page(page: ListTasksResponse) -> bytes:
        return _encode(
            _PageOut(
                tasks=[_task_out(t) for t in page.tasks],
                next_page_token=page.next_page_token,
                page_size=page.page_size,
                total_size=page.total_size,
            )
        )

    @staticmethod
    def encode_stream_item(item: StreamItem, final: bool) -> bytes:
        if isinstance(item, Task):
            return b'{"task":%s}' % _encode(_task_out(item))
        if isinstance(item, Message):
            return b'{"message":%s}' % _encode(_message_out(item))
        if isinstance(item, TaskStatusUpdateEvent):
            update = _StatusUpdateOut(
                task_id=item.task_id,
                context_id=item.context_id,
                status=_status_out(item.status),
                final=final,
                metadata=item.metadata,
            )
            return b'{"statusUpdate":%s}' % _encode(update)
        artifact = _ArtifactUpdateOut(
            task_id=item.task_id,
            context_id=item.context_id,
            artifact=_artifact_out(item.artifact),
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
