"""Random interleavings on one Engine + MemoryStore, checked for what callers rely on.

A program is a list of steps run on one event loop: new tasks, agent actions
(working, artifacts and chunks, input/auth requests, complete, fail, reject,
returning, raising; after ending its task the agent may keep emitting, which
must be dropped), cancels,
follow-up messages, subscribers opening and closing, and scheduler ticks that let
background work interleave. Cancels and follow-ups run in the background, so
they race with the agent and with each other.

Checked:
  (a) once a task is terminal, its stored snapshot and seq never change again;
  (b) a subscriber gets the task as it was, then every later event in order,
      seq strictly increasing without gaps, ending with the terminal event (and
      then the end of the stream) if the task ended while it was open;
  (c) the stored seq equals the number of events that were applied: agent
      actions that reported success (and the completion or failure the engine
      adds when the agent returns or raises), successful cancels and follow-ups.

No check counts on work being done within some number of scheduler ticks: each
waits, bounded, for the event it expects on the task's stream. For (c) every
agent action carries a tag (``#n``) in its text, so each stored event is
matched to the action, cancel, follow-up or engine ending that made it.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import count
from typing import Any

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from a2ad import (
    Agent,
    MemoryStore,
    Message,
    Task,
    TaskArtifactUpdateEvent,
    TaskContext,
    TaskState,
    TaskStatusUpdateEvent,
)
from a2ad.engine import EventStream
from a2ad.engine.build import build_engine
from a2ad.protocol.errors import TaskNotCancelableError, UnsupportedOperationError

from .requests import request

OPS = [
    "working",
    "artifact",
    "chunk",
    "require_input",
    "require_auth",
    "complete",
    "fail",
    "reject",
    "return",
    "raise",
]
INTERRUPTS = {"require_input", "require_auth"}
TERMINATES = {"complete", "fail", "reject"}
ACTIVE = {TaskState.SUBMITTED, TaskState.WORKING}
WAIT = 5.0  # seconds a check waits for an event it expects
TAG = re.compile(r"#(\d+)$")

_numbers = count(1)


@dataclass
class Command:
    op: str
    linger: int  # scheduler ticks the agent stays alive after ending its turn
    stay: bool  # after complete/fail/reject, keep taking commands (they must be dropped)
    # What the agent learned once it acted: whether the event was stored (None for an
    # artifact that was queued, whose call returns its id; False if it was dropped at
    # once because the task had ended); for return/raise, whether the task was
    # still one the engine ends for the agent (returning completes a submitted or
    # working task, raising fails any task not yet terminal).
    done: asyncio.Future[bool | None]
    tag: str = field(default_factory=lambda: f"#{next(_numbers)}")


class ControlledAgent(Agent):
    """Does what the test tells it, one command at a time, from a queue per task.
    A command sent while no invocation runs waits for the next one (a follow-up)."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store
        self.queues: dict[str, asyncio.Queue[Command]] = defaultdict(asyncio.Queue)

    def command(self, task_id: str, op: str, linger: int, stay: bool) -> Command:
        cmd = Command(op, linger, stay, asyncio.get_running_loop().create_future())
        self.queues[task_id].put_nowait(cmd)
        return cmd

    async def run(self, ctx: TaskContext) -> None:
        queue = self.queues[ctx.task_id]
        while True:
            cmd = await queue.get()
            if cmd.op in ("return", "raise"):
                stored = await self.store.get(ctx.task_id)
                assert stored is not None
                state = stored.task.status.state
                cmd.done.set_result(state in ACTIVE if cmd.op == "return" else not state.terminal)
                if cmd.op == "raise":
                    raise RuntimeError("the agent gave up")
                return
            ok = await self.perform(ctx, cmd)
            cmd.done.set_result(ok)
            if cmd.op in INTERRUPTS or (cmd.op in TERMINATES and not cmd.stay):
                for _ in range(cmd.linger):
                    await asyncio.sleep(0)
                return

    @staticmethod
    async def perform(ctx: TaskContext, cmd: Command) -> bool | None:
        op, text = cmd.op, f"{cmd.op} {cmd.tag}"
        if op == "working":
            return await ctx.working(text)
        if op in ("artifact", "chunk"):
            chunk = op == "chunk"
            queued = await ctx.artifact(
                text, artifact_id="stream" if chunk else str(uuid.uuid4()), append=chunk
            )
            return None if queued else False
        if op == "require_input":
            return await ctx.require_input(text)
        if op == "require_auth":
            return await ctx.require_auth(text)
        if op == "complete":
            return await ctx.complete(text)
        if op == "fail":
            return await ctx.fail(text)
        assert op == "reject"
        return await ctx.reject(text)


