"""A2A 0.3 to and from the 1.0 model: the one place the two shapes meet.

Reading 0.3 is forgiving (no ``messageId``: one is generated; a part without
``kind``: inferred from the member present) and names the offending field in an
``InvalidParamsError``; writing it is exact (lowercase states, ``kind`` set).
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

from .errors import InvalidParamsError
from .model import (
    Artifact,
    AuthenticationInfo,
    ListTasksResponse,
    Message,
    Part,
    Role,
    SendMessageRequest,
    Task,
    TaskArtifactUpdateEvent,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
    new_id,
    parse_state,
)
from .types import StreamItem
from .v03_wire import (
    Artifact03,
    ArtifactIn,
    DataPart03,
    FilePart03,
    FileWithBytes03,
    FileWithUri03,
    ListIn,
    Message03,
    MessageIn,
    PartIn,
    PushAuth03,
    PushAuthIn,
    PushConfig03,
    PushConfigIn,
    ResultIn,
    StatusIn,
    Task03,
    TaskIn,
    TaskPushConfig03,
    TaskPushConfigIn,
    TaskStatus03,
    TextPart03,
)

__all__ = [
    "artifact_to_03",
    "decode_task_push_config",
    "decode_task_push_configs",
    "list_from_03",
    "message_from_03",
    "message_to_03",
    "push_config_from_03",
    "push_config_from_in",
    "push_config_to_03",
    "result_from_03",
    "send_params_to_03",
    "state_to_03",
    "status_to_03",
    "task_push_config_from_03",
    "task_push_config_to_03",
    "task_to_03",
]


# --- 0.3 to 1.0 (lenient): requests a2ad serves ---


def push_config_from_03(
    value: Any, *, task_id: str, method: str, field: str
) -> TaskPushNotificationConfig:
    """A 0.3 PushNotificationConfig (decoded JSON, camelCase) as the model, for
    the task ``task_id``; raises InvalidParamsError naming ``field``."""
    try:
        config = msgspec.convert(value, PushConfigIn)
    except msgspec.ValidationError as exc:
        raise InvalidParamsError(
            f"Invalid params for {method}: {str(exc).replace('`$', f'`{field}')}", field=field
        ) from None
    return push_config_from_in(config, task_id)


def push_config_from_in(c: PushConfigIn, task_id: str = "") -> TaskPushNotificationConfig:
    return TaskPushNotificationConfig(
        url=c.url,
        id=c.id or "",
        task_id=task_id,
        token=c.token or "",
        authentication=_auth_from_03(c.authentication),
    )


def _auth_from_03(auth: PushAuthIn | None) -> AuthenticationInfo | UnsetType:
    # 0.3 lists the schemes the receiver accepts; the first is the one a2ad uses.
    if auth is None:
        return UNSET
    return AuthenticationInfo(scheme=auth.schemes[0], credentials=auth.credentials or "")


_ROLES = {"user": Role.USER, "agent": Role.AGENT, "role_user": Role.USER, "role_agent": Role.AGENT}


def _part_from_03(part: PartIn, where: str) -> Part:
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


def _infer_kind(part: PartIn, where: str) -> str:
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


def message_from_03(m: MessageIn) -> Message:
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


# --- 1.0 to 0.3 (exact) ---


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


def task_push_config_to_03(c: TaskPushNotificationConfig) -> TaskPushConfig03:
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


def status_to_03(s: TaskStatus) -> TaskStatus03:
    return TaskStatus03(
        state=state_to_03(s.state),
        message=message_to_03(s.message) if isinstance(s.message, Message) else UNSET,
        timestamp=s.timestamp,
    )


def artifact_to_03(a: Artifact) -> Artifact03:
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
        status=status_to_03(t.status),
        artifacts=[artifact_to_03(a) for a in t.artifacts] if t.artifacts else UNSET,
        history=[message_to_03(m) for m in t.history] if t.history else UNSET,
        metadata=t.metadata,
    )


# --- client side: 0.3 results in (leniently: other servers), 0.3 requests out ---


def task_push_config_from_03(c: TaskPushConfigIn) -> TaskPushNotificationConfig:
    p = c.push_notification_config
    return TaskPushNotificationConfig(
        url=p.url,
        id=p.id or "",
        task_id=c.task_id,
        token=p.token or "",
        authentication=_auth_from_03(p.authentication),
        a2ad_delivery=c.a2ad_delivery if c.a2ad_delivery is not None else UNSET,
    )


decode_task_push_config = msgspec.json.Decoder(TaskPushConfigIn).decode
decode_task_push_configs = msgspec.json.Decoder(list[TaskPushConfigIn]).decode


def _state_from_03(text: str) -> TaskState:
    try:
        return parse_state(text)
    except ValueError:
        return TaskState.UNSPECIFIED


def _status_from_03(s: StatusIn) -> TaskStatus:
    return TaskStatus(
        state=_state_from_03(s.state),
        message=message_from_03(s.message) if s.message is not None else UNSET,
        timestamp=s.timestamp if s.timestamp is not None else UNSET,
    )


def _artifact_from_03(a: ArtifactIn) -> Artifact:
    return Artifact(
        artifact_id=a.artifact_id,
        parts=[_part_from_03(p, f"artifact.parts[{i}]") for i, p in enumerate(a.parts)],
        name=a.name or "",
        description=a.description or "",
        metadata=a.metadata if a.metadata is not None else UNSET,
        extensions=a.extensions or [],
    )


def _task_from_03(t: TaskIn | ResultIn) -> Task:
    assert isinstance(t.id, str) and isinstance(t.status, StatusIn)
    return Task(
        id=t.id,
        context_id=t.context_id or "",
        status=_status_from_03(t.status),
        artifacts=[_artifact_from_03(a) for a in t.artifacts or []],
        history=[message_from_03(m) for m in t.history or []],
        metadata=t.metadata if t.metadata is not None else UNSET,
    )


def result_from_03(raw: bytes) -> StreamItem:
    """A 0.3 result (of message/send, tasks/get, tasks/cancel, or one stream
    event) as the 1.0 model. Raises InvalidParamsError or msgspec.ValidationError
    when it is none of them."""
    r = msgspec.json.decode(raw, type=ResultIn)
    kind = r.kind if r.kind is not UNSET else ("task" if r.status is not UNSET else "message")
    if kind == "task" and r.id is not UNSET and r.status is not UNSET:
        return _task_from_03(r)
    if kind == "message" and r.parts is not UNSET and r.role is not UNSET:
        m = MessageIn(
            role=r.role,
            parts=r.parts,
            message_id=r.message_id,
            context_id=r.context_id,
            task_id=r.task_id,
            metadata=r.metadata,
        )
        return message_from_03(m)
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


def list_from_03(raw: bytes) -> ListTasksResponse:
    page = msgspec.json.decode(raw, type=ListIn)
    return ListTasksResponse(
        tasks=[_task_from_03(t) for t in page.tasks],
        next_page_token=page.next_page_token,
        page_size=page.page_size,
        total_size=page.total_size,
    )


def send_params_to_03(request: SendMessageRequest) -> dict[str, Any]:
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
