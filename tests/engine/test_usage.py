"""Token usage an agent reports (``ctx.usage``): on its task, in the totals of
the task's tenant, principal, UTC day and model, on both stores; and the
operator-only report of those totals."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from a2ad import Agent, Engine, MemoryStore, Message, Task, TaskContext, TaskState
from a2ad.agent import Caller
from a2ad.engine.access import Access
from a2ad.engine.build import build_engine
from a2ad.engine.config import EngineConfig
from a2ad.engine.usage import usage_report
from a2ad.protocol.errors import InvalidParamsError, PermissionDeniedError
from a2ad.protocol.usage import TokenCounts, UsageRow
from a2ad.store.base import TaskStore
from a2ad.store.sqlite import SqliteStore

from .requests import WAIT, request

DAY1 = 1_772_323_200.0  # 2026-03-01T00:00:00Z
DAY = 86_400.0


class Spender(Agent):
    """Reports usage as its message says: "spend P C MODEL" (twice for "twice"),
    "reply" answers with a Message, "late" reports after completing, "ask" asks
    for input first, "bad" reports a negative count."""

    name = "spender"

    def __init__(self) -> None:
        self.errors: list[str] = []

    async def run(self, ctx: TaskContext) -> None:
        words = ctx.text.split()
        if words[0] == "bad":
            try:
                await ctx.usage(prompt_tokens=-1)
            except ValueError as exc:
                self.errors.append(str(exc))
            return
        await ctx.usage(prompt_tokens=10, completion_tokens=2, model="m1")
        if words[0] == "twice":
            await ctx.working("thinking")
            await ctx.usage(prompt_tokens=5, completion_tokens=1, total_tokens=7, model="m2")
        if words[0] == "reply":
            await ctx.reply("hello")
            return
        if words[0] == "ask" and len(ctx.history) == 1:
            await ctx.require_input("which?")
            return
        await ctx.complete("done")
        if words[0] == "late":
            await ctx.usage(prompt_tokens=1000, model="m1")


class Clock:
    def __init__(self) -> None:
        self.now = DAY1 + 3600

    def __call__(self) -> float:
        return self.now


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> TaskStore:
    return MemoryStore() if request.param == "memory" else SqliteStore(tmp_path / "tasks.db")


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def engine(store: TaskStore, clock: Clock) -> AsyncIterator[Engine]:
    engine = build_engine(Spender(), store, EngineConfig(shutdown_grace=0), clock=clock)
    await engine.start()
    yield engine
    await engine.aclose()


async def send(engine: Engine, text: str, access: Access, **kwargs: object) -> Task | Message:
    return await asyncio.wait_for(engine.send(request(text, **kwargs), access=access), WAIT)  # type: ignore[arg-type]


OPERATOR = Caller(
    principal="olga", tenants=("acme", "globex"), roles=frozenset({"operator"}), authenticated=True
)


def counts(prompt: int, completion: int, total: int | None = None) -> dict[str, int]:
    return {
        "promptTokens": prompt,
        "completionTokens": completion,
        "totalTokens": prompt + completion if total is None else total,
    }


async def test_reports_add_up_on_the_task_by_model(engine: Engine) -> None:
    task = await send(engine, "twice", Access("acme", "ann"))
    assert isinstance(task, Task) and task.status.state is TaskState.COMPLETED
    stored = await engine.get_task(task.id, access=Access("acme", "ann"))
    assert isinstance(stored.metadata, dict)
    assert stored.metadata["a2ad"]["usage"] == {
        **counts(15, 3, 19),
        "byModel": {"m1": counts(10, 2), "m2": counts(5, 1, 7)},
    }


async def test_totals_add_up_per_group_over_tenants_principals_and_days(
    engine: Engine, clock: Clock
) -> None:
    await send(engine, "spend", Access("acme", "ann"))
    await send(engine, "spend", Access("acme", "bob"))
    await send(engine, "twice", Access("globex", "ann"))
    clock.now += DAY
    await send(engine, "twice", Access("acme", "ann"))
    await send(engine, "spend", Access("globex", "cy"))

    report = await usage_report(
        engine.store,
        OPERATOR,
        clock=clock,
        from_day="2026-03-01",
        group_by=["tenant", "principal", "day"],
    )
    assert report.to_day == "2026-03-02" and report.tenants == ["acme", "globex"]

    def row(tenant: str, principal: str, day: str, p: int, c: int, t: int) -> UsageRow:
        return UsageRow(
            tenant=tenant,
            principal=principal,
            day=day,
            prompt_tokens=p,
            completion_tokens=c,
            total_tokens=t,
        )

    assert report.rows == [
        row("acme", "ann", "2026-03-01", 10, 2, 12),
        row("acme", "ann", "2026-03-02", 15, 3, 19),
        row("acme", "bob", "2026-03-01", 10, 2, 12),
        row("globex", "ann", "2026-03-01", 15, 3, 19),
        row("globex", "cy", "2026-03-02", 10, 2, 12),
    ]
    assert report.total == TokenCounts(prompt_tokens=60, completion_tokens=12, total_tokens=74)

    by_model = await usage_report(
        engine.store,
        OPERATOR,
        clock=clock,
        from_day="2026-03-02",
        tenant="acme",
        group_by=["model"],
    )
    assert [(r.model, r.total_tokens) for r in by_model.rows] == [("m1", 12), ("m2", 7)]


async def test_a_reply_without_a_task_counts_in_the_totals_only(
    engine: Engine, clock: Clock
) -> None:
    answer = await send(engine, "reply", Access("acme", "ann"))
    assert isinstance(answer, Message)
    report = await usage_report(engine.store, OPERATOR, clock=clock, group_by=["principal"])
    assert [(r.principal, r.total_tokens) for r in report.rows] == [("ann", 12)]


async def test_usage_after_the_task_ended_counts_in_the_totals_only(
    engine: Engine, clock: Clock
) -> None:
    task = await send(engine, "late", Access("acme", "ann"))
    assert isinstance(task, Task)

    async def totals() -> int:
        report = await usage_report(engine.store, OPERATOR, clock=clock)
        return report.total.total_tokens

    for _ in range(100):  # the turn's end writes it, just after the answer
        if await totals() == 1012:
            break
        await asyncio.sleep(0.01)
    assert await totals() == 1012
    stored = await engine.get_task(task.id, access=Access("acme", "ann"))
    assert isinstance(stored.metadata, dict)
    assert stored.metadata["a2ad"]["usage"]["totalTokens"] == 12


async def test_a_follow_up_turn_adds_to_the_task(engine: Engine) -> None:
    ann = Access("acme", "ann")
    asked = await send(engine, "ask", ann)
    assert isinstance(asked, Task) and asked.status.state is TaskState.INPUT_REQUIRED
    done = await send(engine, "ask again", ann, task_id=asked.id)
    assert isinstance(done, Task)
    stored = await engine.get_task(asked.id, access=ann)
    assert isinstance(stored.metadata, dict)
    assert stored.metadata["a2ad"]["usage"]["totalTokens"] == 24


async def test_a_negative_count_is_refused_at_the_call(engine: Engine) -> None:
    await send(engine, "bad", Access("acme", "ann"))
    agent = engine.agent
    assert isinstance(agent, Spender)
    assert agent.errors == ["usage: prompt_tokens must be a non-negative integer, not -1"]


async def test_only_operators_read_the_totals(engine: Engine, clock: Clock) -> None:
    ann = Caller(principal="ann", tenants=("acme",), authenticated=True)
    with pytest.raises(PermissionDeniedError, match="operators only"):
        await usage_report(engine.store, ann, clock=clock)
    with pytest.raises(PermissionDeniedError, match="not one of yours"):
        await usage_report(engine.store, OPERATOR, clock=clock, tenant="initech")
    anonymous = await usage_report(engine.store, Caller(), clock=clock)  # a server without auth
    assert anonymous.tenants is None


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"from_day": "2026-3-1"}, "from"),
        ({"to_day": "2026-02-30"}, "to"),
        ({"from_day": "2026-03-05", "to_day": "2026-03-01"}, "from"),
        ({"group_by": ["team"]}, "groupBy"),
        ({"group_by": ["day", "day"]}, "groupBy"),
    ],
)
async def test_a_bad_query_names_its_field(
    engine: Engine, clock: Clock, kwargs: dict[str, object], field: str
) -> None:
    with pytest.raises(InvalidParamsError) as info:
        await usage_report(engine.store, OPERATOR, clock=clock, **kwargs)  # type: ignore[arg-type]
    assert info.value.field == field


@pytest.fixture
async def two_agents(store: TaskStore, clock: Clock) -> AsyncIterator[Engine]:
    agents = {"stock": Spender(), "pricing": Spender()}
    engine = build_engine(agents, store, EngineConfig(shutdown_grace=0), clock=clock)
    await engine.start()
    yield engine
    await engine.aclose()


async def test_each_agents_tasks_count_in_its_own_totals(two_agents: Engine, clock: Clock) -> None:
    await send(two_agents, "spend", Access("acme", "ann", agent="stock"))
    await send(two_agents, "twice", Access("acme", "ann", agent="pricing"))
    await send(two_agents, "spend", Access("globex", "gus", agent="pricing"))
    report = await usage_report(two_agents.store, OPERATOR, clock=clock, group_by=["agent"])
    assert [(r.agent, r.total_tokens) for r in report.rows] == [("pricing", 31), ("stock", 12)]
    pricing = await usage_report(
        two_agents.store, OPERATOR, clock=clock, agent="pricing", group_by=["tenant", "model"]
    )
    assert pricing.agent == "pricing"
    assert [(r.tenant, r.model, r.total_tokens) for r in pricing.rows] == [
        ("acme", "m1", 12),
        ("acme", "m2", 7),
        ("globex", "m1", 12),
    ]


async def test_usage_no_task_carries_counts_in_its_agents_totals(
    two_agents: Engine, clock: Clock
) -> None:
    answer = await send(two_agents, "reply", Access("acme", "ann", agent="stock"))
    assert isinstance(answer, Message)
    await send(two_agents, "late", Access("acme", "ann", agent="pricing"))

    async def by_agent() -> list[tuple[str | None, int]]:
        report = await usage_report(two_agents.store, OPERATOR, clock=clock, group_by=["agent"])
        return [(r.agent, r.total_tokens) for r in report.rows]

    for _ in range(100):  # the turn's end writes the late report, just after the answer
        if sum(total for _, total in await by_agent()) == 1024:
            break
        await asyncio.sleep(0.01)
    assert await by_agent() == [("pricing", 1012), ("stock", 12)]
