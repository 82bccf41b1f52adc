"""One description of the A2A dialects, read forward by the server, backward by the client.

An ``Operation`` is what a request asks for, whatever its version. ``METHODS`` maps
every JSON-RPC method name of both versions to its dialect and operation; the
server reads it forward (``resolve``), the client backward (``method_name``). A
dialect is the codec of one version (``V1``, ``V03``): what a server decodes and
encodes, and what a client encodes and decodes, as the ``Dialect`` protocol says.

Version selection (A2A 1.0 §3.6, docs/protocol.md): the ``A2A-Version`` text,
missing or empty, means 0.3; ``1.0``/``1.0.x`` means 1.0. A method of the other
version is VersionNotSupported naming the header to send; a name in neither
version is MethodNotFound.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from types import MappingProxyType
from typing import Literal, Protocol

import msgspec

from .errors import A2AError, MethodNotFoundError, VersionNotSupportedError
from .model import (
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    SendMessageRequest,
    Task,
    TaskEvent,
    TaskIdRequest,
    TaskPushNotificationConfig,
)
from .requests import TaskQuery
from .types import StreamItem
from .v03 import V03
from .v1 import V1

__all__ = [
    "CARD_PATHS",
    "DIALECTS",
    "METHODS",
    "Dialect",
    "Op",
    "Operation",
    "Version",
    "dialect_of",
    "method_name",
    "requested_version",
    "resolve",
    "resolve_asked",
]

Version = Literal["1.0", "0.3"]

# Where a server serves its agent card: 1.0's well-known path, then 0.3's
# (which a client tries when the first is not there).
CARD_PATHS = ("/.well-known/agent-card.json", "/.well-known/agent.json")


class Operation(enum.Enum):
    """The A2A operations, whichever version asks; ``METHODS`` names them on the wire."""

    SEND = "send"
    STREAM = "stream"
    GET = "get"
    LIST = "list"
    CANCEL = "cancel"
    SUBSCRIBE = "subscribe"
    CREATE_PUSH_CONFIG = "create_push_config"
    GET_PUSH_CONFIG = "get_push_config"
    LIST_PUSH_CONFIGS = "list_push_configs"
    DELETE_PUSH_CONFIG = "delete_push_config"
    EXTENDED_CARD = "extended_card"

    # Asked of every request: the identity hash (Enum's hashes the name in Python)
    # and plain attributes set on each member below (a property is a call each time).
    __hash__ = object.__hash__
    streaming: bool  # answered with a stream of events (SSE), not one result
    push_config: bool  # one of the four push notification config operations


_STREAMING = frozenset({Operation.STREAM, Operation.SUBSCRIBE})
_PUSH_CONFIG = frozenset(
    {
        Operation.CREATE_PUSH_CONFIG,
        Operation.GET_PUSH_CONFIG,
        Operation.LIST_PUSH_CONFIGS,
        Operation.DELETE_PUSH_CONFIG,
    }
)
for _operation in Operation:
    _operation.streaming = _operation in _STREAMING
    _operation.push_config = _operation in _PUSH_CONFIG


class Op:
    """``Operation``'s members as a plain class's attributes, for code that tells
    operations apart on every request (``operation is Op.GET``): on Python 3.11
    reading a member of an Enum class goes through ``EnumType.__getattr__``'s
    slot, about 900 instructions a read, and a plain class's attribute does not."""

    SEND = Operation.SEND
    STREAM = Operation.STREAM
    GET = Operation.GET
    LIST = Operation.LIST
    CANCEL = Operation.CANCEL
    SUBSCRIBE = Operation.SUBSCRIBE
    CREATE_PUSH_CONFIG = Operation.CREATE_PUSH_CONFIG
    GET_PUSH_CONFIG = Operation.GET_PUSH_CONFIG
    LIST_PUSH_CONFIGS = Operation.LIST_PUSH_CONFIGS
    DELETE_PUSH_CONFIG = Operation.DELETE_PUSH_CONFIG
    EXTENDED_CARD = Operation.EXTENDED_CARD


