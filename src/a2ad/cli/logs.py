"""Structured logs: one JSON object per line, with the task id when there is one."""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Mapping

__all__ = ["JsonFormatter", "configure_logging"]

_STANDARD = set(vars(logging.makeLogRecord({}))) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    """``fields`` go into every line (e.g. which process of a group wrote it)."""

    def __init__(self, fields: Mapping[str, object] | None = None) -> None:
        super().__init__()
        self.fields = dict(fields or {})

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
            **self.fields,
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_"):
                entry[key] = value
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


def configure_logging(level: str = "info", fields: Mapping[str, object] | None = None) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter(fields))
    root = logging.getLogger("a2ad")
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    root.propagate = False
