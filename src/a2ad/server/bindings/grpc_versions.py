"""What differs between A2A 1.0's gRPC service and 0.3's: the service, its rpcs,
how a request message becomes the params its dialect decodes, how an error
reads.

1.0 (``lf.a2a.v1.A2AService``): each rpc is the 1.0 method of its name, its
request message as ProtoJSON is that method's params, and an error's message
is its own.

0.3 (``a2a.v1.A2AService``, the 0.3 proto's): the rpcs have 0.3's names
(``TaskSubscription``, ``ListTaskPushNotificationConfig``, ``GetAgentCard``; no
ListTasks), tasks and configs are named by resource (``tasks/{id}``,
``tasks/{id}/pushNotificationConfigs/{config}``), the messages are the 0.3
proto's, which the 0.3 HTTP+JSON dialect reads and writes (protocol/v03_rest.py),
and an error's message starts with its A2A name (``TaskNotFoundError: Task ...
not found``): the official SDK's 0.3 gRPC client reads the error from that, not
from the status details (which a2ad sends too).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

from ...protocol.dialect import Op, Operation
from ...protocol.errors import A2AError, InvalidParamsError
from ...protocol.grpc_schema import SERVICES, Version
from ...protocol.v03_rest import V03Rest
from ...protocol.v1 import V1
from ..dialect import ServerDialect

__all__ = ["VERSIONS", "GrpcVersion", "with_call_deadline"]

Params = Callable[[str, dict[str, Any]], dict[str, Any]]


class GrpcVersion(NamedTuple):
    """One version's service: its name, dialect, rpcs (``name: operation``, None
    for 0.3's GetAgentCard, which the service answers itself), how a request
    message's JSON becomes params (``params(rpc, json)``) and how an error's
    status message reads (``said(error)``)."""

    version: Version
    service: str
    dialect: ServerDialect
    rpcs: Mapping[str, Operation | None]
    params: Params
    said: Callable[[A2AError], str]


def _as_sent(rpc: str, body: dict[str, Any]) -> dict[str, Any]:
    return body


def _own_message(error: A2AError) -> str:
    return error.message


_V10_RPCS: Mapping[str, Operation] = MappingProxyType(
    {
        "SendMessage": Op.SEND,
        "SendStreamingMessage": Op.STREAM,
        "GetTask": Op.GET,
        "ListTasks": Op.LIST,
        "CancelTask": Op.CANCEL,
        "SubscribeToTask": Op.SUBSCRIBE,
        "CreateTaskPushNotificationConfig": Op.CREATE_PUSH_CONFIG,
        "GetTaskPushNotificationConfig": Op.GET_PUSH_CONFIG,
        "ListTaskPushNotificationConfigs": Op.LIST_PUSH_CONFIGS,
        "DeleteTaskPushNotificationConfig": Op.DELETE_PUSH_CONFIG,
        "GetExtendedAgentCard": Op.EXTENDED_CARD,
    }
)

_V03_RPCS: Mapping[str, Operation | None] = MappingProxyType(
    {
        "SendMessage": Op.SEND,
        "SendStreamingMessage": Op.STREAM,
        "GetTask": Op.GET,
        "CancelTask": Op.CANCEL,
        "TaskSubscription": Op.SUBSCRIBE,
        "CreateTaskPushNotificationConfig": Op.CREATE_PUSH_CONFIG,
        "GetTaskPushNotificationConfig": Op.GET_PUSH_CONFIG,
        "ListTaskPushNotificationConfig": Op.LIST_PUSH_CONFIGS,
        "DeleteTaskPushNotificationConfig": Op.DELETE_PUSH_CONFIG,
        "GetAgentCard": None,
    }
)

_TASK = re.compile(r"tasks/([^/]+)")
_CONFIG = re.compile(r"tasks/([^/]+)/pushNotificationConfigs/([^/]+)")


def _named(body: dict[str, Any], field: str, pattern: re.Pattern[str], form: str) -> list[str]:
    """The ids in ``body[field]``, a resource name of ``form``; raises
    InvalidParamsError naming the field."""
    name = body.get(field, "")
    found = pattern.fullmatch(name) if isinstance(name, str) else None
    if found is None:
        shown = name[:80] if isinstance(name, str) else type(name).__name__
        raise InvalidParamsError(
            f"`{field}` must be {form}, not {shown!r}",
            field=field,
            metadata={"field": field},
        )
    return list(found.groups())


def _params_03(rpc: str, body: dict[str, Any]) -> dict[str, Any]:
    """A 0.3 request message's JSON as the params V03Rest (and V03) decode:
    resource names become the ids they name."""
    if rpc in ("SendMessage", "SendStreamingMessage"):
        return body
    if rpc == "GetTask":
        (task_id,) = _named(body, "name", _TASK, "tasks/{id}")
        params: dict[str, Any] = {"id": task_id}
        if body.get("historyLength"):  # proto3: 0 is "not set", so the whole history
            params["historyLength"] = body["historyLength"]
        return params
    if rpc in ("CancelTask", "TaskSubscription"):
        (task_id,) = _named(body, "name", _TASK, "tasks/{id}")
        return {"id": task_id}
    if rpc == "CreateTaskPushNotificationConfig":
        (task_id,) = _named(body, "parent", _TASK, "tasks/{id}")
        return {**body, "taskId": task_id}
    if rpc == "ListTaskPushNotificationConfig":
        (task_id,) = _named(body, "parent", _TASK, "tasks/{id}")
        return {"id": task_id}
    if rpc in ("GetTaskPushNotificationConfig", "DeleteTaskPushNotificationConfig"):
        form = "tasks/{id}/pushNotificationConfigs/{configId}"
        task_id, config_id = _named(body, "name", _CONFIG, form)
        return {"id": task_id, "pushNotificationConfigId": config_id}
    return body


# The A2A errors' names, as the 0.3 SDKs know them, by JSON-RPC code.
_NAMES_03: Mapping[int, str] = MappingProxyType(
    {
        -32001: "TaskNotFoundError",
        -32002: "TaskNotCancelableError",
        -32003: "PushNotificationNotSupportedError",
        -32004: "UnsupportedOperationError",
        -32005: "ContentTypeNotSupportedError",
        -32006: "InvalidAgentResponseError",
        -32007: "ExtendedAgentCardNotConfiguredError",
        -32008: "ExtensionSupportRequiredError",
        -32009: "VersionNotSupportedError",
        -32600: "InvalidRequestError",
        -32601: "MethodNotFoundError",
        -32602: "InvalidParamsError",
        -32603: "InternalError",
        -32700: "JSONParseError",
    }
)


def _named_error(error: A2AError) -> str:
    return f"{_NAMES_03.get(error.code, type(error).__name__)}: {error.message}"


_DEADLINE_KEYS = ("deadline", "timeoutSeconds")  # engine/deadlines.py reads these


def with_call_deadline(
    version: Version, operation: Operation, body: dict[str, Any], remaining: float | None
) -> dict[str, Any]:
    """A send's params, given the call's deadline (``remaining`` seconds): a
    call that waits for the turn (a stream, a blocking send) and whose message
    names no deadline asks for one then, as ``timeoutSeconds`` in the request's
    metadata (docs/protocol.md, "Deadlines"). A2A names no deadline of its own;
    a call that takes the task at once is not held to its call's."""
    if remaining is None or not remaining > 0:
        return body
    if operation is Op.SEND:
        config = body.get("configuration")
        config = config if isinstance(config, dict) else {}
        # 1.0 waits unless told not to; 0.3's proto waits only when told to.
        waits = not config.get("returnImmediately") if version == "1.0" else config.get("blocking")
        if not waits:
            return body
    message = body.get("message")
    asked = body.get("metadata")
    for metadata in (message.get("metadata") if isinstance(message, dict) else None, asked):
        if isinstance(metadata, dict) and any(key in metadata for key in _DEADLINE_KEYS):
            return body
    given = asked if isinstance(asked, dict) else {}
    return {**body, "metadata": {**given, "timeoutSeconds": round(remaining, 3)}}


VERSIONS: Mapping[Version, GrpcVersion] = MappingProxyType(
    {
        "1.0": GrpcVersion("1.0", SERVICES["1.0"], V1, _V10_RPCS, _as_sent, _own_message),
        "0.3": GrpcVersion("0.3", SERVICES["0.3"], V03Rest, _V03_RPCS, _params_03, _named_error),
    }
)
