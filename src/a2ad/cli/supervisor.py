"""``a2ad serve --workers N``: N processes serving one port, and the parent that
keeps them running.

The parent has checked the flags and bound the port (serve.py). It serves
nothing itself: it starts N children (``python -m a2ad.cli.serve_process``),
hands each the listening socket and, over a control socket, the flags and the
secret key; each is a whole a2ad, with its own engine, instance id and leases,
and the kernel gives each new connection to one of them.

- Each child runs in a process group of its own, so a Ctrl-C at the terminal
  reaches the parent alone, which passes every SIGINT and SIGTERM on to each
  child: the group stops as one server does (the first signal drains, a second
  Ctrl-C cuts the grace short, a third stops at once). A child still starting
  is sent SIGTERM instead: it serves nothing yet.
- A child that ends while the group serves is started again, after a pause that
  doubles with each further early end (0.5 s up to 30 s; a child that served a
  minute starts the count again), and its end is logged. A child that ends
  before the group has ever served (usage error, store unusable) stops the
  group, which exits with the child's status.
- A child whose parent is gone (its control socket closes) shuts down as on
  SIGTERM.
- A SQLite file is served by the group as by one server (store/sqlite_group.py):
  the parent takes the serving lock and claims the file once; each child holds
  the lock too (an inherited descriptor) and signals its siblings over a socket
  in a directory the parent makes and removes.
- With metrics on, each child writes what it counted to a directory the
  parent makes and removes (server/metrics.py), so that a scrape reaching any
  child reports the group; with ``--metrics-port`` the parent binds that port
  too and hands it to every child, as it does the main one.
"""

from __future__ import annotations

import json
import logging
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from types import FrameType
from typing import Any

from rich.markup import escape

from ..store.base import StoreError, TaskStore
from ..store.serving_lock import ServingLock
from ..store.sqlite import SqliteStore
from ..store.sqlite_group import claim_for_group
from .startup import READY, STARTUP_FAILURE
from .terminal import make_console

__all__ = ["Group"]

console = make_console(stderr=True)

log = logging.getLogger("a2ad.serve")

FIRST_PAUSE = 0.5  # before a child that ended is started again
LONGEST_PAUSE = 30.0
SERVED_LONG = 60.0  # a child that served this long ended "for the first time" again
EXIT_WAIT = 10.0  # a child whose control socket closed has this long to finish exiting


class _Child:
    __slots__ = ("control", "proc", "ready", "started")

    def __init__(self, proc: subprocess.Popen[bytes], control: socket.socket) -> None:
        self.proc = proc
        self.control = control
        self.ready = False
        self.started = time.monotonic()


