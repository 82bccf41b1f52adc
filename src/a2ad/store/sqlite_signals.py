"""Signals between the processes of a group serving one SQLite file: one Unix
datagram socket per process.

Member ``i`` of a group of ``n`` binds ``<directory>/<i>``; a signal is one
datagram sent to each other member's socket, so it costs ``n - 1`` ``sendto``
calls, and a receiver wakes only for it (its socket is in the event loop, beside
the HTTP connections): nothing polls, and a signal arrives in microseconds. A
datagram is a whole signal or nothing, and between the processes of one machine
it is neither reordered nor lost while the receiver keeps up.

Why not the file itself: SQLite says that another connection changed the file
(``PRAGMA data_version``) only when asked, which means polling, and then not
which task changed, so every process would re-read every task it follows.

A member that is not running (not yet, or not any more) refuses datagrams, and
a restarted one follows no task yet: nothing is owed to either. A member that
does not read (its loop is blocked) fills its socket's queue; what can't be sent
is then made up once it reads again: it is told to read every task it follows
again, and is sent the cancels it missed.

The signals of one loop turn go out together, one line each in as few datagrams
as they fit: ``s <seq> <task id>`` (stored), ``c <task id>`` (cancel), ``r`` (read
everything again). Linux queues only 10 datagrams per socket by default
(``net.unix.max_dgram_qlen``), so batching matters under load.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket

from ..protocol.types import Seq, TaskId
from .signals import SignalReceiver, Signals

__all__ = ["SocketSignals"]

log = logging.getLogger("a2ad.store")

_MAX_DATAGRAM = 16384  # signals are packed up to this; an id is at most 1 KiB
_RETRY_SECONDS = 0.01  # while a member's queue is full, try it again this often


class SocketSignals(Signals):
    """Member ``member`` of the ``size`` processes whose sockets are in ``directory``."""

    def __init__(self, directory: str, member: int, size: int) -> None:
        if not 0 <= member < size:
            raise ValueError(f"member {member} is not one of 0..{size - 1}")
        self._path = os.path.join(directory, str(member))
        self._peers = {i: os.path.join(directory, str(i)) for i in range(size) if i != member}
        self._socket: socket.socket | None = None
        self._receiver: SignalReceiver | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._batch: list[bytes] = []  # this loop turn's signals, sent together
        self._cancels: list[TaskId] = []  # the cancels among them
        self._owed: dict[int, list[TaskId]] = {}  # members that did not read: their cancels
        self._retry: asyncio.TimerHandle | None = None

    async def start(self, receiver: SignalReceiver) -> None:
        if self._socket is not None:
            return
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            sock.setblocking(False)
            try:
                os.unlink(self._path)  # left by the member this one replaces
            except FileNotFoundError:
                pass
            sock.bind(self._path)
        except BaseException:
            sock.close()
            raise
        self._socket, self._receiver = sock, receiver
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(sock.fileno(), self._receive)

    def stored(self, task_id: TaskId, seq: Seq) -> None:
        self._add(f"s {seq} {task_id}".encode())

    def cancel(self, task_id: TaskId) -> None:
        self._cancels.append(task_id)
        self._add(f"c {task_id}".encode())

    async def aclose(self) -> None:
        sock = self._socket
        if sock is None:
            return
        self._flush()
        self._socket = None
        if self._retry is not None:
            self._retry.cancel()
        assert self._loop is not None
        self._loop.remove_reader(sock.fileno())
        sock.close()
        try:
            os.unlink(self._path)
        except FileNotFoundError:
            pass

    def _add(self, signal: bytes) -> None:
        if self._socket is None or self._loop is None:
            return
        if not self._batch:
            self._loop.call_soon(self._flush)
        self._batch.append(signal)

    def _flush(self) -> None:
        """Send this turn's signals to every member, in as few datagrams as fit."""
        batch, cancels = self._batch, self._cancels
        self._batch, self._cancels = [], []
        sock = self._socket
        if sock is None or not batch:
            return
        datagrams = _pack(batch)
        for member, path in self._peers.items():
            owed = self._owed.get(member)
            if owed is not None:  # its queue was full: what it misses is made up later
                owed.extend(cancels)
                continue
            try:
                for datagram in datagrams:
                    sock.sendto(datagram, path)
            except BlockingIOError:
                self._owe(member, cancels)
            except (FileNotFoundError, ConnectionRefusedError):
                pass  # not running: it follows nothing, and runs nothing to stop
            except OSError as exc:
                log.warning(
                    "could not signal process %d of the group: %s",
                    member,
                    exc,
                    extra={"member": member},
                )

    def _owe(self, member: int, cancels: list[TaskId]) -> None:
        self._owed[member] = list(cancels)
        log.warning(
            "process %d of the group is not reading its signals; they will be made up",
            member,
            extra={"member": member},
        )
        if self._retry is None and self._loop is not None:
            self._retry = self._loop.call_later(_RETRY_SECONDS, self._pay)

    def _pay(self) -> None:
        """To each member that reads again: read everything again, and the cancels."""
        self._retry = None
        sock = self._socket
        if sock is None:
            return
        for member, cancels in list(self._owed.items()):
            try:
                for datagram in _pack([b"r", *(f"c {t}".encode() for t in cancels)]):
                    sock.sendto(datagram, self._peers[member])
            except BlockingIOError:
                continue
            except OSError:
                pass  # it ended: nothing is owed to a process that is gone
            del self._owed[member]
        if self._owed and self._loop is not None:
            self._retry = self._loop.call_later(_RETRY_SECONDS, self._pay)

    def _receive(self) -> None:
        sock, receiver = self._socket, self._receiver
        assert sock is not None and receiver is not None
        while True:
            try:
                datagram = sock.recv(2 * _MAX_DATAGRAM)
            except BlockingIOError:
                return
            for signal in datagram.split(b"\n"):
                kind, _, rest = signal.partition(b" ")
                try:
                    if kind == b"s":
                        seq, _, task_id = rest.partition(b" ")
                        receiver.stored(task_id.decode(), int(seq))
                    elif kind == b"c":
                        receiver.cancelled(rest.decode())
                    elif kind == b"r":
                        receiver.reconnected()
                except ValueError:
                    log.warning("ignored a malformed signal: %r", signal[:100])


def _pack(signals: list[bytes]) -> list[bytes]:
    """``signals`` joined by newlines into datagrams of at most _MAX_DATAGRAM bytes."""
    datagrams: list[bytes] = []
    chunk: list[bytes] = []
    size = 0
    for signal in signals:
        if chunk and size + len(signal) + 1 > _MAX_DATAGRAM:
            datagrams.append(b"\n".join(chunk))
            chunk, size = [], 0
        chunk.append(signal)
        size += len(signal) + 1
    if chunk:
        datagrams.append(b"\n".join(chunk))
    return datagrams
