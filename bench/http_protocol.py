"""What the HTTP protocol costs per request, without sockets: uvicorn's httptools
protocol against a2ad's (the connection limits), each feeding GetTask requests to the
a2ad app on one keep-alive connection through an in-memory transport.

    taskset -c 0 .venv/bin/python bench/http_protocol.py          # both, 20,000 requests each
    valgrind --tool=callgrind .venv/bin/python bench/http_protocol.py \
        --protocols a2ad --requests 1000 --repeat 1              # and again with 3000

Prints CPU time (user + system) per request for each protocol, best of ``--repeat``
runs (interleaved), each after ``--warm`` untimed requests. ``--binding rest`` asks
``GET /tasks/{id}`` (HTTP+JSON) instead of the JSON-RPC GetTask.
Under callgrind, run it twice with different ``--requests`` and divide the difference of
the instruction counts: the per-request count, without start-up.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
from typing import Any

import uvicorn
import uvloop
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

from a2ad import create_app
from a2ad.server.connections import ConnectionLimits, protocol_class


class Transport(asyncio.Transport):
    """Keeps what the protocol writes for the last request; reads are always on."""

    def __init__(self) -> None:
        super().__init__()
        self.out = b""

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("127.0.0.1", 50000), "sockname": ("127.0.0.1", 8000)}.get(
            name, default
        )

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.out += bytes(data)

    def is_closing(self) -> bool:
        return False

    def close(self) -> None:
        pass

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


def post(body: dict[str, Any]) -> bytes:
    data = json.dumps(body).encode()
    return (
        b"POST / HTTP/1.1\r\nhost: 127.0.0.1:8000\r\na2a-version: 1.0\r\n"
        b"content-type: application/json\r\ncontent-length: %d\r\n\r\n%s" % (len(data), data)
    )


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def measure(name: str, requests: int, warm: int, binding: str = "jsonrpc") -> float:
    app = create_app()
    await app.engine.start()
    cls = HttpToolsProtocol if name == "uvicorn" else protocol_class(ConnectionLimits())
    config = uvicorn.Config(app, http=cls, lifespan="off", log_level="warning")
    config.load()
    state = ServerState()
    protocol = cls(config=config, server_state=state, app_state={})
    transport = Transport()
    protocol.connection_made(transport)

    async def one(request: bytes) -> None:
        transport.out = b""
        protocol.data_received(request)
        while state.tasks:
            await asyncio.gather(*state.tasks)

    message = {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}
    await one(
        post({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}})
    )
    task_id = json.loads(transport.out.partition(b"\r\n\r\n")[2])["result"]["task"]["id"]
    get = post({"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": task_id}})
    if binding == "rest":
        get = b"GET /tasks/%s HTTP/1.1\r\nhost: 127.0.0.1:8000\r\na2a-version: 1.0\r\n\r\n" % (
            task_id.encode()
        )
    for _ in range(warm):  # untimed
        await one(get)
    start = cpu()
    for _ in range(requests):
        await one(get)
    used = cpu() - start
    assert b"TASK_STATE_COMPLETED" in transport.out, transport.out
    protocol.connection_lost(None)
    await app.aclose()
    return used / requests * 1e6


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--protocols", default="uvicorn,a2ad", help="comma-separated: uvicorn, a2ad")
    p.add_argument("--requests", type=int, default=20000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--warm", type=int, default=500, help="untimed requests first")
    p.add_argument("--binding", default="jsonrpc", choices=["jsonrpc", "rest"])
    args = p.parse_args()
    names = args.protocols.split(",")
    runs: dict[str, list[float]] = {name: [] for name in names}
    for _ in range(args.repeat):  # interleaved, so a busy moment hits both alike
        for name in names:
            runs[name].append(uvloop.run(measure(name, args.requests, args.warm, args.binding)))
    for name, times in runs.items():
        print(f"{name}: {min(times):.2f} µs CPU a request (best of {args.repeat})")


if __name__ == "__main__":
    main()
