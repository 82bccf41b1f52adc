"""Errors: every one is a well-formed JSON-RPC error with ErrorInfo details, and no
input, however malformed, gets an HTTP 5xx or a traceback."""

from __future__ import annotations

import asyncio
import copy
import json
import re
import uuid
from typing import Any

import httpx
import pytest
from a2a.types import ListTasksResponse, SendMessageResponse, StreamResponse, Task
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from a2ad import create_app

from ..conftest import V1, Rpc, msg03, msg10
from ..jsonrpc import rpc_body
from ..scripted import ScriptedAgent
from .oracles import A2A_CODES_03, A2A_CODES_10, STANDARD_CODES, assert_error, parse_v1, validate_03

ENVELOPE = '{"jsonrpc":"2.0","id":7,"method":"%s","params":%s}'


async def post_raw(
    client: httpx.AsyncClient,
    content: bytes | str,
    *,
    headers: dict[str, str] | None = None,
    path: str = "/",
) -> httpx.Response:
    r = await client.post(
        path, content=content, headers={"Content-Type": "application/json", **(headers or {})}
    )
    assert r.status_code < 500, r.text[:500]
    assert "Traceback" not in r.text
    return r


def error_body(r: httpx.Response) -> dict[str, Any]:
    assert r.headers["content-type"].startswith("application/json"), r.headers
    return r.json()  # type: ignore[no-any-return]


def codes_for(dialect: str) -> frozenset[int]:
    return STANDARD_CODES | (A2A_CODES_10 if dialect == "1.0" else A2A_CODES_03)


# --- every error has the same shape ---


async def _not_cancelable(rpc: Rpc, v1: bool) -> dict[str, Any]:
    sent = await rpc(
        "SendMessage" if v1 else "message/send", msg10("echo x") if v1 else msg03("echo x"), v1=v1
    )
    task = sent["result"]["task"] if v1 else sent["result"]
    return await rpc("CancelTask" if v1 else "tasks/cancel", {"id": task["id"]}, v1=v1)


ERROR_CASES: list[tuple[str, int, str, Any]] = [
    # (dialect, code, reason, how) ; how = (method, params) or a coroutine factory
    ("0.3", -32001, "TASK_NOT_FOUND", ("tasks/get", {"id": "missing"})),
    ("1.0", -32001, "TASK_NOT_FOUND", ("GetTask", {"id": "missing"})),
    ("0.3", -32001, "TASK_NOT_FOUND", ("tasks/cancel", {"id": "missing"})),
    ("1.0", -32001, "TASK_NOT_FOUND", ("CancelTask", {"id": "missing"})),
    ("0.3", -32002, "TASK_NOT_CANCELABLE", _not_cancelable),
    ("1.0", -32002, "TASK_NOT_CANCELABLE", _not_cancelable),
    ("0.3", -32001, "TASK_NOT_FOUND", ("tasks/pushNotificationConfig/get", {"id": "t"})),
    ("1.0", -32001, "TASK_NOT_FOUND", ("ListTaskPushNotificationConfigs", {"taskId": "t"})),
    ("1.0", -32004, "UNSUPPORTED_OPERATION", ("GetExtendedAgentCard", {})),
    (
        "0.3",
        -32007,
        "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
        ("agent/getAuthenticatedExtendedCard", {}),
    ),
    ("0.3", -32009, "VERSION_NOT_SUPPORTED", ("GetTask", {"id": "t"})),
    ("1.0", -32009, "VERSION_NOT_SUPPORTED", ("tasks/get", {"id": "t"})),
    ("0.3", -32601, "METHOD_NOT_FOUND", ("tasks/nope", {})),
    ("1.0", -32601, "METHOD_NOT_FOUND", ("NopeTask", {})),
    ("0.3", -32602, "INVALID_PARAMS", ("tasks/get", {})),
    ("1.0", -32602, "INVALID_PARAMS", ("ListTasks", {"pageSize": 0})),
]


