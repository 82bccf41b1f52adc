"""A2A 0.3 on the wire, translated to and from the 1.0 model; 0.3 lives only here.

Input is forgiving, as clients written from popular docs expect: no ``messageId``
(one is generated), parts without ``kind`` (inferred from the member present),
``null`` for optional ids. Output is exact 0.3: ``kind`` on every object,
lowercase states, ``final`` on status updates.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from types import MappingProxyType
from typing import Annotated, Any, ClassVar, Literal

import msgspec
from msgspec import UNSET, Meta, UnsetType, field

from .errors import (
    A2AError,
    ExtendedAgentCardNotConfiguredError,
    InvalidParamsError,
    UnsupportedOperationError,
)
from .jsonrpc import decode_params
from .model import (
    MAX_ID_LENGTH,
    MAX_PARTS,
    Artifact,
    AuthCredentials,
    AuthenticationInfo,
    AuthScheme,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    HistoryLength,
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    OptionalId,
    Part,
    PushDeliveryStatus,
    PushToken,
    PushUrl,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    Task,
    TaskArtifactUpdateEvent,
    TaskEvent,
    TaskIdRequest,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
    new_id,
    parse_state,
)
from .requests import TaskQuery, checked_push_config, checked_send
from .types import StreamItem
from .v1 import V1

__all__ = ["V03", "card_to_03", "push_config_from_03", "push_config_to_03", "state_to_03"]

_encode = msgspec.json.Encoder().encode
Json = dict[str, Any]
Id = Annotated[str, Meta(min_length=1, max_length=MAX_ID_LENGTH)]


# --- input (lenient) ---


class _In(msgspec.Struct, rename="camel", kw_only=True):
    pass


class _FileIn(_In):
    bytes: str | UnsetType = UNSET
    uri: str | UnsetType = UNSET
    mime_type: str | None = None
    name: str | None = None


class _PartIn(_In):
    kind: str | UnsetType = UNSET
    text: str | UnsetType = UNSET
    file: _FileIn | UnsetType = UNSET
    data: Any = UNSET
    metadata: Json | None = None


class _MessageIn(_In):
    role: str
    parts: Annotated[list[_PartIn], Meta(min_length=1, max_length=MAX_PARTS)]
    message_id: Id | None = None
    context_id: Annotated[str, Meta(max_length=MAX_ID_LENGTH)] | None = None
    task_id: Annotated[str, Meta(max_length=MAX_ID_LENGTH)] | None = None
    kind: str | UnsetType = UNSET
    metadata: Json | None = None
    extensions: list[str] | None = None
    reference_task_ids: list[str] | None = None


class _PushAuthIn(_In):
    schemes: Annotated[list[AuthScheme], Meta(min_length=1)]
    credentials: AuthCredentials | None = None


class _PushConfigIn(_In):
    url: PushUrl
    id: OptionalId | None = None
    token: PushToken | None = None
    authentication: _PushAuthIn | None = None


class _ConfigIn(_In):
    accepted_output_modes: list[str] | None = None
    history_length: HistoryLength | None = None
    blocking: bool | None = None
    push_notification_config: _PushConfigIn | None = None


class _SendIn(_In):
    message: _MessageIn
    configuration: _ConfigIn | None = None
    metadata: Json | None = None


class _GetIn(_In):
    id: Id
    history_length: HistoryLength | None = None
    metadata: Json | None = None


class _TaskIdIn(_In):
    id: Id
    metadata: Json | None = None


class _SetPushIn(_In):
    task_id: Id
    push_notification_config: _PushConfigIn


class _PushIdIn(_In):
    id: Id
    push_notification_config_id: OptionalId | None = None
    metadata: Json | None = None


def push_config_from_03(
    value: Any, *, task_id: str, method: str, field: str
) -> TaskPushNotificationConfig:
    """A 0.3 PushNotificationConfig (decoded JSON, camelCase) as the model, for
    the task ``task_id``; raises InvalidParamsError naming ``field``."""
    try:
        config = msgspec.convert(value, _PushConfigIn)
    except msgspec.ValidationError as exc:
        raise InvalidParamsError(
            f"Invalid params for {method}: {str(exc).replace('`$', f'`{field}')}", field=field
        ) from None
    return _push_config_from_03(config, task_id)


def _push_config_from_03(c: _PushConfigIn, task_id: str = "") -> TaskPushNotificationConfig:
    # 0.3 lists the schemes the receiver accepts; the first is the one a2ad uses.
    auth = c.authentication
    return TaskPushNotificationConfig(
        url=c.url,
        id=c.id or "",
        task_id=task_id,
        token=c.token or "",
        authentication=(
            AuthenticationInfo(scheme=auth.schemes[0], credentials=auth.credentials or "")
            if auth is not None
            else UNSET
        ),
    )


_ROLES = {"user": Role.USER, "agent": Role.AGENT, "role_user": Role.USER, "role_agent": Role.AGENT}


def _part_from_03(part: _PartIn, where: str) -> Part:
    kind = part.kind if part.kind is not UNSET else _infer_kind(part, where)
    metadata = part.metadata if part.metadata is not None else UNSET
    if kind == "text" and part.text is not UNSET:
        return Part(text=part.text, metadata=metadata)
    if kind == "data" and part.data is not UNSET:
        return Part(data=part.data, metadata=metadata)
    if kind == "file" and part.file is not UNSET:
        f = part.file
        common: dict[str, Any] = {
            "metadata": metadata,
            "filename": f.name or "",
            "media_type": f.mime_type or "",
        }
        if isinstance(f.bytes, str) and f.uri is UNSET:
            try:
                raw = base64.b64decode(f.bytes, validate=True)
            except (binascii.Error, ValueError):
                raise InvalidParamsError(
                    f"Invalid params: `{where}.file.bytes` is not valid base64",
                    field=f"{where}.file.bytes",
                ) from None
            return Part(raw=raw, **common)
        if isinstance(f.uri, str) and f.bytes is UNSET:
            return Part(url=f.uri, **common)
        raise InvalidParamsError(
            f"Invalid params: `{where}.file` needs exactly one of `bytes` or `uri`",
            field=f"{where}.file",
        )
    raise InvalidParamsError(
        f"Invalid params: `{where}` has kind {kind!r} but no `{kind}` member; "
        "a part is {'kind': 'text', 'text': ...}, {'kind': 'file', 'file': {...}} "
        "or {'kind': 'data', 'data': {...}}",
        field=where,
    )


def _infer_kind(part: _PartIn, where: str) -> str:
    present = [
        name
        for name, value in (("text", part.text), ("file", part.file), ("data", part.data))
        if value is not UNSET
    ]
    if len(present) != 1:
        raise InvalidParamsError(
            f"Invalid params: `{where}` needs `kind` or exactly one of `text`, `file`, `data`",
            field=where,
        )
    return present[0]


def _message_from_03(m: _MessageIn) -> Message:
    role = _ROLES.get(m.role.lower())
    if role is None:
        raise InvalidParamsError(
            f"Invalid params: `message.role` must be 'user' or 'agent', not {m.role!r}",
            field="message.role",
        )
    return Message(
        message_id=m.message_id or new_id(),
        role=role,
        parts=[_part_from_03(p, f"message.parts[{i}]") for i, p in enumerate(m.parts)],
        context_id=m.context_id or "",
        task_id=m.task_id or "",
        metadata=m.metadata if m.metadata is not None else UNSET,
        extensions=m.extensions or [],
        reference_task_ids=m.reference_task_ids or [],
    )


# --- output (exact) ---


class _Out(msgspec.Struct, rename="camel", omit_defaults=True, kw_only=True):
    pass


class TextPart03(_Out, tag_field="kind", tag="text"):
    text: str
    metadata: Json | UnsetType = UNSET


class FileWithBytes03(_Out):
    bytes: str
    mime_type: str | UnsetType = UNSET
    name: str | UnsetType = UNSET


class FileWithUri03(_Out):
    uri: str
    mime_type: str | UnsetType = UNSET
    name: str | UnsetType = UNSET


class FilePart03(_Out, tag_field="kind", tag="file"):
    file: Any
    metadata: Json | UnsetType = UNSET


class DataPart03(_Out, tag_field="kind", tag="data"):
    data: Json
    metadata: Json | UnsetType = UNSET


class Message03(_Out, tag_field="kind", tag="message"):
    message_id: str
    role: str
    parts: list[Any]
    context_id: str | UnsetType = UNSET
    task_id: str | UnsetType = UNSET
    metadata: Json | UnsetType = UNSET
    extensions: list[str] = field(default_factory=list)
    reference_task_ids: list[str] = field(default_factory=list)


class TaskStatus03(_Out):
    state: str
    message: Message03 | UnsetType = UNSET
    timestamp: str | UnsetType = UNSET


class Artifact03(_Out):
    artifact_id: str
    parts: list[Any]
    name: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    metadata: Json | UnsetType = UNSET
    extensions: list[str] = field(default_factory=list)


class Task03(_Out, tag_field="kind", tag="task"):
    id: str
    context_id: str
    status: TaskStatus03
    artifacts: list[Artifact03] | UnsetType = UNSET
    history: list[Message03] | UnsetType = UNSET
    metadata: Json | UnsetType = UNSET


class StatusUpdate03(_Out, tag_field="kind", tag="status-update"):
    task_id: str
    context_id: str
    status: TaskStatus03
    final: bool  # required in 0.3, so no default (always encoded)
    metadata: Json | UnsetType = UNSET


class ArtifactUpdate03(_Out, tag_field="kind", tag="artifact-update"):
    task_id: str
    context_id: str
    artifact: Artifact03
    append: bool = False
    last_chunk: bool = False
    metadata: Json | UnsetType = UNSET


class ListTasks03(_Out):
    tasks: list[Task03]
    next_page_token: str
    page_size: int
    total_size: int


class PushAuth03(_Out):
    schemes: list[str]
    credentials: str | UnsetType = UNSET


class PushConfig03(_Out):
    url: str
    id: str | UnsetType = UNSET
    token: str | UnsetType = UNSET
    authentication: PushAuth03 | UnsetType = UNSET


class TaskPushConfig03(_Out):
    task_id: str
    push_notification_config: PushConfig03
    a2ad_delivery: PushDeliveryStatus | UnsetType = UNSET  # a2ad extension


def push_config_to_03(c: TaskPushNotificationConfig) -> PushConfig03:
    auth = c.authentication
    return PushConfig03(
        url=c.url,
        id=_opt(c.id),
        token=_opt(c.token),
        authentication=(
            PushAuth03(schemes=[auth.scheme], credentials=_opt(auth.credentials))
            if auth is not UNSET
            else UNSET
        ),
    )


def _task_push_config_to_03(c: TaskPushNotificationConfig) -> TaskPushConfig03:
    return TaskPushConfig03(
        task_id=c.task_id,
        push_notification_config=push_config_to_03(c),
        a2ad_delivery=c.a2ad_delivery,
    )


def state_to_03(state: TaskState) -> str:
    return "unknown" if state is TaskState.UNSPECIFIED else state.word


def _opt(text: str) -> str | UnsetType:
    return text if text else UNSET


def _part_to_03(p: Part) -> TextPart03 | FilePart03 | DataPart03:
    if isinstance(p.text, str):
        return TextPart03(text=p.text, metadata=p.metadata)
    if p.data is not UNSET:
        data = p.data if isinstance(p.data, dict) else {"value": p.data}
        return DataPart03(data=data, metadata=p.metadata)
    file: FileWithBytes03 | FileWithUri03
    if isinstance(p.raw, bytes):
        file = FileWithBytes03(
            bytes=base64.b64encode(p.raw).decode(),
            mime_type=_opt(p.media_type),
            name=_opt(p.filename),
        )
    else:
        assert isinstance(p.url, str)
        file = FileWithUri03(uri=p.url, mime_type=_opt(p.media_type), name=_opt(p.filename))
    return FilePart03(file=file, metadata=p.metadata)


def message_to_03(m: Message) -> Message03:
    return Message03(
        message_id=m.message_id,
        role="agent" if m.role is Role.AGENT else "user",
        parts=[_part_to_03(p) for p in m.parts],
        context_id=_opt(m.context_id),
        task_id=_opt(m.task_id),
        metadata=m.metadata,
        extensions=m.extensions,
        reference_task_ids=m.reference_task_ids,
    )


def _status_to_03(s: TaskStatus) -> TaskStatus03:
    return TaskStatus03(
        state=state_to_03(s.state),
        message=message_to_03(s.message) if isinstance(s.message, Message) else UNSET,
        timestamp=s.timestamp,
    )


def _artifact_to_03(a: Artifact) -> Artifact03:
    return Artifact03(
        artifact_id=a.artifact_id,
        parts=[_part_to_03(p) for p in a.parts],
        name=_opt(a.name),
        description=_opt(a.description),
        metadata=a.metadata,
        extensions=a.extensions,
    )


def task_to_03(t: Task) -> Task03:
    return Task03(
        id=t.id,
        context_id=t.context_id,
        status=_status_to_03(t.status),
        artifacts=[_artifact_to_03(a) for a in t.artifacts] if t.artifacts else UNSET,
        history=[message_to_03(m) for m in t.history] if t.history else UNSET,
        metadata=t.metadata,
    )


# --- client side: 0.3 requests out, 0.3 results in (leniently: other servers) ---


class TaskQueryParams03(_Out):
    id: str
    history_length: int | UnsetType = UNSET


class TaskIdParams03(_Out):
    id: str
    metadata: Json | UnsetType = UNSET


class _StatusIn(_In):
    state: str
    message: _MessageIn | None = None
    timestamp: str | None = None


class _ArtifactIn(_In):
    artifact_id: str
    parts: list[_PartIn]
    name: str | None = None
    description: str | None = None
    metadata: Json | None = None
    extensions: list[str] | None = None


class _TaskIn(_In):
    id: str
    context_id: str
    status: _StatusIn
    artifacts: list[_ArtifactIn] | None = None
    history: list[_MessageIn] | None = None
    metadata: Json | None = None


class _ResultIn(_In):
    """Any 0.3 result object; ``kind`` says which (``message``, ``task``,
    ``status-update``, ``artifact-update``)."""

    kind: str | UnsetType = UNSET
    # task
    id: str | UnsetType = UNSET
    status: _StatusIn | UnsetType = UNSET
    artifacts: list[_ArtifactIn] | None = None
    history: list[_MessageIn] | None = None
    # message
    role: str | UnsetType = UNSET
    parts: list[_PartIn] | UnsetType = UNSET
    message_id: str | None = None
    # events
    task_id: str | None = None
    context_id: str | None = None
    artifact: _ArtifactIn | UnsetType = UNSET
    append: bool | None = None
    last_chunk: bool | None = None
    metadata: Json | None = None


class _PushConfigResultIn(_In):
    url: str
    id: str | None = None
    token: str | None = None
    authentication: _PushAuthIn | None = None


class _TaskPushConfigIn(_In):
    task_id: str
    push_notification_config: _PushConfigResultIn
    a2ad_delivery: PushDeliveryStatus | None = None


def _task_push_config_from_03(c: _TaskPushConfigIn) -> TaskPushNotificationConfig:
    p = c.push_notification_config
    auth = p.authentication
    return TaskPushNotificationConfig(
        url=p.url,
        id=p.id or "",
        task_id=c.task_id,
        token=p.token or "",
        authentication=(
            AuthenticationInfo(scheme=auth.schemes[0], credentials=auth.credentials or "")
            if auth is not None
            else UNSET
        ),
        a2ad_delivery=c.a2ad_delivery if c.a2ad_delivery is not None else UNSET,
    )


_task_push_config_in = msgspec.json.Decoder(_TaskPushConfigIn).decode
_task_push_configs_in = msgspec.json.Decoder(list[_TaskPushConfigIn]).decode


class _ListIn(_In):
    tasks: list[_TaskIn]
    next_page_token: str = ""
    page_size: int = 0
    total_size: int = 0


def _state_from_03(text: str) -> TaskState:
    try:
        return parse_state(text)
    except ValueError:
        return TaskState.UNSPECIFIED


def _status_from_03(s: _StatusIn) -> TaskStatus:
    return TaskStatus(
        state=_state_from_03(s.state),
        message=_message_from_03(s.message) if s.message is not None else UNSET,
        timestamp=s.timestamp if s.timestamp is not None else UNSET,
    )


def _artifact_from_03(a: _ArtifactIn) -> Artifact:
    return Artifact(
        artifact_id=a.artifact_id,
        parts=[_part_from_03(p, f"artifact.parts[{i}]") for i, p in enumerate(a.parts)],
        name=a.name or "",
        description=a.description or "",
        metadata=a.metadata if a.metadata is not None else UNSET,
        extensions=a.extensions or [],
    )


def _task_from_03(t: _TaskIn | _ResultIn) -> Task:
    assert isinstance(t.id, str) and isinstance(t.status, _StatusIn)
    return Task(
        id=t.id,
        context_id=t.context_id or "",
        status=_status_from_03(t.status),
        artifacts=[_artifact_from_03(a) for a in t.artifacts or []],
        history=[_message_from_03(m) for m in t.history or []],
        metadata=t.metadata if t.metadata is not None else UNSET,
    )


def _result_from_03(raw: bytes) -> StreamItem:
    """A 0.3 result (of message/send, tasks/get, tasks/cancel, or one stream
    event) as the 1.0 model. Raises InvalidParamsError or msgspec.ValidationError
    when it is none of them."""
    r = msgspec.json.decode(raw, type=_ResultIn)
    kind = r.kind if r.kind is not UNSET else ("task" if r.status is not UNSET else "message")
    if kind == "task" and r.id is not UNSET and r.status is not UNSET:
        return _task_from_03(r)
    if kind == "message" and r.parts is not UNSET and r.role is not UNSET:
        m = _MessageIn(
            role=r.role,
            parts=r.parts,
            message_id=r.message_id,
            context_id=r.context_id,
            task_id=r.task_id,
            metadata=r.metadata,
        )
        return _message_from_03(m)
    if kind == "status-update" and r.status is not UNSET:
        return TaskStatusUpdateEvent(
            task_id=r.task_id or "",
            context_id=r.context_id or "",
            status=_status_from_03(r.status),
            metadata=r.metadata if r.metadata is not None else UNSET,
        )
    if kind == "artifact-update" and r.artifact is not UNSET:
        return TaskArtifactUpdateEvent(
            task_id=r.task_id or "",
            context_id=r.context_id or "",
            artifact=_artifact_from_03(r.artifact),
            append=bool(r.append),
            last_chunk=bool(r.last_chunk),
            metadata=r.metadata if r.metadata is not None else UNSET,
        )
    raise InvalidParamsError(f"not an A2A 0.3 result of kind {kind!r}")


def _list_from_03(raw: bytes) -> ListTasksResponse:
    page = msgspec.json.decode(raw, type=_ListIn)
    return ListTasksResponse(
        tasks=[_task_from_03(t) for t in page.tasks],
        next_page_token=page.next_page_token,
        page_size=page.page_size,
        total_size=page.total_size,
    )


def _send_params_to_03(request: SendMessageRequest) -> dict[str, Any]:
    """``message/send`` / ``message/stream`` params for a 1.0 request."""
    params: dict[str, Any] = {"message": msgspec.to_builtins(message_to_03(request.message))}
    config = request.configuration
    if config is not UNSET:
        c: dict[str, Any] = {"blocking": not config.return_immediately}
        if config.accepted_output_modes:
            c["acceptedOutputModes"] = config.accepted_output_modes
        if config.history_length is not UNSET:
            c["historyLength"] = config.history_length
        if config.task_push_notification_config is not UNSET:
            push = push_config_to_03(config.task_push_notification_config)
            c["pushNotificationConfig"] = msgspec.to_builtins(push)
        params["configuration"] = c
    if request.metadata is not UNSET:
        params["metadata"] = request.metadata
    return params


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
        p = decode_params(raw, _SendIn, method=method)
        config: SendMessageConfiguration | UnsetType = UNSET
        if p.configuration is not None:
            c = p.configuration
            config = SendMessageConfiguration(
                accepted_output_modes=c.accepted_output_modes or [],
                history_length=c.history_length if c.history_length is not None else UNSET,
                return_immediately=c.blocking is False,
                task_push_notification_config=(
                    _push_config_from_03(c.push_notification_config)
                    if c.push_notification_config is not None
                    else UNSET
                ),
            )
        return checked_send(
            SendMessageRequest(
                message=_message_from_03(p.message),
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
        return _encode(_send_params_to_03(request))

    @staticmethod
    def decode_get(raw: msgspec.Raw, method: str) -> GetTaskRequest:
        p = decode_params(raw, _GetIn, method=method)
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
        p = decode_params(raw, _TaskIdIn, method=method)
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
        result = _result_from_03(raw)
        if not isinstance(result, Task | Message):
            raise ValueError(f"a {type(result).__name__} where a task or message belongs")
        return result

    @staticmethod
    def encode_task(task: Task) -> bytes:
        return _encode(task_to_03(task))

    @staticmethod
    def decode_task(raw: bytes) -> Task:
        result = _result_from_03(raw)
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
        return _list_from_03(raw)

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
                status=_status_to_03(item.status),
                final=final,
                metadata=item.metadata,
            )
        else:
            out = ArtifactUpdate03(
                task_id=item.task_id,
                context_id=item.context_id,
                artifact=_artifact_to_03(item.artifact),
                append=item.append,
                last_chunk=item.last_chunk,
                metadata=item.metadata,
            )
        return _encode(out)

    @staticmethod
    def decode_stream_item(raw: bytes) -> StreamItem:
        return _result_from_03(raw)

    # --- push notifications ---

    @staticmethod
    def decode_push_config(raw: msgspec.Raw, method: str) -> TaskPushNotificationConfig:
        p = decode_params(raw, _SetPushIn, method=method)
        config = _push_config_from_03(p.push_notification_config, p.task_id)
        return checked_push_config(
            config,
            method=method,
            field=V03.push_config_field,
            scheme_field="authentication.schemes[0]",
        )

    @staticmethod
    def encode_push_config(config: TaskPushNotificationConfig) -> bytes:
        return _encode(_task_push_config_to_03(config))

    @staticmethod
    def decode_push_config_result(raw: bytes) -> TaskPushNotificationConfig:
        return _task_push_config_from_03(_task_push_config_in(raw))

    @staticmethod
    def decode_push_config_id(
        raw: msgspec.Raw, method: str
    ) -> GetTaskPushNotificationConfigRequest:
        p = decode_params(raw, _PushIdIn, method=method)
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
        p = decode_params(raw, _TaskIdIn, method=method)
        return ListTaskPushNotificationConfigsRequest(task_id=p.id)

    @staticmethod
    def encode_list_push_configs(request: ListTaskPushNotificationConfigsRequest) -> bytes:
        return _encode({"id": request.task_id})

    @staticmethod
    def encode_push_config_page(page: ListTaskPushNotificationConfigsResponse) -> bytes:
        return _encode([_task_push_config_to_03(c) for c in page.configs])  # a bare array

    @staticmethod
    def decode_push_config_page(raw: bytes) -> ListTaskPushNotificationConfigsResponse:
        configs = [_task_push_config_from_03(c) for c in _task_push_configs_in(raw)]
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


# --- the agent card ---

_SCHEME_TYPES = {
    "apiKeySecurityScheme": "apiKey",
    "httpAuthSecurityScheme": "http",
    "oauth2SecurityScheme": "oauth2",
    "openIdConnectSecurityScheme": "openIdConnect",
    "mtlsSecurityScheme": "mutualTLS",
}


def card_to_03(card: dict[str, Any]) -> dict[str, Any]:
    """A 1.0 AgentCard (as builtins) as the 0.3 AgentCard: the 0.3 interfaces as
    ``url``/``preferredTransport`` (the first) and ``additionalInterfaces`` (all,
    when there are several), ``supportsAuthenticatedExtendedCard``, security
    schemes with ``type``, requirements as ``security``."""
    interfaces = [i for i in card["supportedInterfaces"] if i["protocolVersion"] == "0.3"]
    out: dict[str, Any] = {
        "name": card["name"],
        "description": card["description"],
        "url": interfaces[0]["url"],
        "preferredTransport": interfaces[0]["protocolBinding"],
        "protocolVersion": "0.3.0",
        "version": card["version"],
    }
    if len(interfaces) > 1:
        out["additionalInterfaces"] = [
            {"url": i["url"], "transport": i["protocolBinding"]} for i in interfaces
        ]
    for key in ("provider", "documentationUrl", "iconUrl"):
        if key in card:
            out[key] = card[key]
    capabilities = dict(card["capabilities"])
    if capabilities.pop("extendedAgentCard", False):
        out["supportsAuthenticatedExtendedCard"] = True
    out["capabilities"] = capabilities
    if "securitySchemes" in card:
        out["securitySchemes"] = {
            name: _scheme_to_03(scheme) for name, scheme in card["securitySchemes"].items()
        }
    if "securityRequirements" in card:
        out["security"] = _requirements_to_03(card["securityRequirements"])
    out["defaultInputModes"] = card["defaultInputModes"]
    out["defaultOutputModes"] = card["defaultOutputModes"]
    out["skills"] = [_skill_to_03(s) for s in card["skills"]]
    return out


def _requirements_to_03(requirements: list[dict[str, Any]]) -> list[dict[str, list[str]]]:
    return [
        {name: scopes.get("list", []) for name, scopes in r.get("schemes", {}).items()}
        for r in requirements
    ]


def _skill_to_03(skill: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in skill.items() if k != "securityRequirements"}
    if "securityRequirements" in skill:
        out["security"] = _requirements_to_03(skill["securityRequirements"])
    return out


def _scheme_to_03(scheme: dict[str, Any]) -> dict[str, Any]:
    ((key, body),) = scheme.items()
    out: dict[str, Any] = {"type": _SCHEME_TYPES[key]}
    for name, value in body.items():
        if name == "location":
            out["in"] = value
        elif name == "flows":  # 0.3 flows have no pkceRequired
            out["flows"] = {
                k: {n: v for n, v in flow.items() if n != "pkceRequired"}
                for k, flow in value.items()
            }
        else:
            out[name] = value
    return out
