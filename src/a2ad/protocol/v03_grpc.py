"""The client side of A2A 0.3 over gRPC (``a2a.v1.A2AService``): the model's
requests as the 0.3 proto's request messages in ProtoJSON, and its answers
read back into the model (the server side is v03_rest.py's ``V03Rest``).

Tasks are named by resource (``tasks/{id}``). The proto's
``SendMessageConfiguration.blocking`` is a plain bool whose absence means "answer
at once", so a send always says whether it waits, as the caller asked (0.3's
JSON-RPC waits unless told not to). Its ``history_length`` of 0 means the whole
history. The service has no ListTasks: the client's gRPC transport refuses
that call before it is made.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import msgspec
from msgspec import UNSET

from .model import (
    GetTaskRequest,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    SendMessageRequest,
    Task,
    TaskIdRequest,
)
from .types import StreamItem
from .v03 import push_config_to_03
from .v03_proto_in import result_in, task_in
from .v03_proto_out import message_out

__all__ = ["V03Grpc"]

_encode = msgspec.json.Encoder().encode


class V03Grpc:
    """A2A 0.3 over gRPC, as a client speaks it: what the client's operations
    need of a dialect (``client.transport.Codec``)."""

    version: ClassVar[Literal["0.3"]] = "0.3"

    @staticmethod
    def encode_send(request: SendMessageRequest) -> bytes:
        """A SendMessageRequest (SendStreamingMessage takes the same)."""
        c = request.configuration
        config: dict[str, Any] = {"blocking": True}
        if c is not UNSET:
            config = {"blocking": not c.return_immediately}
            if c.accepted_output_modes:
                config["acceptedOutputModes"] = c.accepted_output_modes
            if c.history_length is not UNSET:
                config["historyLength"] = c.history_length
            if c.task_push_notification_config is not UNSET:
                push = push_config_to_03(c.task_push_notification_config)
                config["pushNotification"] = msgspec.to_builtins(push)
        body: dict[str, Any] = {
            "message": msgspec.to_builtins(message_out(request.message)),
            "configuration": config,
        }
        if request.metadata is not UNSET:
            body["metadata"] = request.metadata
        return _encode(body)

    @staticmethod
    def encode_get(request: GetTaskRequest) -> bytes:
        body: dict[str, Any] = {"name": f"tasks/{request.id}"}
        if request.history_length is not UNSET:
            body["historyLength"] = request.history_length
        return _encode(body)

    @staticmethod
    def encode_task_id(request: TaskIdRequest) -> bytes:
        """A CancelTaskRequest or a TaskSubscriptionRequest."""
        return _encode({"name": f"tasks/{request.id}"})

    # No rpc takes or gives these: the transport refuses ListTasks first.
    @staticmethod
    def encode_list(request: ListTasksRequest) -> bytes:
        return b"{}"

    @staticmethod
    def decode_page(raw: bytes) -> ListTasksResponse:
        raise ValueError("A2A 0.3's gRPC service has no ListTasks")

    @staticmethod
    def decode_send_result(raw: bytes) -> Task | Message:
        item = result_in(raw)
        if not isinstance(item, Task | Message):
            raise ValueError("a SendMessageResponse carries a task or a message")
        return item

    @staticmethod
    def decode_task(raw: bytes) -> Task:
        return task_in(raw)

    @staticmethod
    def decode_stream_item(raw: bytes) -> StreamItem:
        return result_in(raw)