class Dialect(Protocol):
    """The codec of one protocol version; ``V1`` and ``V03`` are the two.

    Server side: ``decode_*`` turn a request's raw params into the model and raise
    InvalidParamsError naming the field (``method`` goes into the message);
    ``encode_*`` give a result's JSON. Client side, the reverse: ``encode_*`` give
    params from the model, and ``decode_*`` read a server's result into the model,
    raising ``ValueError`` (``msgspec.ValidationError`` among them) or an A2AError
    when it is not a result of this version. Each encode has its decode.
    """

    @property
    def version(self) -> Version: ...

    @property
    def headers(self) -> Mapping[str, str]:
        """HTTP headers a client sends with every request of this version."""
        ...

    @property
    def send_push_field(self) -> str:
        """Where a send's params carry a webhook for its task (to name it in errors)."""
        ...

    @property
    def push_config_field(self) -> str:
        """Where CreateTaskPushNotificationConfig's params carry the config's own
        fields (``url``, ``token``...): "" at the top."""
        ...

    @property
    def push_media_type(self) -> str:
        """The Content-Type of what ``encode_push`` gives."""
        ...

    def wire_error(self, error: A2AError, method: str) -> A2AError:
        """``error`` as this version answers it (where the versions differ)."""
        ...

    # --- params: decoded by the server, encoded by the client ---

    def decode_send(self, raw: msgspec.Raw, method: str) -> SendMessageRequest: ...

    def encode_send(self, request: SendMessageRequest) -> bytes: ...

    def decode_get(self, raw: msgspec.Raw, method: str) -> GetTaskRequest: ...

    def encode_get(self, request: GetTaskRequest) -> bytes: ...

    def decode_list(self, raw: msgspec.Raw, method: str) -> TaskQuery:
        """Checked: a state, time or page token that is not one raises here."""
        ...

    def encode_list(self, request: ListTasksRequest) -> bytes: ...

    def decode_task_id(self, raw: msgspec.Raw, method: str) -> TaskIdRequest: ...

    def encode_task_id(self, request: TaskIdRequest) -> bytes: ...

    # --- results: encoded by the server, decoded by the client ---

    def encode_send_result(self, result: Task | Message) -> bytes: ...

    def decode_send_result(self, raw: bytes) -> Task | Message: ...

    def encode_task(self, task: Task) -> bytes: ...

    def decode_task(self, raw: bytes) -> Task: ...

    def encode_page(self, page: ListTasksResponse) -> bytes: ...

    def decode_page(self, raw: bytes) -> ListTasksResponse: ...

    def encode_stream_item(self, item: StreamItem, final: bool) -> bytes: ...

    def decode_stream_item(self, raw: bytes) -> StreamItem: ...

    # --- push notifications: the four config methods, and the webhook's payload ---

    def decode_push_config(self, raw: msgspec.Raw, method: str) -> TaskPushNotificationConfig:
        """CreateTaskPushNotificationConfig params, checked (``checked_push_config``)."""
        ...

    def encode_push_config(self, config: TaskPushNotificationConfig) -> bytes:
        """A config: the client's create params, and the server's answer to
        create and get (params and result have one shape in each version)."""
        ...

    def decode_push_config_result(self, raw: bytes) -> TaskPushNotificationConfig: ...

    def decode_push_config_id(
        self, raw: msgspec.Raw, method: str
    ) -> GetTaskPushNotificationConfigRequest:
        """Get and DeleteTaskPushNotificationConfig params."""
        ...

    def encode_push_config_id(self, request: GetTaskPushNotificationConfigRequest) -> bytes: ...

    def decode_list_push_configs(
        self, raw: msgspec.Raw, method: str
    ) -> ListTaskPushNotificationConfigsRequest: ...

    def encode_list_push_configs(
        self, request: ListTaskPushNotificationConfigsRequest
    ) -> bytes: ...

    def encode_push_config_page(self, page: ListTaskPushNotificationConfigsResponse) -> bytes: ...

    def decode_push_config_page(self, raw: bytes) -> ListTaskPushNotificationConfigsResponse: ...

    def encode_deleted(self) -> bytes:
        """DeleteTaskPushNotificationConfig's result."""
        ...

    def decode_deleted(self, raw: bytes) -> None: ...

    def encode_push(self, item: Task | TaskEvent, snapshot: Task | None) -> bytes:
        """What a webhook of this version receives for ``item`` (the task as it
        stood when the webhook was set, or a stored event); ``snapshot`` is the
        task right after it, which 0.3 sends. The receiver reads it back with
        ``decode_push``."""
        ...

    def decode_push(self, raw: bytes) -> StreamItem: ...


DIALECTS: Mapping[str, Dialect] = MappingProxyType({"1.0": V1, "0.3": V03})

