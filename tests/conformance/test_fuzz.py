"""The wire fuzzer in the suite: mutated requests in both A2A versions, for every
method, against a real ``a2ad serve`` over SQLite (tests/conformance/wire_fuzz.py).
Never a 5xx, never a traceback in the server's log, always a well-formed JSON-RPC
answer with an A2A code, and the tasks stored before the run unchanged after it.

The run is modest here (``A2AD_FUZZ_EXAMPLES``, else 300, or the ``deep`` profile's
count if larger); scripts/fuzz runs a long one.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from a2ad.server import auth

from .wire_fuzz import FuzzServer, Seeds, WireRequest, check_answer, send, wire_requests

EXAMPLES = int(os.environ.get("A2AD_FUZZ_EXAMPLES", 0)) or max(300, settings.default.max_examples)


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


@pytest.fixture(scope="module")
def server() -> Iterator[FuzzServer]:
    with FuzzServer() as running:
        yield running


def test_mutated_requests_never_break_the_server_nor_change_stored_tasks(
    server: FuzzServer,
) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as http:
        seeds = Seeds.store(http)
        before = seeds.snapshot(http)
        assert server.new_troubles() == []

        @fuzz_settings(EXAMPLES)
        @given(request=wire_requests(seeds))
        def fuzz(request: WireRequest) -> None:
            tally[check_answer(request, send(http, request))] += 1
            troubles = server.new_troubles()
            assert not troubles, "the server logged:\n" + "\n".join(troubles)

        tally: Counter[str] = Counter()
        fuzz()
        assert seeds.snapshot(http) == before
        assert tally["HTTP 413 (body too large)"] > 0  # oversized bodies were tried
        # Shown with -s (scripts/fuzz): what the answers were.
        print(f"\nwire fuzzer, {sum(tally.values())} requests:")
        for what, count in tally.most_common():
            print(f"  {count:7d}  {what}")


# --- with auth on: credentials too are fuzzed ------------------------------------


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, str]:
    """A keys file with Ann's and Bob's keys: (file, ann, bob)."""
    path = str(tmp_path_factory.mktemp("keys") / "keys.toml")
    return path, auth.add_key(path, "ann"), auth.add_key(path, "bob")


def test_with_auth_on_mutated_requests_and_credentials_never_break_the_server_nor_anns_tasks(
    keys: tuple[str, str, str],
) -> None:
    path, ann, bob = keys
    credentials = [
        {"Authorization": f"Bearer {ann}"},
        {"Authorization": f"Bearer {bob}"},
        {"X-API-Key": ann},
        {"Authorization": f"Bearer {ann}x"},
        {"Authorization": "Bearer "},
        {"Authorization": f"Basic {ann}"},
        {"X-API-Key": ""},
        {},
    ]
    with (
        FuzzServer(auth=path) as server,
        httpx.Client(
            base_url=server.url, timeout=30, headers={"Authorization": f"Bearer {ann}"}
        ) as owner,
        httpx.Client(base_url=server.url, timeout=30) as http,
    ):
        seeds = Seeds.store(owner)
        before = seeds.snapshot(owner)

        @fuzz_settings(max(100, EXAMPLES // 3))
        @given(request=wire_requests(seeds), credential=st.sampled_from(credentials))
        def fuzz(request: WireRequest, credential: dict[str, str]) -> None:
            request.headers.update(credential)
            tally[check_answer(request, send(http, request))] += 1
            troubles = server.new_troubles()
            assert not troubles, "the server logged:\n" + "\n".join(troubles)

        tally: Counter[str] = Counter()
        fuzz()
        assert seeds.snapshot(owner) == before
        assert tally["HTTP 401"] > 0 and sum(tally.values()) > tally["HTTP 401"]
        # No credential reached the log.
        log = server.log()
        assert ann not in log and bob not in log
