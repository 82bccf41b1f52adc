"""Load benchmark: a2ad beside the official A2A SDK and a bare ASGI app, in one run.

A black-box harness. It starts each server from its command line (pinned to CPU 0;
the load generator pins itself to CPU 1), waits until its agent card answers, and
drives A2A 1.0 JSON-RPC over HTTP/1.1 keep-alive connections (one per concurrent
worker, asyncio + uvloop + httptools, pre-built request bytes). Every workload runs
in short windows that alternate between the servers (A B C D, then B C D A, ...),
so a noisy machine disturbs all of them alike; ratios against the SDK are taken
round by round and their median is reported. Server CPU time (utime + stime from
/proc/<pid>/stat, all threads) is read around every window and reported per
request: steadier than requests/s on a shared 2-core machine.

    .venv/bin/python bench/load.py --quick              # under a minute
    .venv/bin/python bench/load.py --a2ad-commit HEAD   # the full run (about 25 minutes)

Workloads: send (blocking SendMessage to the echo agent, c=1 and c=32), get
(GetTask on random ids of the prefilled tasks, c=32), list (ListTasks filtered by
contextId, pageSize 50, over the prefilled store: 10,000 tasks in 100 contexts),
stream (SendStreamingMessage read to its end, c=32), cancel (a ``sleep:30`` task
sent with returnImmediately, then CancelTask, c=32; latency from CancelTask until the
task reads canceled), fanout (one ``sleep:`` task, 100 SubscribeToTask streams, with
and without one more subscriber that never reads), memory (fresh servers: RSS after
10,000 and 100,000 more tasks, as bytes per task). It prints markdown tables and
then one JSON line with every figure.

The server ``a2ad-rest`` is a2ad again, driven over HTTP+JSON (POST /message:send,
GET /tasks/{id}, POST /message:stream, GET /tasks, POST /tasks/{id}:cancel) in the
send, get, list, stream and cancel workloads; beside ``a2ad`` it compares the two
bindings window by window:

    .venv/bin/python bench/load.py --servers a2ad,a2ad-rest --baseline a2ad \
        --workloads send,get,stream

The server ``a2ad-postgres`` is a2ad on PostgreSQL (``--postgres``, default
A2AD_BENCH_POSTGRES or postgresql://postgres@127.0.0.1:5432/postgres), in a schema
of its own made for the run and dropped after; beside it the harness reads the CPU
time of that server's PostgreSQL backends (found by their application_name) per
operation. The three stores in one run:

    .venv/bin/python bench/load.py --servers a2ad,a2ad-sqlite,a2ad-postgres \
        --baseline a2ad --workloads send,get,stream,cancel

``--py-spy DIR`` records a py-spy profile of every a2ad server during its first
measured window of each workload and prints where its samples fell.

The server ``a2ad-nometrics`` is a2ad with ``--no-metrics``, to measure what
metrics cost (``--servers a2ad,a2ad-nometrics --baseline a2ad-nometrics``).

The server ``a2ad-auth`` is a2ad with auth on: ``--auth`` with a keys file of a
few keys (made by ``a2ad auth add-key``), every request carrying one of them as
``Authorization: Bearer``; beside ``a2ad`` it gives the cost of authentication:

    .venv/bin/python bench/load.py --servers a2ad,a2ad-auth --baseline a2ad \
        --workloads send,get

The servers ``a2ad-access-on`` and ``a2ad-access-off`` are a2ad with
``--access-log on`` and ``off`` (its stderr, where the lines go, is a file):

    .venv/bin/python bench/load.py --servers a2ad-access-off,a2ad-access-on \
        --baseline a2ad-access-off --workloads send,get

The server ``a2ad-tracing`` is a2ad with ``--tracing otlp``: a span per request and
per agent turn (every one sampled: requests carry no trace context), exported in
batches to bench/peers/otlp_sink.py, which discards them; beside ``a2ad`` it gives
the cost of tracing:

    .venv/bin/python bench/load.py --servers a2ad,a2ad-tracing --baseline a2ad \
        --workloads send
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import itertools
import json
import os
import platform
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import uuid
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httptools
import uvloop

ROOT = Path(__file__).resolve().parent.parent
VENV = Path(sys.executable).parent  # the virtualenv this runs in (.venv/bin)
CLK_TCK = os.sysconf("SC_CLK_TCK")
perf = time.perf_counter
RUN = uuid.uuid4().hex[:8]

TERMINAL = (b"TASK_STATE_COMPLETED", b"TASK_STATE_CANCELED", b"TASK_STATE_FAILED")
SERVER_NAMES = (
    "a2ad",
    "a2ad-sqlite",
    "sdk",
    "bare",
    "sdk-nootel",
    "a2ad-rest",
    "a2ad-auth",
    "a2ad-access-on",
    "a2ad-access-off",
    "a2ad-tracing",
    "a2ad-nometrics",
    "a2ad-before",
    "a2ad-sqlite-before",
    "a2ad-postgres",
    "a2ad-postgres-before",
)
DEFAULT_SERVERS = SERVER_NAMES[:4]


# --------------------------------------------------------------------------- servers


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def pin(cpu: int) -> Callable[[], None] | None:
    if (os.cpu_count() or 1) < 2:
        return None

    def _pin() -> None:
        os.sched_setaffinity(0, {cpu})

    return _pin


class Server:
    def __init__(self, name: str, argv: list[str], port: int, env: dict[str, str]) -> None:
        self.name = name
        self.argv = argv
        self.port = port
        self.env = env
        # Driven over HTTP+JSON (the 1.0 REST paths) instead of JSON-RPC; the
        # prefill, fanout and memory phases still use JSON-RPC.
        self.rest = name.endswith("-rest")
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = tempfile.NamedTemporaryFile(prefix=f"load-{name}-", suffix=".log", delete=False)
        self.schema: str | None = None  # on PostgreSQL: the schema made for it
        self.database: Database | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            self.argv,
            cwd=ROOT,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            preexec_fn=pin(0),
        )

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def cpu(self) -> float:
        """Seconds of CPU the server process has used (user + system, all threads)."""
        with open(f"/proc/{self.pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK

    async def db_cpu(self) -> float | None:
        """Seconds of CPU its PostgreSQL backends have used (None: not on PostgreSQL)."""
        if self.database is None or self.schema is None:
            return None
        return await self.database.backends_cpu(self.schema)

    def rss(self) -> int:
        with open(f"/proc/{self.pid}/status", "rb") as f:
            for line in f:
                if line.startswith(b"VmRSS:"):
                    return int(line.split()[1]) * 1024
        raise RuntimeError("no VmRSS")

    def log_tail(self, lines: int = 20) -> str:
        self.log.flush()
        text = Path(self.log.name).read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:])

    async def wait_ready(self, timeout: float = 60.0) -> None:
        request = b"GET /.well-known/agent-card.json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        end = perf() + timeout
        while perf() < end:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited:\n{self.log_tail()}")
            try:
                conn = await connect(self.port)
            except OSError:
                await asyncio.sleep(0.1)
                continue
            try:
                status, _ = await asyncio.wait_for(conn.request(request), 5)
            finally:
                conn.close()
            if status == 200:
                return
            await asyncio.sleep(0.1)
        raise RuntimeError(f"{self.name} did not answer in {timeout} s:\n{self.log_tail()}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        with contextlib.suppress(OSError):
            os.unlink(self.log.name)


# The Authorization header every request to a port carries (servers with auth on).
AUTH_HEADERS: dict[int, bytes] = {}
AUTH_KEYS = 5  # in the keys file of a2ad-auth; requests use the last


def make_keys(path: Path, env: dict[str, str]) -> str:
    """A keys file of AUTH_KEYS keys, made as a user makes them; the last key."""
    key = ""
    for n in range(AUTH_KEYS):
        done = subprocess.run(
            [
                str(VENV / "a2ad"),
                "auth",
                "add-key",
                "--principal",
                f"bench-{n}",
                "--file",
                str(path),
            ],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        key = done.stdout.strip()
    return key


def server_argv(name: str, port: int, db: Path, postgres: str = "") -> list[str]:
    name = name.removesuffix("-before")  # the same server, from the --before commit
    name = name.removesuffix("-rest")  # the same server, driven over HTTP+JSON
    if name.startswith("a2ad-access-"):  # the same server, with --access-log on or off
        return [*server_argv("a2ad", port, db), "--access-log", name.removeprefix("a2ad-access-")]
    if name == "a2ad-nometrics":  # the same server, with metrics off
        return [*server_argv("a2ad", port, db), "--no-metrics"]
    if name == "a2ad-auth":  # the same server, with auth on
        keys = ["--auth", str(db.with_suffix(".keys.toml"))]
        return [*server_argv("a2ad", port, db), *keys]
    if name == "a2ad-tracing":  # the same server, exporting a span per request and turn
        return [*server_argv("a2ad", port, db), "--tracing", "otlp"]
    if name == "a2ad":
        store = ["--store", "memory", "--max-tasks", "1000000"]  # never evicts here
    elif name == "a2ad-sqlite":
        store = ["--store", f"sqlite:///{db}"]
    elif name == "a2ad-postgres":  # every instance on PostgreSQL needs the key file
        store = ["--store", postgres, "--secret-key-file", str(db.with_suffix(".key"))]
    if name.startswith("a2ad"):
        return [str(VENV / "a2ad"), "serve", *store, "--port", str(port), "--log-level", "warning"]
    if name.startswith("sdk"):
        return [str(VENV / "python"), "bench/peers/sdk_echo.py", "--port", str(port)]
    if name == "bare":
        return [
            str(VENV / "python"),
            "-m",
            "uvicorn",
            "--app-dir",
            "bench/peers",
            "bare_asgi:app",
            "--port",
            str(port),
            "--log-level",
            "warning",
        ]
    raise ValueError(name)


def remove_db(db: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-a2ad.lock", "-a2ad.key"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"{db}{suffix}")


class Database:
    """The PostgreSQL server the a2ad-postgres servers use: a schema per server,
    and the CPU time of the backends each server's connections run in."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.conn: Any = None

    async def admin(self) -> Any:
        if self.conn is None:
            import asyncpg  # type: ignore[import-untyped]

            # a2ad's own parameters (the pool's, timeouts) mean nothing to asyncpg.
            parts = urllib.parse.urlsplit(self.url)
            query = [
                (k, v)
                for k, v in urllib.parse.parse_qsl(parts.query)
                if k not in ("pool_min", "pool_max", "connect_timeout", "command_timeout")
            ]
            self.conn = await asyncpg.connect(
                urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(query))),
                server_settings={"application_name": f"a2ad-load-{RUN}-harness"},
            )
        return self.conn

    async def make_schema(self, schema: str) -> str:
        """A new schema; the store URL of a server using it (its backends named by it)."""
        conn = await self.admin()
        await conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        await conn.execute(f"CREATE SCHEMA {schema}")
        separator = "&" if "?" in self.url else "?"
        return f"{self.url}{separator}search_path={schema}&application_name={schema}"

    async def drop_schema(self, schema: str) -> None:
        conn = await self.admin()
        await conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")

    async def backends_cpu(self, schema: str) -> float:
        conn = await self.admin()
        pids = await conn.fetch(
            "SELECT pid FROM pg_stat_activity WHERE application_name = $1", schema
        )
        total = 0.0
        for (pid,) in pids:
            with contextlib.suppress(OSError):  # a backend that just ended
                with open(f"/proc/{pid}/stat", "rb") as f:
                    fields = f.read().rsplit(b")", 1)[1].split()
                total += (int(fields[11]) + int(fields[12])) / CLK_TCK
        return total

    async def aclose(self) -> None:
        if self.conn is not None:
            await self.conn.close()
            self.conn = None


