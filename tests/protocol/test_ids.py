"""Ids a2ad makes (tasks, contexts, messages, artifacts): version 7 UUIDs that
sort in the order they were made."""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from a2ad.protocol import model
from a2ad.protocol.model import new_id


def test_ids_are_version_7_uuids_in_canonical_text() -> None:
    for _ in range(100):
        text = new_id()
        parsed = uuid.UUID(text)
        assert str(parsed) == text
        assert parsed.version == 7 and parsed.variant == uuid.RFC_4122


def test_ids_carry_the_millisecond_they_were_made() -> None:
    before = time.time_ns() // 1_000_000
    made = int(uuid.UUID(new_id()).hex[:12], 16)
    after = time.time_ns() // 1_000_000
    assert before <= made <= after


def test_ids_made_on_many_threads_at_once_are_all_different() -> None:
    made: list[list[str]] = [[] for _ in range(8)]

    def make(into: list[str]) -> None:
        into.extend(new_id() for _ in range(3_000))

    threads = [threading.Thread(target=make, args=(each,)) for each in made]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    everything = [i for each in made for i in each]
    assert len(set(everything)) == len(everything) == 24_000
    assert all(each == sorted(each) for each in made)  # each thread's in order


def test_ids_made_later_sort_later_even_within_one_millisecond() -> None:
    ids = [new_id() for _ in range(20_000)]  # thousands per millisecond
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)


def test_a_full_millisecond_counter_moves_on_to_the_next_millisecond(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    future = time.time_ns() // 1_000_000 + 60_000  # as if the clock had stepped back
    clock = model._IdClock()
    clock.move_to(future)
    clock.counter = 0xFFE
    monkeypatch.setattr(model, "_ids", clock)
    first, second, third = new_id(), new_id(), new_id()
    assert first < second < third
    stamps = [
        (int(uuid.UUID(i).hex[:12], 16), int(uuid.UUID(i).hex[13:16], 16))
        for i in (first, second, third)
    ]
    assert stamps == [(future, 0xFFF), (future + 1, 0), (future + 1, 1)]
