"""The wire fuzzer in the suite: mutated requests in both A2A versions, for every
method, against a real ``a2ad serve`` over SQLite (tests/conformance/wire_fuzz.py).
Never a 5xx, never a traceback in the server's log, always a well-formed JSON-RPC
answer with an A2A code, and the tasks stored before the run unchanged after it.

The run is modest here (``A2AD_FUZZ_EXAMPLES``, else 300, or the ``deep`` profile's
count if larger); scripts/fuzz runs a long one.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import httpx
import pytest
from hypothesis import settings

from a2ad.server import auth

from .fuzz_round import fuzz_round
from .wire_fuzz import FuzzServer, Seeds, check_answer, wire_requests

EXAMPLES = int(os.environ.get("A2AD_FUZZ_EXAMPLES", 0)) or max(300, settings.default.max_examples)


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
        tally = fuzz_round(server, http, wire_requests(seeds), check_answer, examples=EXAMPLES)
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
        tally = fuzz_round(
            server,
            http,
            wire_requests(seeds),
            check_answer,
            examples=max(100, EXAMPLES // 3),
            credentials=credentials,
        )
        assert seeds.snapshot(owner) == before
        assert tally["HTTP 401"] > 0 and sum(tally.values()) > tally["HTTP 401"]
        # No credential reached the log.
        log = server.log()
        assert ann not in log and bob not in log