async def start_servers(names: list[str], args: argparse.Namespace) -> list[Server]:
    servers = []
    for name in names:
        env = dict(os.environ)
        src = args.before_src if name.endswith("-before") else args.a2ad_src
        if name.startswith("a2ad") and src is not None:
            env["PYTHONPATH"] = f"{src}{os.pathsep}{env.get('PYTHONPATH', '')}"
        if name == "sdk-nootel":  # the SDK with its (no-op by default) OpenTelemetry spans off
            env["OTEL_INSTRUMENTATION_A2A_SDK_ENABLED"] = "false"
        if name == "a2ad-tracing":
            env["OTEL_EXPORTER_OTLP_ENDPOINT"] = start_otlp_sink()
        db = Path(tempfile.gettempdir()) / f"a2ad-load-{RUN}-{name}.db"
        if name.startswith("a2ad-sqlite"):
            remove_db(db)
        port = free_port()
        postgres, schema = "", None
        if name.startswith("a2ad-postgres"):
            schema = f"a2ad_load_{RUN}_{name.replace('-', '_')}"
            postgres = await args.database.make_schema(schema)
            db.with_suffix(".key").unlink(missing_ok=True)
        if name == "a2ad-auth":
            keys = db.with_suffix(".keys.toml")
            keys.unlink(missing_ok=True)
            AUTH_HEADERS[port] = b"Authorization: Bearer %s\r\n" % make_keys(keys, env).encode()
        server = Server(name, server_argv(name, port, db, postgres), port, env)
        if schema is not None:
            server.schema, server.database = schema, args.database
        server.start()
        servers.append(server)
    try:
        await asyncio.gather(*(s.wait_ready() for s in servers))
    except BaseException:
        await stop_servers(servers)
        raise
    return servers


OTLP_SINK: list[subprocess.Popen[bytes]] = []  # a2ad-tracing's collector, once started


def start_otlp_sink() -> str:
    """Start bench/peers/otlp_sink.py (on the load generator's CPU, so that the
    server's own core does only the server's work); returns its URL."""
    port = free_port()
    OTLP_SINK.append(
        subprocess.Popen(
            [
                str(VENV / "python"),
                "-m",
                "uvicorn",
                "--app-dir",
                "bench/peers",
                "otlp_sink:app",
                "--port",
                str(port),
                "--log-level",
                "warning",
            ],
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            preexec_fn=pin(1),
        )
    )
    return f"http://127.0.0.1:{port}"


