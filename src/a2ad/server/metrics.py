"""``GET /metrics``: what the server is doing, in the Prometheus text format.

Counting is plain Python ints and lists, on the event loop's thread, with no
lock: measured, a prometheus-client ``Counter`` child's ``inc`` cost about 0.4
µs and a ``Histogram`` ``observe`` about 1.1 µs here, several times what a dict
of ints costs (docs/performance.md, "Metrics"); a send touches a dozen of them.
Histograms are noted as a list append and put into buckets later
(histograms.py).
prometheus-client renders them at scrape time through a collector, and its
parser is what the tests read them with.

- ``Metrics`` is a ``RequestObserver`` (server/observed.py: requests by method,
  binding and code, their duration, those in flight, open streams), a
  ``TurnObserver`` (engine/invocation.py: agent turns in flight, time to a new
  task's first event) and the engine's ``EngineMetrics`` (engine/metrics.py:
  transitions, task durations, store latency, drops, upkeep, push failures).
- Store-wide gauges (tasks by agent and state, the push outbox) are read from
  the store's kept counts (``TaskStore.census``) at scrape time, at most once
  every ``census_seconds``. Every instance on one PostgreSQL store reports the
  same store-wide numbers.
- Several processes on one port (``a2ad serve --workers N``) share a
  directory: each writes what it counted there about once a second
  (``share``), and a scrape reaching any of them adds up the whole group's
  (the scraped process's own numbers are live, the others' at most a second
  old). A process that ended leaves its counts (its in-flight gauges go).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import msgspec
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

from .. import log_context
from ..protocol.types import TaskId
from ..store.base import Census, TaskStore
from .histograms import Histograms
from .observed import OPERATION_NAMES, RequestRecord
from .types import Receive, Scope, Send, respond

if TYPE_CHECKING:
    from ..engine.bus import Bus
    from ..engine.invocation import Invocation
    from ..engine.metrics import Change
    from ..engine.runner import TurnObserver

__all__ = ["CONTENT_TYPE", "METRICS_PATH", "Metrics", "MetricsEndpoint", "MetricsListener"]

METRICS_PATH = "/metrics"
CONTENT_TYPE = b"text/plain; version=0.0.4; charset=utf-8"
SHARE_SECONDS = 1.0  # how often a process of a group writes its counts
BORN_KEPT = 100_000  # new tasks whose start is remembered until they end

_STREAMING = frozenset(
    {OPERATION_NAMES[op] for op in OPERATION_NAMES if OPERATION_NAMES[op].startswith("S")}
    - {"SendMessage"}
)

_REQUEST_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
_TASK_BUCKETS = (0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600)
_STORE_BUCKETS = (0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05, 0.1, 1)

# name: (help, label names); counters are rendered with ``_total``.
_COUNTERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "a2ad_requests": (
        "HTTP requests served, by A2A method (1.0 name), binding and A2A error code",
        ("method", "binding", "code"),
    ),
    "a2ad_task_transitions": (
        "Task state changes this process stored (from 'none': created)",
        ("agent", "from_state", "to_state"),
    ),
    "a2ad_subscribers_dropped": ("Stream subscribers dropped for falling behind", ()),
    "a2ad_tasks_evicted": ("Tasks the store evicted to stay within its cap", ()),
    "a2ad_tasks_retention_deleted": ("Finished tasks deleted past the retention period", ()),
    "a2ad_tasks_overdue_failed": ("Tasks failed for passing their deadline", ()),
    "a2ad_lease_expiries": ("Tasks failed because the process running them was lost", ()),
    "a2ad_push_delivery_failures": (
        "Failed push delivery attempts (final: not to be retried)",
        ("final",),
    ),
}
_HISTOGRAMS: dict[str, tuple[str, tuple[str, ...], tuple[float, ...]]] = {
    "a2ad_request_duration_seconds": (
        "HTTP request duration (a stream: until it ended)",
        ("method", "binding"),
        _REQUEST_BUCKETS,
    ),
    "a2ad_task_duration_seconds": (
        "From a new task's request to its terminal state",
        ("agent",),
        _TASK_BUCKETS,
    ),
    "a2ad_task_first_event_seconds": (
        "From a new task's request to its creation with the agent's first event",
        ("agent",),
        _TASK_BUCKETS,
    ),
    "a2ad_store_operation_seconds": (
        "Store calls the engine made, by operation (none for the memory store)",
        ("operation",),
        _STORE_BUCKETS,
    ),
}
_GAUGES: dict[str, tuple[str, tuple[str, ...]]] = {
    "a2ad_requests_in_flight": ("HTTP requests being served (open streams included)", ()),
    "a2ad_streams_open": ("SSE streams being served", ("method",)),
    "a2ad_agent_turns_in_flight": ("Agent turns running", ("agent",)),
    "a2ad_subscribers": ("Subscriptions to task events (streams and waiters)", ()),
}

# One process's numbers: per metric, label values -> a count, or a
# histogram's per-bucket counts (the last for +Inf) and then its sum.
Snapshot = dict[str, dict[tuple[str, ...], Any]]
_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder(dict[str, list[tuple[list[str], Any]]]).decode


class Metrics:
    """One process's counts: the engine's (``EngineMetrics``), its turns'
    (``turn_observer``) and the requests' (a ``RequestObserver``), each handed
    to what it observes as the app is built (a2ad/assembly.py); with ``share``,
    it reads and writes a group's directory."""

    on = True

    def __init__(self, *, census_seconds: float = 5.0, share: str | None = None) -> None:
        self.census_seconds = census_seconds
        self.share = Path(share) if share is not None else None
        self.listener: MetricsListener | None = None
        self._store: TaskStore | None = None  # read for the gauges and the census
        self._bus: Bus | None = None
        # By (method, binding, code): its counts are a2ad_requests too (snapshot).
        self._durations = Histograms(_REQUEST_BUCKETS)
        self._open: set[RequestRecord] = set()
        # (agent, the changes one write made) -> writes that made them
        self._transitions: dict[tuple[str, tuple[Change, ...]], int] = {}
        self._task_durations = Histograms(_TASK_BUCKETS)  # by agent
        self._first_events = Histograms(_TASK_BUCKETS)  # by agent
        self._store_ops = Histograms(_STORE_BUCKETS)  # by operation
        # The engine's store_op(op, seconds) is the note itself: no call between.
        self.store_op = self._store_ops.note
        self._turns: dict[str, int] = {}
        self._born: dict[TaskId, float] = {}  # new tasks not yet ended: when asked for
        self._events: dict[str, int] = {}  # the plain counters, by metric name
        self._push_failures = [0, 0]  # by final
        self._census: Census | None = None
        self._census_at = -1e9
        self._sharing: threading.Thread | None = None
        self._stop = threading.Event()

    def listen(self, sock: socket.socket) -> None:
        """Serve /metrics on ``sock`` (bound, listening) instead of the app's
        port, from the app's startup to its shutdown."""
        self.listener = MetricsListener(sock, MetricsEndpoint(self))

    def watch(self, store: TaskStore, bus: Bus) -> None:
        """Read ``store``'s evictions and counts and ``bus``'s subscribers when
        asked for the numbers (the assembly, a2ad/assembly.py, hands them over as
        it builds the engine they serve)."""
        self._store = store
        self._bus = bus

    def turn_observer(self) -> TurnObserver:
        """What the engine tells of each agent turn, for the turn gauges."""
        return _Turns(self)

    # --- requests (server/observed.py) ---

    def began(self, record: RequestRecord, scope: Scope) -> None:
        self._open.add(record)

    def ended(self, record: RequestRecord, token: Any) -> None:
        self._open.discard(record)
        code = record.code
        key = (record.method, record.binding, "none" if code is None else str(code))
        self._durations.note(key, time.perf_counter() - record.started)

    # --- agent turns (engine/runner.py) ---

    def turn_began(self, invocation: Invocation) -> None:
        agent = invocation.agent_name
        self._turns[agent] = self._turns.get(agent, 0) + 1
        current = invocation.current
        if current is None or current.seq == 0:  # a new task (stored at once, or not yet)
            # Asked for when its request came: the turn runs in that request's
            # context, whose record read the clock then (a worker's turn has none).
            asked = log_context.request.get()
            now = asked.started if asked is not None else time.perf_counter()
            born = self._born
            if len(born) >= BORN_KEPT:  # tasks that never end here: forget the oldest
                del born[next(iter(born))]
            born[invocation.task_id] = now

    def turn_ended(self, invocation: Invocation, token: Any = None) -> None:
        self._turns[invocation.agent_name] -= 1
        if invocation.current is None:  # no task was stored (a reply, a refusal): none ends
            self._born.pop(invocation.task_id, None)

    # --- the engine (engine/metrics.py) ---

    def changed(self, task_id: TaskId, agent: str, changes: Sequence[Change]) -> None:
        # One count for the write's whole list of changes (most tasks' lists are
        # alike): ``snapshot`` counts each transition in it. The lists are few:
        # the lifecycle lets a write go from submitted through working to an
        # interrupted state and then a terminal one at most (engine/lifecycle.py).
        key = (agent, tuple(changes))
        transitions = self._transitions
        transitions[key] = transitions.get(key, 0) + 1
        created, ended = changes[0][0] is None, changes[-1][1].terminal
        if not (created or ended):
            return
        now = time.perf_counter()
        if created:  # the task was stored: its first event
            born = self._born.get(task_id)
            if born is not None:
                self._first_events.note(agent, now - born)
        if ended:
            born = self._born.pop(task_id, None)
            if born is not None:
                self._task_durations.note(agent, now - born)

    def _count(self, name: str, n: int = 1) -> None:
        self._events[name] = self._events.get(name, 0) + n

    def subscriber_dropped(self) -> None:
        self._count("a2ad_subscribers_dropped")

    def overdue_failed(self) -> None:
        self._count("a2ad_tasks_overdue_failed")

    def orphan_failed(self) -> None:
        self._count("a2ad_lease_expiries")

    def retention_deleted(self, count: int) -> None:
        self._count("a2ad_tasks_retention_deleted", count)

    def push_failed(self, final: bool) -> None:
        self._push_failures[final] += 1

    # --- reading ---

    def snapshot(self) -> Snapshot:
        """This process's numbers, copied (each dict copy is atomic under the
        GIL, so the sharing thread may take one while the loop counts)."""
        snap: Snapshot = {name: {} for name in (*_COUNTERS, *_HISTOGRAMS, *_GAUGES)}
        # The requests' durations by (method, binding, code): their counts are the
        # requests counted; the histogram itself is by (method, binding).
        requests: dict[tuple[str, ...], Any] = {}
        durations: dict[tuple[str, ...], Any] = {}
        for key, hist in self._durations.read().items():
            method, binding, code = cast(tuple[str, str, str], key)
            requests[(method, binding, code)] = sum(hist[:-1])
            summed = durations.get((method, binding))
            durations[(method, binding)] = (
                hist if summed is None else [a + b for a, b in zip(summed, hist, strict=True)]
            )
        snap["a2ad_requests"] = requests
        snap["a2ad_request_duration_seconds"] = durations
        counted: dict[tuple[str, ...], int] = {}
        for (agent, changes), n in self._transitions.copy().items():
            for before, after in changes:
                key = (agent, before.word if before is not None else "none", after.word)
                counted[key] = counted.get(key, 0) + n
        snap["a2ad_task_transitions"] = counted
        for name, n in self._events.copy().items():
            snap[name] = {(): n}
        if self._store is not None:
            snap["a2ad_tasks_evicted"] = {(): self._store.evictions}
        if self._bus is not None:
            snap["a2ad_subscribers"] = {(): self._bus.subscribers}
        failures = self._push_failures
        snap["a2ad_push_delivery_failures"] = {("false",): failures[0], ("true",): failures[1]}
        for name, source in (
            ("a2ad_task_duration_seconds", self._task_durations),
            ("a2ad_task_first_event_seconds", self._first_events),
            ("a2ad_store_operation_seconds", self._store_ops),
        ):
            snap[name] = {
                key if isinstance(key, tuple) else (key,): hist
                for key, hist in source.read().items()
            }
        records = list(self._open.copy())
        snap["a2ad_requests_in_flight"] = {(): len(records)}
        streams: dict[tuple[str, ...], int] = {}
        for record in records:
            if record.method in _STREAMING and record.status == 200:
                streams[(record.method,)] = streams.get((record.method,), 0) + 1
        snap["a2ad_streams_open"] = streams
        snap["a2ad_agent_turns_in_flight"] = {(a,): n for a, n in self._turns.copy().items()}
        return snap

    async def render(self) -> bytes:
        """The exposition: the group's numbers (or this process's), and the
        store's counts (read afresh if older than ``census_seconds``)."""
        store = self._store
        if store is not None and time.monotonic() - self._census_at >= self.census_seconds:
            self._census_at = time.monotonic()
            try:
                self._census = await store.census()
            except Exception:  # the store is down: /readyz says so; report the rest
                self._census = None
        snaps = [self.snapshot()]
        if self.share is not None:
            snaps.extend(await asyncio.to_thread(self._siblings))
        registry = CollectorRegistry(auto_describe=False)
        registry.register(_Collector(_merge(snaps), self._census))
        return generate_latest(registry)

    # --- a group's directory ---

    def start_sharing(self) -> None:
        """Write this process's numbers to the shared directory about every
        second until ``close``; idempotent."""
        if self.share is None or self._sharing is not None:
            return
        self._sharing = threading.Thread(target=self._share, name="a2ad-metrics", daemon=True)
        self._sharing.start()

    def close(self) -> None:
        """Stop sharing, writing the last numbers; idempotent."""
        self._stop.set()
        if self._sharing is not None:
            self._sharing.join()
            self._sharing = None
            self._write()

    def _share(self) -> None:
        while not self._stop.wait(SHARE_SECONDS):
            self._write()

    def _write(self) -> None:
        assert self.share is not None
        body = {name: list(values.items()) for name, values in self.snapshot().items()}
        path = self.share / f"{os.getpid()}.json"
        temporary = path.with_suffix(".tmp")
        with contextlib.suppress(OSError):  # a directory gone at shutdown
            temporary.write_bytes(_encode(body))
            temporary.replace(path)

    def _siblings(self) -> list[Snapshot]:
        assert self.share is not None
        mine = f"{os.getpid()}.json"
        found = []
        for path in self.share.glob("*.json"):
            if path.name == mine:
                continue
            try:
                data = _decode(path.read_bytes())
            except (OSError, msgspec.DecodeError):
                continue
            snap: Snapshot = {name: {tuple(k): v for k, v in rows} for name, rows in data.items()}
            if not _alive(int(path.stem)):
                for name in _GAUGES:  # what it had in flight ended with it
                    snap.pop(name, None)
            found.append(snap)
        return found