@pytest.mark.parametrize(
    ("dialect", "code", "reason", "how"),
    ERROR_CASES,
    ids=lambda v: getattr(v, "__name__", str(v)[:40]),  # the same ids in every process
)
async def test_every_error_carries_code_message_and_error_info(
    rpc: Rpc, dialect: str, code: int, reason: str, how: Any
) -> None:
    v1 = dialect == "1.0"
    body = await how(rpc, v1) if callable(how) else await rpc(how[0], how[1], v1=v1)
    assert body["id"] == rpc.ids or callable(how)
    # A 0.3 request cannot express -32009 in the 0.3 schema, so check its shape only.
    assert_error(body, code, reason=reason, dialect=dialect if code != -32009 else "1.0")


# --- malformed envelopes ---


@pytest.mark.parametrize(
    "content", [b"not json", b'{"jsonrpc": "2.0", "id": 1, "method": ', b"", b"\xff\xfe{}"]
)
async def test_body_that_is_not_json_is_parse_error(
    client: httpx.AsyncClient, content: bytes
) -> None:
    body = error_body(await post_raw(client, content))
    assert_error(body, -32700, reason="PARSE_ERROR", dialect="0.3")
    assert body["id"] is None


SEND_WITH = {
    "0.3": b'{"jsonrpc":"2.0","id":1,"method":"message/send",%(envelope)s"params":'
    b'{%(params)s"message":{"role":"user","parts":[{"kind":"text","text":"echo %(text)s"}]}}}',
    "1.0": b'{"jsonrpc":"2.0","id":1,"method":"SendMessage",%(envelope)s"params":{%(params)s'
    b'"message":{"messageId":"m-1","role":"ROLE_USER","parts":[{"text":"echo %(text)s"}]}}}',
}


@pytest.mark.parametrize("dialect", ["0.3", "1.0"])
@pytest.mark.parametrize(
    "bad",
    [b"\xff", b"\xc0\xaf", b"\xed\xa0\x80", b"\xe2\x80", b"\xf4\x90\x80\x80"],
    ids=["ff", "overlong", "surrogate", "truncated", "beyond-10ffff"],
)
@pytest.mark.parametrize("where", ["envelope", "params", "text"])
async def test_invalid_utf8_anywhere_in_the_body_is_a_parse_error_and_nothing_is_stored(
    client: httpx.AsyncClient, rpc: Rpc, dialect: str, bad: bytes, where: str
) -> None:
    parts = {b"envelope": b"", b"params": b"", b"text": b"ok"}
    parts[where.encode()] = b'"x-note":"%s",' % bad if where != "text" else b"ok" + bad
    content = SEND_WITH[dialect] % parts
    headers = V1 if dialect == "1.0" else {}
    body = error_body(await post_raw(client, content, headers=headers))
    error = assert_error(body, -32700, reason="PARSE_ERROR", dialect="0.3")
    assert body["id"] is None
    assert "UTF-8" in error["message"]
    listed = await rpc("ListTasks", {}, v1=True)
    assert listed["result"]["totalSize"] == 0


@pytest.mark.parametrize(
    "content",
    [
        "[]",
        '[{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"x"}}]',
        '"tasks/get"',
        "42",
        "null",
        "true",
    ],
)
async def test_body_that_is_not_a_request_object_is_invalid_request(
    client: httpx.AsyncClient, content: str
) -> None:
    body = error_body(await post_raw(client, content))
    assert_error(body, -32600, reason="INVALID_REQUEST", dialect="0.3")
    assert body["id"] is None


@pytest.mark.parametrize(
    ("content", "request_id"),
    [
        ('{"id": 1, "method": "tasks/get", "params": {"id": "x"}}', 1),
        ('{"jsonrpc": "1.0", "id": "a-1", "method": "tasks/get", "params": {"id": "x"}}', "a-1"),
        ('{"jsonrpc": "2.0", "id": 2, "params": {"id": "x"}}', 2),
        ('{"jsonrpc": "2.0", "id": -3, "method": 5}', -3),
        ('{"id": 8, "jsonrpc": 2.0, "method": "GetTask", "params": {"id": "x"}}', 8),
        # No id to read, or not one a response can carry:
        ('{"jsonrpc": "2.0", "id": {"a": 1}, "method": "tasks/get", "params": {"id": "x"}}', None),
        ('{"jsonrpc": "2.0", "id": [1], "method": "tasks/get"}', None),
        ('{"jsonrpc": "2.0", "id": true, "method": "tasks/get"}', None),
        ('{"jsonrpc": "1.0", "method": "tasks/get"}', None),
        ('{"jsonrpc": "2.0", "params": {}}', None),
    ],
)
async def test_request_object_missing_members_is_invalid_request_with_its_id(
    client: httpx.AsyncClient, content: str, request_id: Any
) -> None:
    body = error_body(await post_raw(client, content))
    assert_error(body, -32600, dialect="0.3")
    assert body["id"] == request_id and type(body["id"]) is type(request_id)


