"""One serving process per SQLite file, and proof that a previous one is gone.

A server that serves a SQLite file holds an exclusive OS lock (``flock``) on a
file beside it, ``<database>-a2ad.lock``, for as long as it runs. The kernel
drops the lock when the process ends, however it ends (SIGKILL included), so:

- a second server on the same file finds the lock held and refuses to start,
  naming the holder (its pid, host, start time and command line, which the
  holder wrote into the lock file);
- a server that gets the lock knows that no other live server has the file, so
  every lease in it that is not its own belongs to a dead process: its tasks can
  be failed at once instead of when the lease runs out.

The lock file is left in place when the server stops (deleting it would race a
server starting at that moment); a stale one is harmless, since only a held lock
counts. Where ``fcntl`` is missing (Windows), there is no lock and leases alone
decide, as between servers on different machines.
"""

from __future__ import annotations

import datetime
import json
import os
import socket
import sys
from typing import Any

from .base import StoreError

try:
    import fcntl
except ImportError:  # pragma: no cover - not on POSIX
    fcntl = None  # type: ignore[assignment]

__all__ = ["ServingLock", "StoreInUseError", "lock_path"]

_ABOUT_BYTES = 4096  # what is read back of a holder's description


class StoreInUseError(StoreError):
    """Another live server process already serves this store."""


def lock_path(database: str) -> str:
    return f"{database}-a2ad.lock"


class ServingLock:
    """An exclusive lock on ``lock_path(database)``, held until ``release``."""

    def __init__(self, fd: int, path: str) -> None:
        self._fd: int | None = fd
        self.path = path

    @classmethod
    def acquire(cls, database: str) -> ServingLock | None:
        """Take the lock, or raise StoreInUseError naming the process holding it.
        None where the platform has no ``flock``."""
        if fcntl is None:  # pragma: no cover - not on POSIX
            return None
        path = lock_path(database)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise StoreError(f"can't open the lock file {path}: {exc.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_about(fd)
            os.close(fd)
            raise StoreInUseError(
                f"{os.path.abspath(database)} is already served by another a2ad process "
                f"({_describe(holder)}). One SQLite file is served by one process: stop "
                "that server, or give this one its own file with --store "
                "sqlite:///other.db"
            ) from None
        except OSError as exc:  # e.g. a file system without locks
            os.close(fd)
            raise StoreError(f"can't lock {path}: {exc.strerror}") from None
        _write_about(fd)
        return cls(fd, path)

    def fileno(self) -> int:
        """The lock file's descriptor: a process handed a duplicate holds the lock
        too, until every holder has closed it (a group's members: sqlite_group.py)."""
        if self._fd is None:
            raise ValueError(f"the lock on {self.path} was released")
        return self._fd

    def release(self) -> None:
        """Let go of the lock (closing the file does it). Idempotent."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)


def _write_about(fd: int) -> None:
    about = {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "started": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "command": " ".join(sys.argv)[:1000],
    }
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps(about).encode(), 0)


def _read_about(fd: int) -> dict[str, Any]:
    try:
        about = json.loads(os.pread(fd, _ABOUT_BYTES, 0))
    except (OSError, ValueError):
        return {}
    return about if isinstance(about, dict) else {}


def _describe(about: dict[str, Any]) -> str:
    if "pid" not in about:
        return "its details are not readable"
    said = f"pid {about['pid']}"
    if about.get("host") and about["host"] != socket.gethostname():
        said += f" on {about['host']}"
    if about.get("started"):
        said += f", started {about['started']}"
    if about.get("command"):
        said += f": {about['command']}"
    return said