class _Turns:
    """The TurnObserver of ``Metrics``: its turn methods themselves, with no
    call between."""

    __slots__ = ("began", "ended")

    def __init__(self, metrics: Metrics) -> None:
        self.began = metrics.turn_began
        self.ended = metrics.turn_ended


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _merge(snaps: list[Snapshot]) -> Snapshot:
    if len(snaps) == 1:
        return snaps[0]
    merged: Snapshot = {}
    for snap in snaps:
        for name, values in snap.items():
            into = merged.setdefault(name, {})
            for key, value in values.items():
                had = into.get(key)
                if had is None:
                    into[key] = list(value) if isinstance(value, list) else value
                elif isinstance(had, list):
                    into[key] = [a + b for a, b in zip(had, value, strict=True)]
                else:
                    into[key] = had + value
    return merged


class _Collector:
    def __init__(self, snap: Snapshot, census: Census | None) -> None:
        self._snap = snap
        self._census = census

    def collect(self) -> Iterator[Metric]:
        snap = self._snap
        for name, (doc, labels) in _COUNTERS.items():
            counter = CounterMetricFamily(name, doc, labels=labels)
            for key, value in sorted(snap.get(name, {}).items()):
                counter.add_metric(key, value)
            yield counter
        for name, (doc, labels, bounds) in _HISTOGRAMS.items():
            histogram = HistogramMetricFamily(name, doc, labels=labels)
            for key, hist in sorted(snap.get(name, {}).items()):
                buckets, running = [], 0
                for bound, n in zip([*map(_le, bounds), "+Inf"], hist[:-1], strict=True):
                    running += n
                    buckets.append((bound, running))
                histogram.add_metric(key, buckets, hist[-1])
            yield histogram
        for name, (doc, labels) in _GAUGES.items():
            gauge = GaugeMetricFamily(name, doc, labels=labels)
            for key, value in sorted(snap.get(name, {}).items()):
                gauge.add_metric(key, value)
            yield gauge
        census = self._census
        if census is not None:
            tasks = GaugeMetricFamily(
                "a2ad_tasks",
                "Tasks in the store by agent and state (store-wide: every instance on one "
                "store reports the same)",
                labels=("agent", "state"),
            )
            for (agent, state), n in sorted(
                census.tasks.items(), key=lambda i: (i[0][0], i[0][1].value)
            ):
                tasks.add_metric((agent, state.word), n)
            yield tasks
            if census.deliveries is not None:
                yield GaugeMetricFamily(
                    "a2ad_push_outbox_deliveries",
                    "Push deliveries waiting in the store's outbox (store-wide)",
                    value=census.deliveries,
                )