METHODS: Mapping[str, tuple[Dialect, Operation]] = MappingProxyType(
    {
        "SendMessage": (V1, Operation.SEND),
        "SendStreamingMessage": (V1, Operation.STREAM),
        "GetTask": (V1, Operation.GET),
        "ListTasks": (V1, Operation.LIST),
        "CancelTask": (V1, Operation.CANCEL),
        "SubscribeToTask": (V1, Operation.SUBSCRIBE),
        "CreateTaskPushNotificationConfig": (V1, Operation.CREATE_PUSH_CONFIG),
        "GetTaskPushNotificationConfig": (V1, Operation.GET_PUSH_CONFIG),
        "ListTaskPushNotificationConfigs": (V1, Operation.LIST_PUSH_CONFIGS),
        "DeleteTaskPushNotificationConfig": (V1, Operation.DELETE_PUSH_CONFIG),
        "GetExtendedAgentCard": (V1, Operation.EXTENDED_CARD),
        "message/send": (V03, Operation.SEND),
        "message/stream": (V03, Operation.STREAM),
        "tasks/get": (V03, Operation.GET),
        # 0.3 has no list method; a2ad's tasks/list takes the ListTasks params.
        "tasks/list": (V03, Operation.LIST),
        "tasks/cancel": (V03, Operation.CANCEL),
        "tasks/resubscribe": (V03, Operation.SUBSCRIBE),
        "tasks/pushNotificationConfig/set": (V03, Operation.CREATE_PUSH_CONFIG),
        "tasks/pushNotificationConfig/get": (V03, Operation.GET_PUSH_CONFIG),
        "tasks/pushNotificationConfig/list": (V03, Operation.LIST_PUSH_CONFIGS),
        "tasks/pushNotificationConfig/delete": (V03, Operation.DELETE_PUSH_CONFIG),
        "agent/getAuthenticatedExtendedCard": (V03, Operation.EXTENDED_CARD),
    }
)

_NAMES: Mapping[tuple[Version, Operation], str] = MappingProxyType(
    {(dialect.version, operation): method for method, (dialect, operation) in METHODS.items()}
)


def method_name(dialect: Dialect, operation: Operation) -> str:
    """The JSON-RPC method that asks ``dialect``'s version for ``operation``."""
    return _NAMES[dialect.version, operation]


def requested_version(text: str) -> str:
    """The version an ``A2A-Version`` value asks for: "0.3" when it is missing or
    empty (the spec's default), else its major.minor ("1.0.3" -> "1.0")."""
    value = text.strip()
    if not value:
        return "0.3"
    return ".".join(value.split(".")[:2])


def dialect_of(version: str) -> Dialect:
    """The dialect of a ``requested_version``; raises VersionNotSupportedError
    (naming the versions served and how to ask for each) for any other."""
    dialect = DIALECTS.get(version)
    if dialect is None:
        raise VersionNotSupportedError(
            f"A2A-Version {version} is not supported; this server speaks 1.0 "
            "(send the header A2A-Version: 1.0) and 0.3 (send no A2A-Version header)",
            metadata={"requestedVersion": version, "supportedVersions": "1.0,0.3"},
        )
    return dialect


_RESOLVED: dict[tuple[str, str], tuple[Dialect, Operation]] = {}
_RESOLVED_MAX = 256  # version texts vary ("1.0", "1.0.2", ...): past this, none is kept


def resolve_asked(text: str, method: str) -> tuple[Dialect, Operation]:
    """``resolve(requested_version(text), method)``, kept for the pairs that
    resolve: every request asks one of a few, and this is one dict lookup."""
    found = _RESOLVED.get((text, method))
    if found is None:
        found = resolve(requested_version(text), method)
        if len(_RESOLVED) < _RESOLVED_MAX:
            _RESOLVED[text, method] = found
    return found


def resolve(version: str, method: str) -> tuple[Dialect, Operation]:
    """The dialect and operation of a request; raises VersionNotSupportedError for
    a version neither dialect is, or a method of the other version (naming the
    header to send), and MethodNotFoundError for a name in neither version."""
    dialect = dialect_of(version)
    found = METHODS.get(method)
    if found is None:
        raise MethodNotFoundError(f"Method not found: {method}", metadata={"method": method})
    other, operation = found
    if other is not dialect:
        how = (
            "send the header A2A-Version: 1.0"
            if other is V1
            else "send it without an A2A-Version header (or with A2A-Version: 0.3)"
        )
        raise VersionNotSupportedError(
            f"{method} is an A2A {other.version} method but the request asked for "
            f"A2A {version}; {how}",
            metadata={
                "method": method,
                "methodVersion": other.version,
                "requestedVersion": version,
            },
        )
    return dialect, operation
