"""How ``a2ad serve`` and ``a2ad worker`` set Python's cycle collector once
they are up (an application embedding a2ad keeps its own setting).

A request leaves no reference cycle behind (tests/engine/test_garbage.py), so
the collector's passes find nothing to free, yet with Python's default
threshold (a young pass every 700 objects allocated and not yet freed) they ran
about 30 times a thousand SendMessage calls at 32 clients, and every few
thousand a full pass over all the start-up's modules, classes and functions
that took tens of milliseconds: a tenth of a send's CPU and its p99 latency
(docs/performance.md, "The cycle collector"). So, once started:

- what start-up made is frozen (``gc.freeze``): full passes skip it;
- a young pass waits for ``YOUNG`` objects, unless the process already asked
  for more (or turned the collector off). Garbage that is in a cycle still
  goes, about every ``YOUNG`` such objects.
"""

from __future__ import annotations

import gc

__all__ = ["YOUNG", "settle_collector"]

YOUNG = 10_000  # objects allocated and not yet freed that start a young pass


def settle_collector() -> None:
    """Freeze what start-up made and raise the young threshold to ``YOUNG``;
    call it once the server is up, on its event loop's thread."""
    gc.collect()  # start-up's own garbage goes now, not frozen with the rest
    gc.freeze()
    young, *older = gc.get_threshold()
    if gc.isenabled() and 0 < young < YOUNG:
        gc.set_threshold(YOUNG, *older)
