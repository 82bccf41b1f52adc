"""The official a2a-sdk (1.x) client authenticating to a2ad with auth on, as its
users do: it reads the security schemes from the agent card, and its
``AuthInterceptor`` sends the credential its credential service holds for a
scheme named there."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from a2a.client import A2ACardResolver, ClientCallContext, ClientConfig, ClientFactory
from a2a.client.auth import AuthInterceptor, InMemoryContextCredentialStore
from a2a.client.errors import A2AClientError
from a2a.types import AgentCard, GetTaskRequest, Message, Part, Role, SendMessageRequest, TaskState

from a2ad import ApiKeys, CredentialAuthenticator, create_app
from a2ad.server.auth import add_key

from ..conftest import LiveServer
from ..scripted import ScriptedAgent

SESSION = "session-1"


@pytest.fixture
def key(tmp_path: Path) -> str:
    return add_key(str(tmp_path / "keys.toml"), "sdk-user")


@pytest.fixture
def server(tmp_path: Path, key: str) -> Iterator[LiveServer]:
    keys = ApiKeys.load(str(tmp_path / "keys.toml"))
    app = create_app(ScriptedAgent(), authenticator=CredentialAuthenticator(keys=keys))
    with LiveServer(app) as live:
        yield live


@pytest.fixture
async def card(server: LiveServer) -> AsyncIterator[AgentCard]:
    async with httpx.AsyncClient(timeout=10) as http:
        yield await A2ACardResolver(http, server.url).get_agent_card()


def message(text: str) -> SendMessageRequest:
    return SendMessageRequest(
        message=Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[Part(text=text)])
    )


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
async def test_sdk_client_authenticates_with_the_bearer_scheme_the_card_declares(
    card: AgentCard, key: str, binding: str
) -> None:
    assert card.security_schemes["bearer"].http_auth_security_scheme.scheme == "Bearer"
    assert any("bearer" in r.schemes for r in card.security_requirements)
    credentials = InMemoryContextCredentialStore()
    await credentials.set_credentials(SESSION, "bearer", key)
    config = ClientConfig(streaming=False, supported_protocol_bindings=[binding])
    client = ClientFactory(config).create(card, interceptors=[AuthInterceptor(credentials)])
    context = ClientCallContext(state={"sessionId": SESSION})
    try:
        async with asyncio.timeout(10):
            (event,) = [e async for e in client.send_message(message("hi"), context=context)]
            task = await client.get_task(GetTaskRequest(id=event.task.id), context=context)
    finally:
        await client.close()
    assert task.status.state == TaskState.TASK_STATE_COMPLETED


async def test_sdk_client_without_the_credential_is_refused(card: AgentCard) -> None:
    client = ClientFactory(ClientConfig(streaming=False)).create(card)
    try:
        with pytest.raises(A2AClientError) as refused:
            async with asyncio.timeout(10):
                _ = [e async for e in client.send_message(message("hi"))]
    finally:
        await client.close()
    assert "401" in str(refused.value)