@pytest.mark.parametrize(
    ("method", "headers"),
    [
        ("SendMessage", V1),
        ("message/send", {}),
        ("SendStreamingMessage", V1),
        ("tasks/get", {}),
        ("NoSuchMethod", V1),
    ],
)
async def test_a_notification_is_neither_run_nor_answered(
    client: httpx.AsyncClient, rpc: Rpc, agent: ScriptedAgent, method: str, headers: dict[str, str]
) -> None:
    params = msg10("hang") if headers else msg03("hang")
    if method == "tasks/get":
        params = {"id": "x"}
    notification = {"jsonrpc": "2.0", "method": method, "params": params}
    r = await post_raw(client, json.dumps(notification), headers=headers)
    assert (r.status_code, r.content) == (204, b"")
    assert "content-type" not in r.headers
    assert agent.started == {}  # nothing ran
    listed = await rpc("ListTasks", {}, v1=True)
    assert listed["result"]["totalSize"] == 0


async def test_a_request_whose_id_is_null_is_answered_with_a_null_id(rpc: Rpc) -> None:
    r = await rpc.client.post(
        "/", json={"jsonrpc": "2.0", "id": None, "method": "tasks/get", "params": {"id": "x"}}
    )
    body = r.json()
    assert body["id"] is None
    assert_error(body, -32001, reason="TASK_NOT_FOUND", dialect="0.3")  # it was run


@pytest.mark.parametrize(
    ("dialect", "method"),
    [("0.3", "tasks/get"), ("1.0", "GetTask"), ("0.3", "message/send"), ("1.0", "SendMessage")],
)
@pytest.mark.parametrize("params", ["null", '["x"]', '"x"', "3"])
async def test_params_that_are_not_an_object_are_rejected(
    client: httpx.AsyncClient, dialect: str, method: str, params: str
) -> None:
    headers = V1 if dialect == "1.0" else {}
    body = error_body(await post_raw(client, ENVELOPE % (method, params), headers=headers))
    code = body["error"]["code"]
    assert code in (-32602, -32600), body
    assert_error(body, code, dialect=dialect)
    assert body["id"] == 7


# --- wrong types and sizes inside params ---

