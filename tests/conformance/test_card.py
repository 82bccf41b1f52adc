"""The agent card at the well-known paths: readable by 1.0 and 0.3 clients, cacheable."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from a2a.types import AgentCard

from ..scripted import ScriptedAgent
from .oracles import parse_v1, validate_03

PATHS = ["/.well-known/agent-card.json", "/.well-known/agent.json"]
COMPAT_03_FIELDS = {"url", "protocolVersion", "preferredTransport", "additionalInterfaces"}


async def fetch(client: httpx.AsyncClient, path: str, **headers: str) -> httpx.Response:
    return await client.get(path, headers=headers)


async def card_at(client: httpx.AsyncClient, path: str) -> dict[str, Any]:
    r = await fetch(client, path)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("application/json")
    return r.json()  # type: ignore[no-any-return]


@pytest.mark.parametrize("path", PATHS)
async def test_card_describes_the_agent(
    client: httpx.AsyncClient, agent: ScriptedAgent, path: str
) -> None:
    card = await card_at(client, path)
    assert card["name"] == agent.name
    assert card["description"] == agent.description
    assert card["skills"] and all(
        s["id"] and s["name"] and s["description"] and s["tags"] for s in card["skills"]
    )
    assert card["capabilities"]["streaming"] is True
    assert card["capabilities"]["pushNotifications"] is True  # tests/engine/test_push.py


@pytest.mark.parametrize("path", PATHS)
async def test_card_lists_json_rpc_and_http_json_interfaces_for_1_0_and_0_3(
    client: httpx.AsyncClient, path: str
) -> None:
    card = await card_at(client, path)
    interfaces = card["supportedInterfaces"]
    served = {(i["protocolBinding"], i["protocolVersion"]) for i in interfaces}
    assert served == {
        ("JSONRPC", "1.0"),
        ("HTTP+JSON", "1.0"),
        ("JSONRPC", "0.3"),
        ("HTTP+JSON", "0.3"),
    }
    for interface in interfaces:
        assert interface["url"].startswith("http://a2ad.test/"), interface
    # The first entry is the preferred one: 1.0 clients should land on 1.0.
    assert (interfaces[0]["protocolBinding"], interfaces[0]["protocolVersion"]) == (
        "JSONRPC",
        "1.0",
    )


@pytest.mark.parametrize("path", PATHS)
async def test_card_parses_as_a_1_0_agent_card_apart_from_the_0_3_compat_fields(
    client: httpx.AsyncClient, path: str
) -> None:
    card = await card_at(client, path)
    proto = parse_v1(card, AgentCard, ignore_unknown_fields=True)
    assert proto.name == card["name"]
    assert proto.capabilities.streaming is True
    # The only fields a strict 1.0 parser must skip are the documented 0.3 ones.
    assert set(card) - set(AgentCard.DESCRIPTOR.fields_by_camelcase_name) == COMPAT_03_FIELDS
    parse_v1({k: v for k, v in card.items() if k not in COMPAT_03_FIELDS}, AgentCard)


@pytest.mark.parametrize("path", PATHS)
async def test_card_is_a_valid_0_3_agent_card(client: httpx.AsyncClient, path: str) -> None:
    card = await card_at(client, path)
    validate_03(card, "AgentCard")
    assert card["protocolVersion"].startswith("0.3")
    assert card["preferredTransport"] == "JSONRPC"
    assert card["url"] == "http://a2ad.test/"
    assert {(i["transport"], i["url"]) for i in card["additionalInterfaces"]} == {
        ("JSONRPC", "http://a2ad.test/"),
        ("HTTP+JSON", "http://a2ad.test/"),
    }


async def test_both_card_paths_serve_the_same_card(client: httpx.AsyncClient) -> None:
    assert await card_at(client, PATHS[0]) == await card_at(client, PATHS[1])


@pytest.mark.parametrize("path", PATHS)
async def test_card_has_etag_and_cache_control_with_max_age(
    client: httpx.AsyncClient, path: str
) -> None:
    r = await fetch(client, path)
    etag = r.headers.get("etag")
    assert etag and etag.startswith('"') and etag.endswith('"'), etag
    assert "max-age=" in r.headers.get("cache-control", "")
    again = await fetch(client, path)
    assert again.headers["etag"] == etag


@pytest.mark.parametrize("path", PATHS)
async def test_if_none_match_with_the_etag_gives_304_with_empty_body(
    client: httpx.AsyncClient, path: str
) -> None:
    etag = (await fetch(client, path)).headers["etag"]
    r = await fetch(client, path, **{"If-None-Match": etag})
    assert r.status_code == 304
    assert r.content == b""
    assert r.headers.get("etag") == etag


async def test_if_none_match_with_another_etag_gives_the_card(client: httpx.AsyncClient) -> None:
    r = await fetch(client, PATHS[0], **{"If-None-Match": '"something-else"'})
    assert r.status_code == 200
    assert r.json()["name"]


async def test_card_urls_follow_the_host_the_client_used(client: httpx.AsyncClient) -> None:
    r = await fetch(client, PATHS[0], host="agents.example.com:8443")
    card = r.json()
    assert card["url"] == "http://agents.example.com:8443/"
    assert {i["url"] for i in card["supportedInterfaces"]} == {"http://agents.example.com:8443/"}


async def test_card_path_takes_only_get(client: httpx.AsyncClient) -> None:
    r = await client.post(PATHS[0], json={})
    assert r.status_code == 405
    assert "error" in r.json()
