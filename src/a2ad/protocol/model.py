"""The one internal model: the A2A 1.0 shapes as msgspec Structs.

Encoding a Struct gives exact ProtoJSON (camelCase names, enum names, unset fields
omitted); decoding validates in the same pass and ignores unknown fields, as the
spec asks. Snapshots are frozen: a Task read from a store can be shared and
encoded later without a copy, because every change builds a new Task.
0.3 shapes live only in ``protocol/v03.py``.
"""

from __future__ import annotations

import enum
import os
import threading
import time
from datetime import UTC, datetime
from typing import Annotated, Any

import msgspec
from msgspec import UNSET, Meta, UnsetType, field

__all__ = [
    "INTERRUPTED_STATES",
    "MAX_ID_LENGTH",
    "MAX_JSON_DEPTH",
    "MAX_PARTS",
    "MAX_PUSH_URL_LENGTH",
    "TERMINAL_STATES",
    "Artifact",
    "AuthenticationInfo",
    "DataPart",
    "FilePart",
    "GetTaskPushNotificationConfigRequest",
    "GetTaskRequest",
    "ListTaskPushNotificationConfigsRequest",
    "ListTaskPushNotificationConfigsResponse",
    "ListTasksRequest",
    "ListTasksResponse",
    "Message",
    "Part",
    "PushDeliveryStatus",
    "Role",
    "SendMessageConfiguration",
    "SendMessageRequest",
    "SendMessageResponse",
    "StreamResponse",
    "Task",
    "TaskArtifactUpdateEvent",
    "TaskEvent",
    "TaskIdRequest",
    "TaskPushNotificationConfig",
    "TaskState",
    "TaskStatus",
    "TaskStatusUpdateEvent",
    "TextPart",
    "new_id",
    "parse_timestamp",
]

MAX_ID_LENGTH = 256
# The decoders' hard bound on a message's parts; the server's own, lower by
# default, is configurable (a2ad serve --max-parts, server/limits.py).
MAX_PARTS = 10_000
# How deep a request's free-form JSON (data parts, metadata) may nest. Protobuf's
# JSON parser stops at 100 message levels, each JSON level taking two (Value, and
# Struct or ListValue), so a 1.0 client on the official SDK cannot read a task
# whose values nest past about 45 levels; 32 leaves room on every path to them.
MAX_JSON_DEPTH = 32

Id = Annotated[str, Meta(min_length=1, max_length=MAX_ID_LENGTH)]
Json = dict[str, Any]


class TaskState(enum.Enum):
    """Lifecycle states; values are the 1.0 ProtoJSON enum names."""

    UNSPECIFIED = "TASK_STATE_UNSPECIFIED"
    SUBMITTED = "TASK_STATE_SUBMITTED"
    WORKING = "TASK_STATE_WORKING"
    COMPLETED = "TASK_STATE_COMPLETED"
    FAILED = "TASK_STATE_FAILED"
    CANCELED = "TASK_STATE_CANCELED"
    INPUT_REQUIRED = "TASK_STATE_INPUT_REQUIRED"
    REJECTED = "TASK_STATE_REJECTED"
    AUTH_REQUIRED = "TASK_STATE_AUTH_REQUIRED"

    # A member is its own only instance and equal to itself alone, so the identity
    # hash is the right one; Enum's own hashes the name in Python, about ten times
    # slower, and states are dict keys and set members on every write's path.
    __hash__ = object.__hash__

    # Set on each member below, as plain attributes: read several times for every
    # event of every task, where a property is a Python call each time.
    terminal: bool  # completed, failed, canceled or rejected: the task's last state
    interrupted: bool  # input-required or auth-required: the turn ended, the task goes on
    word: str  # the state as a person says it: ``input-required``, ``canceled``


TERMINAL_STATES = frozenset(
    {TaskState.COMPLETED, TaskState.FAILED, TaskState.CANCELED, TaskState.REJECTED}
)
INTERRUPTED_STATES = frozenset({TaskState.INPUT_REQUIRED, TaskState.AUTH_REQUIRED})
for _state in TaskState:
    _state.terminal = _state in TERMINAL_STATES
    _state.interrupted = _state in INTERRUPTED_STATES
    _state.word = _state.value[len("TASK_STATE_") :].lower().replace("_", "-")


class Role(enum.Enum):
    UNSPECIFIED = "ROLE_UNSPECIFIED"
    USER = "ROLE_USER"
    AGENT = "ROLE_AGENT"


