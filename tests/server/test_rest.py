"""The HTTP+JSON binding over a real uvicorn: every path in both versions, the
tenant prefix, and the errors (google.rpc.Status bodies with ErrorInfo).

1.0 answers are checked with the official 1.0 proto types (parse_v1), 0.3
answers with the official 0.3 proto (parse_03_rest), errors with assert_status.
One server (ScriptedAgent) serves the module; each test makes its own tasks.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from a2a.compat.v0_3 import a2a_v0_3_pb2 as pb03
from a2a.types import ListTasksResponse, SendMessageResponse, StreamResponse, Task

from a2ad import create_app
from a2ad.server.limits import Limits

from ..conformance.oracles import assert_status, parse_03_rest, parse_v1
from ..conftest import LiveServer, wait_for
from ..scripted import ScriptedAgent
from .sse_client import Frame, frames

TIMEOUT = 10


@pytest.fixture(scope="module")
def agent() -> ScriptedAgent:
    return ScriptedAgent()


@pytest.fixture(scope="module")
def server(agent: ScriptedAgent) -> Iterator[LiveServer]:
    with LiveServer(create_app(agent)) as live:
        yield live


@pytest.fixture
async def http(server: LiveServer) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=server.url, timeout=TIMEOUT) as c:
        yield c


def message(text: str, **extra: Any) -> dict[str, Any]:
    return {
        "message": {
            "messageId": str(uuid.uuid4()),
            "role": "ROLE_USER",
            "parts": [{"text": text}],
            **extra,
        }
    }


def message_03(text: str) -> dict[str, Any]:
    """A 0.3 send body as the Python SDK's 0.3 client writes it: proto field names."""
    return {
        "request": {
            "message_id": str(uuid.uuid4()),
            "role": "ROLE_USER",
            "content": [{"text": text}],
        },
        "configuration": {"accepted_output_modes": ["text/plain"], "blocking": True},
    }


async def send(
    http: httpx.AsyncClient, text: str, prefix: str = "", **extra: Any
) -> dict[str, Any]:
    r = await http.post(f"{prefix}/message:send", json=message(text, **extra))
    assert r.status_code == 200, r.text
    assert r.headers["content-type"] == "application/json"
    parse_v1(r.json(), SendMessageResponse)
    return r.json()["task"]  # type: ignore[no-any-return]


async def error(r: httpx.Response, status: int, reason: str) -> dict[str, Any]:
    assert r.status_code == status, r.text
    assert r.headers["content-type"] == "application/json"
    assert "Traceback" not in r.text
    assert_status(status, r.json(), reason=reason)
    return r.json()["error"]  # type: ignore[no-any-return]


async def sse(http: httpx.AsyncClient, method: str, path: str, **kwargs: Any) -> list[Frame]:
    async with http.stream(method, path, **kwargs) as r:
        assert r.status_code == 200, (await r.aread()).decode()
        assert r.headers["content-type"] == "text/event-stream"
        return [f async for f in frames(r)]


# --- A2A 1.0 ------------------------------------------------------------------


async def test_send_answers_a_send_message_response_and_get_reads_the_task(
    http: httpx.AsyncClient,
) -> None:
    task = await send(http, "echo hello rest")
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert task["artifacts"][0]["parts"] == [{"text": "hello rest"}]
    r = await http.get(f"/tasks/{task['id']}")
    assert r.status_code == 200
    assert parse_v1(r.json(), Task).id == task["id"]
    assert r.json() == task


async def test_a_reply_is_a_message_response(http: httpx.AsyncClient) -> None:
    r = await http.post("/message:send", json=message("reply hi"))
    assert r.status_code == 200
    assert parse_v1(r.json(), SendMessageResponse).message.parts[0].text == "hi"


async def test_get_honours_history_length_from_the_query(http: httpx.AsyncClient) -> None:
    task = await send(http, "echo history")
    assert len(task["history"]) == 2  # the user's message, the agent's "on it"
    for query, count in (("historyLength=1", 1), ("historyLength=0", 0), ("history_length=1", 1)):
        r = await http.get(f"/tasks/{task['id']}?{query}")
        assert r.status_code == 200, r.text
        assert len(r.json().get("history", [])) == count, query


