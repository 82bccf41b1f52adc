"""A bare gRPC server: the floor for a Python A2A server over grpc.aio (bench/grpc_load.py's peer).

bare_asgi.py's canned answers as A2A 1.0 messages, served as
``lf.a2a.v1.A2AService`` by ``grpc.aio`` (generic handlers, uvloop, plaintext):
each call's request is parsed (the SDK's generated classes, upb) and the answer is
bytes serialized once at start (a Task for SendMessage, GetTask and CancelTask; four
StreamResponse messages for SendStreamingMessage). No tasks are kept and no agent
runs: what is left is grpc.aio's own cost per call.

    .venv/bin/python bench/peers/bare_grpc.py --port 50052
"""

from __future__ import annotations

import argparse
from collections.abc import AsyncIterator
from typing import Any

import grpc
import grpc.aio
import uvloop
from a2a.types import a2a_pb2
from bare_asgi import _CANCELED, _COMPLETED, _GOT, _STREAM, _SUBMITTED  # beside this script
from google.protobuf import json_format


def _wire(message_class: Any, answer: bytes) -> bytes:
    return bytes(json_format.Parse(answer, message_class()).SerializeToString())


_SENT = _wire(a2a_pb2.SendMessageResponse, _COMPLETED)
_SENT_AT_ONCE = _wire(a2a_pb2.SendMessageResponse, _SUBMITTED)
_TASK = _wire(a2a_pb2.Task, _GOT)
_CANCELED_TASK = _wire(a2a_pb2.Task, _CANCELED)
_EVENTS = [_wire(a2a_pb2.StreamResponse, event) for event in _STREAM]


async def send_message(request: Any, context: Any) -> bytes:
    return _SENT_AT_ONCE if request.configuration.return_immediately else _SENT


async def get_task(request: Any, context: Any) -> bytes:
    return _TASK


async def cancel_task(request: Any, context: Any) -> bytes:
    return _CANCELED_TASK


async def send_streaming_message(request: Any, context: Any) -> AsyncIterator[bytes]:
    for event in _EVENTS:
        yield event


def build_server(host: str, port: int) -> grpc.aio.Server:
    # No response serializer: a handler's bytes go out as they are.
    unary, stream = grpc.unary_unary_rpc_method_handler, grpc.unary_stream_rpc_method_handler
    handlers = {
        "SendMessage": unary(send_message, a2a_pb2.SendMessageRequest.FromString),
        "GetTask": unary(get_task, a2a_pb2.GetTaskRequest.FromString),
        "CancelTask": unary(cancel_task, a2a_pb2.CancelTaskRequest.FromString),
        "SendStreamingMessage": stream(
            send_streaming_message, a2a_pb2.SendMessageRequest.FromString
        ),
    }
    server = grpc.aio.server(options=[("grpc.so_reuseport", 0)])
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler("lf.a2a.v1.A2AService", handlers),)
    )
    server.add_insecure_port(f"{host}:{port}")
    return server


async def serve(host: str, port: int) -> None:
    server = build_server(host, port)
    await server.start()
    try:
        await server.wait_for_termination()
    finally:
        await server.stop(1.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=50052)
    args = parser.parse_args()
    uvloop.run(serve(args.host, args.port))


if __name__ == "__main__":
    main()
