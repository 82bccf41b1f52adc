"""The memory store's listing indexes: per name (a context, a tenant, an owner),
the list keys of its tasks in order.

A name with one task keeps that task's key itself, not a list of one: most
contexts hold a single task (a new conversation a request), and a list of one
costs about 120 bytes more per task than the key (measured with tracemalloc,
docs/performance.md). A second task makes it a list, and a list left with one
key goes back to the key.
"""

from __future__ import annotations

import bisect
from collections.abc import Hashable

from ..protocol.types import Cursor

__all__ = ["Index", "file", "filed", "unfile"]

Index = dict[Hashable, "Cursor | list[Cursor]"]


def file(index: Index, name: Hashable, key: Cursor) -> None:
    """File ``key`` under ``name``, in order."""
    had = index.get(name)
    if had is None:
        index[name] = key
    elif type(had) is tuple:
        index[name] = [had, key] if had < key else [key, had]
    else:
        bisect.insort(had, key)  # type: ignore[arg-type]


def unfile(index: Index, name: Hashable, key: Cursor) -> None:
    """Take ``key`` from under ``name`` (it must be there)."""
    had = index[name]
    if type(had) is tuple:
        if had == key:
            del index[name]
        return
    keys: list[Cursor] = had  # type: ignore[assignment]
    i = bisect.bisect_left(keys, key)
    if i < len(keys) and keys[i] == key:
        del keys[i]
    if len(keys) == 1:
        index[name] = keys[0]


def filed(index: Index, name: Hashable) -> list[Cursor]:
    """The keys filed under ``name``, in order (the index's own list: not to be changed)."""
    had = index.get(name)
    if had is None:
        return []
    return [had] if type(had) is tuple else had  # type: ignore[return-value]
