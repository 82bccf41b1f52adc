"""Logs: one JSON object per line (``--log-format json``, for machines), or one
line of text per event (``text``, for people at a terminal).

Every line names what it is about, where known: ``task_id``, ``context_id``,
``agent``, ``request_id`` and ``principal``, from the request being served and
the agent turn being run (log_context.py), so the agent's own ``logging`` lines
carry them too. What a line's ``extra`` says wins over its context.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from collections.abc import Mapping
from typing import Any, TextIO

import msgspec

from .. import log_context
from .log_bound import bounded, cut

__all__ = [
    "ACCESS_WORDS",
    "LOG_FORMATS",
    "JsonFormatter",
    "TextFormatter",
    "access_fraction",
    "configure_logging",
]

LOG_FORMATS = ("json", "text")

_STANDARD = set(vars(logging.makeLogRecord({}))) | {"message", "asctime"}
# Libraries that log every HTTP call an agent makes at info, its URL with them
# (which may carry a key, e.g. ?key=...): warnings only.
_CHATTY = ("httpx", "httpcore")


def _extras(record: logging.LogRecord) -> dict[str, Any]:
    return {
        key: value
        for key, value in vars(record).items()
        if key not in _STANDARD and not key.startswith("_")
    }


class JsonFormatter(logging.Formatter):
    """Keys ``ts`` (UTC, ms), ``level``, ``logger``, ``msg``, then ``fields``
    (in every line, e.g. which process of a group wrote it), the line's context
    and its ``extra``; ``exc`` for a traceback."""

    def __init__(self, fields: Mapping[str, object] | None = None) -> None:
        super().__init__()
        self.fields = dict(fields or {})
        self._second = (-1, "")  # the last second formatted, and how

    def _ts(self, record: logging.LogRecord) -> str:
        second, text = self._second
        if int(record.created) != second:
            second = int(record.created)
            text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
            self._second = (second, text)
        return f"{text}.{int(record.msecs):03d}Z"

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": self._ts(record),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
            **self.fields,
            **log_context.fields(),
            **_extras(record),
        }
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return bounded(lambda cap: _json(entry if cap is None else _cut_entry(entry, cap)))


def _json(value: Any) -> str:
    try:
        return _encode(value).decode()
    except (TypeError, OverflowError, ValueError):  # e.g. an int past 64 bits
        return json.dumps(value, default=str)


def _cut_entry(entry: dict[str, Any], cap: int) -> dict[str, Any]:
    """``entry`` with each value longer than ``cap`` (as text) cut to it."""
    out: dict[str, Any] = {}
    for key, value in entry.items():
        if not isinstance(value, str | int | float | bool | None):
            value = _json(value)  # a list, a dict, an object: as JSON text
        out[key] = cut(value, cap, traceback=key == "exc") if isinstance(value, str) else value
    return out


_encode = msgspec.json.Encoder(enc_hook=str).encode

_COLOURS = {
    "DEBUG": "\x1b[2m",
    "INFO": "\x1b[32m",
    "WARNING": "\x1b[33m",
    "ERROR": "\x1b[31m",
    "CRITICAL": "\x1b[1;31m",
}
_DIM, _RESET = "\x1b[2m", "\x1b[0m"
# A terminal must not act on what a client sent (an escape sequence in a path).
_CONTROL = {c: f"\\x{c:02x}" for c in (*range(32), 127)} | {10: "\\n", 13: "\\r", 9: "\\t"}


def _shown(value: object) -> str:
    text = str(value)
    if text and text.isprintable() and not any(c in text for c in ' "='):
        return text
    return json.dumps(text, ensure_ascii=False)


class TextFormatter(logging.Formatter):
    """``HH:MM:SS.mmm LEVEL logger message key=value...`` (local time): the
    line's context first, then ``fields`` and its ``extra``; a value with a
    space, a quote or an ``=`` is quoted. A traceback follows on lines of its
    own, indented. With ``colour``, the level is coloured and the keys dimmed."""

    def __init__(self, fields: Mapping[str, object] | None = None, *, colour: bool = False) -> None:
        super().__init__()
        self.fields = dict(fields or {})
        self.colour = colour

    def format(self, record: logging.LogRecord) -> str:
        trace = self.formatException(record.exc_info) if record.exc_info else ""
        return bounded(lambda cap: self._line(record, trace, cap))

    def _line(self, record: logging.LogRecord, trace: str, cap: int | None) -> str:
        stamp = time.strftime("%H:%M:%S", time.localtime(record.created))
        level = record.levelname
        message = cut(record.getMessage(), cap)
        if not message.isprintable():
            message = message.translate(_CONTROL)
        pairs = {**log_context.fields(), **self.fields, **_extras(record)}
        pairs = {k: cut(str(v), cap) for k, v in pairs.items()}
        if self.colour:
            colour = _COLOURS.get(level, "")
            head = f"{stamp}.{int(record.msecs):03d} {colour}{level:<8}{_RESET}"
            head += f"{_DIM}{record.name}{_RESET} {message}"
            tail = "".join(f" {_DIM}{k}={_RESET}{_shown(v)}" for k, v in pairs.items())
        else:
            head = f"{stamp}.{int(record.msecs):03d} {level:<8}{record.name} {message}"
            tail = "".join(f" {k}={_shown(v)}" for k, v in pairs.items())
        line = head + tail
        if trace:
            trace = cut(trace, cap, traceback=True)
            line += "\n" + "\n".join("    " + part for part in trace.splitlines())
        return line


def configure_logging(
    level: str = "info",
    fields: Mapping[str, object] | None = None,
    *,
    log_format: str = "json",
    access: bool = False,
    stream: TextIO | None = None,
) -> None:
    """Write every log line of the process (a2ad's, the agent's, uvicorn's) to
    ``stream`` (stderr) in ``log_format``, at ``level`` and above; ``access``:
    the access lines (logger ``a2ad.access``, info) whatever the level. Text is
    coloured when the stream is a terminal and $NO_COLOR is unset or empty.
    Raises ValueError for a format it doesn't know."""
    out = sys.stderr if stream is None else stream
    formatter: logging.Formatter
    if log_format == "json":
        formatter = JsonFormatter(fields)
    elif log_format == "text":
        colour = out.isatty() and not os.environ.get("NO_COLOR")
        formatter = TextFormatter(fields, colour=colour)
    else:
        raise ValueError(f"--log-format {log_format!r}: give json or text")
    handler = logging.StreamHandler(out)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    ours = logging.getLogger("a2ad")
    ours.handlers.clear()
    ours.setLevel(level.upper())
    ours.propagate = True
    logging.getLogger("a2ad.access").setLevel(logging.INFO if access else logging.NOTSET)
    for name in _CHATTY:
        logging.getLogger(name).setLevel(max(logging.WARNING, root.level))
    # uvicorn's loggers are left without handlers of their own (serve.py gives
    # uvicorn no log config), so theirs come here too.
    uvicorn = logging.getLogger("uvicorn")
    uvicorn.handlers.clear()
    uvicorn.propagate = True


ACCESS_WORDS: dict[str, float | None] = {"on": 1.0, "errors": 0.0, "off": None}


def access_fraction(text: str) -> float | None:
    """``--access-log``: ``on`` (1.0), ``errors`` (0.0), ``off`` (None) or a
    fraction from 0 to 1: the share of requests answered without an error that
    are logged. Raises ValueError."""
    word = text.strip().lower()
    if word in ACCESS_WORDS:
        return ACCESS_WORDS[word]
    try:
        fraction = float(word)
    except ValueError:
        fraction = -1.0
    if not 0.0 <= fraction <= 1.0:  # NaN too
        raise ValueError(
            f"--access-log {text!r}: give on, errors, off, or the fraction (0 to 1) of "
            "requests answered without an error to log (those with one are logged unless off)"
        )
    return fraction
