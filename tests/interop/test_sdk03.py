"""The official A2A 0.3 SDK's client (a2a-sdk 0.3.x) against a2ad under a real uvicorn.

The 0.3 SDK cannot share a venv with the 1.x SDK the suite runs on, so it gets one of
its own, `.venv/sdk03`, made on the first run (and again when `SDK03` changes). A
user's script, tests/interop/sdk03_client.py, runs there once against one a2ad: it reads the
card a2ad serves without `A2A-Version` with A2ACardResolver, lets ClientFactory pick
JSON-RPC and then HTTP+JSON from it, runs every scenario through both and prints one
JSON line per scenario. The tests below check those lines.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from a2ad import create_app
from a2ad.engine.config import EngineConfig

from ..conftest import LiveServer, wait_for
from ..scripted import ScriptedAgent
from ..webhook_receiver import Receiver

# The one place the 0.3 SDK is pinned. The client needs no extra: a2a-sdk itself
# requires httpx and httpx-sse ([http-server] adds only the server's FastAPI/Starlette).
SDK03 = "0.3.26"
REQUIREMENT = f"a2a-sdk=={SDK03}"
VENV = Path(__file__).parents[2] / ".venv" / "sdk03"  # git-ignored, kept between runs
CLIENT = Path(__file__).with_name("sdk03_client.py")
CLIENT_TIMEOUT = 60

TRANSPORTS = ["JSONRPC", "HTTP+JSON"]


@pytest.fixture(scope="session")
def sdk03_python() -> Path:
    """The Python of a venv holding the pinned 0.3 SDK: made unless it is there."""
    python = VENV / "bin" / "python"
    stamp = VENV / "a2ad-requirement"  # written last: a venv without it is half made
    if python.exists() and stamp.exists() and stamp.read_text() == REQUIREMENT:
        return python
    shutil.rmtree(VENV, ignore_errors=True)
    # No pip of its own (ensurepip took half the time): this venv's pip installs into it.
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet"]
    make = [sys.executable, "-m", "venv", "--without-pip", str(VENV)]
    for step in (make, [*pip, "--disable-pip-version-check", REQUIREMENT]):
        done = subprocess.run(step, capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            pytest.fail(
                f"could not make the venv of the A2A 0.3 SDK ({REQUIREMENT}) at {VENV}: "
                f"{' '.join(step)} exited {done.returncode}\n"
                f"{done.stdout[-3000:]}{done.stderr[-3000:]}",
                pytrace=False,
            )
    stamp.write_text(REQUIREMENT)
    return python


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    with Receiver() as r:
        yield r


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    with LiveServer(
        create_app(ScriptedAgent(), engine=EngineConfig(allow_private_webhooks=True))
    ) as live:
        yield live


Lines = dict[tuple[str, str], dict[str, Any]]


@pytest.fixture(scope="module")
def lines(sdk03_python: Path, server: LiveServer, receiver: Receiver) -> Lines:
    """Every scenario's line, by (transport, scenario), from one run of the client."""
    command = [str(sdk03_python), "-I", str(CLIENT), server.url, f"{receiver.base}/hook"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=CLIENT_TIMEOUT)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(
            f"{CLIENT.name} did not finish in {CLIENT_TIMEOUT} s; stdout:\n{exc.stdout!r}\n"
            f"stderr:\n{exc.stderr!r}",
            pytrace=False,
        )
    if done.returncode != 0:
        pytest.fail(
            f"{CLIENT.name} exited {done.returncode}; stderr:\n{done.stderr}", pytrace=False
        )
    parsed = [json.loads(line) for line in done.stdout.splitlines()]
    return {(p.pop("transport"), p.pop("scenario")): p for p in parsed}


def seen(lines: Lines, transport: str, scenario: str) -> dict[str, Any]:
    line = lines.get((transport, scenario))
    assert line is not None, f"{CLIENT.name} printed no {scenario!r} line for {transport!r}"
    assert "raised" not in line, f"{scenario} over {transport} raised:\n{line['raised']}"
    return line


def texts(message_or_artifact: dict[str, Any]) -> list[str]:
    return [p["text"] for p in message_or_artifact["parts"]]


# --- the card --------------------------------------------------------------------


def test_sdk03_reads_the_card_served_without_a_version(lines: Lines, server: LiveServer) -> None:
    line = seen(lines, "", "card")
    assert line["sdk"] == SDK03
    card = line["card"]
    root = server.url + "/"
    assert (card["name"], card["url"], card["preferredTransport"]) == ("scripted", root, "JSONRPC")
    assert card["protocolVersion"].startswith("0.3")
    assert card["additionalInterfaces"] == [
        {"transport": "JSONRPC", "url": root},
        {"transport": "HTTP+JSON", "url": root},
    ]
    assert card["capabilities"]["streaming"] is True
    assert card["capabilities"]["pushNotifications"] is True
    assert [s["name"] for s in card["skills"]] == ["scripted"]


