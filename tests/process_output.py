"""Reading a subprocess's output line by line on a thread, so that a test can
wait for what it prints: the part every test that runs ``a2ad serve`` shares."""

from __future__ import annotations

import queue
import re
import subprocess
import threading
import time


class ProcessOutput:
    """What ``proc`` (started with ``stdout=PIPE, text=True``) prints, read on a
    daemon thread; ``expect`` waits for a line, ``output`` is all so far."""

    expect_timeout = 10.0

    def watch(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.seen: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    @property
    def output(self) -> str:
        while True:
            try:
                line = self.lines.get_nowait()
            except queue.Empty:
                break
            if line is not None:
                self.seen.append(line)
        return "".join(self.seen)

    def expect(self, pattern: str, timeout: float | None = None) -> re.Match[str]:
        """Wait for a line matching ``pattern``; fail with what was printed."""
        wait = self.expect_timeout if timeout is None else timeout
        deadline = time.monotonic() + wait
        for line in self.seen:
            if m := re.search(pattern, line):
                return m
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            try:
                line = self.lines.get(timeout=remaining)
            except queue.Empty:
                break
            if line is None:
                break
            self.seen.append(line)
            if m := re.search(pattern, line):
                return m
        raise AssertionError(f"a2ad never printed {pattern!r}; it printed:\n{''.join(self.seen)}")
