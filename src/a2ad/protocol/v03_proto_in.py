"""The 0.3 proto's messages as ProtoJSON, read into the model: what a2ad's
0.3 services read of a request (v03_rest.py, the gRPC service), and what its
client reads of a 0.3 gRPC server's answers (v03_grpc.py).

Reading is forgiving: a message's parts under ``content`` or, as 0.3's JSON-RPC
names them (the JS SDK's clients send those), ``parts`` with ``kind``; roles
as enum names or lowercase; a file's bytes base64 once or twice (the official
SDKs put the 0.3 JSON-RPC base64 *text* in the proto's bytes field); a data
part's value in the proto's ``{"data": {...}}`` or bare. Names are camelCase
(the JSON names): v03_rest.py turns the proto's own into them first.
"""

from __future__ import annotations

import base64
import binascii
from typing import Annotated, Any

import msgspec
from msgspec import UNSET, Meta, UnsetType

from .errors import InvalidParamsError
from .model import (
    MAX_ID_LENGTH,
    MAX_PARTS,
    Artifact,
    Message,
    Part,
    Role,
    Task,
    TaskArtifactUpdateEvent,
    TaskStatus,
    TaskStatusUpdateEvent,
    new_id,
    parse_state,
)
from .types import StreamItem
from .v03_wire import Id, Json

__all__ = [
    "FileIn",
    "MessageIn",
    "PartIn",
    "PartsIn",
    "ProtoIn",
    "message_in",
    "part_in",
    "result_in",
    "task_in",
]

OptionalId = Annotated[str, Meta(max_length=MAX_ID_LENGTH)] | None


class ProtoIn(msgspec.Struct, rename="camel", kw_only=True):
    pass


class FileIn(ProtoIn):
    file_with_uri: str | None = None
    file_with_bytes: str | None = None
    uri: str | None = None  # the 0.3 JSON-RPC spellings
    bytes: str | None = None
    mime_type: str | None = None
    name: str | None = None


class PartIn(ProtoIn):
    kind: str | None = None
    text: str | UnsetType = UNSET
    file: FileIn | UnsetType = UNSET
    data: Any = UNSET
    metadata: Json | None = None


PartsIn = Annotated[list[PartIn], Meta(max_length=MAX_PARTS)]


class MessageIn(ProtoIn):
    role: str
    content: PartsIn | None = None
    parts: PartsIn | None = None  # the 0.3 JSON-RPC name
    message_id: Id | None = None
    context_id: OptionalId = None
    task_id: OptionalId = None
    metadata: Json | None = None
    extensions: list[str] | None = None
    reference_task_ids: list[str] | None = None


_ROLES = {"ROLE_USER": Role.USER, "ROLE_AGENT": Role.AGENT, "user": Role.USER, "agent": Role.AGENT}


def part_in(part: PartIn, where: str) -> Part:
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
    if isinstance(part.file, FileIn):
        return _file_in(part.file, metadata, f"{where}.file")
    data = part.data
    if part.kind is None and isinstance(data, dict) and data.keys() == {"data"}:
        data = data["data"]  # the proto's DataPart wraps the value: {"data": {...}}
    return Part(data=data, metadata=metadata)


def _file_in(f: FileIn, metadata: Json | UnsetType, where: str) -> Part:
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


def message_in(m: MessageIn) -> Message:
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
        parts=[part_in(p, f"message.content[{i}]") for i, p in enumerate(parts)],
        context_id=m.context_id or "",
        task_id=m.task_id or "",
        metadata=m.metadata if m.metadata is not None else UNSET,
        extensions=m.extensions or [],
        reference_task_ids=m.reference_task_ids or [],
    )


# --- answers: what a client reads of a 0.3 server ---


class _StatusIn(ProtoIn):
    state: str
    message: MessageIn | None = None
    timestamp: str | None = None


class _ArtifactIn(ProtoIn):
    artifact_id: Id
    parts: PartsIn
    name: str = ""
    description: str = ""
    metadata: Json | None = None
    extensions: list[str] | None = None


class _TaskIn(ProtoIn):
    id: Id
    status: _StatusIn
    context_id: str = ""
    artifacts: list[_ArtifactIn] | None = None
    history: list[MessageIn] | None = None
    metadata: Json | None = None


class _StatusUpdateIn(ProtoIn):
    task_id: str
    status: _StatusIn
    context_id: str = ""
    metadata: Json | None = None


class _ArtifactUpdateIn(ProtoIn):
    task_id: str
    artifact: _ArtifactIn
    context_id: str = ""
    append: bool = False
    last_chunk: bool = False
    metadata: Json | None = None


class _ResultIn(ProtoIn):
    """A SendMessageResponse or a StreamResponse: one of its members."""

    task: _TaskIn | None = None
    message: MessageIn | None = None
    status_update: _StatusUpdateIn | None = None
    artifact_update: _ArtifactUpdateIn | None = None


_decode_task = msgspec.json.Decoder(_TaskIn).decode
_decode_result = msgspec.json.Decoder(_ResultIn).decode


def _meta(value: Json | None) -> Json | UnsetType:
    return value if value is not None else UNSET


def _status_in(s: _StatusIn) -> TaskStatus:
    return TaskStatus(
        state=parse_state(s.state),  # TASK_STATE_CANCELLED, with two Ls, is read too
        message=message_in(s.message) if s.message is not None else UNSET,
        timestamp=s.timestamp if s.timestamp is not None else UNSET,
    )


def _artifact_in(a: _ArtifactIn) -> Artifact:
    return Artifact(
        artifact_id=a.artifact_id,
        parts=[part_in(p, f"artifact.parts[{i}]") for i, p in enumerate(a.parts)],
        name=a.name,
        description=a.description,
        metadata=_meta(a.metadata),
        extensions=a.extensions or [],
    )


def _task(t: _TaskIn) -> Task:
    return Task(
        id=t.id,
        context_id=t.context_id,
        status=_status_in(t.status),
        artifacts=[_artifact_in(a) for a in t.artifacts or ()],
        history=[message_in(m) for m in t.history or ()],
        metadata=_meta(t.metadata),
    )


def task_in(raw: bytes) -> Task:
    """A Task's JSON as the model's; raises ValueError (msgspec's among them)
    or InvalidParamsError for one that is not a 0.3 Task."""
    return _task(_decode_task(raw))


def result_in(raw: bytes) -> StreamItem:
    """What a SendMessageResponse or StreamResponse's JSON carries: a task, a
    message, or an update; raises as ``task_in`` does, and ValueError for one
    carrying none or several."""
    r = _decode_result(raw)
    members = (r.task, r.message, r.status_update, r.artifact_update)
    if sum(member is not None for member in members) != 1:
        raise ValueError(
            "expected exactly one of `task`, `message`, `statusUpdate`, `artifactUpdate`"
        )
    if r.task is not None:
        return _task(r.task)
    if r.message is not None:
        return message_in(r.message)
    if r.status_update is not None:
        u = r.status_update
        return TaskStatusUpdateEvent(
            task_id=u.task_id,
            context_id=u.context_id,
            status=_status_in(u.status),
            metadata=_meta(u.metadata),
        )
    assert r.artifact_update is not None
    a = r.artifact_update
    return TaskArtifactUpdateEvent(
        task_id=a.task_id,
        context_id=a.context_id,
        artifact=_artifact_in(a.artifact),
        append=a.append,
        last_chunk=a.last_chunk,
        metadata=_meta(a.metadata),
    )