def tag_of(item: object) -> str | None:
    """The tag of the agent action that made a stored event, if an action did."""
    text = ""
    if isinstance(item, TaskStatusUpdateEvent) and isinstance(item.status.message, Message):
        text = item.status.message.text
    elif isinstance(item, TaskArtifactUpdateEvent):
        text = "".join(p.text for p in item.artifact.parts if isinstance(p.text, str))
    found = TAG.search(text)
    return found.group(0) if found else None


@dataclass
class Subscriber:
    task_id: str
    stream: EventStream
    start_seq: int
    seen: list[tuple[int, Any, bool]] = field(default_factory=list)
    ended: bool = False  # the stream said it is over
    closed_at: int | None = None  # the last seq it had read when the test closed it

    @property
    def last_seq(self) -> int:
        return self.seen[-1][0] if self.seen else self.start_seq

    async def read(self) -> None:
        """Read one more item; fail if none comes within WAIT."""
        try:
            got = await self.stream.next(timeout=WAIT)
        except TimeoutError:
            raise AssertionError(
                f"subscriber of {self.task_id} at seq {self.last_seq} got nothing more"
            ) from None
        if got is None:
            self.ended = True
            return
        seq, item, last = got
        assert seq is not None
        self.seen.append((seq, item, last))

    async def catch_up(self, store: MemoryStore) -> None:
        """Read everything published so far: up to the stored seq (events are
        published as they are stored), then the end of the stream if it ended."""
        while self.closed_at is None and not self.ended:
            stored = await store.get(self.task_id)
            assert stored is not None
            if self.last_seq >= stored.seq and not (self.seen and self.seen[-1][2]):
                return
            await self.read()

    async def read_until(self, condition: Callable[[], bool], what: str) -> None:
        while not condition():
            assert not self.ended, f"the stream of {self.task_id} ended before {what}"
            await self.read()

    def tags(self) -> list[str | None]:
        return [tag_of(item) for _, item, _ in self.seen]

    def ended_terminal(self) -> bool:
        return any(
            isinstance(item, TaskStatusUpdateEvent) and item.status.state.terminal
            for _, item, _ in self.seen
        )


