"""The ``a2ad`` command as a user runs it, for tests in any folder: the venv's
script run to completion (``run_a2ad``), ``a2ad serve`` in the background
(``Served``), and a wrapper that gives a child process back its Ctrl-C."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from types import TracebackType

from .conftest import free_port
from .process_output import ProcessOutput

A2AD = Path(sys.executable).parent / "a2ad"
PROJECT = Path(__file__).resolve().parent.parent


def run_a2ad(
    *args: str, timeout: float = 20, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(A2AD), *args],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "COLUMNS": "200", **(env or {})},
    )


def add_key(keys: Path, *args: str) -> str:
    done = run_a2ad("auth", "add-key", "--file", str(keys), *args)
    assert done.returncode == 0, done.stderr
    key = done.stdout.strip()
    assert done.stdout == key + "\n"  # the key alone on stdout, for KEY=$(...)
    assert "shown this once" in done.stderr
    return key


class Served(ProcessOutput):
    """``a2ad serve …`` in the background; its output (stdout and stderr) read
    line by line on a thread so the test can wait for what it prints. With
    ``port=0`` the system picks the port, and ``url`` reads it from the banner."""

    # A server whose agent imports a framework (ADK with LiteLLM) took over 10 s to print
    # its banner on a 2-core machine with another test process running beside it.
    expect_timeout = 30.0

    def __init__(
        self,
        *args: str,
        env: dict[str, str] | None = None,
        port: int | None = None,
        cwd: Path = PROJECT,
    ) -> None:
        self.port = free_port() if port is None else port
        self.dir: tempfile.TemporaryDirectory[str] | None = None
        if not any(a == "--store" or a.startswith("--store=") for a in args):
            # The default store is ./a2ad.db; keep it out of the project folder.
            self.dir = tempfile.TemporaryDirectory()
            args = (*args, "--store", f"sqlite:///{self.dir.name}/a2ad.db")
        self.proc = subprocess.Popen(
            [str(A2AD), "serve", "--port", str(self.port), *args],
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "COLUMNS": "200", **(env or {})},
        )
        self.watch(self.proc)

    @property
    def url(self) -> str:
        """The base URL the banner gives, once ``a2ad serve`` listens."""
        return self.expect(r"JSON-RPC:\s+(http://\S+?)/\s").group(1)

    def stop(self, timeout: float = 10.0) -> int:
        """SIGINT, as Ctrl-C does; returns the exit code."""
        self.proc.send_signal(signal.SIGINT)
        return self.proc.wait(timeout)

    def __enter__(self) -> Served:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self.reader.join(10)
        assert self.proc.stdout is not None
        self.proc.stdout.close()
        if self.dir is not None:
            self.dir.cleanup()


# Runs its arguments with SIGINT back to its default action. A process started
# with SIGINT ignored (pytest as a background job of a non-interactive shell)
# passes that on to its children, and Python then never raises KeyboardInterrupt.
WITH_DEFAULT_SIGINT = [
    sys.executable,
    "-c",
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execv(sys.argv[1], sys.argv[1:])",
]
