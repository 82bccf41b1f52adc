"""Versions and bindings translated by a front (adapters/remote.py): a 1.0
caller of an upstream that speaks only A2A 0.3 (the official SDK's server with a
0.3 card), a 0.3 caller of a 1.0 upstream, an upstream reached over gRPC (the
SDK's gRPC server, no card), and what can't be translated refused with the
spec's error. Real servers on real ports."""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from a2ad import create_app
from a2ad.adapters.remote import RemoteAgent

from ..conftest import SDK_PEER, LiveServer
from ..jsonrpc import answer, rpc_body
from ..scripted import ScriptedAgent
from ..threaded_server import ThreadedServer, free_port
from .fronting import V1, front, sdk_server, send

PEERS = Path(SDK_PEER).parent


def _echo_executor() -> Any:
    spec = importlib.util.spec_from_file_location("sdk_echo_peer", SDK_PEER)
    assert spec is not None and spec.loader is not None
    peer = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(peer)
    return peer.EchoExecutor()


@pytest.fixture(scope="module")
def sdk_v03_url() -> Iterator[str]:
    """The official SDK's echo agent, whose card offers A2A 0.3 only; the JSON-RPC
    methods it is called with are noted in METHODS (what a2ad spoke)."""

    def recording(sdk: Any) -> Any:
        async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
            if scope["type"] != "http" or scope["method"] != "POST":
                await sdk(scope, receive, send)
                return
            body, more = b"", True
            while more:
                message = await receive()
                body += message.get("body", b"")
                more = message.get("more_body", False)
            METHODS.append(json.loads(body).get("method", ""))
            sent = False

            async def replay() -> dict[str, Any]:
                nonlocal sent
                if sent:
                    return await receive()
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}

            await sdk(scope, replay, send)

        return app

    with sdk_server(
        _echo_executor(), name="echo-0.3", version="0.3", skills=True, wrap=recording
    ) as url:
        yield url


METHODS: list[str] = []  # the JSON-RPC methods the 0.3 upstream was called with


