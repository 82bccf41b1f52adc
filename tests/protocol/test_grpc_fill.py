"""``fill`` (protocol/grpc_schema/fill.py) makes the same protobuf message of
a2ad's JSON as protobuf's own ``json_format.Parse`` does: every answer a2ad
writes, in both versions (tasks with every part kind, artifacts and history,
pages, stream events, push configs, cards with security schemes), taken from a
real app's work."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from google.protobuf import json_format

from a2ad import A2AApp, ApiKeys, CredentialAuthenticator, create_app
from a2ad.agent import ANONYMOUS
from a2ad.protocol.grpc_schema import Schema
from a2ad.protocol.grpc_schema.fill import fill
from a2ad.protocol.model import (
    ListTaskPushNotificationConfigsResponse,
    ListTasksResponse,
    Message,
    Role,
    SendMessageRequest,
    TaskArtifactUpdateEvent,
    TaskPushNotificationConfig,
    TaskStatusUpdateEvent,
    TextPart,
)
from a2ad.protocol.v03_rest import V03Rest
from a2ad.protocol.v1 import V1
from a2ad.server import auth
from a2ad.server.card import Interface, agent_card, render_card, with_security

from ..scripted import ScriptedAgent

PACKAGES = {"1.0": ("lf.a2a.v1", V1), "0.3": ("a2a.v1", V03Rest)}


@pytest.fixture
async def app(tmp_path: Path) -> AsyncIterator[A2AApp]:
    keys = tmp_path / "keys.toml"
    auth.add_key(str(keys), "alice")
    app = create_app(
        ScriptedAgent(), authenticator=CredentialAuthenticator(keys=ApiKeys.load(str(keys)))
    )
    await app.lifetime.start()
    try:
        yield app
    finally:
        await app.aclose()


def _same(schema: Schema, name: str, json: bytes) -> None:
    message = schema.message(name)
    expected = json_format.Parse(json, message(), ignore_unknown_fields=True)
    made = fill(message(), msgspec.json.decode(json))
    assert made == expected, (name, json)
    assert made.SerializeToString(deterministic=True) == expected.SerializeToString(
        deterministic=True
    )


async def _tasks(app: A2AApp) -> list[Any]:
    """What the scripted agent answers to messages of every kind, as stored."""
    tasks = []
    for text in ("parts", "chunks 3", "input which one?", "reply hi", "fail", "echo é ✓"):
        request = SendMessageRequest(
            message=Message(message_id=f"m-{text}", role=Role.USER, parts=[TextPart(text=text)])
        )
        handler = app.handler("")
        assert handler is not None
        context = handler.request_context("1.0", "GRPC", (), ANONYMOUS)
        tasks.append(await handler.send_message(request, context, dialect=V1))
    return tasks


@pytest.mark.parametrize("version", ["1.0", "0.3"])
async def test_every_answer_a2ad_writes_fills_as_json_format_parses_it(
    app: A2AApp, version: str
) -> None:
    package, dialect = PACKAGES[version]
    schema = Schema(version)  # type: ignore[arg-type]
    replies = await _tasks(app)
    for reply in replies:
        _same(schema, f"{package}.SendMessageResponse", dialect.encode_send_result(reply))
    tasks = [r for r in replies if hasattr(r, "status")]
    for task in tasks:
        _same(schema, f"{package}.Task", dialect.encode_task(task))
        _same(schema, f"{package}.StreamResponse", dialect.encode_stream_item(task, False))
        for artifact in task.artifacts:
            update = TaskArtifactUpdateEvent(
                task_id=task.id, context_id=task.context_id, artifact=artifact, append=True
            )
            _same(schema, f"{package}.StreamResponse", dialect.encode_stream_item(update, False))
        status = TaskStatusUpdateEvent(
            task_id=task.id, context_id=task.context_id, status=task.status, metadata={"k": 1}
        )
        _same(schema, f"{package}.StreamResponse", dialect.encode_stream_item(status, True))
    config = TaskPushNotificationConfig(
        url="https://hooks.example.com/a2a", id="hook", task_id=tasks[0].id, token="t0k"
    )
    _same(schema, f"{package}.TaskPushNotificationConfig", dialect.encode_push_config(config))
    configs = ListTaskPushNotificationConfigsResponse(configs=[config], next_page_token="n")
    listed = (
        "ListTaskPushNotificationConfigsResponse"
        if version == "1.0"
        else ("ListTaskPushNotificationConfigResponse")
    )
    _same(schema, f"{package}.{listed}", dialect.encode_push_config_page(configs))
    if version == "1.0":
        page = ListTasksResponse(tasks=tasks, next_page_token="n", page_size=50, total_size=9)
        _same(schema, f"{package}.ListTasksResponse", dialect.encode_page(page))


@pytest.mark.parametrize("version", ["1.0", "0.3"])
def test_cards_with_security_schemes_and_every_interface_fill_as_parsed(version: str) -> None:
    package, _ = PACKAGES[version]
    schema = Schema(version)  # type: ignore[arg-type]
    agent = ScriptedAgent()
    schemes = CredentialAuthenticator(keys=ApiKeys({})).schemes
    interfaces = (Interface("GRPC", "1.0", 50051), Interface("GRPC", "0.3", 50051))
    info = with_security(agent.card_info(), schemes)
    card = render_card(
        info, "http://a2ad.test:8000", version, extended_card=True, interfaces=interfaces
    )
    _same(schema, f"{package}.AgentCard", msgspec.json.encode(card))
    if version == "1.0":
        public = agent_card(agent, "http://a2ad.test", schemes=schemes, interfaces=interfaces)
        _same(schema, f"{package}.AgentCard", msgspec.json.encode(public))
