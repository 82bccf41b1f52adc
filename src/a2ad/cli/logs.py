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
    "keep_logging",
]

LOG_FORMATS = ("json", "text")

_STANDARD = set(vars(logging.makeLogRecord({}))) | {"message", "asctime"}
# Libraries that log every HTTP call an agent makes at info, its URL with them
# (which may carry a key, e.g. ?key=...): warnings only.
_CHATTY = ("httpx", "httpcore")
# Loggers written straight to configure_logging's handler, not through the root's;
# uvicorn's too (serve.py gives uvicorn no log config).
_OURS = ("a2ad", "uvicorn")


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
    root = logging.getLogger()
    root.setLevel(level.upper())
    level_number = root.level
    handler = _Handler(out)
    handler.setFormatter(formatter)
    handler.level_wanted = level_number
    _installed[:] = [handler]
    for name in _OURS:
        logging.getLogger(name).setLevel(level_number)
    logging.getLogger("a2ad.access").setLevel(logging.INFO if access else logging.NOTSET)
    for name in _CHATTY:
        logging.getLogger(name).setLevel(max(logging.WARNING, level_number))
    keep_logging()


class _Handler(logging.StreamHandler[TextIO]):
    """configure_logging's handler: before each line, takes the process's logging
    back if something changed it since (keep_logging), so an agent's library that
    reconfigures logging while serving (a lazy import in its first turn) is undone
    at a2ad's next line."""

    level_wanted = logging.INFO
    seen: tuple[object, ...] = ()

    def handle(self, record: logging.LogRecord) -> bool:
        if _state() != self.seen:
            keep_logging()
        return super().handle(record)


_installed: list[_Handler] = []  # configure_logging's handler, once called


def _state() -> tuple[object, ...]:
    """What keep_logging would act on, cheap to compare: the root logger's
    handlers and level, and how many loggers there are (a library imported
    since has made its own)."""
    root = logging.getLogger()
    return (*root.handlers, root.level, len(logging.Logger.manager.loggerDict))


def keep_logging() -> None:
    """Take the process's logging back after an agent's library changed it (e.g.
    PraisonAI's ``logging.basicConfig(force=True)`` at import, which wrote every
    line as plain text and dropped the agent's info lines): the root logger
    writes through configure_logging's handler at its level again, and a
    library's own logger that writes to the terminal (LiteLLM's) does so in
    a2ad's format, once: its handler is dropped if its lines reach the root
    logger anyway (its filters, such as one that hides keys, move to the
    logger), else formats them as a2ad does. Handlers writing elsewhere (a
    file) are left alone. Called by ``a2ad serve`` and ``a2ad worker`` once
    their agents are loaded, and by the handler before a line when anything
    changed; a no-op before configure_logging."""
    if not _installed:
        return
    ours = _installed[0]
    root = logging.getLogger()
    root.handlers[:] = [ours, *(h for h in root.handlers if not _to_terminal(h, ours))]
    root.setLevel(ours.level_wanted)
    for log in list(logging.Logger.manager.loggerDict.values()):
        if not isinstance(log, logging.Logger):
            continue
        if log.name.partition(".")[0] in _OURS:
            # Straight to the handler: what a library does to the root logger can't
            # change these lines, not even before the next check; and undone: a
            # library's logging.config.dictConfig disables the loggers it doesn't name.
            log.disabled = False
            if log.name in _OURS:
                log.handlers[:], log.propagate = [ours], False
            continue
        for handler in [h for h in log.handlers if h is not ours and _to_terminal(h, ours)]:
            _take_back(log, handler, ours)
    ours.seen = _state()


def _take_back(log: logging.Logger, handler: logging.Handler, ours: _Handler) -> None:
    """A library's logger's handler that writes to the terminal: dropped if the
    logger's lines reach the root logger anyway, else made to write as a2ad does."""
    if _reaches_root(log):
        log.removeHandler(handler)
        for kept in handler.filters:
            log.addFilter(kept)  # adds it once
    elif isinstance(handler, logging.StreamHandler):
        handler.setFormatter(ours.formatter)
    else:  # one that draws its own lines (rich's)
        log.handlers[log.handlers.index(handler)] = ours


def _reaches_root(log: logging.Logger) -> bool:
    current: logging.Logger | None = log
    while current is not None and current.propagate:
        current = current.parent
    return current is None


def _to_terminal(handler: logging.Handler, ours: _Handler) -> bool:
    """Whether a handler writes where ours does, or to the process's stdout or
    stderr: a StreamHandler by its stream, a RichHandler by its Console's file."""
    if isinstance(handler, logging.StreamHandler):
        stream = handler.stream
    else:
        stream = getattr(getattr(handler, "console", None), "file", None)
    terminal = (ours.stream, sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__)
    return stream is not None and any(stream is s for s in terminal)


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
