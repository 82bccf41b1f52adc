"""Durations as people write them on command lines and in tool calls."""

from __future__ import annotations

import re

__all__ = ["format_duration", "parse_duration", "parse_optional_duration"]

_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)", re.IGNORECASE)
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(text: str) -> float:
    """Seconds in ``"90s"``, ``"10m"``, ``"1h30m"``, ``"2d"`` or a bare number of
    seconds. Raises ValueError naming the accepted forms."""
    text = text.strip()
    try:
        seconds = float(text)
    except ValueError:
        pieces = _DURATION.findall(text)
        if not pieces or "".join(n + u.lower() for n, u in pieces) != text.replace(" ", "").lower():
            raise ValueError(
                f"{text!r} is not a duration; write e.g. 90s, 10m, 1h30m or 2d"
            ) from None
        seconds = sum(float(n) * _UNITS[u.lower()] for n, u in pieces)
    if seconds < 0:
        raise ValueError(f"{text!r}: a duration can't be negative")
    return seconds


def format_duration(seconds: float) -> str:
    """``seconds`` as people say it: ``45s``, ``12m``, ``3h5m``, ``2d4h``."""
    seconds = int(max(0, seconds))
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d{hours}h" if hours else f"{days}d"
    if hours:
        return f"{hours}h{minutes}m" if minutes else f"{hours}h"
    if minutes:
        return f"{minutes}m{secs}s" if secs and minutes < 10 else f"{minutes}m"
    return f"{secs}s"


def parse_optional_duration(text: str) -> float | None:
    """None for ``off``, ``none`` or ``0``; else as ``parse_duration``."""
    if text.strip().lower() in ("off", "none", ""):
        return None
    return parse_duration(text) or None
