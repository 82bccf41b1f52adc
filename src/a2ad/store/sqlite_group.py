"""A group of processes serving one SQLite file together (``a2ad serve --workers N``).

One server serves a SQLite file (serving_lock.py), and a group counts as one. Its
parent runs no engine: it takes the file's serving lock and claims the file once
for the whole group (``claim_for_group``: every lease in the file is expired, since
no member runs yet and so whoever held them is gone), then starts the members and
hands each the lock's file descriptor. An ``flock`` belongs to the open file, not
to a process, so the lock stays held while the parent or any member lives: a
second server still refuses the file, and a server that later gets the lock still
knows that nobody serves it.

Each member opens the file as ``SqliteStore(path, group=SqliteGroup(...))`` and
writes it as any process would (WAL, ``BEGIN IMMEDIATE``, the busy timeout). What
a sole server may assume, a member may not: its ``claim`` expires no lease (its
siblings' are live; a member started later must not fail their tasks), and it
keeps no filter of message keys (its siblings store keys it never sees; a key is
looked up instead, and checked again in the write that records it). Leases are
each member's own, so the tasks of a member that dies are failed by a sibling's
upkeep when they run out. Members tell each other what they stored and what to
stop over datagram sockets in ``signals`` (sqlite_signals.py).
"""

from __future__ import annotations

from typing import NamedTuple

from .base import StoreError
from .serving_lock import ServingLock
from .sqlite_schema import connect

__all__ = ["SqliteGroup", "claim_for_group"]

_EXPIRE_ALL = "UPDATE tasks SET lease_expires = 0 WHERE lease_expires > 0"


class SqliteGroup(NamedTuple):
    """What a member of a group needs to know of it."""

    lock_fd: int | None  # the group's serving lock, inherited (None: no flock here)
    signals: str  # the directory of the members' signal sockets
    member: int  # this process's number in the group, 0 to size - 1
    size: int


def claim_for_group(database: str) -> ServingLock | None:
    """The parent's part: take the serving lock of the file at ``database`` (creating
    or upgrading its schema) and expire every lease in it, so that the members'
    first upkeep fails the tasks of the server that ran before. Returns the lock
    (None where the platform has no ``flock``), which the caller hands to the
    members and releases when the group is gone. Raises StoreInUseError if
    another live server has the file, StoreError if it can't be opened."""
    lock = ServingLock.acquire(database)
    try:
        conn = connect(database)
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(_EXPIRE_ALL)
            conn.execute("COMMIT")
        finally:
            conn.close()
    except BaseException as exc:
        if lock is not None:
            lock.release()
        if isinstance(exc, StoreError) or not isinstance(exc, Exception):
            raise
        raise StoreError(f"can't claim the task store {database!r}: {exc}") from None
    return lock
