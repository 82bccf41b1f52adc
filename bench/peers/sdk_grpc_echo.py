"""The official A2A SDK (a2a-sdk 1.x) serving the echo agent over gRPC: bench/grpc_load.py's peer.

sdk_echo.py's agent and task store (the SDK's DefaultRequestHandler over its
InMemoryTaskStore), answered by the SDK's own GrpcHandler: A2A 1.0's
``lf.a2a.v1.A2AService`` on a ``grpc.aio`` server, plaintext, in one process and
one event loop (uvloop's, as uvicorn runs sdk_echo.py and a2ad runs both of its
bindings). No HTTP.

    .venv/bin/python bench/peers/sdk_grpc_echo.py --port 50051
"""

from __future__ import annotations

import argparse

import grpc.aio
import uvloop
from a2a.server.request_handlers import DefaultRequestHandler, GrpcHandler
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, a2a_pb2_grpc
from sdk_echo import EchoExecutor  # beside this script


def build_server(host: str, port: int) -> grpc.aio.Server:
    card = AgentCard(
        name="echo",
        description="Echoes the text it receives back as an artifact.",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=f"{host}:{port}", protocol_binding="GRPC", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="echo", name="Echo", description="echoes", tags=["echo"])],
    )
    handler = DefaultRequestHandler(
        agent_executor=EchoExecutor(), task_store=InMemoryTaskStore(), agent_card=card
    )
    server = grpc.aio.server(options=[("grpc.so_reuseport", 0)])
    a2a_pb2_grpc.add_A2AServiceServicer_to_server(GrpcHandler(handler), server)  # type: ignore[no-untyped-call]
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
    parser.add_argument("--port", type=int, default=50051)
    args = parser.parse_args()
    uvloop.run(serve(args.host, args.port))


if __name__ == "__main__":
    main()
