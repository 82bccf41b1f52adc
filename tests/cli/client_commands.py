"""What the tests of the ``a2ad`` client commands share (tests/cli/test_send.py and the
others their conftest.py serves): the command run as a user runs it, against a live a2ad
spoken to in A2A 1.0 (the card's choice) or 0.3 (forced with --a2a-version), and what it
printed read back."""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
from collections.abc import Iterator
from typing import Any, cast

from a2ad import A2AApp, SyncClient, Task, TaskState

from ..clock import Clock, app_with_clock
from ..conftest import LiveServer
from ..recording import Recording
from ..scripted import ScriptedAgent
from ..served import A2AD, WITH_DEFAULT_SIGINT

CLOCK = re.compile(r"^\d\d:\d\d:\d\d  ", re.MULTILINE)
# Tasks made with the server's clock QUIET_SECONDS behind (``Clock.behind``) are
# that long quiet at once, well past STALE; one made just before the command has
# 30 s to spare: starting the `a2ad` process takes over a second on a busy 2-core
# machine, and 2.5 s of slack failed there under a parallel benchmark.
QUIET_SECONDS = 60.0
STALE = "30s"


def a2ad(
    *args: str, env: dict[str, str] | None = None, timeout: float = 20
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(A2AD), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        env=_env(env),
    )


def _env(extra: dict[str, str] | None) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("A2AD_")}
    return {**clean, "COLUMNS": "200", **(extra or {})}


class Server:
    """A live a2ad, and the ``a2ad`` command pointed at it in one A2A version;
    ``clock`` is its engine's."""

    def __init__(self, live: LiveServer, recording: Recording, version: str, clock: Clock) -> None:
        self.live = live
        self.clock = clock
        self.url = live.url
        self.recording = recording
        self.version = version
        self.flags = ["--url", self.url] + (["--a2a-version", "0.3"] if version == "0.3" else [])

    def __call__(self, *args: str, **options: Any) -> subprocess.CompletedProcess[str]:
        self.recording.versions.clear()  # note only this command's calls
        return a2ad(*args, *self.flags, **options)

    def client(self) -> SyncClient:
        return SyncClient(self.url)

    def start(self, text: str, **options: Any) -> Task:
        with self.client() as client:
            task = client.send(text, **options)
        assert isinstance(task, Task)
        return task

    def state(self, task_id: str) -> TaskState:
        with self.client() as client:
            return client.get_task(task_id).status.state

    def spoke_only(self, version: str) -> bool:
        """Whether every A2A call the last command made was in ``version``."""
        expected = "1.0" if version == "1.0" else ""
        return bool(self.recording.versions) and set(self.recording.versions) == {expected}


def serve(version: str, token: str | None = None) -> Iterator[Server]:
    """A live a2ad as ``create_app(ScriptedAgent())`` makes it, but for its
    clock: a ``Clock`` the test can set back."""
    clock = Clock()
    recording = Recording(app_with_clock(ScriptedAgent(), clock), token=token)
    with LiveServer(cast(A2AApp, recording)) as live:
        yield Server(live, recording, version, clock)


def parsed(done: subprocess.CompletedProcess[str]) -> Any:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    """The failure as a user sees it: one line on stderr, no traceback."""
    said = done.stderr.strip()
    assert said.startswith("error: "), done.stderr
    assert "\n" not in said, done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    return said


class Watching:
    """``a2ad tasks watch`` running in the background, read line by line; Ctrl-C
    (SIGINT) stops it as it would in a terminal."""

    def __init__(self, server: Server, task_id: str) -> None:
        self.proc = subprocess.Popen(
            [*WITH_DEFAULT_SIGINT, str(A2AD), "tasks", "watch", task_id, *server.flags],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            env=_env(None),
        )

    def line(self, timeout: float = 10) -> str:
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        assert ready, "tasks watch printed nothing"
        return self.proc.stdout.readline()

    def finish(self, timeout: float = 10) -> tuple[int, str, str]:
        out, err = self.proc.communicate(timeout=timeout)
        return self.proc.returncode, out, err

    def __enter__(self) -> Watching:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.communicate(timeout=10)
