"""The wire fuzzer on HTTP+JSON in the suite: mutated requests on every route of
both versions, under every prefix, against a real ``a2ad serve`` over SQLite
(tests/conformance/rest_fuzz.py), with auth off and on. Never a 5xx, every error
a google.rpc.Status with ErrorInfo, every result the version's proto type, no
traceback nor error in the server's log and no line past its bound, and the
tasks stored before the run unchanged after it.

The run is sized to take about a minute on two cores (``A2AD_FUZZ_EXAMPLES``,
else 1,000 requests; with auth on a third as many); scripts/fuzz runs a long one.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import httpx
import pytest
from hypothesis import settings

from a2ad.server import auth

from .fuzz_round import fuzz_round
from .rest_fuzz import AGENTS, check_rest_answer, rest_requests
from .wire_fuzz import FuzzServer, Seeds

EXAMPLES = int(os.environ.get("A2AD_FUZZ_EXAMPLES", 0)) or max(1000, settings.default.max_examples)


@pytest.fixture(scope="module")
def server() -> Iterator[FuzzServer]:
    with FuzzServer(agents=AGENTS) as running:
        yield running


def test_mutated_rest_requests_never_break_the_server_nor_change_stored_tasks(
    server: FuzzServer,
) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as http:
        seeds = Seeds.store(http)
        before = seeds.snapshot(http)
        assert server.new_troubles() == []
        tally = fuzz_round(server, http, rest_requests(seeds), check_rest_answer, examples=EXAMPLES)
        assert seeds.snapshot(http) == before
        assert tally["result"] > 0 and tally["stream"] > 0
        assert tally["HTTP 400 INVALID_REQUEST"] > 0 and tally["HTTP 404 TASK_NOT_FOUND"] > 0
        print(f"\nREST fuzzer, {sum(tally.values())} requests:")  # shown with -s
        for what, count in tally.most_common():
            print(f"  {count:7d}  {what}")


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, str]:
    """A keys file with Ann's and Bob's keys: (file, ann, bob)."""
    path = str(tmp_path_factory.mktemp("keys") / "keys.toml")
    return path, auth.add_key(path, "ann"), auth.add_key(path, "bob")


def test_with_auth_on_mutated_rest_requests_never_break_the_server_nor_anns_tasks(
    keys: tuple[str, str, str],
) -> None:
    path, ann, bob = keys
    credentials = [
        {"Authorization": f"Bearer {ann}"},
        {"Authorization": f"Bearer {ann}"},
        {"Authorization": f"Bearer {bob}"},
        {"X-API-Key": ann},
        {"Authorization": f"Bearer {ann}x"},
        {"Authorization": "Bearer"},  # (not "Bearer ": a 401 cuts a raw socket's long body)
        {"Authorization": f"Basic {ann}"},
        {},
    ]
    with (
        FuzzServer(auth=path, agents=AGENTS) as server,
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
            rest_requests(seeds),
            check_rest_answer,
            examples=max(100, EXAMPLES // 3),
            credentials=credentials,
        )
        assert seeds.snapshot(owner) == before
        assert tally["HTTP 401 UNAUTHENTICATED"] > 0 and tally["result"] > 0
        log = server.log()
        assert ann not in log and bob not in log
