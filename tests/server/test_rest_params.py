"""What every HTTP+JSON body goes through before its route reads it
(server/bindings/rest_params.py): a body nested too deep, or holding a number Python
cannot read, is the caller's 400 with ErrorInfo on every route of both versions,
never a 500 and a traceback in the log. One regression test per cause an
adversarial pass found (issue 23), each over a real uvicorn.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest

from a2ad import create_app
from a2ad.cli.log_bound import MAX_LINE
from a2ad.cli.logs import JsonFormatter
from a2ad.server.bindings.rest import ROUTES
from a2ad.server.bindings.rest_params import MAX_BODY_DEPTH

from ..conformance.oracles import assert_status
from ..conftest import LiveServer
from ..scripted import ScriptedAgent


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    with LiveServer(create_app(ScriptedAgent())) as live:
        yield live


@pytest.fixture
async def http(server: LiveServer) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=server.url, timeout=10) as c:
        yield c


def nested(depth: int, shape: str = "object") -> bytes:
    """A body ``depth`` levels deep: objects in objects, or a list of lists in ``x``."""
    if shape == "object":
        return b'{"a":' * depth + b"1" + b"}" * depth
    return b'{"x":' + b"[" * (depth - 1) + b"]" * (depth - 1) + b"}"


def path_of(template: str) -> str:
    return template.replace("{id}", "t1").replace("{taskId}", "t1")


BODY_ROUTES = [r for r in ROUTES if r.body]


def troubles(caplog: pytest.LogCaptureFixture) -> list[str]:
    """What the server logged at error or above, and any line past the bound."""
    formatter = JsonFormatter()
    lines = [(r, formatter.format(r)) for r in caplog.records]
    return [line[:300] for r, line in lines if r.levelno >= logging.ERROR or len(line) > MAX_LINE]


# Every route with a body, bare and under a tenant (0.3's /v1/ paths take none).
BODY_PATHS = [
    (prefix, route)
    for route in BODY_ROUTES
    for prefix in ("", "/acme")
    if not (prefix and route.template.startswith("/v1/"))
]


@pytest.mark.parametrize(
    ("prefix", "route"), BODY_PATHS, ids=[f"{p}{r.label}" for p, r in BODY_PATHS]
)
async def test_a_body_nested_1000_deep_is_400_invalid_request_on_every_route(
    http: httpx.AsyncClient,
    caplog: pytest.LogCaptureFixture,
    route: Any,
    prefix: str,
) -> None:
    r = await http.post(prefix + path_of(route.template), content=nested(1_000))
    assert r.status_code == 400, r.text
    assert_status(400, r.json(), reason="INVALID_REQUEST")
    assert f"more than {MAX_BODY_DEPTH} levels deep" in r.json()["error"]["message"]
    assert troubles(caplog) == []


@pytest.mark.parametrize(
    "body",
    [
        b'{"message":' + b"[" * 500 + b"]" * 500 + b"}",
        b'{"request":{"content":' + b"[" * 500 + b"]" * 500 + b"}}",
        b'{"configuration":{"push_notification":' + b"[" * 500 + b"]" * 500 + b"}}",
    ],
    ids=["message", "request.content", "configuration.push_notification"],
)
async def test_a_0_3_body_with_a_list_nested_500_deep_is_400_and_logs_nothing_large(
    http: httpx.AsyncClient, caplog: pytest.LogCaptureFixture, body: bytes
) -> None:
    r = await http.post("/v1/message:send", content=body)
    assert r.status_code == 400, r.text
    assert_status(400, r.json(), reason="INVALID_REQUEST")
    assert r.json()["type"] == "InvalidRequestError"  # 0.3's error name beside it
    assert troubles(caplog) == []


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/tasks/x:cancel", b'{"id": 1e400}', "id"),
        ("/acme/message:send", b'{"tenant": 1e400}', "tenant"),
        ("/tasks/x:subscribe", b'{"id": -1e400}', "id"),
        ("/tasks/x/pushNotificationConfigs", b'{"taskId": ' + b"9" * 5_000 + b"}", "taskId"),
        ("/v1/tasks/x:cancel", b'{"id": 1e400}', "id"),
        ("/message:send", b'{"metadata": {"n": [1e999]}}', "metadata"),
    ],
)
async def test_an_out_of_range_number_is_400_invalid_params_naming_the_field(
    http: httpx.AsyncClient, caplog: pytest.LogCaptureFixture, path: str, body: bytes, field: str
) -> None:
    r = await http.post(path, content=body)
    assert r.status_code == 400, r.text
    assert_status(400, r.json(), reason="INVALID_PARAMS")
    error = r.json()["error"]
    assert f"`{field}` holds a number out of range" in error["message"]
    assert error["details"][1]["fieldViolations"][0]["field"] == field
    assert troubles(caplog) == []


async def test_a_body_at_the_depth_limit_is_read_and_one_level_more_is_refused(
    http: httpx.AsyncClient,
) -> None:
    send = b'"message":{"messageId":"m-%d","role":"ROLE_USER","parts":[{"text":"hi"}]}'
    at_limit = b"{" + send % MAX_BODY_DEPTH + b"," + nested(MAX_BODY_DEPTH, "list")[1:]
    r = await http.post("/message:send", content=at_limit)
    assert r.status_code == 200, r.text  # `x` is no field of a send: skipped
    over = b"{" + send % (MAX_BODY_DEPTH + 1) + b"," + nested(MAX_BODY_DEPTH + 1, "list")[1:]
    r = await http.post("/message:send", content=over)
    assert r.status_code == 400, r.text
    assert_status(400, r.json(), reason="INVALID_REQUEST")
