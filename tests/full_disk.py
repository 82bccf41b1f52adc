"""A real full disk for the tests of what a2ad does when it runs out of space.

``small_disk(path)`` mounts a tiny tmpfs at ``path``; ``fill()`` writes a filler file
until the kernel answers ENOSPC (which SQLite reports as SQLITE_FULL, "database or
disk is full"), and ``free()`` deletes it. Nothing is simulated: the store meets the
same error it would on a full partition.

Mounting needs root (CAP_SYS_ADMIN), which CI has; elsewhere the tests that need a
full disk skip and say why. The mount lives under the test's own tmp_path and is
unmounted at teardown, lazily if a file on it is still open.
"""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

__all__ = ["SmallDisk", "small_disk"]


class SmallDisk:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._filler = path / "filler"

    def fill(self) -> None:
        """Take every free block, so that the next write that needs one fails."""
        fd = os.open(self._filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            chunk = b"\0" * 65536
            while True:
                try:
                    os.write(fd, chunk)
                except OSError as exc:
                    if exc.errno != errno.ENOSPC:
                        raise
                    break
        finally:
            os.close(fd)
        assert os.statvfs(self.path).f_bavail == 0

    def free(self) -> None:
        """Give the space back."""
        self._filler.unlink()


@contextlib.contextmanager
def small_disk(path: Path, size: str = "1m") -> Iterator[SmallDisk]:
    path.mkdir()
    try:
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(path)],
            check=True,
            capture_output=True,
            text=True,
        )
    except (OSError, subprocess.CalledProcessError) as exc:
        why = getattr(exc, "stderr", "") or str(exc)
        pytest.skip(f"can't mount a tmpfs to fill up (it needs root, as CI has): {why.strip()}")
    try:
        yield SmallDisk(path)
    finally:
        if subprocess.run(["umount", str(path)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "--lazy", str(path)], check=True)
