"""How long one log line may be: ``MAX_LINE`` characters, whatever a request or
an exception put in it. (A recursion's traceback runs to hundreds of kilobytes;
without a bound, a few thousand small requests that each caused one could fill
a disk.)

A formatter renders a line with every value whole; one that is too long it
renders again with each value cut to a cap, halving the cap until the line
fits. A cut value says how much was left out; a traceback keeps its start and
its end, where it says what was raised.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["MAX_LINE", "bounded", "cut"]

MAX_LINE = 16_384
_SMALLEST_CAP = 64


def bounded(render: Callable[[int | None], str]) -> str:
    """``render(None)``, the whole line, if it fits in MAX_LINE characters; else
    ``render(cap)`` for caps from MAX_LINE // 2 down (``cut`` each value to it)."""
    line = render(None)
    cap = MAX_LINE // 2
    while len(line) > MAX_LINE and cap >= _SMALLEST_CAP:
        line = render(cap)
        cap //= 2
    return line


def cut(text: str, cap: int | None, *, traceback: bool = False) -> str:
    """``text`` in at most about ``cap`` characters (None: whole): its start, or
    for a ``traceback`` its first quarter and its end, and how much is left out."""
    if cap is None or len(text) <= cap:
        return text
    left_out = len(text) - cap
    if traceback:
        head = cap // 4
        return f"{text[:head]}\n... {left_out} characters left out ...\n{text[-(cap - head) :]}"
    return f"{text[:cap]}... ({left_out} characters left out)"
