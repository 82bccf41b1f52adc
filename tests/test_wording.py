"""How a2ad words a count for people: one thing, or several (a2ad/wording.py)."""

from __future__ import annotations

import pytest

from a2ad.wording import plural


@pytest.mark.parametrize(
    ("count", "noun", "nouns", "said"),
    [
        (1, "task", None, "1 task"),
        (0, "task", None, "0 tasks"),
        (2, "status change", None, "2 status changes"),
        (1, "process", "processes", "1 process"),
        (3, "process", "processes", "3 processes"),
        (1.0, "request", None, "1 request"),
        (0.5, "request", None, "0.5 requests"),
        (2_000_000, "byte", None, "2000000 bytes"),
    ],
)
def test_a_count_is_said_with_its_noun_in_the_singular_only_for_one(
    count: float, noun: str, nouns: str | None, said: str
) -> None:
    assert plural(count, noun, nouns) == said
