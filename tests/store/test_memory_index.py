"""The memory store's listing index keeps one key bare and several in a sorted
list; whichever it holds, a name's keys read back in order as they were filed."""

from __future__ import annotations

import random

from a2ad.store.memory_index import Index, file, filed, unfile


def test_keys_read_back_in_order_through_every_filing_and_unfiling() -> None:
    rng = random.Random(7)
    index: Index = {}
    kept: dict[str, list[tuple[str, str]]] = {"a": [], "b": []}
    for step in range(2000):
        name = rng.choice("ab")
        if kept[name] and rng.random() < 0.45:
            key = rng.choice(kept[name])
            kept[name].remove(key)
            unfile(index, name, key)
        else:
            key = (f"2026-01-01T00:00:{rng.randrange(60):02d}.000Z", f"t{step}")
            kept[name].append(key)
            file(index, name, key)
        for each in "ab":
            assert filed(index, each) == sorted(kept[each])
            assert (each in index) == bool(kept[each])


def test_a_name_with_one_key_holds_the_key_itself() -> None:
    index: Index = {}
    first, second = ("2026-01-01T00:00:01.000Z", "x"), ("2026-01-01T00:00:02.000Z", "y")
    file(index, "ctx", second)
    assert index["ctx"] == second
    file(index, "ctx", first)
    assert index["ctx"] == [first, second]
    unfile(index, "ctx", first)
    assert index["ctx"] == second
    unfile(index, "ctx", second)
    assert "ctx" not in index and filed(index, "ctx") == []
