"""``a2ad serve --workers 2 --grpc-port``: every process of the group serves the
gRPC port (SO_REUSEPORT: the system spreads new connections among them), on the
same tasks as the HTTP port. A real group on a SQLite file."""

from __future__ import annotations

import tempfile

import grpc
import httpx
from a2a.types import a2a_pb2, a2a_pb2_grpc

from ..jsonrpc import answer, rpc_body
from ..served import Served
from .conftest import AGENT, START_WAIT

V1 = (("a2a-version", "1.0"),)


def _text(message_id: str, text: str) -> a2a_pb2.SendMessageRequest:
    message = a2a_pb2.Message(
        message_id=message_id, role=a2a_pb2.ROLE_USER, parts=[a2a_pb2.Part(text=text)]
    )
    return a2a_pb2.SendMessageRequest(message=message)


async def test_each_process_of_a_group_serves_grpc_on_the_one_port() -> None:
    with (
        tempfile.TemporaryDirectory() as folder,
        Served(
            "--workers",
            "2",
            "--store",
            f"sqlite:///{folder}/a2ad.db",
            *AGENT,
            "--grpc-port",
            "0",
            "--shutdown-grace",
            "0",
        ) as served,
    ):
        served.expect(r"Press Ctrl-C to stop", START_WAIT)
        address = served.expect(r"gRPC:\s+(\S+)\s").group(1)
        pids: dict[str, str] = {}
        for n in range(16):  # a new connection each: the system picks its process
            async with grpc.aio.insecure_channel(address) as channel:
                stub = a2a_pb2_grpc.A2AServiceStub(channel)
                sent = await stub.SendMessage(_text(f"p{n}", "pid"), metadata=V1)
                said = sent.task.status.message.parts[0].text
                pids[said.split()[1]] = sent.task.id
            if len(pids) == 2:
                break
        assert len(pids) == 2, pids
        # Each task, whichever process made it, read over HTTP from any.
        async with httpx.AsyncClient(base_url=served.url) as http:
            for pid, task_id in pids.items():
                body = rpc_body("GetTask", {"id": task_id})
                got = answer(await http.post("/", json=body, headers={"A2A-Version": "1.0"}))
                assert got["result"]["status"]["message"]["parts"][0]["text"] == f"pid {pid}"
        assert served.stop(30) == 0