def _le(bound: float) -> str:
    return repr(float(bound))


class MetricsEndpoint:
    """``GET /metrics``: the exposition (405 for another method)."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        if scope["path"].rstrip("/") != METRICS_PATH:
            await respond(send, 404, b"not found\n", content_type=b"text/plain")
            return
        if scope["method"] not in ("GET", "HEAD"):
            await respond(
                send,
                405,
                b"GET /metrics\n",
                content_type=b"text/plain",
                headers=[(b"allow", b"GET")],
            )
            return
        body = await self.metrics.render()
        await respond(send, 200, body, content_type=CONTENT_TYPE)


class MetricsListener:
    """/metrics alone on a socket of its own (``a2ad serve --metrics-port``),
    served by uvicorn's HTTP protocol on the app's event loop, open to whoever
    reaches it."""

    def __init__(self, sock: socket.socket, endpoint: MetricsEndpoint) -> None:
        self._sock = sock
        self._endpoint = endpoint
        self._server: asyncio.base_events.Server | None = None

    async def start(self) -> None:
        import uvicorn
        from uvicorn.server import ServerState

        config = uvicorn.Config(  # no log_config: uvicorn's lines keep a2ad's format (cli/logs.py)
            self._endpoint, lifespan="off", log_level="warning", access_log=False, log_config=None
        )
        config.load()
        state = ServerState()
        protocol = config.http_protocol_class

        def made() -> asyncio.Protocol:
            return protocol(config=config, server_state=state, app_state={})  # type: ignore[call-arg]

        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(made, sock=self._sock)

    async def aclose(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.close()
            await server.wait_closed()