# --- message/send, message/stream, tasks/get -----------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_sdk03_send_returns_the_completed_task_with_its_artifact(
    lines: Lines, transport: str
) -> None:
    task = seen(lines, transport, "send")["task"]
    assert task["status"]["state"] == "completed"
    assert [(a["name"], texts(a)) for a in task["artifacts"]] == [("echo", ["hello there"])]
    assert [(m["role"], texts(m)) for m in task["history"]] == [
        ("user", ["echo hello there"]),
        ("agent", ["on it"]),
    ]
    assert task["id"] and task["contextId"]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_sdk03_stream_gives_the_task_then_chunks_then_a_final_status(
    lines: Lines, transport: str
) -> None:
    events = seen(lines, transport, "stream")["events"]
    assert events[0]["update"] is None  # the task itself comes first
    task_id = events[0]["task"]["id"]
    assert events[0]["task"]["status"]["state"] == "submitted"

    updates = [e["update"] for e in events[1:]]
    assert {u["taskId"] for u in updates} == {task_id}
    chunks = [u for u in updates if u["kind"] == "artifact-update"]
    assert [
        (texts(c["artifact"]), bool(c.get("append")), bool(c.get("lastChunk"))) for c in chunks
    ] == [
        (["c0"], False, False),
        (["c1"], True, False),
        (["c2"], True, True),
    ]
    statuses = [u for u in updates if u["kind"] == "status-update"]
    assert [(s["status"]["state"], s["final"]) for s in statuses] == [
        ("working", False),
        ("completed", True),
    ]
    assert updates[-1] is statuses[-1]

    # The SDK's task tracker put the chunks together into one artifact.
    last = events[-1]["task"]
    assert last["status"]["state"] == "completed"
    assert [texts(a) for a in last["artifacts"]] == [["c0", "c1", "c2"]]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_sdk03_get_task_honours_history_length(lines: Lines, transport: str) -> None:
    line = seen(lines, transport, "get")
    sent, got = line["sent"], line["got"]
    assert got["id"] == sent["id"]
    assert got["status"]["state"] == "completed"
    assert len(sent["history"]) == 2
    assert got["history"] == sent["history"][-1:]
    assert got["artifacts"] == sent["artifacts"]


# --- tasks/cancel and errors ----------------------------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_sdk03_cancels_a_running_task_and_a_second_cancel_is_not_cancelable(
    lines: Lines, transport: str
) -> None:
    line = seen(lines, transport, "cancel")
    assert line["before"] == "working"
    assert line["canceled"]["status"]["state"] == "canceled"
    again = line["again"]
    if transport == "JSONRPC":
        assert again["code"] == -32002, again
        assert "canceled" in again["message"]
    else:  # the SDK's REST client raises the HTTP status; the body says the rest
        assert again["status"] == 400, again
        body = again["body"]
        assert body["type"] == "TaskNotCancelableError"
        assert body["error"]["details"][0]["reason"] == "TASK_NOT_CANCELABLE"
        assert "canceled" in body["message"]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_sdk03_get_of_an_unknown_task_is_not_found(lines: Lines, transport: str) -> None:
    line = seen(lines, transport, "unknown")
    if transport == "JSONRPC":
        assert line["code"] == -32001, line
        assert "no-such-task" in line["message"]
    else:
        assert line["status"] == 404, line
        assert line["body"]["type"] == "TaskNotFoundError"
        assert line["body"]["error"]["details"][0]["reason"] == "TASK_NOT_FOUND"
        assert "no-such-task" in line["body"]["message"]


# --- push notifications ---------------------------------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_sdk03_sets_a_push_config_and_its_webhook_gets_the_task(
    lines: Lines, receiver: Receiver, transport: str
) -> None:
    line = seen(lines, transport, "push_set")
    task = line["task"]
    assert task["status"]["state"] == "input-required"
    url = f"{receiver.base}/hook/{transport}"
    assert line["set"] == {
        "taskId": task["id"],
        "pushNotificationConfig": {"id": "hook", "url": url, "token": "****"},  # masked
    }
    await wait_for(lambda: receiver.accepted(transport))
    (delivered,) = receiver.accepted(transport)
    assert delivered.headers["x-a2a-notification-token"] == "tok-03"
    body = delivered.body  # a 0.3 webhook gets the 0.3 Task
    assert (body["kind"], body["id"], body["status"]["state"]) == (
        "task",
        task["id"],
        "input-required",
    )


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_sdk03_gets_the_push_config_it_set(
    lines: Lines, receiver: Receiver, transport: str
) -> None:
    was_set = seen(lines, transport, "push_set")["set"]
    got = seen(lines, transport, "push_get")["got"]
    assert got["taskId"] == was_set["taskId"]
    assert got["pushNotificationConfig"] == {
        "id": "hook",
        "url": f"{receiver.base}/hook/{transport}",
        "token": "****",  # masked in every answer
    }