class _Wire(
    msgspec.Struct, rename="camel", omit_defaults=True, kw_only=True, frozen=True, gc=False
):
    """Base of every wire struct: camelCase on the wire, unset fields omitted.
    ``gc=False``: these values never form reference cycles, so the cycle collector
    need not track (and keep rescanning) the many a store holds."""


class Part(_Wire, frozen=True):
    """One piece of content: exactly one of ``text``, ``raw``, ``url``, ``data``."""

    text: str | UnsetType = UNSET
    raw: bytes | UnsetType = UNSET
    url: str | UnsetType = UNSET
    data: Any = UNSET
    metadata: Json | UnsetType = UNSET
    filename: str = ""
    media_type: str = ""

    def __post_init__(self) -> None:
        # Written out, not a generator: every part of every message and artifact
        # (each stored task's, each time it is read). A text part, most of them,
        # is settled by four identity tests.
        if self.text is not UNSET:
            if self.raw is UNSET and self.url is UNSET and self.data is UNSET:
                return
        elif (self.raw is not UNSET) + (self.url is not UNSET) + (self.data is not UNSET) == 1:
            return
        raise ValueError("a part carries exactly one of `text`, `raw`, `url`, `data`")

    @property
    def kind(self) -> str:
        """``text``, ``file`` (raw bytes or a URL) or ``data``."""
        if self.text is not UNSET:
            return "text"
        if self.data is not UNSET:
            return "data"
        return "file"


def TextPart(text: str, *, metadata: Json | None = None, media_type: str = "") -> Part:
    """A text part."""
    return Part(text=text, metadata=metadata or UNSET, media_type=media_type)


def DataPart(data: Any, *, metadata: Json | None = None, media_type: str = "") -> Part:
    """A structured data part (any JSON value)."""
    return Part(data=data, metadata=metadata or UNSET, media_type=media_type)


def FilePart(
    *,
    raw: bytes | None = None,
    url: str | None = None,
    filename: str = "",
    media_type: str = "",
    metadata: Json | None = None,
) -> Part:
    """A file part, given either its bytes (``raw``) or a ``url``."""
    if (raw is None) == (url is None):
        raise ValueError("FilePart takes exactly one of raw= or url=")
    return Part(
        raw=raw if raw is not None else UNSET,
        url=url if url is not None else UNSET,
        filename=filename,
        media_type=media_type,
        metadata=metadata or UNSET,
    )


# Requests bound a message to MAX_PARTS parts (protocol/v1.py, v03.py); stored
# messages and artifacts are not re-checked, so decoding a stored task never fails.
Parts = Annotated[list[Part], Meta(min_length=1)]


class Message(_Wire, frozen=True):
    message_id: Id
    role: Role
    parts: Parts
    context_id: str = ""
    task_id: str = ""
    metadata: Json | UnsetType = UNSET
    extensions: list[str] = field(default_factory=list)
    reference_task_ids: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        """The message's text parts joined by newlines."""
        return "\n".join(p.text for p in self.parts if isinstance(p.text, str))


class TaskStatus(_Wire, frozen=True):
    state: TaskState
    message: Message | UnsetType = UNSET
    timestamp: str | UnsetType = UNSET


class Artifact(_Wire, frozen=True):
    artifact_id: Id
    parts: Parts  # streamed chunks grow an artifact; the store bounds it
    name: str = ""
    description: str = ""
    metadata: Json | UnsetType = UNSET
    extensions: list[str] = field(default_factory=list)


class Task(_Wire, frozen=True):
    id: str
    context_id: str
    status: TaskStatus
    artifacts: list[Artifact] = field(default_factory=list)
    history: list[Message] = field(default_factory=list)
    metadata: Json | UnsetType = UNSET


class TaskStatusUpdateEvent(_Wire, frozen=True):
    task_id: str
    context_id: str
    status: TaskStatus
    metadata: Json | UnsetType = UNSET


class TaskArtifactUpdateEvent(_Wire, frozen=True):
    task_id: str
    context_id: str
    artifact: Artifact
    append: bool = False
    last_chunk: bool = False
    metadata: Json | UnsetType = UNSET


TaskEvent = TaskStatusUpdateEvent | TaskArtifactUpdateEvent


class StreamResponse(_Wire, frozen=True):
    task: Task | UnsetType = UNSET
    message: Message | UnsetType = UNSET
    status_update: TaskStatusUpdateEvent | UnsetType = UNSET
    artifact_update: TaskArtifactUpdateEvent | UnsetType = UNSET