async def stop_servers(servers: list[Server]) -> None:
    for server in servers:
        server.stop()
    while OTLP_SINK:
        sink = OTLP_SINK.pop()
        sink.terminate()
        sink.wait(10)
        if server.database is not None and server.schema is not None:
            await server.database.drop_schema(server.schema)
    for db in Path(tempfile.gettempdir()).glob(f"a2ad-load-{RUN}-*.db"):
        remove_db(db)
    for key in Path(tempfile.gettempdir()).glob(f"a2ad-load-{RUN}-*.key"):
        key.unlink(missing_ok=True)
    for keys in Path(tempfile.gettempdir()).glob(f"a2ad-load-{RUN}-*.keys.toml"):
        keys.unlink(missing_ok=True)


def core_times(cpu: int) -> tuple[float, float]:
    """(busy, steal) seconds of one CPU since boot, from /proc/stat."""
    with open("/proc/stat", "rb") as f:
        for line in f:
            if line.startswith(b"cpu%d " % cpu):
                v = [int(x) for x in line.split()[1:9]]
                # user nice system idle iowait irq softirq steal
                return (v[0] + v[1] + v[2] + v[5] + v[6]) / CLK_TCK, v[7] / CLK_TCK
    return 0.0, 0.0


# --------------------------------------------------------------------------- HTTP client


