"""A2A 0.3's JSON shapes: what a2ad reads (leniently) and writes (exactly).

The ``*In`` structs read 0.3 as clients and other servers send it: optional
members are ``None`` when absent or ``null``, ``kind`` may be missing. The
``*03`` structs write exact 0.3: ``kind`` on every object, members left out when
empty. Turning either into the 1.0 model is ``v03_convert``'s job.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from msgspec import UNSET, Meta, UnsetType, field

from .model import (
    MAX_ID_LENGTH,
    MAX_PARTS,
    AuthCredentials,
    AuthScheme,
    HistoryLength,
    OptionalId,
    PushDeliveryStatus,
    PushToken,
    PushUrl,
)

__all__ = [
    "Artifact03",
    "ArtifactIn",
    "ArtifactUpdate03",
    "ConfigIn",
    "DataPart03",
    "FileIn",
    "FilePart03",
    "FileWithBytes03",
    "FileWithUri03",
    "GetIn",
    "Id",
    "Json",
    "ListIn",
    "ListTasks03",
    "Message03",
    "MessageIn",
    "PartIn",
    "PushAuth03",
    "PushAuthIn",
    "PushConfig03",
    "PushConfigIn",
    "PushConfigResultIn",
    "PushIdIn",
    "ResultIn",
    "SendIn",
    "SetPushIn",
    "StatusIn",
    "StatusUpdate03",
    "Task03",
    "TaskIdIn",
    "TaskIdParams03",
    "TaskIn",
    "TaskPushConfig03",
    "TaskPushConfigIn",
    "TaskQueryParams03",
    "TaskStatus03",
    "TextPart03",
]

Json = dict[str, Any]
Id = Annotated[str, Meta(min_length=1, max_length=MAX_ID_LENGTH)]


# --- input (lenient): requests a2ad serves ---


class _In(msgspec.Struct, rename="camel", kw_only=True):
    pass


class FileIn(_In):
    bytes: str | UnsetType = UNSET
    uri: str | UnsetType = UNSET
    mime_type: str | None = None
    name: str | None = None


class PartIn(_In):
    kind: str | UnsetType = UNSET
    text: str | UnsetType = UNSET
    file: FileIn | UnsetType = UNSET
    data: Any = UNSET
    metadata: Json | None = None


class MessageIn(_In):
    role: str
    parts: Annotated[list[PartIn], Meta(min_length=1, max_length=MAX_PARTS)]
    message_id: Id | None = None
    context_id: Annotated[str, Meta(max_length=MAX_ID_LENGTH)] | None = None
    task_id: Annotated[str, Meta(max_length=MAX_ID_LENGTH)] | None = None
    kind: str | UnsetType = UNSET
    metadata: Json | None = None
    extensions: list[str] | None = None
    reference_task_ids: list[str] | None = None


class PushAuthIn(_In):
    schemes: Annotated[list[AuthScheme], Meta(min_length=1)]
    credentials: AuthCredentials | None = None


class PushConfigIn(_In):
    url: PushUrl
    id: OptionalId | None = None
    token: PushToken | None = None
    authentication: PushAuthIn | None = None


class ConfigIn(_In):
    accepted_output_modes: list[str] | None = None
    history_length: HistoryLength | None = None
    blocking: bool | None = None
    push_notification_config: PushConfigIn | None = None


class SendIn(_In):
    message: MessageIn
    configuration: ConfigIn | None = None
    metadata: Json | None = None


class GetIn(_In):
    id: Id
    history_length: HistoryLength | None = None
    metadata: Json | None = None


class TaskIdIn(_In):
    id: Id
    metadata: Json | None = None


class SetPushIn(_In):
    task_id: Id
    push_notification_config: PushConfigIn


class PushIdIn(_In):
    id: Id
    push_notification_config_id: OptionalId | None = None
    metadata: Json | None = None


# --- input (lenient): results of other servers, read by the client ---


class StatusIn(_In):
    state: str
    message: MessageIn | None = None
    timestamp: str | None = None


class ArtifactIn(_In):
    artifact_id: str
    parts: list[PartIn]
    name: str | None = None
    description: str | None = None
    metadata: Json | None = None
    extensions: list[str] | None = None


class TaskIn(_In):
    id: str
    context_id: str
    status: StatusIn
    artifacts: list[ArtifactIn] | None = None
    history: list[MessageIn] | None = None
    metadata: Json | None = None


class ResultIn(_In):
    """Any 0.3 result object; ``kind`` says which (``message``, ``task``,
    ``status-update``, ``artifact-update``)."""

    kind: str | UnsetType = UNSET
    # task
    id: str | UnsetType = UNSET
    status: StatusIn | UnsetType = UNSET
    artifacts: list[ArtifactIn] | None = None
    history: list[MessageIn] | None = None
    # message
    role: str | UnsetType = UNSET
    parts: list[PartIn] | UnsetType = UNSET
    message_id: str | None = None
    # events
    task_id: str | None = None
    context_id: str | None = None
    artifact: ArtifactIn | UnsetType = UNSET
    append: bool | None = None
    last_chunk: bool | None = None
    metadata: Json | None = None


class PushConfigResultIn(_In):
    url: str
    id: str | None = None
    token: str | None = None
    authentication: PushAuthIn | None = None


class TaskPushConfigIn(_In):
    task_id: str
    push_notification_config: PushConfigResultIn
    a2ad_delivery: PushDeliveryStatus | None = None


class ListIn(_In):
    tasks: list[TaskIn]
    next_page_token: str = ""
    page_size: int = 0
    total_size: int = 0


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


class TaskQueryParams03(_Out):
    id: str
    history_length: int | UnsetType = UNSET


class TaskIdParams03(_Out):
    id: str
    metadata: Json | UnsetType = UNSET
