"""Which event a task in each state takes, seen through the engine's public operations.

The expected table is written out independently of the implementation:

    submitted, working   -> every status an agent can set (working, input-/auth-required,
                            completed, failed, rejected), an artifact, a cancel;
                            not a follow-up message (the task is not waiting for one)
    input-/auth-required -> a terminal status (the agent's, or a cancel), and a follow-up
                            message, which makes it working again; nothing else
    completed, failed, canceled, rejected -> nothing

Each case brings a task into a state with a small agent (submitted: stored through
returnImmediately before the agent acts; canceled: by a cancel while the agent waits),
then applies one operation: the agent calls a TaskContext method, or a client calls
``Engine.cancel`` or sends a follow-up (a message with the task's id). The case then
reads the task's event log and snapshot back from the store. After an agent's
operation the agent also calls ``ctx.fail``, which ends its turn, so that whatever it
queued is stored (or dropped) before the test reads the store.

A TaskContext has no way to set submitted (or unspecified), so a task never goes back
to submitted by any operation.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeAlias, TypeVar

import pytest

from a2ad import (
    Agent,
    MemoryStore,
    Task,
    TaskArtifactUpdateEvent,
    TaskContext,
    TaskState,
    TaskStatusUpdateEvent,
)
from a2ad.engine.build import build_engine
from a2ad.protocol.errors import TaskNotCancelableError, UnsupportedOperationError

from .requests import request, wait_for_state

S = TaskState
TERMINAL = [S.COMPLETED, S.FAILED, S.CANCELED, S.REJECTED]
INTERRUPTED = [S.INPUT_REQUIRED, S.AUTH_REQUIRED]
ACTIVE = [S.SUBMITTED, S.WORKING]
# The states a stored task can be in (UNSPECIFIED is only ever a wire value).
LIFECYCLE_STATES = ACTIVE + INTERRUPTED + TERMINAL

ARTIFACT = "artifact"  # the agent adds an artifact
CANCEL = "cancel"  # a client cancels the task
FOLLOW_UP = "follow-up"  # a client sends a message with the task's id
Operation: TypeAlias = TaskState | str
# The statuses an agent sets through TaskContext, and what it calls for each.
AGENT_STATUSES: dict[TaskState, Callable[[TaskContext], Awaitable[bool]]] = {
    S.WORKING: lambda ctx: ctx.working("working on it"),
    S.INPUT_REQUIRED: lambda ctx: ctx.require_input("which one?"),
    S.AUTH_REQUIRED: lambda ctx: ctx.require_auth("please sign in"),
    S.COMPLETED: lambda ctx: ctx.complete("done"),
    S.FAILED: lambda ctx: ctx.fail("it broke"),
    S.REJECTED: lambda ctx: ctx.reject("won't do that"),
}
OPERATIONS: list[Operation] = [*AGENT_STATUSES, ARTIFACT, CANCEL, FOLLOW_UP]
WAIT = 5.0  # seconds any one step may take before the case fails


def allowed(current: TaskState, operation: Operation) -> bool:
    if current in TERMINAL:
        return False
    if operation == FOLLOW_UP:
        return current in INTERRUPTED
    if current in ACTIVE:
        return True
    assert current in INTERRUPTED
    return operation == CANCEL or operation in TERMINAL


def outcome(operation: Operation) -> TaskState | str:
    """What the operation appends to the task's log when it is allowed."""
    if operation == CANCEL:
        return S.CANCELED
    if operation == FOLLOW_UP:
        return S.WORKING  # the task resumes
    return operation


def name(value: object) -> str:
    return value.word if isinstance(value, TaskState) else str(value)


CASES = [
    pytest.param(current, operation, id=f"{name(current)}+{name(operation)}")
    for current, operation in itertools.product(LIFECYCLE_STATES, OPERATIONS)
]

T = TypeVar("T")


async def within(waitable: Awaitable[T]) -> T:
    return await asyncio.wait_for(waitable, WAIT)


@dataclass
class Case:
    """One row and column of the table, as the agent plays it."""

    state: TaskState
    operation: Operation
    reached: asyncio.Future[bool] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )
    go: asyncio.Event = field(default_factory=asyncio.Event)
    # The agent's answer to its operation (None for an artifact, whose call returns
    # its id), and the answer to the ``fail`` that ends its turn afterwards.
    answers: asyncio.Future[tuple[bool | None, bool]] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )

    @property
    def by_agent(self) -> bool:
        return self.operation not in (CANCEL, FOLLOW_UP)


