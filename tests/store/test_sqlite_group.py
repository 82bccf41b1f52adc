"""A group of processes serving one SQLite file (store/sqlite_group.py) and their
signals (store/sqlite_signals.py), with the members' stores in one process: the
group claims the file once, a member claiming later expires no lease, the lock is
held while any member holds it, a message key is unique across members, and
signals reach every other member, made up for when one stopped reading. (Real
``a2ad serve --workers`` processes: tests/processes/.)"""

from __future__ import annotations

import asyncio
import os
import socket
import time
from collections.abc import AsyncIterator
from pathlib import Path

import msgspec
import pytest

from a2ad import Message, Role, Task, TaskState, TaskStatus, TaskStatusUpdateEvent, TextPart
from a2ad.protocol.types import Seq, TaskId
from a2ad.store.base import DuplicateMessageError, Lease, NewTask
from a2ad.store.serving_lock import StoreInUseError
from a2ad.store.signals import SignalReceiver
from a2ad.store.sqlite import SqliteStore
from a2ad.store.sqlite_group import SqliteGroup, claim_for_group
from a2ad.store.sqlite_signals import SocketSignals

FAR = time.time() + 3600


def working(task_id: str) -> Task:
    return Task(
        id=task_id,
        context_id="c",
        status=TaskStatus(state=TaskState.WORKING, timestamp="2026-01-01T00:00:01.000Z"),
    )


def user_message(text: str) -> Message:
    return Message(message_id=text, role=Role.USER, parts=[TextPart(text)])


def member(path: Path, lock_fd: int | None, number: int, signals: Path) -> SqliteStore:
    fd = None if lock_fd is None else os.dup(lock_fd)  # as the process inherits it
    return SqliteStore(path, group=SqliteGroup(fd, str(signals), number, 2))


async def test_the_group_claims_the_file_once_and_a_member_claiming_later_expires_no_lease(
    tmp_path: Path,
) -> None:
    path = tmp_path / "tasks.db"
    async with SqliteStore(path) as crashed:  # a server that died without a word
        await crashed.create(NewTask(working("dead"), lease=Lease("gone", FAR)))
    lock = claim_for_group(str(path))
    assert lock is not None
    try:
        async with (
            member(path, lock.fileno(), 0, tmp_path) as first,
            member(path, lock.fileno(), 1, tmp_path) as later,
        ):
            await first.claim("first")
            assert await first.orphans(time.time(), 10) == ["dead"]
            await first.create(NewTask(working("live"), lease=Lease("first", FAR)))
            await later.claim("later")  # a member started again while its sibling serves
            assert await later.orphans(time.time(), 10) == ["dead"]
    finally:
        lock.release()


async def test_the_file_stays_refused_to_other_servers_while_any_member_holds_the_lock(
    tmp_path: Path,
) -> None:
    path = tmp_path / "tasks.db"
    lock = claim_for_group(str(path))
    assert lock is not None
    still = member(path, lock.fileno(), 0, tmp_path)
    await still.open()
    lock.release()  # the parent is gone, a member is not
    async with SqliteStore(path) as other:
        with pytest.raises(StoreInUseError):
            await other.claim("other")
        await still.aclose()
        await other.claim("other")


@pytest.fixture
async def pair(tmp_path: Path) -> AsyncIterator[tuple[SqliteStore, SqliteStore]]:
    path = tmp_path / "tasks.db"
    lock = claim_for_group(str(path))
    fd = lock.fileno() if lock is not None else None
    try:
        async with member(path, fd, 0, tmp_path) as a, member(path, fd, 1, tmp_path) as b:
            await a.claim("a")
            await b.claim("b")
            yield a, b
    finally:
        if lock is not None:
            lock.release()


async def test_a_member_refuses_a_task_for_a_message_key_a_sibling_stored(
    pair: tuple[SqliteStore, SqliteStore],
) -> None:
    a, b = pair
    await a.create(NewTask(working("first"), message_key=b"k" * 16))
    assert await b.find_message(b"k" * 16) == "first"  # no filter of a sole writer
    with pytest.raises(DuplicateMessageError) as refused:
        await b.create(NewTask(working("second"), message_key=b"k" * 16))
    assert refused.value.task_id == "first"
    assert await b.get("second") is None


async def test_a_member_refuses_a_follow_up_a_sibling_added_and_applies_none_of_it(
    pair: tuple[SqliteStore, SqliteStore],
) -> None:
    a, b = pair
    asking = msgspec.structs.replace(
        working("t"), status=TaskStatus(state=TaskState.INPUT_REQUIRED)
    )
    created = await a.create(asking)
    resumed = TaskStatusUpdateEvent(
        task_id="t", context_id="c", status=TaskStatus(state=TaskState.WORKING)
    )
    await a.append("t", created.seq, [resumed], user_message=user_message("y"), message_key=b"y")
    with pytest.raises(DuplicateMessageError):
        await b.append(
            "t", created.seq + 1, [resumed], user_message=user_message("y"), message_key=b"y"
        )
    stored = await b.get("t")
    assert stored is not None and stored.seq == created.seq + 1


class Heard(SignalReceiver):
    def __init__(self) -> None:
        self.signals: list[tuple[str, ...]] = []
        self.arrived = asyncio.Event()

    def stored(self, task_id: TaskId, seq: Seq) -> None:
        self.signals.append(("stored", task_id, str(seq)))
        self.arrived.set()

    def cancelled(self, task_id: TaskId) -> None:
        self.signals.append(("cancelled", task_id))
        self.arrived.set()

    def reconnected(self) -> None:
        self.signals.append(("reconnected",))
        self.arrived.set()


async def test_a_signal_reaches_every_other_member_and_not_the_sender(tmp_path: Path) -> None:
    members = [SocketSignals(str(tmp_path), i, 4) for i in range(4)]
    heard = [Heard() for _ in members]
    for signals, receiver in zip(members[:3], heard, strict=False):  # the 4th isn't running
        await signals.start(receiver)
    try:
        members[0].stored("t1", 3)
        members[0].stored("t2", 1)
        members[0].cancel("t1")
        async with asyncio.timeout(2):
            while not all(len(h.signals) == 3 for h in heard[1:3]):
                await asyncio.sleep(0.001)
        for receiver in heard[1:3]:
            assert receiver.signals == [
                ("stored", "t1", "3"),
                ("stored", "t2", "1"),
                ("cancelled", "t1"),
            ]
        assert heard[0].signals == []
    finally:
        for signals in members:
            await signals.aclose()
    assert not list(tmp_path.iterdir())  # each took its socket away


async def test_a_member_that_stopped_reading_is_told_to_catch_up_and_gets_every_cancel(
    tmp_path: Path,
) -> None:
    stalled = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)  # member 1, not reading
    stalled.bind(str(tmp_path / "1"))
    stalled.setblocking(False)
    sender = SocketSignals(str(tmp_path), 0, 2)
    await sender.start(Heard())
    try:
        for i in range(40):  # one datagram a loop turn: more than the socket queues
            sender.cancel(f"t{i}")
            await asyncio.sleep(0)
        lines: list[bytes] = []
        async with asyncio.timeout(2):
            while sum(line.startswith(b"c ") for line in lines) < 40:
                try:
                    lines.extend(stalled.recv(65536).split(b"\n"))
                except BlockingIOError:
                    await asyncio.sleep(0.005)
        assert b"r" in lines  # what it missed is read again
        cancels = [line for line in lines if line.startswith(b"c ")]
        assert sorted(cancels) == sorted(f"c t{i}".encode() for i in range(40))
    finally:
        await sender.aclose()
        stalled.close()