class Group:
    """The parent of ``flags["workers"]`` processes serving ``listening``."""

    def __init__(
        self,
        flags: dict[str, Any],
        listening: socket.socket,
        key: bytes,
        task_store: TaskStore,
        banner: list[str],
        *,
        metrics: socket.socket | None = None,
    ) -> None:
        self._flags = flags
        self._metrics_listening = metrics
        self._metrics_dir: str | None = None
        self._size: int = flags["workers"]
        self._listening = listening
        self._key = key
        self._database = task_store.path if isinstance(task_store, SqliteStore) else None
        self._banner = banner
        self._lock: ServingLock | None = None
        self._signals: str | None = None  # the SQLite members' socket directory
        self._children: dict[int, _Child] = {}  # by slot, 0 to size - 1
        self._quick_ends: dict[int, int] = {}  # by slot: ends in a row soon after starting
        self._due: dict[int, float] = {}  # slots to start again, and when
        self._serving = False  # every child was ready at least once
        self._stopping = False
        self._code = 0

    def run(self) -> int:
        """Serve until a signal stops the group; the exit status."""
        try:
            if self._database is not None:
                try:
                    self._lock = claim_for_group(self._database)
                except StoreError as exc:
                    console.print(f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True)
                    return STARTUP_FAILURE
                self._signals = tempfile.mkdtemp(prefix="a2ad-")
            if self._flags["metrics"]:
                self._metrics_dir = tempfile.mkdtemp(prefix="a2ad-metrics-")
            return self._supervise()
        finally:
            for child in self._children.values():  # only if something went wrong
                child.proc.kill()
                child.proc.wait()
            self._listening.close()
            if self._metrics_listening is not None:
                self._metrics_listening.close()
            if self._metrics_dir is not None:
                shutil.rmtree(self._metrics_dir, ignore_errors=True)
            if self._lock is not None:
                self._lock.release()
            if self._signals is not None:
                shutil.rmtree(self._signals, ignore_errors=True)

    def _supervise(self) -> int:
        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_r, False)
        os.set_blocking(wake_w, False)
        # The handlers do nothing: the signal's number, written to the pipe, wakes
        # the loop below, which acts on it.
        handlers = {sig: signal.signal(sig, _noted) for sig in (signal.SIGINT, signal.SIGTERM)}
        previous_fd = signal.set_wakeup_fd(wake_w)
        try:
            for slot in range(self._size):
                self._start(slot)
            while self._children or self._due:
                timeout = None
                if self._due:
                    timeout = max(0.0, min(self._due.values()) - time.monotonic())
                watched = [wake_r, *(c.control.fileno() for c in self._children.values())]
                readable, _, _ = select.select(watched, [], [], timeout)
                if wake_r in readable:
                    for signum in os.read(wake_r, 64):
                        self._signalled(signum)
                for slot, child in list(self._children.items()):
                    if child.control.fileno() in readable:
                        self._heard(slot, child)
                now = time.monotonic()
                for slot, when in list(self._due.items()):
                    if when <= now:
                        del self._due[slot]
                        self._start(slot)
            return self._code
        finally:
            signal.set_wakeup_fd(previous_fd)
            for sig, handler in handlers.items():
                signal.signal(sig, handler)
            os.close(wake_r)
            os.close(wake_w)

    def _start(self, slot: int) -> None:
        parent_end, child_end = socket.socketpair()
        fds = [child_end.fileno(), self._listening.fileno()]
        metrics_fd = None
        if self._metrics_listening is not None:
            metrics_fd = self._metrics_listening.fileno()
            fds.append(metrics_fd)
        group = None
        if self._signals is not None:
            lock_fd = self._lock.fileno() if self._lock is not None else None
            if lock_fd is not None:
                fds.append(lock_fd)
            group = {
                "lock_fd": lock_fd,
                "signals": self._signals,
                "member": slot,
                "size": self._size,
            }
        order = {
            "worker": slot,
            "flags": self._flags,
            "key": self._key.hex(),
            "listening": self._listening.fileno(),
            "group": group,
            "metrics": {"share": self._metrics_dir, "listening": metrics_fd},
        }
        try:
            proc = subprocess.Popen(
                [sys.executable, "-m", "a2ad.cli.serve_process", str(child_end.fileno())],
                pass_fds=fds,
                stdin=subprocess.DEVNULL,
                process_group=0,  # see the module docstring: signals come from here
            )
        except OSError as exc:
            parent_end.close()
            log.error("could not start process %d: %s", slot, exc, extra={"worker": slot})
            self._again(slot, ran=0.0)
            return
        finally:
            child_end.close()
        parent_end.sendall(json.dumps(order).encode() + b"\n")
        self._children[slot] = _Child(proc, parent_end)

    def _heard(self, slot: int, child: _Child) -> None:
        try:
            said = child.control.recv(4096)
        except OSError:
            said = b""
        if said:
            if READY in said:
                child.ready = True
                if self._serving or self._stopping:
                    return
                if all(c.ready for c in self._children.values()):
                    self._serving = len(self._children) == self._size
                    if self._serving:
                        for line in self._banner:
                            console.print(line)
            return
        # Its end of the socket closed: it exited, or is about to.
        try:
            code = child.proc.wait(EXIT_WAIT)
        except subprocess.TimeoutExpired:
            child.proc.kill()
            code = child.proc.wait()
        child.control.close()
        del self._children[slot]
        self._ended(slot, child, code)

    def _ended(self, slot: int, child: _Child, code: int) -> None:
        if self._stopping:
            return
        pid = child.proc.pid
        how = (
            f"was killed by {signal.Signals(-code).name}"
            if code < 0
            else f"exited with status {code}"
        )
        if not self._serving:
            # It could not start; its siblings would fare no better.
            log.error(
                "process %d (pid %d) %s before the server started; stopping",
                slot,
                pid,
                how,
                extra={"worker": slot, "pid": pid, "status": code},
            )
            self._code = code if code > 0 else STARTUP_FAILURE
            self._stop(signal.SIGTERM)
            return
        pause = self._again(slot, ran=time.monotonic() - child.started)
        log.warning(
            "process %d (pid %d) %s; starting another in %.1f s",
            slot,
            pid,
            how,
            pause,
            extra={"worker": slot, "pid": pid, "status": code},
        )

    def _again(self, slot: int, *, ran: float) -> float:
        """Start ``slot`` again later; the pause."""
        ends = 0 if ran >= SERVED_LONG else self._quick_ends.get(slot, 0)
        self._quick_ends[slot] = ends + 1
        pause = min(FIRST_PAUSE * (1 << min(ends, 16)), LONGEST_PAUSE)
        self._due[slot] = time.monotonic() + pause
        return pause

    def _signalled(self, signum: int) -> None:
        if signum in (signal.SIGINT, signal.SIGTERM):
            self._stop(signum)

    def _stop(self, signum: int) -> None:
        self._stopping = True
        self._due.clear()
        for child in self._children.values():
            try:
                child.proc.send_signal(signum if child.ready else signal.SIGTERM)
            except ProcessLookupError:
                pass  # it ended; its socket says so next


def _noted(signum: int, frame: FrameType | None) -> None:
    pass