LONG = "x" * 300
WRONG_PARAMS: list[tuple[str, str, Any, str]] = [
    ("0.3", "tasks/get", {"id": 5}, "id"),
    ("1.0", "GetTask", {"id": 5}, "id"),
    ("0.3", "tasks/get", {"id": LONG}, "id"),
    ("1.0", "GetTask", {"id": LONG}, "id"),
    ("0.3", "tasks/cancel", {"id": LONG}, "id"),
    ("0.3", "tasks/get", {"id": "x", "historyLength": "3"}, "historyLength"),
    ("1.0", "GetTask", {"id": "x", "historyLength": "three"}, "historyLength"),
    ("0.3", "tasks/get", {"id": "x", "historyLength": -1}, "historyLength"),
    ("0.3", "message/send", {"message": {"role": "user", "parts": []}}, "parts"),
    (
        "1.0",
        "SendMessage",
        {"message": {"messageId": "m", "role": "ROLE_USER", "parts": []}},
        "parts",
    ),
    ("0.3", "message/send", {"message": {"role": "user", "parts": "hello"}}, "parts"),
    (
        "1.0",
        "SendMessage",
        {"message": {"messageId": "m", "role": "ROLE_USER", "parts": {"text": "x"}}},
        "parts",
    ),
    ("0.3", "message/send", {"message": {"role": "robot", "parts": [{"text": "x"}]}}, "role"),
    (
        "1.0",
        "SendMessage",
        {"message": {"messageId": "m", "role": "ROLE_ROBOT", "parts": [{"text": "x"}]}},
        "role",
    ),
    (
        "0.3",
        "message/send",
        {"message": {"role": "user", "messageId": LONG, "parts": [{"text": "x"}]}},
        "messageId",
    ),
    (
        "1.0",
        "SendMessage",
        {
            "message": {
                "messageId": "m",
                "role": "ROLE_USER",
                "contextId": LONG,
                "parts": [{"text": "x"}],
            }
        },
        "contextId",
    ),
    (
        "1.0",
        "SendMessage",
        {"message": {"role": "ROLE_USER", "parts": [{"text": "x"}]}},
        "messageId",
    ),
    (
        "1.0",
        "SendMessage",
        {"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{}]}},
        "parts",
    ),
    (
        "1.0",
        "SendMessage",
        {
            "message": {
                "messageId": "m",
                "role": "ROLE_USER",
                "parts": [{"text": "a", "url": "https://x"}],
            }
        },
        "parts",
    ),
    (
        "1.0",
        "SendMessage",
        {
            "message": {
                "messageId": "m",
                "role": "ROLE_USER",
                "parts": [{"raw": "cg==", "data": {"a": 1}}],
            }
        },
        "parts",
    ),
    (
        "0.3",
        "message/send",
        {"message": {"role": "user", "parts": [{"kind": "file", "file": {"bytes": "%%%"}}]}},
        "bytes",
    ),
    ("1.0", "ListTasks", {"pageSize": 10**30}, "pageSize"),
    ("0.3", "message/send", {}, "message"),
    ("1.0", "SendMessage", {}, "message"),
]


@pytest.mark.parametrize(
    ("dialect", "method", "params", "field"), WRONG_PARAMS, ids=lambda v: str(v)[:30]
)
async def test_wrong_param_types_are_invalid_params_naming_the_field(
    rpc: Rpc, dialect: str, method: str, params: Any, field: str
) -> None:
    body = await rpc(method, params, v1=dialect == "1.0")
    error = assert_error(body, -32602, reason="INVALID_PARAMS", dialect=dialect)
    assert re.search(rf"\b{field}\b", error["message"]), error["message"]
    assert "Traceback" not in json.dumps(body)


async def test_huge_history_length_in_0_3_never_breaks_the_server(rpc: Rpc) -> None:
    task = (await rpc("message/send", msg03("echo x")))["result"]
    body = await rpc("tasks/get", {"id": task["id"], "historyLength": 10**30})
    if "error" in body:
        assert_error(body, -32602, dialect="0.3")
    else:
        assert validate_03(body["result"], "Task")["history"] == task["history"]


@pytest.mark.parametrize("value", [2**31, 10**30])
async def test_history_length_beyond_int32_is_invalid_params_in_1_0(rpc: Rpc, value: int) -> None:
    # historyLength is `optional int32` in a2a.proto; these are not int32 values.
    task = (await rpc("SendMessage", msg10("echo x"), v1=True))["result"]["task"]
    body = await rpc("GetTask", {"id": task["id"], "historyLength": value}, v1=True)
    error = assert_error(body, -32602)
    assert "historyLength" in error["message"]


def _deep(levels: int) -> str:
    return '{"a":' * levels + "1" + "}" * levels


@pytest.mark.parametrize(
    ("dialect", "method", "params"),
    [
        (
            "0.3",
            "message/send",
            '{"message":{"role":"user","parts":[{"text":"echo x"}],"metadata":'
            + _deep(5000)
            + "}}",
        ),
        (
            "1.0",
            "SendMessage",
            '{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"echo x"}]},'
            + '"metadata":'
            + _deep(5000)
            + "}",
        ),
        (
            "1.0",
            "SendMessage",
            '{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"data":'
            + _deep(5000)
            + "}]}}",
        ),
    ],
    ids=["0.3-message-metadata", "1.0-request-metadata", "1.0-data-part"],
)
async def test_deeply_nested_metadata_is_a_client_error_not_an_internal_one(
    client: httpx.AsyncClient, dialect: str, method: str, params: str
) -> None:
    r = await post_raw(client, ENVELOPE % (method, params), headers=V1 if dialect == "1.0" else {})
    body = error_body(r)
    if "result" in body:  # accepted: then the task must also read back
        result = body["result"]
        task_id = result["task"]["id"] if dialect == "1.0" else result["id"]
        get = ENVELOPE % (
            "GetTask" if dialect == "1.0" else "tasks/get",
            json.dumps({"id": task_id}),
        )
        assert "result" in error_body(
            await post_raw(client, get, headers=V1 if dialect == "1.0" else {})
        )
        return
    code = body["error"]["code"]
    # 5000 levels is the client's doing: -32600/-32602, not "Internal error".
    assert code in (-32600, -32602), body
    assert_error(body, code, dialect=dialect)


def _nested(depth: int) -> Any:
    value: Any = "leaf"
    for i in range(depth):  # lists and objects in turn, an object outermost
        value = {"k": value} if (depth - i) % 2 else [value]
    return value


@pytest.mark.parametrize(
    ("where", "field"),
    [
        ("data", "message.parts[1].data"),
        ("part metadata", "message.parts[1].metadata"),
        ("message metadata", "message.metadata"),
        ("request metadata", "metadata"),
    ],
)
@pytest.mark.parametrize("dialect", ["0.3", "1.0"])
async def test_json_nested_past_32_levels_is_refused_naming_the_field(
    rpc: Rpc, dialect: str, where: str, field: str
) -> None:
    # A 1.0 client on the official SDK (protobuf) cannot parse a task whose values
    # nest past about 45 levels, and one such task in a ListTasks page breaks the
    # page for it: such a message is refused, not stored.
    def send(depth: int) -> dict[str, Any]:
        value = _nested(depth)
        part: dict[str, Any] = {"data": value if where == "data" else {"k": 1}}
        if where == "part metadata":
            part["metadata"] = value
        params = msg10("echo x") if dialect == "1.0" else msg03("echo x")
        params["message"]["parts"].append(part)
        if where == "message metadata":
            params["message"]["metadata"] = value
        if where == "request metadata":
            params["metadata"] = value
        return params

    method = "SendMessage" if dialect == "1.0" else "message/send"
    refused = await rpc(method, send(33), v1=dialect == "1.0")
    error = assert_error(refused, -32602, reason="INVALID_PARAMS", dialect=dialect)
    assert field in error["message"]
    assert error["data"][1]["fieldViolations"][0]["field"] == field
    listed = await rpc("ListTasks", {"includeArtifacts": True}, v1=True)
    assert listed["result"]["totalSize"] == 0

    kept = await rpc(method, send(32), v1=dialect == "1.0")
    assert "result" in kept, kept
    listed = await rpc("ListTasks", {"includeArtifacts": True}, v1=True)
    parse_v1(listed["result"], ListTasksResponse)
    assert listed["result"]["totalSize"] == 1


async def test_body_over_10_mib_is_413_with_a_json_rpc_error(client: httpx.AsyncClient) -> None:
    text = "a" * (10 * 1024 * 1024 + 1)
    content = ENVELOPE % ("message/send", json.dumps(msg03(text)))
    r = await client.post("/", content=content, headers={"Content-Type": "application/json"})
    assert r.status_code == 413
    body = error_body(r)
    assert body["error"]["code"] in STANDARD_CODES
    assert_error(body, body["error"]["code"], dialect="0.3")
    assert "Traceback" not in r.text


# --- HTTP level ---


@pytest.mark.parametrize("path", ["/", "/a2a"])
async def test_get_on_the_json_rpc_endpoint_is_405_with_json(
    client: httpx.AsyncClient, path: str
) -> None:
    r = await client.get(path)
    assert r.status_code == 405
    assert "POST" in r.headers.get("allow", "")
    body = error_body(r)
    assert_error(body, body["error"]["code"], dialect="0.3")


async def test_unknown_path_is_a_rest_404_with_a_status_body(client: httpx.AsyncClient) -> None:
    # Paths that are not JSON-RPC's or the card's belong to the HTTP+JSON binding,
    # whose errors are google.rpc.Status bodies (tests/server/test_rest.py).
    for r in (
        await client.post(
            "/no/such/path",
            json={"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"id": "x"}},
        ),
        await client.get("/no/such/path"),
    ):
        assert r.status_code == 404
        error = r.json()["error"]
        assert (error["code"], error["status"]) == (404, "NOT_FOUND")
        assert error["details"][0]["reason"] == "METHOD_NOT_FOUND"
        assert "/no/such/path" in error["message"]


# --- property: random params never break the server ---

METHODS_03 = [
    "message/send",
    "message/stream",
    "tasks/get",
    "tasks/list",
    "tasks/cancel",
    "tasks/resubscribe",
    "tasks/pushNotificationConfig/set",
    "tasks/pushNotificationConfig/get",
    "tasks/pushNotificationConfig/list",
    "tasks/pushNotificationConfig/delete",
    "agent/getAuthenticatedExtendedCard",
]
METHODS_10 = [
    "SendMessage",
    "SendStreamingMessage",
    "GetTask",
    "ListTasks",
    "CancelTask",
    "SubscribeToTask",
    "CreateTaskPushNotificationConfig",
    "GetTaskPushNotificationConfig",
    "ListTaskPushNotificationConfigs",
    "DeleteTaskPushNotificationConfig",
    "GetExtendedAgentCard",
]
CALLS = [("0.3", m) for m in METHODS_03] + [("1.0", m) for m in METHODS_10]

# Field names of the real params, so random objects sometimes get past the first check.
KEYS = [
    "message",
    "role",
    "parts",
    "text",
    "kind",
    "file",
    "bytes",
    "uri",
    "data",
    "raw",
    "url",
    "id",
    "taskId",
    "contextId",
    "messageId",
    "historyLength",
    "pageSize",
    "pageToken",
    "status",
    "configuration",
    "blocking",
    "returnImmediately",
    "metadata",
    "includeArtifacts",
    "statusTimestampAfter",
    "tenant",
    "mimeType",
    "name",
    "filename",
    "mediaType",
]
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
    | st.sampled_from(
        [
            "user",
            "ROLE_USER",
            "agent",
            "text",
            "file",
            "data",
            "completed",
            "TASK_STATE_WORKING",
            "2026-01-01T00:00:00Z",
            "AAAA",
            "",
        ]
    )
)
JSON = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=8), inner, max_size=5)
    ),
    max_leaves=25,
)
MESSAGE_03 = {
    "message": {"role": "user", "parts": [{"text": "echo x"}, {"kind": "data", "data": {"k": 1}}]},
    "configuration": {"historyLength": 2},
}
MESSAGE_10 = {
    "message": {
        "messageId": "m-1",
        "role": "ROLE_USER",
        "parts": [{"text": "echo x"}, {"url": "https://x/y", "mediaType": "a/b"}],
    },
    "configuration": {"historyLength": 2},
}
LIST = {"pageSize": 5, "status": "completed", "historyLength": 1, "includeArtifacts": True}
TEMPLATES: dict[str, Any] = {
    "message/send": MESSAGE_03,
    "message/stream": MESSAGE_03,
    "tasks/get": {"id": "t-1", "historyLength": 1},
    "tasks/list": LIST,
    "tasks/cancel": {"id": "t-1"},
    "tasks/resubscribe": {"id": "t-1"},
    "tasks/pushNotificationConfig/set": {
        "taskId": "t-1",
        "pushNotificationConfig": {"url": "https://x/h"},
    },
    "tasks/pushNotificationConfig/get": {"id": "t-1"},
    "tasks/pushNotificationConfig/list": {"id": "t-1"},
    "tasks/pushNotificationConfig/delete": {"id": "t-1", "pushNotificationConfigId": "c"},
    "agent/getAuthenticatedExtendedCard": {},
    "SendMessage": MESSAGE_10,
    "SendStreamingMessage": MESSAGE_10,
    "GetTask": {"id": "t-1", "historyLength": 1},
    "ListTasks": LIST,
    "CancelTask": {"id": "t-1"},
    "SubscribeToTask": {"id": "t-1"},
    "CreateTaskPushNotificationConfig": {"taskId": "t-1", "url": "https://x/h"},
    "GetTaskPushNotificationConfig": {"taskId": "t-1", "id": "c"},
    "ListTaskPushNotificationConfigs": {"taskId": "t-1"},
    "DeleteTaskPushNotificationConfig": {"taskId": "t-1", "id": "c"},
    "GetExtendedAgentCard": {},
}


