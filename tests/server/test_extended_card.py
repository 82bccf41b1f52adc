"""Who gets the extended agent card: ``create_app(extended_card_check=...)`` decides
(every caller by default, until callers are authenticated), then the agent's
``extended_card(request)``; a refused caller gets -32007 in 1.0 and 0.3."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from a2ad import A2AApp, AgentCardInfo, RequestContext, create_app

from ..agents.sample_agents import STYLE, Storefront
from ..conformance.oracles import assert_error, assert_status
from ..jsonrpc import rpc_body

METHODS = {True: "GetExtendedAgentCard", False: "agent/getAuthenticatedExtendedCard"}


@pytest.fixture(params=[True, False], ids=["1.0", "0.3"])
def v1(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


async def get_card(app: A2AApp, *, v1: bool) -> dict[str, Any]:
    headers = {"A2A-Version": "1.0", "A2A-Extensions": STYLE} if v1 else {"X-A2A-Extensions": STYLE}
    body = rpc_body(METHODS[v1], {}, 3)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://a2ad.test") as client:
        r = await client.post("/", json=body, headers=headers)
    await app.aclose()
    assert r.status_code == 200
    return r.json()  # type: ignore[no-any-return]


def skill_ids(body: dict[str, Any]) -> list[str]:
    return [s["id"] for s in body["result"]["skills"]]


async def test_by_default_every_caller_gets_the_extended_card(v1: bool) -> None:
    body = await get_card(create_app(Storefront()), v1=v1)
    assert skill_ids(body) == ["search", "restock"]


async def test_a_check_that_refuses_answers_not_configured(v1: bool) -> None:
    app = create_app(Storefront(), extended_card_check=lambda request: False)
    error = assert_error(
        await get_card(app, v1=v1),
        -32007,
        reason="EXTENDED_AGENT_CARD_NOT_CONFIGURED",
        dialect="1.0" if v1 else "0.3",
    )
    assert "not available to this caller" in error["message"]


async def test_the_check_sees_the_request_context_and_may_be_async(v1: bool) -> None:
    seen: list[RequestContext] = []

    async def check(request: RequestContext) -> bool:
        seen.append(request)
        return True

    body = await get_card(create_app(Storefront(), extended_card_check=check), v1=v1)
    assert skill_ids(body) == ["search", "restock"]
    (request,) = seen
    assert request.version == ("1.0" if v1 else "0.3")
    assert request.binding == "JSONRPC"
    assert request.extensions == {STYLE}


class OnlyFor10(Storefront):
    """Its extended card is for 1.0 callers only: the agent decides per request."""

    def extended_card(self, request: RequestContext) -> AgentCardInfo | None:
        return super().extended_card(request) if request.version == "1.0" else None


async def test_the_agent_may_withhold_its_extended_card_from_a_request() -> None:
    assert skill_ids(await get_card(create_app(OnlyFor10()), v1=True)) == ["search", "restock"]
    assert_error(await get_card(create_app(OnlyFor10()), v1=False), -32007, dialect="0.3")


@pytest.fixture
async def public_card() -> AsyncIterator[dict[str, Any]]:
    app = create_app(Storefront(), extended_card_check=lambda request: False)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://a2ad.test") as client:
        yield (await client.get("/.well-known/agent-card.json")).json()
    await app.aclose()


async def test_the_public_card_offers_the_extended_card_whatever_the_check(
    public_card: dict[str, Any],
) -> None:
    assert public_card["capabilities"]["extendedAgentCard"] is True
    assert [s["id"] for s in public_card["skills"]] == ["search"]


@pytest.mark.parametrize(("path", "v1"), [("/extendedAgentCard", True), ("/v1/card", False)])
async def test_over_rest_the_extended_card_is_served_and_refused_alike(path: str, v1: bool) -> None:
    headers = {"A2A-Extensions": STYLE}
    for check, expected in ((lambda request: True, 200), (lambda request: False, 400)):
        app = create_app(Storefront(), extended_card_check=check)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://a2ad.test") as client:
            r = await client.get(path, headers=headers)
        await app.aclose()
        assert r.status_code == expected, r.text
        if expected == 200:
            assert [s["id"] for s in r.json()["skills"]] == ["search", "restock"]
            assert ("supportedInterfaces" in r.json()) is v1
        else:
            assert_status(400, r.json(), reason="EXTENDED_AGENT_CARD_NOT_CONFIGURED")
