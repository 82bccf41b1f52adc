"""The model as the 0.3 proto's messages in ProtoJSON (exact, camelCase): what
a2ad's 0.3 services answer (v03_rest.py, the gRPC service), and what its
client sends a 0.3 gRPC server (v03_grpc.py).

A message's parts are ``content``; a file part is ``{"file": {"fileWithUri" |
"fileWithBytes", "mimeType", "name"}}``, its bytes base64 twice, as the
official 0.3 SDKs read them (v03_proto_in.py says why); a data part is
``{"data": {"data": {...}}}``; states and roles are enum names
(``TASK_STATE_CANCELLED``, with two Ls, ``ROLE_USER``); nothing has ``kind``.
"""

from __future__ import annotations

import base64

import msgspec
from msgspec import UNSET, UnsetType

from .model import Artifact, Message, Part, Task, TaskState, TaskStatus
from .v03_wire import Json

__all__ = [
    "ArtifactUpdateOut",
    "PageOut",
    "StatusUpdateOut",
    "artifact_out",
    "message_out",
    "status_out",
    "task_out",
]


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


class StatusUpdateOut(_Out):
    task_id: str
    context_id: str
    status: _StatusOut
    final: bool
    metadata: Json | UnsetType = UNSET


class ArtifactUpdateOut(_Out):
    task_id: str
    context_id: str
    artifact: _ArtifactOut
    append: bool = False
    last_chunk: bool = False
    metadata: Json | UnsetType = UNSET


class PageOut(_Out):
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
        # base64 twice, as the official 0.3 clients read it (see v03_proto_in._unwrap_base64)
        file = _FileOut(
            file_with_bytes=base64.b64encode(base64.b64encode(p.raw)).decode(),
            mime_type=p.media_type,
            name=p.filename,
        )
    else:
        assert isinstance(p.url, str)
        file = _FileOut(file_with_uri=p.url, mime_type=p.media_type, name=p.filename)
    return _PartOut(file=file, metadata=p.metadata)


def message_out(m: Message) -> _MessageOut:
    return _MessageOut(
        message_id=m.message_id,
        role=m.role.value,
        content=[_part_out(p) for p in m.parts],
        context_id=m.context_id,
        task_id=m.task_id,
        metadata=m.metadata,
        extensions=m.extensions or UNSET,
    )


def status_out(s: TaskStatus) -> _StatusOut:
    return _StatusOut(
        state=_state_out(s.state),
        message=message_out(s.message) if isinstance(s.message, Message) else UNSET,
        timestamp=s.timestamp,
    )


def artifact_out(a: Artifact) -> _ArtifactOut:
    return _ArtifactOut(
        artifact_id=a.artifact_id,
        parts=[_part_out(p) for p in a.parts],
        name=a.name,
        description=a.description,
        metadata=a.metadata,
        extensions=a.extensions or UNSET,
    )


def task_out(t: Task) -> _TaskOut:
    return _TaskOut(
        id=t.id,
        context_id=t.context_id,
        status=status_out(t.status),
        artifacts=[artifact_out(a) for a in t.artifacts] if t.artifacts else UNSET,
        history=[message_out(m) for m in t.history] if t.history else UNSET,
        metadata=t.metadata,
    )
