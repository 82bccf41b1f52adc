"""Any command as an agent: ``a2ad serve --agent 'exec:python summarize.py'``.

Each turn runs the command once (no shell: the text is split as a shell would,
``shlex``), in a session of its own, with the user's message on its standard
input: the message's text, or with ``exec-json:`` one line of JSON (the task
and context ids, the message and the history, in A2A 1.0's JSON). Each line it
writes to standard output is a chunk of one artifact, ``output``, sent as it
comes (a line is held a quarter of a second, so the last one can say it is the
last). What it writes to standard error is kept as an internal part (an
artifact ``stderr`` that only operators see). Exit status 0 completes the task;
any other fails it with the status and the tail of standard error.

A cancel (or the task's deadline) sends SIGTERM to the command's process group
(it and what it started), then SIGKILL after ``kill_grace`` seconds. Bounds: at
most ``max_output_bytes`` of standard output (past it the command is stopped and
the task failed saying so), at most ``max_seconds`` of running (None: no bound
but the task's deadline), and standard error's last 64 KiB kept.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import signal
from collections.abc import Sequence
from typing import Any

import msgspec

from ..agent import Agent, TaskContext
from ..protocol.model import new_id

__all__ = ["EXEC_PREFIXES", "CommandAgent"]

EXEC_PREFIXES = ("exec", "exec-json")  # --agent exec:CMD, exec-json:CMD
MAX_OUTPUT_BYTES = 16 * 1024 * 1024
KILL_GRACE_SECONDS = 5.0
_STDERR_KEPT = 64 * 1024
_TAIL_SAID = 2000  # characters of standard error a failure's message carries
_HOLD_SECONDS = 0.25  # how long a line waits to learn whether it is the last


class CommandAgent(Agent):
    """Runs ``command`` (a command line, or its words) for each turn; see the
    module docstring. ``json_input``: the message as JSON on standard input,
    not its text. Raises ValueError for an empty command."""

    def __init__(
        self,
        command: str | Sequence[str],
        *,
        json_input: bool = False,
        max_output_bytes: int = MAX_OUTPUT_BYTES,
        max_seconds: float | None = None,
        kill_grace: float = KILL_GRACE_SECONDS,
        name: str | None = None,
    ) -> None:
        argv = shlex.split(command) if isinstance(command, str) else list(command)
        if not argv:
            raise ValueError("exec: give the command to run, e.g. exec:'python summarize.py'")
        self.argv = argv
        self.json_input = json_input
        self.max_output_bytes = max_output_bytes
        self.max_seconds = max_seconds
        self.kill_grace = kill_grace
        shown = shlex.join(argv)
        self.name = name or shown[:64]
        self.description = f"Runs `{shown[:200]}` for each message."
        self._stopping: set[asyncio.Future[None]] = set()  # commands being stopped

    async def stop(self) -> None:
        """The server stops: wait for the commands being stopped to be gone."""
        if self._stopping:
            await asyncio.gather(*self._stopping, return_exceptions=True)

    async def run(self, ctx: TaskContext) -> None:
        starting = asyncio.ensure_future(
            asyncio.create_subprocess_exec(
                *self.argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,  # its own process group: a cancel stops its children
                limit=self.max_output_bytes + 1,  # a line may be all the output there is
            )
        )
        try:
            process = await asyncio.shield(starting)
        except asyncio.CancelledError:
            # Cancelled while the command started (it may already run, and have
            # started others): stop its group once its start is done.
            starting.add_done_callback(self._stop_started)
            raise
        except OSError as exc:
            await ctx.fail(f"can't run `{shlex.join(self.argv)}`: {exc.strerror or exc}")
            return
        run = _Run(self, ctx, process)
        try:
            async with asyncio.timeout(self.max_seconds):
                await run.converse()
        except TimeoutError:
            self._stop(process)
            await run.ended(f"ran for more than {self.max_seconds:g} s and was stopped")
            return
        except BaseException:  # cancelled (a cancel, a deadline), or failed: stop it
            self._stop(process)
            raise
        await run.ended()

    def _stop_started(self, starting: asyncio.Future[asyncio.subprocess.Process]) -> None:
        if not starting.cancelled() and starting.exception() is None:
            self._stop(starting.result())

    def _stop(self, process: asyncio.subprocess.Process) -> None:
        """SIGTERM to the command's process group, SIGKILL after the grace; done
        apart from the turn, which may be cancelled and gone before it is. Also
        when the command itself has exited: what it started may still run."""
        stopping = asyncio.ensure_future(_stop(process, self.kill_grace))
        self._stopping.add(stopping)
        stopping.add_done_callback(self._stopping.discard)


class _Run:
    """One turn's command: what it wrote, and how its turn ends."""

    def __init__(self, agent: CommandAgent, ctx: TaskContext, process: Any) -> None:
        self.agent = agent
        self.ctx = ctx
        self.process = process
        self.artifact_id = new_id()
        self.chunks = 0
        self.written = 0
        self.too_much = False
        self.stderr = bytearray()

    async def converse(self) -> None:
        """Give the command its input, take its output, wait for it to exit."""
        await asyncio.gather(self._feed(), self._output(), self._errors())
        await self.process.wait()

    async def _feed(self) -> None:
        ctx, stdin = self.ctx, self.process.stdin
        if self.agent.json_input:
            given = {
                "taskId": ctx.task_id,
                "contextId": ctx.context_id,
                "message": ctx.message,
                "history": list(ctx.history),
            }
            data = msgspec.json.encode(given) + b"\n"
        else:
            data = ctx.text.encode()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            stdin.write(data)
            await stdin.drain()
        stdin.close()

    async def _output(self) -> None:
        """Each line of standard output a chunk, a line held until the next
        comes, the output ends, or a quarter of a second passes."""
        stdout = self.process.stdout
        held: bytes | None = None
        while True:
            try:
                line = await asyncio.wait_for(stdout.readline(), _HOLD_SECONDS if held else None)
            except TimeoutError:
                assert held is not None  # only a held line waits with a timeout
                await self._chunk(held, last=False)
                held = None
                continue
            if not line:
                if held is not None:
                    await self._chunk(held, last=True)
                return
            self.written += len(line)
            if self.written > self.agent.max_output_bytes:
                self.too_much = True
                self.agent._stop(self.process)
                while await stdout.read(65536):  # to its end: the pipe closes with it
                    pass
                return
            if held is not None:
                await self._chunk(held, last=False)
            held = line

    async def _chunk(self, line: bytes, *, last: bool) -> None:
        text = line.decode(errors="replace").rstrip("\r\n")
        await self.ctx.artifact(
            text,
            artifact_id=self.artifact_id,
            name="output",
            append=self.chunks > 0,
            last_chunk=last,
        )
        self.chunks += 1

    async def _errors(self) -> None:
        stderr, kept = self.process.stderr, self.stderr
        while chunk := await stderr.read(65536):
            kept += chunk
            del kept[:-_STDERR_KEPT]

    async def ended(self, stopped: str = "") -> None:
        """End the turn as the command did: completed on status 0, else failed
        saying why, with standard error kept as an internal part."""
        ctx, process = self.ctx, self.process
        errors = self.stderr.decode(errors="replace")
        if errors.strip():
            await ctx.artifact(ctx.internal(errors), name="stderr")
        shown = shlex.join(self.agent.argv)[:200]
        if self.too_much:
            limit = self.agent.max_output_bytes
            stopped = f"wrote more than {limit} bytes to standard output and was stopped"
        if not stopped and process.returncode == 0:
            await ctx.complete()
            return
        if not stopped:
            code = process.returncode
            stopped = (
                f"was killed by signal {signal.Signals(-code).name}"
                if code < 0
                else f"exited with status {code}"
            )
        tail = errors.strip()[-_TAIL_SAID:]
        await ctx.fail(f"`{shown}` {stopped}" + (f": {tail}" if tail else ""))


async def _stop(process: Any, grace: float) -> None:
    """SIGTERM the command's process group; SIGKILL what is left of it (the
    command, or what it started) after ``grace`` seconds."""
    group = process.pid  # its session's leader: the group's id is its pid
    _signal(group, signal.SIGTERM)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + grace
    while loop.time() < deadline and (process.returncode is None or _signal(group, 0)):
        await asyncio.sleep(0.05)
    if process.returncode is None or _signal(group, 0):
        _signal(group, signal.SIGKILL)
    # Its pipes read to their ends, so that they close (a turn cancelled stopped reading).
    with contextlib.suppress(TimeoutError, OSError, ValueError):
        await asyncio.wait_for(process.communicate(), grace)


def _signal(group: int, sent: int) -> bool:
    """Send ``sent`` to process group ``group`` (0: only ask whether it is
    there); whether it was."""
    try:
        os.killpg(group, sent)
    except (ProcessLookupError, PermissionError):
        return False
    return True
