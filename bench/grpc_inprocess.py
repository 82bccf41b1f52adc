"""a2ad's own cost per operation over gRPC beside JSON-RPC, in-process: instructions
under callgrind (``inprocess.py``'s way), or wall and CPU time with ``--wall``.

``a2ad serve --store memory``'s start-up runs as in inprocess.py (uvicorn's server
swapped for a driver), and the driver calls the app both ways in one process, one
binding after the other over the same tasks: JSON-RPC as ASGI (asgi_call.py; no
HTTP parser, no socket), and gRPC through the handler ``GrpcService`` gives
grpc.aio for the rpc, found by its method name as grpc.aio finds it, with the
request's bytes parsed by its deserializer and the answer made bytes by its
serializer (no HTTP/2, no grpc core, no socket). What is left on both sides is
a2ad's: from the parsed request to the answer's bytes. grpc.aio's own cost per
call is what bench/grpc_load.py's bare-grpc peer measures.

    .venv/bin/python bench/grpc_inprocess.py get              # instructions (about 30 s)
    .venv/bin/python bench/grpc_inprocess.py send --count 500
    .venv/bin/python bench/grpc_inprocess.py get --wall       # µs, no valgrind
    .venv/bin/python bench/grpc_inprocess.py send --src /tmp/a2ad-5a4dc0e/src
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from asgi_call import call, rpc, send_body, stream_body  # beside this script
from inprocess import _total, control

OPERATIONS = ("send", "get", "stream", "cancel")
BINDINGS = ("jsonrpc", "grpc")
SERVICE = "/lf.a2a.v1.A2AService/"
METADATA = (("a2a-version", "1.0"),)


class Context:
    """What a2ad's gRPC handlers use of grpc.aio's ServicerContext."""

    def __init__(self) -> None:
        self.written: list[Any] = []

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return METADATA

    def time_remaining(self) -> float | None:
        return None  # no deadline, as a call without one

    def peer(self) -> str:
        return "ipv4:127.0.0.1:50000"

    async def send_initial_metadata(self, metadata: Any) -> None:
        pass

    def set_trailing_metadata(self, metadata: Any) -> None:
        pass

    async def write(self, message: Any) -> None:
        self.written.append(message)

    async def abort(self, code: Any, details: str) -> None:
        raise RuntimeError(f"the call ended {code}: {details}")


class Grpc:
    """a2ad's gRPC handlers for ``app``, called as grpc.aio calls them."""

    def __init__(self, app: Any) -> None:
        from a2ad.server.bindings.grpc_service import GrpcService

        self.generic = GrpcService(app).generic_handler()

    def handler(self, method: str) -> Any:
        class Details:
            pass

        details = Details()
        details.method = SERVICE + method  # type: ignore[attr-defined]
        return self.generic.service(details)

    async def unary(self, method: str, request: bytes) -> bytes:
        h = self.handler(method)
        reply = await h.unary_unary(h.request_deserializer(request), Context())
        return bytes(h.response_serializer(reply))

    async def stream(self, method: str, request: bytes) -> list[bytes]:
        h = self.handler(method)
        context = Context()
        await h.unary_stream(h.request_deserializer(request), context)
        return [bytes(h.response_serializer(m)) for m in context.written]


def grpc_requests() -> Any:
    from a2a.types import a2a_pb2  # type: ignore[import-untyped]

    def send(n: int, text: str = "hello", at_once: bool = False) -> bytes:
        message = a2a_pb2.Message(
            message_id=f"g{n}", role=a2a_pb2.ROLE_USER, parts=[a2a_pb2.Part(text=text)]
        )
        configuration = a2a_pb2.SendMessageConfiguration(return_immediately=at_once)
        request = a2a_pb2.SendMessageRequest(message=message, configuration=configuration)
        return bytes(request.SerializeToString())

    return a2a_pb2, send