def _slots(value: Any) -> list[tuple[Any, Any]]:
    """Every (container, key) in ``value``, nested ones included."""
    out: list[tuple[Any, Any]] = []
    items = (
        value.items()
        if isinstance(value, dict)
        else enumerate(value)
        if isinstance(value, list)
        else []
    )
    for key, child in items:
        out.append((value, key))
        out += _slots(child)
    return out


@st.composite
def near_valid(draw: st.DrawFn, template: Any) -> Any:
    """``template`` (valid params) with one member replaced by random JSON, removed, or added."""
    value = copy.deepcopy(template)
    slots = _slots(value)
    if not slots or draw(st.integers(0, 4)) == 0:
        containers = [value] + [c[k] for c, k in slots if isinstance(c[k], dict)]
        target = draw(st.sampled_from(containers))
        target[draw(st.sampled_from(KEYS) | st.text(max_size=8))] = draw(JSON)
        return value
    container, key = draw(st.sampled_from(slots))
    if isinstance(container, dict) and draw(st.booleans()):
        del container[key]
    else:
        container[key] = draw(JSON)
    return value


RESULT_CHECKS_10 = {
    "SendMessage": SendMessageResponse,
    "GetTask": Task,
    "CancelTask": Task,
    "ListTasks": ListTasksResponse,
    "SendStreamingMessage": StreamResponse,
    "SubscribeToTask": StreamResponse,
}
RESULT_CHECKS_03 = {
    "message/send": "SendMessageSuccessResponse",
    "tasks/get": "GetTaskSuccessResponse",
    "tasks/cancel": "CancelTaskSuccessResponse",
    "message/stream": "SendStreamingMessageSuccessResponse",
    "tasks/resubscribe": "SendStreamingMessageSuccessResponse",
}


