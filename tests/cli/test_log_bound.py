"""No log line is longer than MAX_LINE characters, whatever went into it
(cli/log_bound.py): a traceback keeps its start and its end, any other value
its start, each saying how much was left out; a line that fits is untouched."""

from __future__ import annotations

import json
import logging
import sys

import pytest

from a2ad.cli.log_bound import MAX_LINE
from a2ad.cli.logs import JsonFormatter, TextFormatter


def one(depth: int) -> None:
    other(depth + 1)  # two functions in turn: Python folds no repeated lines


def other(depth: int) -> None:
    one(depth + 1)


def record_of_a_recursion() -> logging.LogRecord:
    """An error record with a RecursionError's traceback, hundreds of KB long."""
    try:
        one(0)
    except RecursionError:
        info = sys.exc_info()
    return logging.LogRecord("a2ad.server", logging.ERROR, __file__, 1, "failed", (), info)


def test_a_recursion_traceback_is_cut_to_the_bound_keeping_what_was_raised() -> None:
    record = record_of_a_recursion()
    whole = logging.Formatter().formatException(record.exc_info)  # type: ignore[arg-type]
    assert len(whole) > 5 * MAX_LINE
    line = JsonFormatter().format(record)
    assert len(line) <= MAX_LINE
    exc = json.loads(line)["exc"]
    assert exc.startswith("Traceback (most recent call last):")
    assert exc.rstrip().endswith("RecursionError: maximum recursion depth exceeded")
    assert "characters left out" in exc
    text = TextFormatter().format(record)
    assert len(text) <= MAX_LINE
    assert text.rstrip().endswith("RecursionError: maximum recursion depth exceeded")


@pytest.mark.parametrize("formatter", [JsonFormatter(), TextFormatter()], ids=["json", "text"])
def test_a_huge_message_or_field_is_cut_and_says_so(formatter: logging.Formatter) -> None:
    record = logging.LogRecord("a2ad.test", logging.INFO, __file__, 1, "m" * 100_000, (), None)
    record.path = "/" + "\x01" * 100_000  # escaped: six characters each in JSON
    record.ids = ["t" * 100] * 1_000
    line = formatter.format(record)
    assert len(line) <= MAX_LINE
    assert "characters left out" in line and "mmmm" in line
    if isinstance(formatter, JsonFormatter):
        assert json.loads(line)["msg"].startswith("mmmm")


def test_a_line_that_fits_is_written_whole() -> None:
    record = logging.LogRecord("a2ad.test", logging.INFO, __file__, 1, "x" * 8_000, (), None)
    record.detail = "y" * 8_000
    line = json.loads(JsonFormatter().format(record))
    assert line["msg"] == "x" * 8_000 and line["detail"] == "y" * 8_000