async def drive(app: Any, op: str, count: int, warm: int, wall: bool, out: Path) -> None:
    await app.lifetime.start()
    grpc = Grpc(app)
    pb, grpc_send = grpc_requests()
    first = json.loads(await call(app, send_body(-1)))["result"]["task"]["id"]
    get_rpc = rpc("GetTask", {"id": first})
    get_grpc = pb.GetTaskRequest(id=first).SerializeToString()

    async def jsonrpc_op(n: int) -> None:
        if op == "send":
            answer = await call(app, send_body(n))
        elif op == "get":
            answer = await call(app, get_rpc)
        elif op == "stream":
            answer = await call(app, stream_body(n))
        else:
            sent = json.loads(await call(app, send_body(n, "sleep:60 x", returnImmediately=True)))
            answer = await call(app, rpc("CancelTask", {"id": sent["result"]["task"]["id"]}))
        if b"TASK_STATE_COMPLETED" not in answer and b"TASK_STATE_CANCELED" not in answer:
            raise RuntimeError(f"JSON-RPC {op} answered {answer[-300:]!r}")

    async def grpc_op(n: int) -> None:
        if op == "send":
            state = pb.SendMessageResponse.FromString(await grpc.unary("SendMessage", grpc_send(n)))
            ok = state.task.status.state == pb.TASK_STATE_COMPLETED
        elif op == "get":
            task = pb.Task.FromString(await grpc.unary("GetTask", get_grpc))
            ok = task.status.state == pb.TASK_STATE_COMPLETED
        elif op == "stream":
            events = await grpc.stream("SendStreamingMessage", grpc_send(n))
            last = pb.StreamResponse.FromString(events[-1])
            ok = len(events) == 4 and last.status_update.status.state == pb.TASK_STATE_COMPLETED
        else:
            at_once = grpc_send(n, "sleep:60 x", at_once=True)
            sent = pb.SendMessageResponse.FromString(await grpc.unary("SendMessage", at_once))
            cancel = pb.CancelTaskRequest(id=sent.task.id).SerializeToString()
            task = pb.Task.FromString(await grpc.unary("CancelTask", cancel))
            ok = task.status.state == pb.TASK_STATE_CANCELED
        if not ok:
            raise RuntimeError(f"gRPC {op}: not the state expected")

    ops = {"jsonrpc": jsonrpc_op, "grpc": grpc_op}
    for n in range(warm):
        for binding in BINDINGS:
            await ops[binding](1_000_000 + n)
    times: dict[str, Any] = {}
    if wall:
        for binding in BINDINGS:  # the best of five runs each
            runs = []
            for r in range(5):
                t0, c0 = time.perf_counter(), time.process_time()
                for n in range(count):
                    await ops[binding](2_000_000 + r * count + n)
                runs.append((time.perf_counter() - t0, time.process_time() - c0))
            times[binding] = min(runs)
    else:
        await control("--instr=on")
        await control("--zero")
        started = time.monotonic()
        await asyncio.sleep(3)
        times["idle"] = time.monotonic() - started
        await control("--dump=idle")
        for binding in BINDINGS:
            await control("--zero")
            started = time.monotonic()
            for n in range(count):
                await ops[binding](3_000_000 + n)
            times[binding] = time.monotonic() - started
            await control(f"--dump={binding}")
    out.write_text(json.dumps(times))
    await app.aclose()


def child(op: str, count: int, warm: int, wall: bool, out: Path) -> None:
    """``a2ad serve``, its uvicorn server swapped for ``drive`` (as inprocess.py)."""
    import a2ad.cli.serve as serve_module
    from a2ad.cli import main
    from a2ad.cli.collector import settle_collector

    class Driver:
        def __init__(self, config: Any, application: Any, banner: Any, *_: Any, **__: Any) -> None:
            self.application = application
            self.startup_failed = False

        def run(self, sockets: list[Any]) -> None:
            for sock in sockets:
                sock.close()
            settle_collector()
            asyncio.run(drive(self.application, op, count, warm, wall, out))

    serve_module._Server = Driver  # type: ignore[misc,assignment]
    sys.argv = ["a2ad", "serve", "--store", "memory", "--port", "0", "--log-level", "warning"]
    main()


def measure(args: argparse.Namespace) -> dict[str, float]:
    """Per binding: instructions per operation, or (``--wall``) µs of wall and CPU time."""
    with tempfile.TemporaryDirectory(prefix="a2ad-grpc-inprocess-") as tmp:
        out = Path(tmp) / "times.json"
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        if args.src:
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [args.src, env.get("PYTHONPATH")]))
        argv = [sys.executable, __file__, args.op, "--count", str(args.count)]
        argv += ["--warm", str(args.warm), "--child", str(out)] + (["--wall"] if args.wall else [])
        if not args.wall:
            cg = ["valgrind", "--tool=callgrind", "--instr-atstart=no"]
            argv = [*cg, f"--callgrind-out-file={tmp}/cg", *argv]
        subprocess.run(argv, env=env, check=True, capture_output=True)
        times = json.loads(out.read_text())
        if args.wall:
            return {
                f"{b} {kind}": times[b][i] / args.count * 1e6
                for b in BINDINGS
                for i, kind in enumerate(("wall µs", "CPU µs"))
            }
        dumps = {p.name.rsplit(".", 1)[1]: p for p in Path(tmp).glob("cg.*")}
        ordered = [dumps[k] for k in sorted(dumps, key=int)][-3:]  # idle, jsonrpc, grpc
        idle = _total(ordered[0]) / times["idle"]
        return {
            b: (_total(path) - idle * times[b]) / args.count
            for b, path in zip(BINDINGS, ordered[1:], strict=True)
        }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("op", choices=OPERATIONS)
    parser.add_argument("--count", type=int, default=1000, help="operations per binding")
    parser.add_argument("--warm", type=int, default=50, help="operations of each before")
    parser.add_argument("--wall", action="store_true", help="time it, without valgrind")
    parser.add_argument("--src", help="run a2ad from this src/ (PYTHONPATH)")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        child(args.op, args.count, args.warm, args.wall, args.child)
        return 0
    figures = measure(args)
    unit = "" if args.wall else " instructions"
    shown = ", ".join(f"{k} {v:,.1f}" if args.wall else f"{k} {v:,.0f}" for k, v in figures.items())
    print(f"{args.op}: {shown}{unit} each ({args.src or 'this tree'})")
    if not args.wall:
        print(f"  gRPC ÷ JSON-RPC: {figures['grpc'] / figures['jsonrpc']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