async def test_list_takes_every_filter_as_a_query_parameter(http: httpx.AsyncClient) -> None:
    context = f"ctx-{uuid.uuid4()}"
    done = [(await send(http, f"echo {i}", contextId=context))["id"] for i in range(3)]
    failed = (await send(http, "fail", contextId=context))["id"]

    async def listing(query: str) -> dict[str, Any]:
        r = await http.get(f"/tasks?contextId={context}&{query}")
        assert r.status_code == 200, r.text
        parse_v1(r.json(), ListTasksResponse)
        return r.json()  # type: ignore[no-any-return]

    page = await listing("status=TASK_STATE_COMPLETED&pageSize=2&includeArtifacts=true")
    assert page["totalSize"] == 3 and page["pageSize"] == 2 and page["nextPageToken"]
    assert all("artifacts" in t for t in page["tasks"])
    rest = await listing(f"status=completed&pageSize=2&pageToken={page['nextPageToken']}")
    assert sorted(t["id"] for t in page["tasks"] + rest["tasks"]) == sorted(done)
    assert rest["nextPageToken"] == ""
    assert [t["id"] for t in (await listing("status=failed"))["tasks"]] == [failed]
    without = await listing("historyLength=0&include_artifacts=false")
    assert all("artifacts" not in t and "history" not in t for t in without["tasks"])
    assert without["totalSize"] == 4
    later = await listing("statusTimestampAfter=2999-01-01T00:00:00Z")
    assert later["tasks"] == [] and later["totalSize"] == 0


async def test_cancel_a_running_task_then_not_cancelable(
    http: httpx.AsyncClient, agent: ScriptedAgent
) -> None:
    body = message("hang")
    body["configuration"] = {"returnImmediately": True}
    r = await http.post("/message:send", json=body)
    task = r.json()["task"]
    await wait_for(lambda: task["id"] in agent.started)
    r = await http.post(f"/tasks/{task['id']}:cancel")
    assert r.status_code == 200, r.text
    assert parse_v1(r.json(), Task).status.state == 5  # TASK_STATE_CANCELED
    # The body may repeat the path's id (the SDK sends the whole CancelTaskRequest).
    again = await http.post(f"/tasks/{task['id']}:cancel", json={"id": task["id"]})
    err = await error(again, 400, "TASK_NOT_CANCELABLE")
    assert err["status"] == "FAILED_PRECONDITION"
    assert err["details"][0]["metadata"]["taskId"] == task["id"]