class Puppet(Agent):
    """Brings the task of the case named by the message text into its state, waits
    until the test lets it go on, then performs the case's operation, if it is the
    agent's. A follow-up's turn keeps the task working until the engine closes."""

    def __init__(self) -> None:
        self.cases: dict[str, Case] = {}

    async def run(self, ctx: TaskContext) -> None:
        if len(ctx.history) > 1:
            await asyncio.Event().wait()
        case = self.cases[ctx.text]
        try:
            case.reached.set_result(await self.bring(ctx, case.state))
            await case.go.wait()
        except asyncio.CancelledError:
            # Canceled while it waited: acting now is acting on a canceled task.
            if case.state is S.CANCELED and case.by_agent:
                case.answers.set_result(await self.act(ctx, case.operation))
            raise
        if case.by_agent:
            case.answers.set_result(await self.act(ctx, case.operation))

    @staticmethod
    async def bring(ctx: TaskContext, state: TaskState) -> bool:
        if state in (S.SUBMITTED, S.CANCELED):
            return True  # it is submitted already; a cancel does the rest
        return await AGENT_STATUSES[state](ctx)

    @staticmethod
    async def act(ctx: TaskContext, operation: Operation) -> tuple[bool | None, bool]:
        answer: bool | None = None
        if operation == ARTIFACT:
            await ctx.artifact("a result")
        else:
            assert isinstance(operation, TaskState)
            answer = await AGENT_STATUSES[operation](ctx)
        return answer, await ctx.fail("the case is over")


def kinds(events: list[TaskStatusUpdateEvent | TaskArtifactUpdateEvent]) -> list[TaskState | str]:
    return [e.status.state if isinstance(e, TaskStatusUpdateEvent) else ARTIFACT for e in events]


def expected_log(current: TaskState, operation: Operation) -> tuple[list[TaskState | str], bool]:
    """The whole event log of the case's task, from the table alone, and whether
    the agent's closing fail is in it."""
    log: list[TaskState | str] = [] if current is S.SUBMITTED else [current]
    state = current
    if allowed(current, operation):
        log.append(outcome(operation))
        if isinstance(log[-1], TaskState):
            state = log[-1]
    closing = operation not in (CANCEL, FOLLOW_UP) and allowed(state, S.FAILED)
    if closing:
        log.append(S.FAILED)
    return log, closing


@pytest.mark.parametrize(("current", "operation"), CASES)
async def test_each_state_takes_exactly_the_operations_of_the_lifecycle_table(
    current: TaskState, operation: Operation
) -> None:
    agent = Puppet()
    store = MemoryStore()
    engine = build_engine(agent, store)
    try:
        key = f"{name(current)} then {name(operation)}"
        case = agent.cases[key] = Case(current, operation)
        task = await engine.send(request(key, immediately=True))
        assert isinstance(task, Task)
        assert await within(case.reached) is True
        if current is S.CANCELED:
            canceled = await engine.cancel(task.id)
            assert canceled.status.state is S.CANCELED
        elif current not in TERMINAL:
            await within(wait_for_state(engine, task.id, current))
        before = await store.get(task.id)
        assert before is not None and before.task.status.state is current

        if operation == CANCEL:
            if current in INTERRUPTED:
                case.go.set()  # the turn that asked for input ends first, as it would
            try:
                after_cancel = await engine.cancel(task.id)
            except TaskNotCancelableError as exc:
                assert not allowed(current, operation)
                assert current.word in exc.message
            else:
                assert allowed(current, operation), "the cancel was taken"
                assert after_cancel.status.state is S.CANCELED
        elif operation == FOLLOW_UP:
            if current in INTERRUPTED:
                case.go.set()
            follow_up = request("here you are", task_id=task.id, immediately=True)
            try:
                resumed = await engine.send(follow_up)
            except UnsupportedOperationError as exc:
                assert not allowed(current, operation)
                assert current.word in exc.message
            else:
                assert allowed(current, operation), "the follow-up was taken"
                assert isinstance(resumed, Task) and resumed.status.state is S.WORKING
        else:
            case.go.set()
            said, closing = await within(case.answers)
            # A call that ends the agent's turn says whether it was stored, and every
            # call on a task that has ended says False.
            ends_turn = operation in INTERRUPTED or operation in TERMINAL
            if said is not None and (ends_turn or current in TERMINAL):
                assert said is allowed(current, operation)
            assert closing is expected_log(current, operation)[1]

        after = await store.get(task.id)
        assert after is not None
        expected = expected_log(current, operation)[0]
        logged = await store.events(task.id, 0)
        assert kinds([e.event for e in logged]) == expected
        assert [e.seq for e in logged] == list(range(1, len(expected) + 1))
        assert after.seq == len(expected)
        statuses = [k for k in expected if isinstance(k, TaskState)]
        assert after.task.status.state is (statuses[-1] if statuses else S.SUBMITTED)
        assert len(after.task.artifacts) == expected.count(ARTIFACT)
        if current in TERMINAL:
            assert after == before, "a terminal task never changes"
        if operation == FOLLOW_UP and allowed(current, operation):
            assert after.task.history[-1].text == "here you are"
    finally:
        await engine.aclose()


def test_the_table_covers_every_state_and_operation() -> None:
    assert set(LIFECYCLE_STATES) == set(TaskState) - {S.UNSPECIFIED}
    assert len(CASES) == len(LIFECYCLE_STATES) * len(OPERATIONS)
    # Every state a stored task can be in, except submitted, is reachable by an operation.
    reachable = {outcome(op) for op in OPERATIONS}
    assert reachable >= set(LIFECYCLE_STATES) - {S.SUBMITTED}
