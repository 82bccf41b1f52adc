"""Histograms noted as appends and folded later count every value in the
bucket Prometheus' ``le`` puts it in, before a fold, across folds and on reads
taken between them."""

from __future__ import annotations

import bisect
import random

import pytest

from a2ad.server.histograms import FOLD_AT, Histograms

BOUNDS = (0.001, 0.01, 0.1, 1, 10)


def counted_one_by_one(values: list[float]) -> list[float]:
    """The buckets as a value-at-a-time count makes them (upper bounds inclusive)."""
    buckets: list[float] = [0] * (len(BOUNDS) + 2)
    for value in values:
        buckets[bisect.bisect_left(BOUNDS, value)] += 1
        buckets[-1] += value
    return buckets


def assert_same(got: list[float], want: list[float]) -> None:
    assert got[:-1] == want[:-1]
    assert got[-1] == pytest.approx(want[-1])


@pytest.mark.parametrize("count", [0, 1, 7, FOLD_AT - 1, FOLD_AT, 3 * FOLD_AT + 5])
def test_every_value_is_in_its_bucket_however_many_were_folded(count: int) -> None:
    rng = random.Random(count)
    values = [rng.choice([*BOUNDS, 0.0, 20.0, rng.uniform(0, 15)]) for _ in range(count)]
    histograms = Histograms(BOUNDS)
    for value in values:
        histograms.note(("SendMessage", "JSONRPC"), value)
    read = histograms.read()
    if not values:
        assert read == {}
        return
    assert_same(read[("SendMessage", "JSONRPC")], counted_one_by_one(values))


def test_a_value_on_a_bound_is_counted_in_that_bound_s_bucket() -> None:
    histograms = Histograms(BOUNDS)
    for value in (0.01, 10, 10.5):
        histograms.note("a", value)
    assert_same(histograms.read()["a"], [0, 1, 0, 0, 1, 1, 20.51])


def test_a_read_between_notes_changes_nothing_and_keys_stay_apart() -> None:
    histograms = Histograms(BOUNDS)
    firsts = [0.005] * (FOLD_AT + 3)
    for value in firsts:
        histograms.note("a", value)
    histograms.note("b", 5.0)
    before = histograms.read()
    again = histograms.read()
    assert before == again
    histograms.note("a", 0.5)
    after = histograms.read()
    assert_same(after["a"], counted_one_by_one([*firsts, 0.5]))
    assert after["b"] == counted_one_by_one([5.0])