async def test_stream_data_lines_are_bare_stream_responses(http: httpx.AsyncClient) -> None:
    got = await sse(http, "POST", "/message:stream", json=message("chunks 2"))
    events = [parse_v1(f.data, StreamResponse) for f in got]
    kinds = [e.WhichOneof("payload") for e in events]
    assert kinds[0] == "task" and kinds[-1] == "status_update"
    assert [
        e.artifact_update.artifact.parts[0].text for e in events if e.HasField("artifact_update")
    ] == [
        "c0",
        "c1",
    ]
    assert got[-1].data["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert [f.id for f in got] == sorted(f.id for f in got if f.id is not None)


async def start_hanging(http: httpx.AsyncClient, agent: ScriptedAgent, prefix: str = "") -> str:
    body = message("hang")
    body["configuration"] = {"returnImmediately": True}
    r = await http.post(f"{prefix}/message:send", json=body)
    assert r.status_code == 200, r.text
    task_id: str = r.json()["task"]["id"]
    await wait_for(lambda: task_id in agent.started)
    return task_id


@pytest.mark.parametrize("verb", ["GET", "POST"])
async def test_subscribe_by_get_or_post_follows_a_running_task_to_its_end(
    http: httpx.AsyncClient, agent: ScriptedAgent, verb: str
) -> None:
    task_id = await start_hanging(http, agent)
    async with http.stream(verb, f"/tasks/{task_id}:subscribe") as r:
        assert r.status_code == 200
        events = frames(r)
        first = await anext(events)
        assert parse_v1(first.data, StreamResponse).task.id == task_id
        assert (await http.post(f"/tasks/{task_id}:cancel")).status_code == 200
        rest = [f async for f in events]
    assert rest[-1].data["statusUpdate"]["status"]["state"] == "TASK_STATE_CANCELED"


async def test_subscribe_with_last_event_id_replays_the_events_after_it(
    http: httpx.AsyncClient,
) -> None:
    task = await send(http, "chunks 3")
    got = await sse(http, "GET", f"/tasks/{task['id']}:subscribe", headers={"Last-Event-ID": "2"})
    assert got[0].id == 3
    assert got[-1].data["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_subscribe_to_a_finished_task_is_unsupported(http: httpx.AsyncClient) -> None:
    task = await send(http, "echo done")
    r = await http.post(f"/tasks/{task['id']}:subscribe")
    await error(r, 400, "UNSUPPORTED_OPERATION")


async def test_every_path_is_served_under_a_tenant_prefix(
    http: httpx.AsyncClient, agent: ScriptedAgent
) -> None:
    task = await send(http, "echo tenant", prefix="/acme")
    assert (await http.get(f"/acme/tasks/{task['id']}?historyLength=1")).status_code == 200
    listed = await http.get(f"/acme/tasks?contextId={task['contextId']}")
    assert [t["id"] for t in listed.json()["tasks"]] == [task["id"]]
    got = await sse(http, "POST", "/acme/message:stream", json=message("echo s"))
    assert got[-1].data["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    hanging = await start_hanging(http, agent, prefix="/acme")
    assert (await http.post(f"/acme/tasks/{hanging}:cancel")).status_code == 200
    await error(
        await http.post(f"/acme/tasks/{task['id']}:subscribe"), 400, "UNSUPPORTED_OPERATION"
    )
    # The body may name the tenant too, but not another one.
    r = await http.post("/acme/message:send", json={**message("echo x"), "tenant": "acme"})
    assert r.status_code == 200
    r = await http.post("/acme/message:send", json={**message("echo x"), "tenant": "other"})
    assert "tenant" in (await error(r, 400, "INVALID_PARAMS"))["message"]


async def test_push_config_and_extended_card_paths_reach_their_operations(
    http: httpx.AsyncClient,
) -> None:
    task = await send(http, "echo push")
    base = f"/tasks/{task['id']}/pushNotificationConfigs"
    for method, path, body in (
        ("POST", base, {"url": "https://example.com/hook"}),
        ("GET", base, None),
        ("GET", f"{base}/c1", None),
        ("DELETE", f"{base}/c1", None),
        ("POST", "/v1" + base, {"url": "https://example.com/hook"}),
        ("GET", "/v1" + base, None),
        ("GET", f"/v1{base}/c1", None),
        ("DELETE", f"/v1{base}/c1", None),
        ("GET", "/extendedAgentCard", None),
        ("GET", "/v1/card", None),
        ("GET", "/acme/extendedAgentCard", None),
    ):
        r = await http.request(method, path, json=body)
        # Answered by the operation (supported or not), not by the router.
        if r.status_code != 200:
            assert_status(r.status_code, r.json())
            assert r.json()["error"]["details"][0]["reason"] not in (
                "METHOD_NOT_FOUND",
                "INVALID_REQUEST",
            ), (method, path, r.text)


# --- errors -------------------------------------------------------------------


async def test_an_unknown_task_is_404_not_found(http: httpx.AsyncClient) -> None:
    for path in ("/tasks/no-such-task", "/v1/tasks/no-such-task", "/acme/tasks/no-such-task"):
        err = await error(await http.get(path), 404, "TASK_NOT_FOUND")
        assert err["status"] == "NOT_FOUND" and "no-such-task" in err["message"]
    await error(await http.post("/tasks/no-such-task:cancel"), 404, "TASK_NOT_FOUND")


@pytest.mark.parametrize(
    "path", ["/nothing", "/tasks/x/y/z/w", "/message:sendit", "/v1/extendedAgentCard", "/a/b/c"]
)
async def test_an_unknown_path_is_404_naming_the_paths_served(
    http: httpx.AsyncClient, path: str
) -> None:
    err = await error(await http.get(path), 404, "METHOD_NOT_FOUND")
    assert path in err["message"] and "/message:send" in err["message"]


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("GET", "/message:send", "POST"),
        ("DELETE", "/tasks/t1", "GET"),
        ("PUT", "/tasks/t1:subscribe", "GET, POST"),
        ("POST", "/tasks", "GET"),
        ("PATCH", "/tasks/t1/pushNotificationConfigs/c1", "DELETE, GET"),
        ("GET", "/v1/message:stream", "POST"),
        ("POST", "/acme/tasks/t1", "GET"),
    ],
)
async def test_a_wrong_method_is_405_with_allow(
    http: httpx.AsyncClient, method: str, path: str, allow: str
) -> None:
    r = await http.request(method, path)
    await error(r, 405, "INVALID_REQUEST")
    assert r.headers["allow"] == allow


@pytest.mark.parametrize("path", ["/message:send", "/v1/message:send"])
async def test_a_body_that_is_not_json_is_400_parse_error(
    http: httpx.AsyncClient, path: str
) -> None:
    await error(await http.post(path, content=b'{"message": '), 400, "PARSE_ERROR")
    await error(await http.post(path, content=b"\xff\xfe"), 400, "PARSE_ERROR")
    await error(await http.post(path, json=["not", "an", "object"]), 400, "INVALID_REQUEST")
    # Invalid UTF-8 in a member no decoder reads is still the body's fault, and no task is made.
    before = (await http.get("/tasks")).json()["totalSize"]
    sneaky = (
        b'{"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x"}]},'
        b' "x": "\xff"}'
    )
    await error(await http.post(path, content=sneaky), 400, "PARSE_ERROR")
    assert (await http.get("/tasks")).json()["totalSize"] == before


async def test_invalid_params_name_the_field(http: httpx.AsyncClient) -> None:
    err = await error(await http.post("/message:send", json={}), 400, "INVALID_PARAMS")
    assert "message" in err["message"]
    bad_role = message("x")
    bad_role["message"]["role"] = "ROLE_ROBOT"
    err = await error(await http.post("/message:send", json=bad_role), 400, "INVALID_PARAMS")
    assert "role" in err["message"]


@pytest.mark.parametrize(
    ("query", "name"),
    [
        ("historyLength=many", "historyLength"),
        ("historyLength=1.5", "historyLength"),
        ("historyLength=", "historyLength"),
        ("historyLength=-1", "historyLength"),
        ("historyLength=1&historyLength=2", "historyLength"),
        ("history=1", "history"),
    ],
)
async def test_a_bad_query_parameter_on_get_is_400_naming_it(
    http: httpx.AsyncClient, query: str, name: str
) -> None:
    task = await send(http, "echo q")
    err = await error(await http.get(f"/tasks/{task['id']}?{query}"), 400, "INVALID_PARAMS")
    assert name in err["message"]


@pytest.mark.parametrize(
    "query",
    [
        "pageSize=0",
        "pageSize=101",
        "pageSize=ten",
        "includeArtifacts=yes",
        "status=sleeping",
        "statusTimestampAfter=yesterday",
        "pageToken=not-a-token",
        "sort=id",
    ],
)
async def test_a_bad_query_parameter_on_list_is_400(http: httpx.AsyncClient, query: str) -> None:
    name = query.partition("=")[0]
    err = await error(await http.get(f"/tasks?{query}"), 400, "INVALID_PARAMS")
    assert name in err["message"] or name.lower() in err["message"].lower(), err


async def test_a_body_over_the_limit_is_413() -> None:
    app = create_app(ScriptedAgent(), limits=Limits(max_body_bytes=1000))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://a2ad.test") as c:
        r = await c.post("/message:send", json=message("x" * 2000))
        err = await error(r, 413, "INVALID_REQUEST")
        assert "1000 bytes" in err["message"]
    await app.aclose()


@pytest.mark.parametrize(
    ("path", "version", "hint"),
    [
        ("/tasks/t1", "0.3", "GET /v1/tasks/{id}"),
        ("/v1/tasks/t1", "1.0", "GET /tasks/{id}"),
        ("/tasks/t1", "2.0", "1.0"),
    ],
)
async def test_a_version_other_than_the_paths_is_version_not_supported(
    http: httpx.AsyncClient, path: str, version: str, hint: str
) -> None:
    r = await http.get(path, headers={"A2A-Version": version})
    err = await error(r, 400, "VERSION_NOT_SUPPORTED")
    assert hint in err["message"]
    r = await http.get(f"{path}?A2A-Version={version}")
    await error(r, 400, "VERSION_NOT_SUPPORTED")


async def test_the_version_the_path_says_may_be_sent_too(http: httpx.AsyncClient) -> None:
    task = await send(http, "echo v")
    r = await http.get(f"/tasks/{task['id']}", headers={"A2A-Version": "1.0.2"})
    assert r.status_code == 200
    r = await http.get(f"/v1/tasks/{task['id']}?A2A-Version=0.3")
    assert r.status_code == 200


async def test_requests_may_be_labelled_application_a2a_json(http: httpx.AsyncClient) -> None:
    import json

    r = await http.post(
        "/message:send",
        content=json.dumps(message("echo typed")).encode(),
        headers={"Content-Type": "application/a2a+json"},
    )
    assert r.status_code == 200 and r.json()["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


# --- A2A 0.3 (/v1/) -------------------------------------------------------------


async def send_03(http: httpx.AsyncClient, body: dict[str, Any]) -> dict[str, Any]:
    r = await http.post("/v1/message:send", json=body)
    assert r.status_code == 200, r.text
    parse_03_rest(r.json(), pb03.SendMessageResponse)
    return r.json()["task"]  # type: ignore[no-any-return]


async def test_0_3_send_reads_the_sdk_body_and_answers_0_3_proto_json(
    http: httpx.AsyncClient,
) -> None:
    task = await send_03(http, message_03("parts"))
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    parts = {a["name"]: a["parts"] for a in task["artifacts"]}
    assert parts["text"] == [{"text": "plain text"}]
    assert parts["data"] == [{"data": {"data": {"n": 1, "xs": [1, 2]}}}]
    assert parts["raw"] == [
        {
            "file": {
                # base64 of the base64 text, as the official SDKs write it
                "fileWithBytes": "QUFGaWVYUmxjdz09",
                "mimeType": "application/octet-stream",
                "name": "b.bin",
            }
        }
    ]
    assert parts["url"][0]["file"]["fileWithUri"] == "https://example.com/f.pdf"
    assert task["history"][0]["role"] == "ROLE_USER"
    assert task["history"][0]["content"] == [{"text": "parts"}]


async def test_0_3_send_without_blocking_returns_at_once_as_the_proto_says(
    http: httpx.AsyncClient, agent: ScriptedAgent
) -> None:
    body = message_03("hang")
    del body["configuration"]["blocking"]  # a proto bool: absent is false
    task = await send_03(http, body)
    assert task["status"]["state"] in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING")
    await wait_for(lambda: task["id"] in agent.started)
    assert (await http.post(f"/v1/tasks/{task['id']}:cancel")).status_code == 200


async def test_0_3_file_bytes_are_read_encoded_twice_or_once(http: httpx.AsyncClient) -> None:
    once = base64.b64encode(b"\x00\xffbinary").decode()
    twice = base64.b64encode(once.encode()).decode()
    for encoded in (once, twice):
        body = message_03("echo file")
        body["request"]["content"].append({"file": {"file_with_bytes": encoded, "name": "b"}})
        task = await send_03(http, body)
        (part,) = [p for p in task["history"][0]["content"] if "file" in p]
        assert part["file"] == {"fileWithBytes": twice, "name": "b"}


async def test_0_3_send_also_reads_json_rpc_shaped_bodies(http: httpx.AsyncClient) -> None:
    body = {
        "message": {
            "messageId": str(uuid.uuid4()),
            "role": "user",
            "kind": "message",
            "parts": [
                {"kind": "text", "text": "echo js"},
                {"kind": "data", "data": {"data": 1}},
                {
                    "kind": "file",
                    "file": {"uri": "https://example.com/a", "mimeType": "text/plain"},
                },
            ],
        },
        "configuration": {"blocking": True, "acceptedOutputModes": ["text/plain"]},
    }
    task = await send_03(http, body)
    content = task["history"][0]["content"]
    assert content[1] == {"data": {"data": {"data": 1}}}  # kind "data": the value itself
    assert content[2]["file"] == {"fileWithUri": "https://example.com/a", "mimeType": "text/plain"}


async def test_0_3_get_cancel_and_list(http: httpx.AsyncClient, agent: ScriptedAgent) -> None:
    task = await send_03(http, message_03("echo old"))
    r = await http.get(f"/v1/tasks/{task['id']}?historyLength=1")
    assert r.status_code == 200
    got = parse_03_rest(r.json(), pb03.Task)
    assert got.id == task["id"] and len(got.history) == 1
    hanging = await start_hanging(http, agent)
    r = await http.post(f"/v1/tasks/{hanging}:cancel")
    assert r.status_code == 200
    assert r.json()["status"]["state"] == "TASK_STATE_CANCELLED"  # the 0.3 proto's spelling
    parse_03_rest(r.json(), pb03.Task)
    r = await http.get(f"/v1/tasks?contextId={task['contextId']}")
    assert [t["id"] for t in r.json()["tasks"]] == [task["id"]]


async def test_0_3_errors_also_carry_the_error_type(http: httpx.AsyncClient) -> None:
    r = await http.get("/v1/tasks/no-such-task")
    await error(r, 404, "TASK_NOT_FOUND")
    assert r.json()["type"] == "TaskNotFoundError"
    assert r.json()["message"] == r.json()["error"]["message"]


async def test_0_3_stream_and_subscribe(http: httpx.AsyncClient, agent: ScriptedAgent) -> None:
    got = await sse(http, "POST", "/v1/message:stream", json=message_03("chunks 2"))
    events = [parse_03_rest(f.data, pb03.StreamResponse) for f in got]
    assert events[0].WhichOneof("payload") == "task"
    finals = [e.status_update.final for e in events if e.HasField("status_update")]
    assert finals[-1] is True and not any(finals[:-1])
    task_id = events[0].task.id
    replay = await sse(
        http, "POST", f"/v1/tasks/{task_id}:subscribe", headers={"Last-Event-ID": "1"}
    )
    assert replay[0].id == 2
    assert replay[-1].data["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