class Run:
    def __init__(self) -> None:
        self.store = MemoryStore()
        self.agent = ControlledAgent(self.store)
        self.engine = build_engine(self.agent, self.store)
        self.tasks: list[str] = []
        self.commands: dict[str, list[Command]] = defaultdict(list)
        self.canceled: dict[str, int] = defaultdict(int)  # cancels that succeeded
        self.resumed: dict[str, int] = defaultdict(int)  # follow-ups that succeeded
        self.background: list[asyncio.Task[None]] = []
        self.witness: dict[str, Subscriber] = {}  # opened at creation, never closed
        self.subscribers: list[Subscriber] = []
        self.terminal: dict[str, tuple[int, bytes]] = {}
        self.unexpected: list[str] = []

    def task(self, index: int) -> str:
        return self.tasks[index % len(self.tasks)]

    async def new(self) -> None:
        task = await self.engine.send(request("go", immediately=True))
        assert isinstance(task, Task)
        self.tasks.append(task.id)
        witness = await self.subscribe(task.id)
        # Nothing acts on a task before the test sends its first command.
        assert witness.start_seq == 0 and witness.seen == []
        self.witness[task.id] = witness

    async def subscribe(self, task_id: str) -> Subscriber:
        stream = await self.engine.subscribe(task_id)
        first = await stream.next(timeout=0)
        assert first is not None
        seq, snapshot, last = first
        assert seq is not None and not last
        stored = await self.store.get(task_id)
        assert stored is not None
        assert seq <= stored.seq, "the subscriber got a task from the future"
        if seq == stored.seq:
            assert snapshot == stored.task
        return Subscriber(task_id, stream, seq)

    async def open(self, index: int) -> None:
        task_id = self.task(index)
        try:
            self.subscribers.append(await self.subscribe(task_id))
        except UnsupportedOperationError:
            stored = await self.store.get(task_id)
            assert stored is not None and stored.task.status.state.terminal

    async def close(self, index: int) -> None:
        open_subs = [s for s in self.subscribers if s.closed_at is None]
        if not open_subs:
            return
        sub = open_subs[index % len(open_subs)]
        await sub.catch_up(self.store)
        sub.closed_at = sub.last_seq
        sub.stream.close()

    async def cancel(self, task_id: str) -> None:
        try:
            await self.engine.cancel(task_id)
        except TaskNotCancelableError:
            return
        except Exception as exc:
            self.unexpected.append(f"cancel {task_id}: {type(exc).__name__}: {exc}")
            return
        self.canceled[task_id] += 1

    async def follow_up(self, task_id: str) -> None:
        try:
            await self.engine.send(request("more", task_id=task_id, immediately=True))
        except UnsupportedOperationError:
            return
        except Exception as exc:
            self.unexpected.append(f"follow-up {task_id}: {type(exc).__name__}: {exc}")
            return
        self.resumed[task_id] += 1

    async def step(self, step: tuple[Any, ...]) -> None:
        kind = step[0]
        if kind == "new" or not self.tasks:
            await self.new()
        elif kind == "op":
            task_id = self.task(step[1])
            self.commands[task_id].append(self.agent.command(task_id, *step[2:]))
        elif kind == "cancel":
            self.background.append(asyncio.create_task(self.cancel(self.task(step[1]))))
        elif kind == "follow":  # step[2] copies at once: a client that retries early
            for _ in range(step[2]):
                self.background.append(asyncio.create_task(self.follow_up(self.task(step[1]))))
        elif kind == "sub":
            await self.open(step[1])
        elif kind == "unsub":
            await self.close(step[1])
        else:
            for _ in range(step[1]):
                await asyncio.sleep(0)

    async def check_terminal_snapshots(self) -> None:
        for task_id in self.tasks:
            stored = await self.store.get(task_id)
            assert stored is not None, f"task {task_id} vanished"
            encoded = msgspec.json.encode(stored.task)
            if task_id in self.terminal:
                assert (stored.seq, encoded) == self.terminal[task_id], (
                    f"terminal task {task_id} changed"
                )
                assert msgspec.json.encode(await self.engine.get_task(task_id)) == encoded
            elif stored.task.status.state.terminal:
                self.terminal[task_id] = (stored.seq, encoded)

    async def settle(self) -> None:
        """Let every cancel and follow-up the program started return."""
        if self.background:
            _done, pending = await asyncio.wait(self.background, timeout=10)
            assert not pending, "a cancel or follow-up never returned"
        await self.check_terminal_snapshots()

    async def check_all(self) -> None:
        assert not self.unexpected, self.unexpected
        # Witnesses last: each then has read at least as far as any subscriber.
        for sub in self.subscribers + list(self.witness.values()):
            await sub.catch_up(self.store)
        for task_id in self.tasks:
            await self.check_applied(task_id)
        for sub in list(self.witness.values()) + self.subscribers:
            self.check_subscriber(sub)

    async def check_applied(self, task_id: str) -> None:
        """(c), on the events the task's witness read: each one made by exactly one
        thing that was applied, and everything that reported it was applied in it."""
        witness = self.witness[task_id]
        commands = self.commands[task_id]
        # What the agent has been told so far; commands still running may be
        # stored or not (at most once), whatever comes of them later.
        told = {c.tag: c.done.result() for c in commands if c.done.done()}
        acts = {c.tag: c for c in commands}
        ends = ("return", "raise")
        reported = {tag for tag, ok in told.items() if ok and acts[tag].op not in ends}
        # An artifact's call does not say whether it was stored; it was unless the
        # task ended before it was emitted, and a task that is not over has not.
        unknown = {tag for tag, ok in told.items() if ok is None}
        if not witness.ended_terminal():
            reported |= unknown
        may_end = [acts[tag] for tag, ok in told.items() if ok and acts[tag].op in ends]

        def complete() -> bool:
            present = set(witness.tags())
            return reported <= present and (not may_end or witness.ended_terminal())

        # Events of the agent's turn that are queued, and the ending the engine adds
        # when the agent returns or raises, are stored soon; wait for them.
        await witness.read_until(complete, "the events its agent was told were stored")
        await witness.catch_up(self.store)
        stored = await self.store.get(task_id)
        assert stored is not None
        tags = witness.tags()
        assert stored.seq == witness.last_seq == len(tags)
        statuses = [e for _, e, _ in witness.seen if isinstance(e, TaskStatusUpdateEvent)]
        if statuses:
            assert statuses[-1].status == stored.task.status
        tagged = [t for t in tags if t is not None]
        assert len(tagged) == len(set(tagged)), f"task {task_id}: an action was stored twice"
        for tag in tagged:
            assert tag in acts and told.get(tag) is not False, (
                f"task {task_id}: {tag} was stored, but its agent was told it was dropped"
            )
        untagged = [
            item for (_, item, _), tag in zip(witness.seen, tags, strict=True) if tag is None
        ]
        states = [item.status.state for item in untagged]
        assert all(isinstance(item, TaskStatusUpdateEvent) for item in untagged)
        assert states.count(TaskState.CANCELED) == self.canceled[task_id]
        assert states.count(TaskState.WORKING) == self.resumed[task_id]
        endings = {
            TaskState.COMPLETED: sum(1 for c in may_end if c.op == "return"),
            TaskState.FAILED: sum(1 for c in may_end if c.op == "raise"),
        }
        for state, at_most in endings.items():
            assert states.count(state) <= at_most, f"task {task_id}: an ending nobody caused"
        assert set(states) <= {TaskState.CANCELED, TaskState.WORKING, *endings}
        # (c) as a count: every applied event is counted once.
        assert stored.seq == len(tagged) + self.canceled[task_id] + self.resumed[task_id] + sum(
            states.count(state) for state in endings
        )

    def check_subscriber(self, sub: Subscriber) -> None:
        end = sub.closed_at if sub.closed_at is not None else sub.last_seq
        events = {seq: item for seq, item, _ in self.witness[sub.task_id].seen}
        seqs = [seq for seq, _, _ in sub.seen]
        # (b): in order, strictly increasing, no gaps, nothing before it subscribed.
        assert seqs == list(range(sub.start_seq + 1, end + 1)), (sub.start_seq, end, seqs)
        for seq, item, _ in sub.seen:
            assert isinstance(item, (TaskStatusUpdateEvent, TaskArtifactUpdateEvent))
            assert item == events[seq]
        terminal_at = [
            seq
            for seq, item, _ in sub.seen
            if isinstance(item, TaskStatusUpdateEvent) and item.status.state.terminal
        ]
        assert [seq for seq, _, last in sub.seen if last] == terminal_at
        if terminal_at:
            assert terminal_at == [seqs[-1]], "the terminal event must be the last"
            assert sub.ended, "the stream must end after the terminal event"
        else:
            assert not sub.ended, "the stream ended before its task did"


