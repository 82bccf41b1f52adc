"""What a serving process (``a2ad serve``, ``a2ad worker``, ``a2ad demo``, a
process of a ``--workers`` group) tells whoever started it about its start:
the exit code when it cannot start, and the line a process of a group sends
its parent once it serves (supervisor.py waits for it)."""

from __future__ import annotations

__all__ = ["READY", "STARTUP_FAILURE"]

STARTUP_FAILURE = 3  # can't start: the port or the store is taken, the store or key unreadable
READY = b"ready\n"  # what a process of a group tells its parent once it serves