class Conn(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection; ``request`` writes bytes, resolves on the response."""

    def __init__(self) -> None:
        self.parser = httptools.HttpResponseParser(self)
        self.transport: asyncio.Transport | None = None
        self.waiter: asyncio.Future[tuple[int, bytes]] | None = None
        self.chunks: list[bytes] = []
        self.first_body = 0.0
        self.sink: Callable[[bytes], None] | None = None
        self.dead = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self.dead = True
            self._fail(exc)
            if self.transport is not None:
                self.transport.close()

    def on_body(self, body: bytes) -> None:
        if not self.chunks:
            self.first_body = perf()
        self.chunks.append(body)
        if self.sink is not None:
            self.sink(body)

    def on_message_complete(self) -> None:
        waiter, self.waiter = self.waiter, None
        body = self.chunks[0] if len(self.chunks) == 1 else b"".join(self.chunks)
        self.chunks = []
        if waiter is not None and not waiter.done():
            waiter.set_result((self.parser.get_status_code(), body))

    def connection_lost(self, exc: Exception | None) -> None:
        self.dead = True
        self._fail(exc or ConnectionError("connection closed by the server"))

    def _fail(self, exc: BaseException) -> None:
        waiter, self.waiter = self.waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_exception(ConnectionError(str(exc)))

    def request(self, data: bytes) -> asyncio.Future[tuple[int, bytes]]:
        waiter = asyncio.get_running_loop().create_future()
        if self.dead or self.transport is None:
            waiter.set_exception(ConnectionError("connection is closed"))
            return waiter
        self.waiter = waiter
        self.first_body = 0.0
        self.transport.write(data)
        return waiter

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


async def connect(port: int) -> Conn:
    _, conn = await asyncio.get_running_loop().create_connection(Conn, "127.0.0.1", port)
    return conn


def post(port: int, body: bytes, stream: bool = False, path: bytes = b"/") -> bytes:
    accept = b"Accept: text/event-stream\r\n" if stream else b""
    return (
        b"POST %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
        b"A2A-Version: 1.0\r\n%s%sContent-Length: %d\r\n\r\n%s"
        % (path, port, AUTH_HEADERS.get(port, b""), accept, len(body), body)
    )


def get(port: int, path: str) -> bytes:
    return b"GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nA2A-Version: 1.0\r\n%s\r\n" % (
        path.encode(),
        port,
        AUTH_HEADERS.get(port, b""),
    )


IDS = itertools.count(1)


def rpc(method: str, params: dict[str, Any]) -> bytes:
    return json.dumps(
        {"jsonrpc": "2.0", "id": next(IDS), "method": method, "params": params},
        separators=(",", ":"),
    ).encode()


_SEND = (
    b'{"jsonrpc":"2.0","id":%d,"method":"%s","params":{"message":{"messageId":"bench-%s-%d",'
    b'"role":"ROLE_USER",%s"parts":[{"text":"%s"}]}%s}}'
)


_REST_SEND = (
    b'{"message":{"messageId":"bench-%s-%d","role":"ROLE_USER",%s"parts":[{"text":"%s"}]}%s}'
)


def send_body(
    text: str,
    *,
    method: str = "SendMessage",
    context: str | None = None,
    immediately: bool = False,
    rest: bool = False,
) -> bytes:
    """A send request's body: the JSON-RPC request, or (``rest``) the bare
    SendMessageRequest that HTTP+JSON posts to /message:send or /message:stream."""
    n = next(IDS)
    ctx = b'"contextId":"%s",' % context.encode() if context else b""
    conf = b',"configuration":{"returnImmediately":true}' if immediately else b""
    if rest:
        return _REST_SEND % (RUN.encode(), n, ctx, text.encode(), conf)
    return _SEND % (n, method.encode(), RUN.encode(), n, ctx, text.encode(), conf)


def send_request(server: Server, text: str, *, stream: bool = False, **how: Any) -> bytes:
    """The whole HTTP request of a SendMessage (or, ``stream``, SendStreamingMessage)."""
    if server.rest:
        path = b"/message:stream" if stream else b"/message:send"
        return post(server.port, send_body(text, rest=True, **how), stream, path)
    method = "SendStreamingMessage" if stream else "SendMessage"
    return post(server.port, send_body(text, method=method, **how), stream)


def get_task_request(server: Server, task_id: str) -> bytes:
    if server.rest:
        return get(server.port, f"/tasks/{task_id}")
    return post(server.port, rpc("GetTask", {"id": task_id}))


def is_result(body: bytes) -> bool:
    """A JSON-RPC success; an HTTP+JSON answer of status 200 is one already."""
    head = body[:120]
    return b'"error":' not in head and (b'"result":' in head or not head.startswith(b'{"jsonrpc"'))


def task_id_of(body: bytes) -> str:
    answer = json.loads(body)
    result = answer.get("result", answer)
    return str(result.get("task", result)["id"])


# --------------------------------------------------------------------------- workloads


@dataclass
class Window:
    server: str
    ops: int = 0
    errors: int = 0
    elapsed: float = 0.0
    cpu: float = 0.0
    gen_cpu: float = 0.0
    nbytes: int = 0
    lat: list[float] = field(default_factory=list)
    extra: list[float] = field(default_factory=list)  # time to first event / pair latency
    error_sample: str = ""
    core0_steal: float = 0.0  # seconds the hypervisor took from the server's core
    core0_other: float = 0.0  # seconds core 0 was busy but not charged to the server
    db_cpu: float | None = None  # seconds of CPU of the server's PostgreSQL backends

    def fail(self, what: object) -> None:
        self.errors += 1
        if not self.error_sample:
            text = what.decode(errors="replace") if isinstance(what, bytes) else repr(what)
            self.error_sample = text[:300]

    @property
    def rate(self) -> float:
        return self.ops / self.elapsed if self.elapsed else 0.0

    @property
    def cpu_us(self) -> float:
        done = self.ops + self.errors
        return self.cpu / done * 1e6 if done else float("nan")


@dataclass
class State:
    """What a server holds after the prefill: task ids and contexts to read."""

    ids: list[str] = field(default_factory=list)
    contexts: list[str] = field(default_factory=list)


class Workload:
    name = ""
    concurrency = 32
    rate_unit = "req/s"
    lat_label = "latency"
    extra_label = ""

    async def worker(self, conn: Conn, server: Server, state: State, end: float, w: Window) -> None:
        raise NotImplementedError


class RequestResponse(Workload):
    """Send a request, check the answer, repeat until the window closes."""

    def __init__(self, name: str, concurrency: int) -> None:
        self.name = name
        self.concurrency = concurrency

    def make(self, server: Server, state: State) -> bytes:
        raise NotImplementedError

    def check(self, body: bytes) -> bool:
        raise NotImplementedError

    async def worker(self, conn: Conn, server: Server, state: State, end: float, w: Window) -> None:
        make, check, lat = self.make, self.check, w.lat
        while True:
            data = make(server, state)
            t0 = perf()
            if t0 >= end:
                return
            try:
                status, body = await conn.request(data)
            except ConnectionError as exc:
                w.fail(exc)
                return
            t1 = perf()
            if status == 200 and check(body):
                lat.append(t1 - t0)
                w.ops += 1
                w.nbytes += len(body)
            else:
                w.fail(body)


class Send(RequestResponse):
    def make(self, server: Server, state: State) -> bytes:
        return send_request(server, "hello")

    def check(self, body: bytes) -> bool:
        return is_result(body) and b'"TASK_STATE_COMPLETED"' in body


class Get(RequestResponse):
    def make(self, server: Server, state: State) -> bytes:
        return get_task_request(server, random.choice(state.ids))

    def check(self, body: bytes) -> bool:
        return is_result(body) and b'"TASK_STATE_COMPLETED"' in body


class ListTasks(RequestResponse):
    def make(self, server: Server, state: State) -> bytes:
        context = random.choice(state.contexts)
        if server.rest:
            return get(server.port, f"/tasks?contextId={context}&pageSize=50")
        return post(server.port, rpc("ListTasks", {"contextId": context, "pageSize": 50}))

    def check(self, body: bytes) -> bool:
        return is_result(body) and b'"tasks":[{' in body


class Stream(Workload):
    rate_unit = "streams/s"
    lat_label = "whole stream"
    extra_label = "first event"

    def __init__(self, name: str, concurrency: int) -> None:
        self.name = name
        self.concurrency = concurrency

    async def worker(self, conn: Conn, server: Server, state: State, end: float, w: Window) -> None:
        while True:
            data = send_request(server, "hello", stream=True)
            t0 = perf()
            if t0 >= end:
                return
            try:
                status, body = await conn.request(data)
            except ConnectionError as exc:
                w.fail(exc)
                return
            t1 = perf()
            events = body.count(b"data:")
            if (
                status == 200
                and events >= 2
                and b'"TASK_STATE_COMPLETED"' in body[-600:]
                and b'"error":' not in body
            ):
                w.lat.append(t1 - t0)
                w.extra.append(conn.first_body - t0)
                w.ops += 1
                w.nbytes += len(body)
            else:
                w.fail(body)


class Cancel(Workload):
    name = "cancel-c32"
    rate_unit = "pairs/s"
    lat_label = "cancel→canceled"
    extra_label = "send+cancel"

    def __init__(self) -> None:
        self.canceled: dict[str, list[str]] = {}

    async def worker(self, conn: Conn, server: Server, state: State, end: float, w: Window) -> None:
        canceled = self.canceled.setdefault(server.name, [])
        while True:
            data = send_request(server, "sleep:30 cancel me", immediately=True)
            t0 = perf()
            if t0 >= end:
                return
            try:
                status, body = await conn.request(data)
                if status != 200 or not is_result(body):
                    w.fail(body)
                    continue
                tid = task_id_of(body)
                t1 = perf()
                if server.rest:
                    cancel = post(server.port, b"", path=b"/tasks/%s:cancel" % tid.encode())
                else:
                    cancel = post(server.port, rpc("CancelTask", {"id": tid}))
                status, body = await conn.request(cancel)
                polls = 0
                while status == 200 and is_result(body) and b"TASK_STATE_CANCELED" not in body:
                    polls += 1
                    if polls > 2000:
                        break
                    await asyncio.sleep(0.002)
                    status, body = await conn.request(get_task_request(server, tid))
            except ConnectionError as exc:
                w.fail(exc)
                return
            t2 = perf()
            if status == 200 and b"TASK_STATE_CANCELED" in body:
                w.lat.append(t2 - t1)
                w.extra.append(t2 - t0)
                w.ops += 1
                w.nbytes += len(body)
                if len(canceled) < 200:
                    canceled.append(tid)
            else:
                w.fail(body)


async def run_window(
    server: Server, workload: Workload, state: State, seconds: float, grace: float = 30.0
) -> Window:
    conns = [await connect(server.port) for _ in range(workload.concurrency)]
    try:
        return await measure_window(
            server,
            server.name,
            lambda end, w: [workload.worker(c, server, state, end, w) for c in conns],
            seconds,
            grace,
        )
    finally:
        for c in conns:
            c.close()


async def measure_window(
    server: Server,
    name: str,
    workers: Callable[[float, Window], list[Coroutine[Any, Any, None]]],
    seconds: float,
    grace: float = 30.0,
) -> Window:
    """One window named ``name``: the coroutines ``workers(end, window)`` makes,
    run until they return (each stops taking work at ``end``), with ``server``'s
    CPU (and its core's, its database's) read around them. bench/grpc_load.py
    measures its gRPC clients' windows with it too."""
    w = Window(name)
    gc.disable()
    try:
        db0 = await server.db_cpu()
        cpu0, gen0, stat0 = server.cpu(), time.process_time(), core_times(0)
        t0 = perf()
        end = t0 + seconds
        jobs = [asyncio.ensure_future(job) for job in workers(end, w)]
        _done, pending = await asyncio.wait(jobs, timeout=seconds + grace)
        for job in pending:
            job.cancel()
            w.fail("request still unanswered after the window's grace period")
        for job in _done:
            if job.exception() is not None:
                w.fail(job.exception())
        w.elapsed = perf() - t0
        w.gen_cpu = time.process_time() - gen0
        await asyncio.sleep(0.05)  # let the server finish what the last requests started
        w.cpu = server.cpu() - cpu0
        db1 = await server.db_cpu()
        if db0 is not None and db1 is not None:
            w.db_cpu = db1 - db0
        stat1 = core_times(0)
        w.core0_steal = stat1[1] - stat0[1]
        w.core0_other = max(0.0, stat1[0] - stat0[0] - w.cpu)
    finally:
        gc.enable()
    return w


async def run_count(
    server: Server, make: Callable[[int], bytes], total: int, concurrency: int = 32
) -> tuple[list[bytes], float, int]:
    """Send ``total`` requests over ``concurrency`` connections; the bodies, seconds, errors."""
    bodies: list[bytes] = []
    errors = 0
    left = itertools.count()

    async def worker(conn: Conn) -> None:
        nonlocal errors
        while next(left) < total:
            status, body = await conn.request(make(server.port))
            if status == 200 and is_result(body):
                bodies.append(body)
            else:
                errors += 1

    conns = [await connect(server.port) for _ in range(min(concurrency, total))]
    t0 = perf()
    try:
        await asyncio.gather(*(worker(c) for c in conns))
    finally:
        for c in conns:
            c.close()
    return bodies, perf() - t0, errors


# --------------------------------------------------------------------------- fanout


class SseSink:
    """Splits an SSE body into events as it arrives, with the time each arrived."""

    def __init__(self) -> None:
        loop = asyncio.get_running_loop()
        self.buf = b""
        self.events: list[tuple[float, bytes]] = []
        self.first: asyncio.Future[None] = loop.create_future()
        self.final: asyncio.Future[None] = loop.create_future()

    def __call__(self, chunk: bytes) -> None:
        t = perf()
        self.buf = (self.buf + chunk).replace(b"\r\n", b"\n")
        while (i := self.buf.find(b"\n\n")) >= 0:
            event, self.buf = self.buf[:i], self.buf[i + 2 :]
            if b"data:" not in event:
                continue
            self.events.append((t, event))
            if not self.first.done():
                self.first.set_result(None)
            if (b'"error":' in event or any(s in event for s in TERMINAL)) and len(self.events) > 1:
                if not self.final.done():
                    self.final.set_result(None)

    def end(self, why: str) -> None:
        for fut in (self.first, self.final):
            if not fut.done():
                fut.set_exception(ConnectionError(why))


async def subscriber(port: int, task_id: str, sink: SseSink) -> None:
    conn = await connect(port)
    conn.sink = sink
    try:
        status, body = await conn.request(
            post(port, rpc("SubscribeToTask", {"id": task_id}), stream=True)
        )
        sink.end(f"stream ended (HTTP {status}): {body[:200]!r}")
    except ConnectionError as exc:
        sink.end(str(exc))
    finally:
        conn.close()


async def fanout_run(
    server: Server, subscribers: int, stalled: bool, sleep_s: float
) -> dict[str, Any]:
    conn = await connect(server.port)
    try:
        status, body = await conn.request(
            post(server.port, send_body(f"sleep:{sleep_s} fanout", immediately=True))
        )
    finally:
        conn.close()
    if status != 200 or not is_result(body):
        return {"error": body[:300].decode(errors="replace")}
    t_created = perf()
    task_id = task_id_of(body)
    cpu0 = server.cpu()
    stall_sock = None
    if stalled:  # first in line, tiny receive buffer, never read
        stall_sock = socket.socket()
        stall_sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)
        stall_sock.connect(("127.0.0.1", server.port))
        stall_sock.sendall(post(server.port, rpc("SubscribeToTask", {"id": task_id}), True))
    sinks = [SseSink() for _ in range(subscribers)]
    jobs = [asyncio.ensure_future(subscriber(server.port, task_id, s)) for s in sinks]
    result: dict[str, Any] = {"stalled": stalled}
    try:
        firsts = await asyncio.wait_for(
            asyncio.gather(*(s.first for s in sinks), return_exceptions=True), sleep_s + 10
        )
        t_ready = perf()
        result["subscribed"] = sum(1 for f in firsts if f is None)
        result["setup_ms"] = (t_ready - t_created) * 1000
        result["ready_before_completion"] = t_ready - t_created < sleep_s
        finals = await asyncio.wait_for(
            asyncio.gather(*(s.final for s in sinks), return_exceptions=True), sleep_s + 20
        )
    except TimeoutError:
        finals = [None if s.final.done() and not s.final.exception() else 1 for s in sinks]
        result["timeout"] = True
    finally:
        for job in jobs:
            job.cancel()
        await asyncio.gather(*jobs, return_exceptions=True)
        if stall_sock is not None:
            stall_sock.close()
    result["cpu_ms"] = (server.cpu() - cpu0) * 1000
    ok = [s for s, f in zip(sinks, finals, strict=True) if f is None and len(s.events) > 1]
    result["delivered"] = len(ok)
    result["errors"] = subscribers - len(ok)
    errs = [f for f in finals if f is not None]
    if errs:
        result["error_sample"] = str(errs[0])[:300]
    if not ok:
        return result
    burst_start = min(s.events[1][0] for s in ok)
    finals_at = sorted(s.events[-1][0] - burst_start for s in ok)
    post_events = sum(len(s.events) - 1 for s in ok)
    spread = finals_at[-1]
    result.update(
        events_per_sub=post_events / len(ok) + 1,
        spread_ms=spread * 1000,
        final_p50_ms=pct(finals_at, 50) * 1000,
        events_per_s=post_events / spread if spread > 0 else float("inf"),
    )
    return result


