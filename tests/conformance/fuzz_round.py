"""One fuzzing round against a running ``FuzzServer``, shared by the JSON-RPC
and HTTP+JSON fuzzers (test_fuzz.py, test_rest_fuzz.py): draw a request, send it
with one of the given credentials, classify the answer, and fail at the first
trouble the server logged."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .wire_fuzz import Answer, FuzzServer, WireRequest, send

__all__ = ["fuzz_round", "fuzz_settings"]


def fuzz_settings(examples: int) -> Any:
    """Hypothesis settings for a run of ``examples`` requests against a real server."""
    return settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.large_base_example,
            HealthCheck.filter_too_much,
        ],
    )


def fuzz_round(
    server: FuzzServer,
    http: httpx.Client,
    requests: st.SearchStrategy[WireRequest],
    check: Callable[[WireRequest, Answer | None], str],
    *,
    examples: int,
    credentials: Sequence[dict[str, str]] = ({},),
) -> Counter[str]:
    """Sends ``examples`` requests drawn from ``requests``, each with one of
    ``credentials``; returns how many answers ``check`` put in each class."""
    tally: Counter[str] = Counter()

    @fuzz_settings(examples)
    @given(request=requests, credential=st.sampled_from(list(credentials)))
    def fuzz(request: WireRequest, credential: dict[str, str]) -> None:
        request.headers.update(credential)
        tally[check(request, send(http, request))] += 1
        troubles = server.new_troubles()
        assert not troubles, "the server logged:\n" + "\n".join(troubles)

    fuzz()
    return tally
