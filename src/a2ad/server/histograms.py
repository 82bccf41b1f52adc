"""Histograms noted at the cost of a list append, for metrics.py.

Putting each value into its bucket as it comes (a search of the bounds, a count
and a float sum, about 2,800 instructions) was a fifth of what /metrics cost a
SendMessage, which notes five values. Here a value is appended to its label
values' list, and the list is put into buckets all at once when ``FOLD_AT``
values have gathered or when the numbers are read: sorted, then cut at each
bound with a binary search, so the work per value is the sort's.

A key's buckets and its pending values are one pair, replaced whole by a fold
on the event loop; ``read`` copies each (a C call, atomic under the GIL), so the
thread that shares a group's numbers may read while the loop notes. A read
leaves the pending values pending.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Hashable

__all__ = ["FOLD_AT", "Histograms"]

FOLD_AT = 1024  # pending values of one key that get it folded into its buckets

# Per key: its folded buckets (one count a bound, one for +Inf, then the sum of
# the values) and the values noted since.
_Kept = tuple[list[float], list[float]]


class Histograms:
    """One histogram's numbers by label values (a key), over ``bounds``
    (ascending upper bounds; a value lands in the first bucket whose bound it
    does not exceed, as Prometheus' ``le`` says)."""

    __slots__ = ("_kept", "bounds")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self._kept: dict[Hashable, _Kept] = {}

    def note(self, key: Hashable, value: float) -> None:
        """One value for ``key``'s histogram."""
        kept = self._kept.get(key)
        if kept is None:
            kept = self._kept[key] = ([0] * (len(self.bounds) + 2), [])
        pending = kept[1]
        pending.append(value)
        if len(pending) >= FOLD_AT:
            self._kept[key] = (_folded(kept[0], pending, self.bounds), [])

    def read(self) -> dict[Hashable, list[float]]:
        """Every key's buckets and sum, pending values counted in (a copy)."""
        return {
            key: _folded(buckets, list(pending), self.bounds)
            for key, (buckets, pending) in self._kept.copy().items()
        }


def _folded(buckets: list[float], values: list[float], bounds: tuple[float, ...]) -> list[float]:
    """``buckets`` (not changed) with ``values`` counted in: a new list."""
    if not values:
        return list(buckets)
    values.sort()
    out = list(buckets)
    below = 0  # values at or under the previous bound
    for i, bound in enumerate(bounds):
        upto = bisect_right(values, bound)
        out[i] += upto - below
        below = upto
    out[-2] += len(values) - below  # +Inf
    out[-1] += sum(values)
    return out