@pytest.fixture(scope="module")
def sdk_grpc_address() -> Iterator[str]:
    """The official SDK's echo agent over gRPC only (bench/peers/sdk_grpc_echo.py)."""
    port = free_port()
    peer = subprocess.Popen(
        [sys.executable, str(PEERS / "sdk_grpc_echo.py"), "--port", str(port)],
        cwd=PEERS,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 20
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if peer.poll() is not None or time.monotonic() > deadline:
                peer.kill()
                raise RuntimeError(f"the SDK's gRPC peer did not start: {peer.stderr}") from None
            time.sleep(0.05)
    yield f"127.0.0.1:{port}"
    peer.terminate()
    peer.wait(10)
    assert peer.stderr is not None
    peer.stderr.close()


def _front(url: str) -> AsyncIterator[httpx.AsyncClient]:
    return front(RemoteAgent(url))


def _message(text: str) -> dict[str, Any]:
    return dict(send(text)["message"])


async def _stream(http: httpx.AsyncClient, body: dict[str, Any], headers: dict[str, str]) -> list:
    results = []
    async with http.stream("POST", "/", json=body, headers=headers) as response:
        async for line in response.aiter_lines():
            if line.startswith("data:"):
                results.append(json.loads(line[5:])["result"])
    return results


async def test_a_10_caller_uses_an_upstream_that_speaks_only_03(sdk_v03_url: str) -> None:
    async for http in _front(f"a2a+{sdk_v03_url}/"):
        card = (await http.get("/.well-known/agent-card.json")).json()
        assert card["name"] == "echo-0.3"
        assert {i["protocolVersion"] for i in card["supportedInterfaces"]} >= {"1.0", "0.3"}
        body = rpc_body("SendMessage", {"message": _message("hello old world")})
        task = answer(await http.post("/", json=body, headers=V1))["result"]["task"]
        assert task["status"]["state"] == "TASK_STATE_COMPLETED", task
        assert [p["text"] for p in task["artifacts"][0]["parts"]] == ["hello old world"]
        streamed = await _stream(
            http, rpc_body("SendStreamingMessage", {"message": _message("streamed")}), V1
        )
        assert streamed[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
        assert any("artifactUpdate" in r for r in streamed)
    # a2ad spoke 0.3 to it (streaming, as its card says it can): 0.3's methods, not 1.0's.
    assert set(METHODS) == {"message/stream"}, METHODS
    assert not {"SendMessage", "SendStreamingMessage"} & set(METHODS), METHODS


async def test_a_03_caller_uses_a_10_upstream() -> None:
    with LiveServer(create_app(ScriptedAgent())) as upstream:
        async for http in _front(f"a2a+{upstream.url}/"):
            sent = {
                "message": {
                    "kind": "message",
                    "messageId": os.urandom(8).hex(),
                    "role": "user",
                    "parts": [{"kind": "text", "text": "echo from 0.3"}],
                }
            }
            got = answer(await http.post("/", json=rpc_body("message/send", sent)))
            task = got["result"]
            assert task["kind"] == "task" and task["status"]["state"] == "completed", task
            assert task["artifacts"][0]["parts"] == [{"kind": "text", "text": "from 0.3"}]


async def test_an_upstream_reached_over_grpc_answers_callers_over_json_rpc(
    sdk_grpc_address: str,
) -> None:
    async for http in _front(f"grpc://{sdk_grpc_address}"):
        body = rpc_body("SendMessage", {"message": _message("over grpc")})
        task = answer(await http.post("/", json=body, headers=V1))["result"]["task"]
        assert task["status"]["state"] == "TASK_STATE_COMPLETED", task
        assert [p["text"] for p in task["artifacts"][0]["parts"]] == ["over grpc"]
        upstream_id = task["metadata"]["a2ad"]["upstream"]["taskId"]
        assert upstream_id and upstream_id != task["id"]


async def test_an_output_mode_the_upstream_cannot_give_is_refused_with_the_specs_error(
    sdk_v03_url: str,
) -> None:
    async for http in _front(f"a2a+{sdk_v03_url}/"):
        params = {
            "message": _message("an image please"),
            "configuration": {"acceptedOutputModes": ["image/png"]},
        }
        got = answer(await http.post("/", json=rpc_body("SendMessage", params), headers=V1))
        assert got["error"]["code"] == -32005, got  # ContentTypeNotSupportedError
        assert "image/png" in got["error"]["message"] and "text/plain" in got["error"]["message"]


@contextmanager
def _card_only(card: dict[str, Any]) -> Iterator[str]:
    """A server that serves ``card`` at the well-known path, and nothing else."""
    body = json.dumps(card).encode()

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        found = scope["path"] == "/.well-known/agent-card.json"
        await send(
            {
                "type": "http.response.start",
                "status": 200 if found else 404,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": body if found else b"{}"})

    served = ThreadedServer(app, what="a card server", interface="asgi3")
    served.start()
    try:
        yield f"http://127.0.0.1:{served.port}"
    finally:
        served.stop()


async def test_the_fronts_card_carries_what_a2ad_can_say_of_the_upstreams() -> None:
    card = {
        "name": "weather",
        "description": "Forecasts.",
        "version": "2.3.1",
        "provider": {"organization": "Meteo Lab", "url": "https://meteo.example"},
        "documentationUrl": "https://meteo.example/docs",
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain", "application/json"],
        "capabilities": {"streaming": False},
        "skills": [
            {"id": "forecast", "name": "Forecast", "description": "Tomorrow's weather.",
             "examples": ["Will it rain in Lyon?"], "outputModes": ["application/json"]},
            {"name": "no id: passed over"},
        ],
    }  # fmt: skip
    with _card_only(card) as url:
        async for http in _front(f"a2a+{url}/"):
            served = (await http.get("/.well-known/agent-card.json")).json()
    assert (served["name"], served["description"], served["version"]) == (
        "weather",
        "Forecasts.",
        "2.3.1",
    )
    assert served["provider"] == {"organization": "Meteo Lab", "url": "https://meteo.example"}
    assert served["documentationUrl"] == "https://meteo.example/docs"
    assert served["defaultOutputModes"] == ["text/plain", "application/json"]
    (skill,) = served["skills"]
    assert skill["id"] == "forecast" and skill["tags"] == ["forecast"]  # a card needs a tag
    assert skill["examples"] == ["Will it rain in Lyon?"]
    assert skill["outputModes"] == ["application/json"]
    assert served["supportedInterfaces"][0]["url"] == "http://front.test/"  # a2ad's own


async def test_an_upstream_offering_only_http_json_fails_the_turn_saying_what_is_missing() -> None:
    card = {
        "name": "rest-only",
        "description": "Speaks HTTP+JSON only.",
        "supportedInterfaces": [
            {"url": "http://127.0.0.1:9/", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"}
        ],
        "capabilities": {"streaming": True},
        "skills": [],
    }
    with _card_only(card) as url:
        async for http in _front(f"a2a+{url}/"):
            body = rpc_body("SendMessage", {"message": _message("hello")})
            task = answer(await http.post("/", json=body, headers=V1))["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_FAILED"
    said = task["status"]["message"]["parts"][0]["text"]
    assert "offers no JSON-RPC interface, only HTTP+JSON" in said, said
    assert "a2ad's client speaks JSON-RPC and gRPC" in said


async def test_an_upstream_down_at_start_is_learnt_when_it_is_back() -> None:
    port = free_port()
    agent = RemoteAgent(f"a2a+http://127.0.0.1:{port}/")
    async for http in front(agent):
        card = (await http.get("/.well-known/agent-card.json")).json()
        assert card["name"] == "remote agent"  # nothing known yet (the card stays so)
        # It comes up, and does not stream: a turn that kept streaming would be refused.
        with sdk_server(_echo_executor(), name="late", port=port, streaming=False):
            body = rpc_body("SendMessage", {"message": _message("back again")})
            task = answer(await http.post("/", json=body, headers=V1))["result"]["task"]
            assert task["status"]["state"] == "TASK_STATE_COMPLETED", task
            assert [p["text"] for p in task["artifacts"][0]["parts"]] == ["back again"]
    assert agent.name == "late" and agent.streams is False