# --------------------------------------------------------------------------- profiles

# Where a sample's time went: the innermost frame of the stack that matches,
# first pattern first; a stack none matches is "other".
SPY_PARTS = (
    ("PostgreSQL driver (asyncpg)", ("asyncpg/",)),
    ("a2ad store", ("a2ad/store/",)),
    ("a2ad engine", ("a2ad/engine/", "a2ad/agent", "a2ad/agents/")),
    ("a2ad server and protocol", ("a2ad/server/", "a2ad/protocol/")),
    ("HTTP (uvicorn, h11, httptools)", ("uvicorn/", "httptools", "h11/", "starlette/")),
    ("event loop (asyncio, uvloop)", ("asyncio/", "uvloop/")),
)
SPY_RATE = 200  # samples a second


async def start_spy(
    args: argparse.Namespace, server: Server, workload: Workload
) -> tuple[subprocess.Popen[bytes], Path] | None:
    """py-spy recording ``server`` (an a2ad) until stop_spy, if --py-spy asked for it."""
    if args.py_spy is None or not server.name.startswith("a2ad"):
        return None
    out = Path(args.py_spy) / f"{workload.name}-{server.name}.txt"
    out.parent.mkdir(parents=True, exist_ok=True)
    spy = subprocess.Popen(
        [
            str(VENV / "py-spy"),
            "record",
            "--pid",
            str(server.pid),
            "--rate",
            str(SPY_RATE),
            "--format",
            "raw",
            "--nonblocking",  # sample without stopping the server
            "--output",
            str(out),
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=pin(1),  # beside the harness, not on the server's core
    )
    await asyncio.sleep(1.0)  # attached before the window opens
    return spy, out


def stop_spy(spy: tuple[subprocess.Popen[bytes], Path], seconds: float) -> dict[str, Any]:
    proc, out = spy
    proc.send_signal(signal.SIGINT)  # py-spy writes its file on Ctrl-C
    proc.wait(30)
    parts: dict[str, int] = {name: 0 for name, _ in SPY_PARTS}
    parts["other"] = 0
    samples = 0
    with contextlib.suppress(FileNotFoundError):
        for line in out.read_text().splitlines():
            stack, _, count = line.rpartition(" ")
            n = int(count)
            samples += n
            frames = stack.split(";")
            part = "other"
            for frame in reversed(frames):
                found = next(
                    (name for name, keys in SPY_PARTS if any(k in frame for k in keys)), None
                )
                if found is not None:
                    part = found
                    break
            parts[part] += n
    # The window plus the second before it and the moment after: about this many
    # samples if the server's threads never waited.
    return {
        "file": str(out),
        "samples": samples,
        "busy": samples / (SPY_RATE * (seconds + 1.0)),
        "parts": {name: n / samples if samples else 0.0 for name, n in parts.items()},
    }


def print_profile(workload: str, server: str, profile: dict[str, Any]) -> None:
    parts = ", ".join(
        f"{name} {share:.0%}"
        for name, share in sorted(profile["parts"].items(), key=lambda kv: -kv[1])
    )
    print(
        f"  py-spy {server} {workload}: {profile['samples']} samples, busy ~{profile['busy']:.0%}"
        f" of one thread; {parts}"
    )


# --------------------------------------------------------------------------- stats, output


def pct(sorted_values: list[float], p: float) -> float:
    if not sorted_values:
        return float("nan")
    k = min(len(sorted_values) - 1, max(0, round(p / 100 * (len(sorted_values) - 1))))
    return sorted_values[k]


def summarize(windows: list[Window]) -> dict[str, Any]:
    lat = sorted(x for w in windows for x in w.lat)
    extra = sorted(x for w in windows for x in w.extra)
    ops = sum(w.ops for w in windows)
    done = ops + sum(w.errors for w in windows)
    out: dict[str, Any] = {
        "rate": statistics.median(w.rate for w in windows),
        "rates": [round(w.rate, 1) for w in windows],
        "ops": ops,
        "errors": sum(w.errors for w in windows),
        "p50_ms": pct(lat, 50) * 1000,
        "p99_ms": pct(lat, 99) * 1000,
        "cpu_us": sum(w.cpu for w in windows) / done * 1e6 if done else float("nan"),
        "cpu_us_rounds": [round(w.cpu_us, 1) for w in windows],
        "resp_bytes": sum(w.nbytes for w in windows) / ops if ops else 0,
        "gen_cpu": sum(w.gen_cpu for w in windows) / sum(w.elapsed for w in windows),
        "server_cpu": sum(w.cpu for w in windows) / sum(w.elapsed for w in windows),
        "core0_steal": sum(w.core0_steal for w in windows) / sum(w.elapsed for w in windows),
        "core0_other": sum(w.core0_other for w in windows) / sum(w.elapsed for w in windows),
    }
    db = [w.db_cpu for w in windows if w.db_cpu is not None]
    if db:  # CPU of the PostgreSQL backends per operation, and as a share of a core
        out["db_cpu_us"] = sum(db) / done * 1e6 if done else float("nan")
        out["db_cpu"] = sum(db) / sum(w.elapsed for w in windows)
    if extra:
        out["extra_p50_ms"] = pct(extra, 50) * 1000
        out["extra_p99_ms"] = pct(extra, 99) * 1000
    sample = next((w.error_sample for w in windows if w.error_sample), "")
    if sample:
        out["error_sample"] = sample
    return out


def add_ratios(
    rows: dict[str, dict[str, Any]], windows: dict[str, list[Window]], base: str
) -> None:
    """Per-round ratio against ``base`` (same round, adjacent in time), then the median."""
    if base not in windows:
        return
    for name, ws in windows.items():
        pairs = list(zip(ws, windows[base], strict=True))
        rate = [a.rate / b.rate for a, b in pairs if b.rate and a.rate]
        cpu = [a.cpu_us / b.cpu_us for a, b in pairs if b.cpu_us and a.ops and b.ops]
        rows[name]["x_rate"] = statistics.median(rate) if rate else float("nan")
        rows[name]["x_cpu"] = statistics.median(cpu) if cpu else float("nan")


def fmt(value: Any, digits: int = 1) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        if value != value:
            return "n/a"
        if abs(value) >= 1000:
            return f"{value:,.0f}"
        return f"{value:.{digits}f}"
    return str(value)


def print_table(header: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    print("| " + " | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        print("| " + " | ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) + " |")
    print(flush=True)


def machine() -> dict[str, Any]:
    model = ""
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as f:
        model = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "")
    mem = 0
    with contextlib.suppress(OSError), open("/proc/meminfo") as f:
        mem = int(next(ln.split()[1] for ln in f if ln.startswith("MemTotal"))) * 1024
    import importlib.metadata as md

    versions = {}
    for pkg in ("a2a-sdk", "uvicorn", "uvloop", "httptools", "starlette", "msgspec"):
        with contextlib.suppress(md.PackageNotFoundError):
            versions[pkg] = md.version(pkg)
    return {
        "nproc": os.cpu_count(),
        "cpu": model,
        "mem_gib": round(mem / 2**30, 1),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "packages": versions,
    }