class SendMessageResponse(_Wire, frozen=True):
    task: Task | UnsetType = UNSET
    message: Message | UnsetType = UNSET


# --- push notifications ---

MAX_PUSH_URL_LENGTH = 2048
# Sent as HTTP header values, so bounded like headers; checked for control
# characters where a request is decoded (protocol/requests.py).
# A request's token and credentials are held to MAX_PUSH_TOKEN_LENGTH and
# MAX_AUTH_CREDENTIALS_LENGTH there too; the types leave room for the longer
# form a2ad stores them in, encrypted (engine/secrets.py), since a stored config
# is decoded with them as well.
MAX_PUSH_TOKEN_LENGTH = 1024
MAX_AUTH_CREDENTIALS_LENGTH = 4096
PushUrl = Annotated[str, Meta(min_length=1, max_length=MAX_PUSH_URL_LENGTH)]
PushToken = Annotated[str, Meta(max_length=2 * MAX_PUSH_TOKEN_LENGTH)]
AuthScheme = Annotated[str, Meta(min_length=1, max_length=64)]
AuthCredentials = Annotated[str, Meta(max_length=2 * MAX_AUTH_CREDENTIALS_LENGTH)]
OptionalId = Annotated[str, Meta(max_length=MAX_ID_LENGTH)]


class AuthenticationInfo(_Wire, frozen=True):
    """What a webhook's receiver wants in ``Authorization: <scheme> <credentials>``."""

    scheme: AuthScheme
    credentials: AuthCredentials = ""


class PushDeliveryStatus(_Wire, frozen=True):
    """a2ad extension, beside a config that GetTaskPushNotificationConfig and
    ListTaskPushNotificationConfigs answer (``a2adDelivery``): how its deliveries
    went. ``deadLettered`` counts events given up after every attempt failed;
    ``lastError`` says why the last attempt that failed did."""

    pending: int
    delivered: int
    dead_lettered: int
    last_error: str = ""


class TaskPushNotificationConfig(_Wire, frozen=True):
    """A webhook of a task: CreateTaskPushNotificationConfig's params and the
    config every push-config method answers. An empty ``id`` means the task's id."""

    url: PushUrl
    id: OptionalId = ""
    task_id: OptionalId = ""
    token: PushToken = ""
    authentication: AuthenticationInfo | UnsetType = UNSET
    tenant: str = ""
    a2ad_delivery: PushDeliveryStatus | UnsetType = UNSET  # answers only; ignored in requests


class GetTaskPushNotificationConfigRequest(_Wire, frozen=True):
    """GetTaskPushNotificationConfig params, and DeleteTaskPushNotificationConfig's
    (the same fields). 0.3 may leave ``id`` empty on a get: the task's first config."""

    task_id: Id
    id: OptionalId = ""
    tenant: str = ""


class ListTaskPushNotificationConfigsRequest(_Wire, frozen=True):
    task_id: Id
    page_size: Annotated[int, Meta(ge=0, le=2**31 - 1)] = 0  # 0: all of them
    page_token: str = ""
    tenant: str = ""


class ListTaskPushNotificationConfigsResponse(_Wire, frozen=True):
    configs: list[TaskPushNotificationConfig]
    next_page_token: str = ""


# --- requests (the 1.0 params; 0.3 params are translated into these) ---

HistoryLength = Annotated[int, Meta(ge=0, le=2**31 - 1)]  # proto int32


class SendMessageConfiguration(_Wire, frozen=True):
    accepted_output_modes: list[str] = field(default_factory=list)
    history_length: HistoryLength | UnsetType = UNSET
    return_immediately: bool = False
    # A webhook for the message's task (its taskId and id are left empty).
    task_push_notification_config: TaskPushNotificationConfig | UnsetType = UNSET


class SendMessageRequest(_Wire, frozen=True):
    message: Message
    configuration: SendMessageConfiguration | UnsetType = UNSET
    metadata: Json | UnsetType = UNSET
    tenant: str = ""


class GetTaskRequest(_Wire, frozen=True):
    id: Id
    history_length: HistoryLength | UnsetType = UNSET
    tenant: str = ""


class TaskIdRequest(_Wire, frozen=True):
    """CancelTask and SubscribeToTask params."""

    id: Id
    metadata: Json | UnsetType = UNSET
    tenant: str = ""