def _check_response(dialect: str, method: str, request_id: str, body: dict[str, Any]) -> None:
    assert body.get("jsonrpc") == "2.0", body
    assert body.get("id") in (request_id, None), body
    assert ("result" in body) != ("error" in body), body
    if "error" in body:
        error = body["error"]
        assert isinstance(error.get("code"), int) and error["code"] in codes_for(dialect), body
        assert body["id"] == request_id, body
        assert_error(body, error["code"], dialect=dialect)
        return
    if dialect == "1.0" and method in RESULT_CHECKS_10:
        parse_v1(body["result"], RESULT_CHECKS_10[method])
    if dialect == "0.3" and method in RESULT_CHECKS_03:
        validate_03(body, RESULT_CHECKS_03[method])


async def _post_random(client: httpx.AsyncClient, dialect: str, method: str, params: Any) -> None:
    request_id = str(uuid.uuid4())
    payload = rpc_body(method, params, request_id)
    headers = V1 if dialect == "1.0" else {}
    r = await asyncio.wait_for(client.post("/", json=payload, headers=headers), timeout=10)
    assert r.status_code < 500, r.text[:500]
    assert "Traceback" not in r.text
    if r.headers["content-type"].startswith("text/event-stream"):
        events = [line[5:].strip() for line in r.text.splitlines() if line.startswith("data:")]
        assert events, r.text
        for event in events:
            _check_response(dialect, method, request_id, json.loads(event))
    else:
        _check_response(dialect, method, request_id, r.json())


def test_random_params_never_break_the_server() -> None:
    app = create_app(ScriptedAgent())
    with asyncio.Runner() as runner:
        client = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://a2ad.test"
        )

        @settings(
            max_examples=max(500, settings.default.max_examples),  # more when "deep"
            deadline=None,
            database=None,
            suppress_health_check=[HealthCheck.too_slow],
        )
        @given(call=st.sampled_from(CALLS), data=st.data())
        def check(call: tuple[str, str], data: st.DataObject) -> None:
            params = data.draw(JSON | near_valid(TEMPLATES[call[1]]), label="params")
            runner.run(_post_random(client, call[0], call[1], params))

        try:
            check()
        finally:
            runner.run(client.aclose())
            runner.run(app.aclose())
