"""How a2ad words a count of things for people (CLI output, log lines, error
messages): ``plural(1, "task")`` is ``1 task``, ``plural(3, "task")`` ``3 tasks``.
The dashboard (server/dashboard/assets/app.js) has the same rule in JavaScript."""

from __future__ import annotations

__all__ = ["plural"]


def plural(count: float, noun: str, nouns: str | None = None) -> str:
    """``count`` and the noun: ``noun`` for exactly one, else ``nouns`` (default
    ``noun`` + "s"). A float is written as ``{:g}`` writes it (``0.5``)."""
    number = f"{count:g}" if isinstance(count, float) else str(count)
    return f"{number} {noun if count == 1 else nouns or noun + 's'}"