def git(*args: str) -> str:
    try:
        return subprocess.run(
            ["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


# --------------------------------------------------------------------------- phases


async def prefill(server: Server, n: int) -> State:
    contexts = [f"bench-{RUN}-ctx-{k}" for k in range(max(1, n // 100))]
    cycle = itertools.cycle(contexts)

    def make(port: int) -> bytes:
        return post(port, send_body("hello", context=next(cycle)))

    bodies, seconds, errors = await run_count(server, make, n)
    if errors:
        raise RuntimeError(f"{server.name}: {errors} errors while prefilling")
    ids = [task_id_of(b) for b in bodies]
    print(f"  prefilled {server.name}: {n} tasks in {seconds:.1f} s ({n / seconds:.0f}/s)")
    return State(ids=ids, contexts=contexts)


async def throughput_phase(args: argparse.Namespace, report: dict[str, Any]) -> None:
    names = args.servers
    workloads: list[Workload] = []
    wanted = set(args.workloads)
    if "get" in wanted:
        workloads.append(Get("get-c32", 32))
    if "list" in wanted:
        # c=1 shows a page's own latency; c=32 its cost under load.
        workloads += [ListTasks("list-c1", 1), ListTasks("list-c32", 32)]
    if "send" in wanted:
        workloads += [Send("send-c1", 1), Send("send-c32", 32)]
    if "stream" in wanted:
        workloads += [Stream("stream-c1", 1), Stream("stream-c32", 32)]
    if "cancel" in wanted:
        workloads.append(Cancel())
    if not workloads and "fanout" not in wanted:
        return
    servers = await start_servers(names, args)
    try:
        print(f"servers up: {', '.join(f'{s.name} (pid {s.pid})' for s in servers)}")
        states = {}
        if wanted & {"get", "list"}:
            for s in servers:
                states[s.name] = await prefill(s, args.prefill)
        else:
            states = {s.name: State() for s in servers}
        for workload in workloads:
            t_start = perf()
            for s in servers:  # warm-up, not recorded
                await run_window(s, workload, states[s.name], args.warm)
            windows: dict[str, list[Window]] = {s.name: [] for s in servers}
            for r in range(args.rounds):
                k = r % len(servers)
                for s in servers[k:] + servers[:k]:
                    spy = await start_spy(args, s, workload) if r == 0 else None
                    windows[s.name].append(
                        await run_window(s, workload, states[s.name], args.seconds)
                    )
                    if spy is not None:
                        profile = stop_spy(spy, args.seconds)
                        report.setdefault("profiles", {}).setdefault(workload.name, {})[s.name] = (
                            profile
                        )
                        print_profile(workload.name, s.name, profile)
            rows = {name: summarize(ws) for name, ws in windows.items()}
            add_ratios(rows, windows, args.baseline)
            if isinstance(workload, Cancel):
                await verify_canceled(servers, workload, rows)
            report["workloads"][workload.name] = rows
            print_workload(workload, rows, perf() - t_start, args.baseline)
        if "fanout" in wanted:
            report["fanout"] = await fanout_phase(args, servers)
        report["rss_after_throughput"] = {s.name: s.rss() for s in servers}
    finally:
        await stop_servers(servers)


async def verify_canceled(servers: list[Server], workload: Cancel, rows: dict[str, Any]) -> None:
    """The tasks CancelTask reported canceled still read canceled afterwards."""
    for s in servers:
        ids = workload.canceled.get(s.name, [])[:50]
        conn = await connect(s.port)
        bad = 0
        try:
            for tid in ids:
                status, body = await conn.request(post(s.port, rpc("GetTask", {"id": tid})))
                if status != 200 or b"TASK_STATE_CANCELED" not in body:
                    bad += 1
        finally:
            conn.close()
        rows[s.name]["recheck"] = f"{len(ids) - bad}/{len(ids)} still canceled"


def print_workload(
    workload: Workload, rows: dict[str, dict[str, Any]], took: float, baseline: str = "sdk"
) -> None:
    print(f"\n### {workload.name} ({took:.0f} s)\n")
    header = [
        "server",
        workload.rate_unit,
        f"p50 ms ({workload.lat_label})",
        "p99 ms",
        "server CPU µs/op",
        "db CPU µs/op",
        f"× {baseline} rate",
        f"× {baseline} CPU",
        "errors",
        "resp B",
        "gen CPU",
    ]
    if workload.extra_label:
        header[9:9] = [f"{workload.extra_label} p50 ms", "p99 ms"]
    table = []
    for name, row in rows.items():
        line = [
            name,
            fmt(row["rate"], 0),
            fmt(row["p50_ms"], 2),
            fmt(row["p99_ms"], 2),
            fmt(row["cpu_us"], 0),
            fmt(row.get("db_cpu_us"), 0),
            fmt(row.get("x_rate"), 2),
            fmt(row.get("x_cpu"), 2),
            str(row["errors"]),
            fmt(row["resp_bytes"], 0),
            f"{row['gen_cpu'] * 100:.0f}%",
        ]
        if workload.extra_label:
            line[9:9] = [fmt(row.get("extra_p50_ms"), 2), fmt(row.get("extra_p99_ms"), 2)]
        table.append(line)
    print_table(header, table)
    for name, row in rows.items():
        if row.get("error_sample"):
            print(f"  {name}: first error: {row['error_sample']}")
        if row.get("recheck"):
            print(f"  {name}: GetTask afterwards: {row['recheck']}")
        if row["gen_cpu"] > 0.8:
            print(
                f"  {name}: the load generator was {row['gen_cpu']:.0%} busy: it may be the limit"
            )
    noise = ", ".join(
        f"{name} {row['server_cpu']:.0%}/{row['core0_other']:.0%}/{row['core0_steal']:.0%}"
        for name, row in rows.items()
    )
    print(f"  core 0 busy with the server / with anything else (irq, others) / stolen: {noise}")
    db = ", ".join(f"{name} {row['db_cpu']:.0%}" for name, row in rows.items() if "db_cpu" in row)
    if db:
        print(f"  the server's PostgreSQL backends (any core), busy: {db}")


async def fanout_phase(args: argparse.Namespace, servers: list[Server]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    runs: dict[str, dict[bool, list[dict[str, Any]]]] = {
        s.name: {False: [], True: []} for s in servers
    }
    for r in range(args.fanout_rounds):
        for s in servers:
            if s.name == "bare":
                continue
            for stalled in (False, True) if r % 2 == 0 else (True, False):
                runs[s.name][stalled].append(
                    await fanout_run(s, args.subscribers, stalled, args.fanout_sleep)
                )
    print(f"\n### fanout: 1 task, {args.subscribers} subscribers (+1 stalled)\n")
    header = [
        "server",
        "stalled",
        "subscribed",
        "setup ms",
        "events/sub",
        "burst ms (all finals)",
        "final p50 ms",
        "events/s",
        "CPU ms/run",
        "errors",
    ]
    table = []
    for s in servers:
        if s.name == "bare":
            out[s.name] = "n/a (no tasks to subscribe to)"
            table.append([s.name, "", "n/a", "", "", "", "", "", "", ""])
            continue
        out[s.name] = {}
        for stalled in (False, True):
            rs = runs[s.name][stalled]
            good = [x for x in rs if "spread_ms" in x]

            def med(key: str, good: list[dict[str, Any]] = good) -> float:
                return statistics.median(x[key] for x in good) if good else float("nan")

            summary = {
                "runs": rs,
                "subscribed": min((x.get("subscribed", 0) for x in rs), default=0),
                "setup_ms": med("setup_ms"),
                "events_per_sub": med("events_per_sub"),
                "spread_ms": med("spread_ms"),
                "final_p50_ms": med("final_p50_ms"),
                "events_per_s": med("events_per_s"),
                "cpu_ms": med("cpu_ms"),
                "errors": sum(x.get("errors", args.subscribers) for x in rs),
                "ready_before_completion": all(x.get("ready_before_completion") for x in rs),
            }
            out[s.name]["stalled" if stalled else "clean"] = summary
            table.append(
                [
                    s.name,
                    "yes" if stalled else "no",
                    f"{summary['subscribed']}/{args.subscribers}",
                    fmt(summary["setup_ms"], 0),
                    fmt(summary["events_per_sub"], 1),
                    fmt(summary["spread_ms"], 2),
                    fmt(summary["final_p50_ms"], 2),
                    fmt(summary["events_per_s"], 0),
                    fmt(summary["cpu_ms"], 0),
                    str(summary["errors"]),
                ]
            )
            sample = next((x["error_sample"] for x in rs if x.get("error_sample")), "")
            if sample:
                print(f"  {s.name} (stalled={stalled}): first error: {sample}")
        clean, stall = out[s.name]["clean"]["spread_ms"], out[s.name]["stalled"]["spread_ms"]
        out[s.name]["stalled_over_clean"] = stall / clean if clean else float("nan")
    print_table(header, table)
    return out


async def memory_phase(args: argparse.Namespace, report: dict[str, Any]) -> None:
    sizes = args.memory_sizes
    out: dict[str, Any] = {}
    table = []
    print(f"\n### memory: RSS growth over {', '.join(f'{n:,}' for n in sizes)} tasks\n")
    for name in args.servers:
        servers = await start_servers([name], args)
        s = servers[0]
        try:

            def make(port: int) -> bytes:
                return post(port, send_body("hello"))

            await run_count(s, make, args.memory_warm)
            await asyncio.sleep(0.5)
            rss0 = s.rss()
            done, took, errors, points = 0, 0.0, 0, []
            for n in sizes:
                _, seconds, errs = await run_count(s, make, n - done)
                done, took, errors = n, took + seconds, errors + errs
                await asyncio.sleep(0.5)
                rss = s.rss()
                cpu0 = s.cpu()  # then the CPU the server uses while nothing is asked of it
                await asyncio.sleep(args.memory_idle)
                idle = (s.cpu() - cpu0) / args.memory_idle
                points.append(
                    {"tasks": n, "rss": rss, "bytes_per_task": (rss - rss0) / n, "idle_cpu": idle}
                )
            out[name] = {
                "rss_start": rss0,
                "points": points,
                "errors": errors,
                "sends_per_s": done / took,
            }
            table.append(
                [name, f"{rss0 / 2**20:.1f}"]
                + [f"{p['rss'] / 2**20:.1f}" for p in points]
                + [fmt(p["bytes_per_task"], 0) for p in points]
                + [f"{p['idle_cpu']:.1%}" for p in points]
                + [fmt(done / took, 0), str(errors)]
            )
        finally:
            await stop_servers(servers)
    header = (
        ["server", "RSS MiB at start"]
        + [f"RSS MiB +{n:,}" for n in sizes]
        + [f"B/task at {n:,}" for n in sizes]
        + [f"idle CPU at {n:,}" for n in sizes]
        + ["sends/s (c=32)", "errors"]
    )
    print_table(header, table)
    report["memory"] = out


async def main(args: argparse.Namespace) -> None:
    report: dict[str, Any] = {
        "bench": "load",
        "mode": "quick" if args.quick else "full",
        "commit": git("rev-parse", "--short", "HEAD"),
        "a2ad_from": args.a2ad_from,
        "src_dirty": bool(git("status", "--porcelain", "--", "src")),
        "machine": machine(),
        "settings": {
            k: getattr(args, k)
            for k in (
                "servers",
                "workloads",
                "rounds",
                "seconds",
                "warm",
                "prefill",
                "subscribers",
                "fanout_rounds",
                "fanout_sleep",
                "memory_sizes",
                "memory_warm",
                "memory_idle",
                "baseline",
            )
        },
        "workloads": {},
    }
    args.database = Database(args.postgres)
    t0 = perf()
    print(
        f"a2ad load benchmark ({report['mode']}): {', '.join(args.servers)}; "
        f"{args.rounds} rounds × {args.seconds} s per workload and server; "
        f"a2ad from {args.a2ad_from}"
    )
    try:
        await throughput_phase(args, report)
        if "memory" in args.workloads:
            await memory_phase(args, report)
    finally:
        await args.database.aclose()
    report["seconds"] = round(perf() - t0, 1)
    print(f"total {report['seconds']} s")
    print(json.dumps(report, separators=(",", ":")))


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="short windows and sizes (< 1 minute)")
    p.add_argument(
        "--servers",
        default=",".join(DEFAULT_SERVERS),
        help=f"comma-separated, of {', '.join(SERVER_NAMES)}",
    )
    p.add_argument(
        "--workloads",
        default="get,list,send,stream,cancel,fanout,memory",
        help="comma-separated subset",
    )
    p.add_argument("--rounds", type=int, help="windows per server and workload (5; quick 2)")
    p.add_argument("--seconds", type=float, help="length of a window (5; quick 0.4)")
    p.add_argument("--warm", type=float, help="unrecorded warm-up window (1; quick 0.1)")
    p.add_argument("--prefill", type=int, help="tasks before get/list (10000; quick 500)")
    p.add_argument("--subscribers", type=int, default=100)
    p.add_argument("--fanout-rounds", type=int, help="(3; quick 1)")
    p.add_argument("--fanout-sleep", type=float, help="the fanout task's sleep: (2; quick 0.7)")
    p.add_argument("--memory-sizes", help="task counts (10000,100000; quick 300,600)")
    p.add_argument("--memory-warm", type=int, help="tasks sent before RSS is read (500; quick 100)")
    p.add_argument(
        "--memory-idle", type=float, help="seconds idle CPU is read after each size (5; quick 0.5)"
    )
    p.add_argument("--baseline", default="sdk", help="the server ratios are taken against")
    p.add_argument(
        "--postgres",
        default=os.environ.get(
            "A2AD_BENCH_POSTGRES", "postgresql://postgres@127.0.0.1:5432/postgres"
        ),
        help="the PostgreSQL server of a2ad-postgres (a schema of its own is made there); "
        "a2ad's query parameters (pool_max, ...) pass through",
    )
    p.add_argument(
        "--py-spy",
        metavar="DIR",
        help="record each a2ad server with py-spy during its first window of each workload "
        "(raw stacks in DIR) and print where the samples fell",
    )
    src = p.add_mutually_exclusive_group()
    src.add_argument("--a2ad-src", type=Path, help="run a2ad from this src/ (PYTHONPATH)")
    src.add_argument(
        "--a2ad-commit",
        help="run a2ad from this commit (git archive into a temp dir), not the working tree",
    )
    p.add_argument(
        "--before",
        metavar="REF",
        help="also run a2ad-before and a2ad-sqlite-before from this commit, in the same windows",
    )
    args = p.parse_args()
    quick = args.quick
    defaults = {
        "rounds": 2 if quick else 5,
        "seconds": 0.4 if quick else 5.0,
        "warm": 0.1 if quick else 1.0,
        "prefill": 500 if quick else 10000,
        "fanout_rounds": 1 if quick else 3,
        "fanout_sleep": 0.7 if quick else 2.0,
        "memory_sizes": "300,600" if quick else "10000,100000",
        "memory_warm": 100 if quick else 500,
        "memory_idle": 0.5 if quick else 5.0,
    }
    for key, value in defaults.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    args.servers = [s for s in args.servers.split(",") if s]
    if args.before:
        # Each named store's server from that commit, once (it may be named already).
        for s in ("a2ad", "a2ad-sqlite", "a2ad-postgres"):
            if s in args.servers and f"{s}-before" not in args.servers:
                args.servers.append(f"{s}-before")
    args.workloads = [w for w in args.workloads.split(",") if w]
    args.memory_sizes = sorted(int(n) for n in str(args.memory_sizes).split(","))
    for name in args.servers:
        if name not in SERVER_NAMES:
            p.error(f"unknown server {name!r}; pick from {', '.join(SERVER_NAMES)}")
    args.a2ad_from = "working tree (editable install)"
    args.before_src = None
    return args


def extract_src(ref: str, into: Path) -> tuple[Path, str]:
    """``ref``'s src/ (git archive) under ``into``; returns it and the short sha."""
    sha = git("rev-parse", "--short", ref)
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", ref, "src"], capture_output=True, check=True
    ).stdout
    into.mkdir(parents=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into / "src", sha


def run() -> None:
    args = parse_args()
    if (os.cpu_count() or 1) >= 2:
        os.sched_setaffinity(0, {1})
    tmp = None
    try:
        tmp = Path(tempfile.mkdtemp(prefix="a2ad-load-src-"))
        if args.a2ad_commit:
            args.a2ad_src, sha = extract_src(args.a2ad_commit, tmp / "a2ad")
            args.a2ad_from = f"commit {sha} (git archive)"
        elif args.a2ad_src:
            args.a2ad_from = f"{args.a2ad_src}"
        if args.before:
            args.before_src, sha = extract_src(args.before, tmp / "before")
            args.a2ad_from += f"; *-before from commit {sha} (git archive)"
        uvloop.run(main(args))
    except KeyboardInterrupt:
        sys.exit(130)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    run()
