"""The SQL stores' snapshot cache: used only at the sequence number it holds,
and bounded in bytes and entries, the task in use kept whatever its size."""

from __future__ import annotations

from a2ad import Task, TaskState, TaskStatus
from a2ad.store.snapshot_cache import SnapshotCache
from a2ad.store.task_rows import INLINE

BIG = INLINE + 1


def task(task_id: str) -> Task:
    return Task(id=task_id, context_id="c", status=TaskStatus(state=TaskState.WORKING))


def test_a_snapshot_is_used_only_at_its_sequence_number() -> None:
    cache = SnapshotCache()
    cache.put("a", 3, task("a"), BIG)
    assert cache.get("a", 4) is None  # another writer moved it on
    assert cache.get("a", 3) is None  # and the stale entry is gone


def test_small_tasks_are_not_kept() -> None:
    cache = SnapshotCache()
    cache.put("a", 1, task("a"), INLINE)
    assert cache.get("a", 1) is None


def test_the_least_recently_used_go_first_past_the_budget() -> None:
    cache = SnapshotCache(budget=3 * BIG)
    for name in "abc":
        cache.put(name, 1, task(name), BIG)
    assert cache.get("a", 1) is not None  # a is now the last used
    cache.put("d", 1, task("d"), BIG)
    assert [n for n in "abcd" if cache.get(n, 1) is not None] == ["a", "c", "d"]


def test_the_task_in_use_is_kept_whatever_its_size() -> None:
    cache = SnapshotCache(budget=BIG, most=2)
    cache.put("small", 1, task("small"), BIG)
    cache.put("huge", 1, task("huge"), 100 * BIG)
    assert cache.get("huge", 1) == (task("huge"), 100 * BIG)
    assert cache.get("small", 1) is None


def test_deleted_tasks_are_dropped() -> None:
    cache = SnapshotCache()
    cache.put("a", 1, task("a"), BIG)
    cache.drop(["a", "unknown"])
    assert cache.get("a", 1) is None