class ListTasksRequest(_Wire, frozen=True):
    context_id: str = ""
    # A state name in any common spelling; parsed by ``parse_state``.
    status: str = ""
    page_size: Annotated[int, Meta(ge=1, le=100)] = 50
    page_token: str = ""
    history_length: HistoryLength | UnsetType = UNSET
    status_timestamp_after: str = ""
    include_artifacts: bool = False
    # a2ad extension (other servers ignore it): only tasks past their deadline.
    overdue: bool = False
    # a2ad extension: only tasks whose status timestamp is before this.
    status_timestamp_before: str = ""
    tenant: str = ""


class ListTasksResponse(_Wire, frozen=True):
    tasks: list[Task]
    next_page_token: str
    page_size: int
    # No defaults: the spec requires all four present, nextPageToken "" on the last page.
    total_size: int


class _IdClock:
    """What ids made here so far leave for the next: the millisecond and its
    counter; that millisecond's text ("tttttttt-tttt-"); random bytes for the
    tails of the next ids, and where the next tail starts in them.

    An id is put together from text made ahead, since formatting and slicing
    strings is most of what it costs (17,000 instructions an id formatted as a
    whole, under 7,000 this way): the millisecond's part once a millisecond, the
    version and counter from a table, the random part as hex with its dash."""

    __slots__ = ("at", "counter", "lock", "ms", "pool", "prefix")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.ms = self.counter = 0
        self.prefix = ""
        self.pool = bytearray()
        self.at = 0

    def move_to(self, ms: int) -> None:
        """Make ids of millisecond ``ms`` from its counter 0 on."""
        x = ms.to_bytes(6, "big").hex()
        self.ms, self.counter, self.prefix = ms, 0, f"{x[:8]}-{x[8:]}-"


_ids = _IdClock()
_VERSION_COUNTER = tuple(f"7{counter:03x}-" for counter in range(0x1000))
_TAILS_AT_ONCE = 512


def _random_tails() -> bytearray:
    """Random bytes for ``_TAILS_AT_ONCE`` ids, 8 each, each first byte with the
    RFC 9562 variant (binary 10) in its top bits: 62 random bits an id."""
    pool = bytearray(os.urandom(_TAILS_AT_ONCE * 8))
    pool[0::8] = bytes(b & 0x3F | 0x80 for b in pool[0::8])
    return pool


def parse_timestamp(text: str) -> datetime | None:
    """RFC 3339 text (``Z`` or an offset; no zone means UTC) as an aware
    datetime, or None if it is not one."""
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def new_id() -> str:
    """A fresh id: a version 7 UUID (RFC 9562), as text.

    48 bits of Unix milliseconds, then a 12-bit counter within the millisecond,
    then 62 random bits. Ids made later by this process sort after earlier ones,
    so the SQLite store's indexes keyed by task id grow at their end instead of
    at random pages (which made each write touch about three times the pages).
    Safe to call from any thread.
    """
    ids = _ids
    ids.lock.acquire()
    try:
        ms = time.time_ns() // 1_000_000
        if ms > ids.ms:
            ids.move_to(ms)
        else:  # same millisecond (or the clock stepped back): count on from the last id
            ids.counter += 1
            if ids.counter > 0xFFF:
                ids.move_to(ids.ms + 1)
        at = ids.at
        if at >= len(ids.pool):
            ids.pool, at = _random_tails(), 0
        ids.at = at + 8
        # 8 bytes as "yxxx-xxxxxxxxxxxx": hex with a dash 6 bytes from the right.
        return ids.prefix + _VERSION_COUNTER[ids.counter] + ids.pool[at : at + 8].hex("-", 6)
    finally:
        ids.lock.release()


_STATE_ALIASES = {"cancelled": TaskState.CANCELED, "unknown": TaskState.UNSPECIFIED}


def parse_state(text: str) -> TaskState:
    """A state from the spellings people type: ``TASK_STATE_WORKING``, ``working``,
    ``input_required``, ``INPUT-REQUIRED``, ``cancelled``. Raises ValueError."""
    key = text.strip().lower().replace("-", "_")
    if key.startswith("task_state_"):
        key = key[len("task_state_") :]
    if key in _STATE_ALIASES:
        return _STATE_ALIASES[key]
    try:
        return TaskState("TASK_STATE_" + key.upper())
    except ValueError:
        names = ", ".join(s.word for s in TaskState if s is not TaskState.UNSPECIFIED)
        raise ValueError(f"unknown task state {text!r}; use one of: {names}") from None