async def run_program(steps: list[tuple[Any, ...]]) -> None:
    run = Run()
    try:
        await run.new()
        for step in steps:
            await run.step(step)
            await run.check_terminal_snapshots()
        await run.settle()
        await run.check_all()
        # End every task that is still open: open subscribers must then see it end.
        for task_id in run.tasks:
            stored = await run.store.get(task_id)
            assert stored is not None
            if not stored.task.status.state.terminal:
                await run.cancel(task_id)
        await run.settle()
        await run.check_all()
        for sub in list(run.witness.values()) + [s for s in run.subscribers if s.closed_at is None]:
            assert sub.ended and sub.seen and sub.seen[-1][2]
    finally:
        for job in run.background:
            job.cancel()
        await run.engine.aclose()


task_index = st.integers(0, 3)
step = st.one_of(
    st.just(("new",)),
    st.tuples(st.just("op"), task_index, st.sampled_from(OPS), st.integers(0, 3), st.booleans()),
    st.tuples(st.just("op"), task_index, st.sampled_from(OPS), st.integers(0, 3), st.booleans()),
    st.tuples(st.just("cancel"), task_index),
    st.tuples(st.just("follow"), task_index, st.sampled_from([1, 1, 2])),
    st.tuples(st.just("sub"), task_index),
    st.tuples(st.just("unsub"), st.integers(0, 9)),
    st.tuples(st.just("tick"), st.integers(1, 6)),
)


# As many examples as the Hypothesis profile says (tests/conftest.py).
@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(step, min_size=5, max_size=40))
def test_random_interleavings_keep_terminal_tasks_fixed_streams_gapless_and_seq_exact(
    steps: list[tuple[Any, ...]],
) -> None:
    asyncio.run(run_program(steps))


# --- a regression found by the property above, pinned as a plain example ---


class AsksThenLingers(Agent):
    """Asks for input, and takes a moment to return after asking."""

    async def run(self, ctx: TaskContext) -> None:
        if len(ctx.history) == 1:
            await ctx.require_input("which?")
            await asyncio.sleep(0.05)
            return
        await asyncio.sleep(3600)


async def test_two_racing_follow_ups_resume_an_interrupted_task_only_once() -> None:
    store = MemoryStore()
    engine = build_engine(AsksThenLingers(), store)
    try:
        task = await engine.send(request("go", immediately=True))
        assert isinstance(task, Task)
        stream = await engine.subscribe(task.id)
        witness = Subscriber(task.id, stream, 0)
        await witness.read_until(
            lambda: any(
                isinstance(item, (Task, TaskStatusUpdateEvent))
                and item.status.state is TaskState.INPUT_REQUIRED
                for _, item, _ in witness.seen
            ),
            "the task asked for input",
        )
        stream.close()
        stored = await store.get(task.id)
        assert stored is not None and stored.task.status.state is TaskState.INPUT_REQUIRED

        results = await asyncio.gather(
            engine.send(request("answer A", task_id=task.id, immediately=True)),
            engine.send(request("answer B", task_id=task.id, immediately=True)),
            return_exceptions=True,
        )
        accepted = [r for r in results if isinstance(r, Task)]
        refused = [r for r in results if isinstance(r, UnsupportedOperationError)]
        assert len(accepted) == 1 and len(refused) == 1, results
        stored = await store.get(task.id)
        assert stored is not None
        user_answers = [m.text for m in stored.task.history if m.text.startswith("answer")]
        assert len(user_answers) == 1, user_answers
        assert stored.seq == 2  # require_input, then the one accepted follow-up
    finally:
        await engine.aclose()
