"""The agent card at the well-known paths: readable by 1.0 and 0.3 clients (the
combined card without A2A-Version, the card of one version with it), cacheable
(ETag per variant, Last-Modified, conditional requests); shaped by the agent
(skills, modes, extensions, security schemes, provider, documentation and icon
URLs); its extended card in either version."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime, parsedate_to_datetime
from typing import Any

import httpx
import pytest
from a2a.client.card_resolver import parse_agent_card
from a2a.types import AgentCard

from a2ad import AgentSkill, create_app
from a2ad.server.extensions import PUSH_DELIVERY

from ..agents.sample_agents import GLOSSARY, STYLE, Storefront
from ..jsonrpc import rpc_body
from ..scripted import ScriptedAgent
from .oracles import (
    assert_status,
    fields_not_in_1_0,
    parse_v1,
    proto_fields_1_0,
    validate_03,
)

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


# --- an agent that shapes its whole card -------------------------------------

WITH_STYLE = {"A2A-Version": "1.0", "A2A-Extensions": STYLE}


@pytest.fixture
async def shop() -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(Storefront())
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://a2ad.test") as c:
        yield c
    await app.aclose()


async def extended(client: httpx.AsyncClient, *, v1: bool) -> dict[str, Any]:
    method = "GetExtendedAgentCard" if v1 else "agent/getAuthenticatedExtendedCard"
    body = rpc_body(method, {})
    headers = WITH_STYLE if v1 else {"X-A2A-Extensions": STYLE}
    r = await client.post("/", json=body, headers=headers)
    assert "result" in r.json(), r.json()
    return r.json()["result"]  # type: ignore[no-any-return]


def check_shape_1_0(card: AgentCard) -> None:
    """What Storefront declares, as a 1.0 AgentCard shows it."""
    assert (card.name, card.description, card.version) == ("storefront", "Sells books.", "2.3.1")
    assert (card.provider.organization, card.provider.url) == (
        "Example Books",
        "https://books.example.com",
    )
    assert card.documentation_url == "https://books.example.com/docs"
    assert card.icon_url == "https://books.example.com/icon.png"
    assert list(card.default_input_modes) == ["text/plain", "application/json"]
    assert list(card.default_output_modes) == ["text/plain"]
    glossary, style, server = card.capabilities.extensions  # the agent's, then a2ad's own
    assert (server.uri, server.required) == (PUSH_DELIVERY.uri, False)
    assert (glossary.uri, glossary.required) == (GLOSSARY, False)
    assert dict(glossary.params)["languages"] == ["en", "fr"]
    assert (style.uri, style.description, style.required) == (STYLE, "House style", True)
    schemes = card.security_schemes
    assert {name: schemes[name].WhichOneof("scheme") for name in schemes} == {
        "bearer": "http_auth_security_scheme",
        "key": "api_key_security_scheme",
        "oauth": "oauth2_security_scheme",
        "device": "oauth2_security_scheme",
        "oidc": "open_id_connect_security_scheme",
        "mtls": "mtls_security_scheme",
    }
    bearer = schemes["bearer"].http_auth_security_scheme
    assert (bearer.scheme.lower(), bearer.bearer_format) == ("bearer", "JWT")
    key = schemes["key"].api_key_security_scheme
    assert (key.name, key.location, key.description) == ("X-Api-Key", "header", "Partners")
    code = schemes["oauth"].oauth2_security_scheme.flows.authorization_code
    assert code.token_url == "https://auth.example.com/token"
    assert dict(code.scopes) == {"read": "Read the catalogue"}
    assert schemes["oidc"].open_id_connect_security_scheme.open_id_connect_url.endswith(
        "/openid-configuration"
    )
    assert [
        {name: list(scopes.list) for name, scopes in r.schemes.items()}
        for r in card.security_requirements
    ] == [{"bearer": []}, {"oauth": ["read"], "mtls": []}]
    search = card.skills[0]
    assert (search.id, list(search.output_modes), list(search.examples)) == (
        "search",
        ["application/json"],
        ["books about tides"],
    )
    assert [
        {name: list(scopes.list) for name, scopes in r.schemes.items()}
        for r in search.security_requirements
    ] == [{"oauth": ["read"]}]
    assert card.capabilities.extended_agent_card is True


@pytest.mark.parametrize("path", PATHS)
async def test_a_shaped_card_reads_as_1_0_with_everything_the_agent_declared(
    shop: httpx.AsyncClient, path: str
) -> None:
    card = await card_at(shop, path)
    check_shape_1_0(parse_v1(card, AgentCard, ignore_unknown_fields=True))


@pytest.mark.parametrize("path", PATHS)
async def test_a_shaped_card_is_a_valid_0_3_card_with_everything_the_agent_declared(
    shop: httpx.AsyncClient, path: str
) -> None:
    card = validate_03(await card_at(shop, path), "AgentCard")
    assert card["supportsAuthenticatedExtendedCard"] is True
    schemes = card["securitySchemes"]
    assert {name: s["type"] for name, s in schemes.items()} == {
        "bearer": "http",
        "key": "apiKey",
        "oauth": "oauth2",
        "device": "oauth2",
        "oidc": "openIdConnect",
        "mtls": "mutualTLS",
    }
    assert (schemes["key"]["in"], schemes["key"]["name"]) == ("header", "X-Api-Key")
    assert schemes["bearer"]["scheme"] == "Bearer"
    assert "authorizationCode" in schemes["oauth"]["flows"]
    assert card["security"] == [{"bearer": []}, {"oauth": ["read"], "mtls": []}]
    assert card["skills"][0]["security"] == [{"oauth": ["read"]}]
    assert card["provider"]["organization"] == "Example Books"
    for scheme in schemes.values():  # each 0.3 scheme checked on its own
        validate_03(
            {k: v for k, v in scheme.items() if not k.endswith("SecurityScheme")},
            "SecurityScheme",
        )


async def test_the_official_sdk_reads_the_same_shaped_card(shop: httpx.AsyncClient) -> None:
    card = parse_agent_card(await card_at(shop, PATHS[0]))
    check_shape_1_0(card)
    assert [(i.protocol_binding, i.protocol_version) for i in card.supported_interfaces] == [
        ("JSONRPC", "1.0"),
        ("HTTP+JSON", "1.0"),
        ("JSONRPC", "0.3"),
        ("HTTP+JSON", "0.3"),
    ]


async def test_the_extended_card_in_1_0_is_a_strict_1_0_card_with_more_skills(
    shop: httpx.AsyncClient,
) -> None:
    card = await extended(shop, v1=True)
    assert fields_not_in_1_0(card, "AgentCard") == []
    proto = parse_v1(card, AgentCard)  # no field a 1.0 card does not have
    check_shape_1_0(proto)
    assert [s.id for s in proto.skills] == ["search", "restock"]
    assert {i["url"] for i in card["supportedInterfaces"]} == {"http://a2ad.test/"}


async def test_the_extended_card_over_http_json_is_the_card_of_its_paths_version(
    shop: httpx.AsyncClient,
) -> None:
    v1 = await shop.get("/extendedAgentCard", headers={"A2A-Extensions": STYLE})
    assert v1.status_code == 200, v1.text
    assert fields_not_in_1_0(v1.json(), "AgentCard") == []
    assert v1.json() == await extended(shop, v1=True)
    v03 = await shop.get("/v1/card", headers={"X-A2A-Extensions": STYLE})
    assert v03.status_code == 200, v03.text
    assert validate_03(v03.json(), "AgentCard") == await extended(shop, v1=False)


async def test_the_extended_card_in_0_3_is_a_0_3_card_with_more_skills(
    shop: httpx.AsyncClient,
) -> None:
    card = validate_03(await extended(shop, v1=False), "AgentCard")
    assert [s["id"] for s in card["skills"]] == ["search", "restock"]
    assert set(card) & {"supportedInterfaces", "securityRequirements"} == set()
    assert "extendedAgentCard" not in card["capabilities"]
    assert card["supportsAuthenticatedExtendedCard"] is True
    assert card["url"] == "http://a2ad.test/"


async def test_a_card_without_an_extended_card_does_not_offer_one(
    client: httpx.AsyncClient,
) -> None:
    card = await card_at(client, PATHS[0])
    assert "extendedAgentCard" not in card["capabilities"]
    assert "supportsAuthenticatedExtendedCard" not in card


def test_a_skill_without_tags_is_refused_when_declared() -> None:
    with pytest.raises(ValueError, match="tags"):
        AgentSkill(id="x", name="X", description="none", tags=[])


# --- the card by version -------------------------------------------------------

V1_0 = {"A2A-Version": "1.0"}
V0_3 = {"A2A-Version": "0.3"}


def test_the_proto_field_reader_agrees_with_the_official_sdk() -> None:
    """The oracle below reads the .proto text; the SDK's compiled AgentCard is a
    second reading of the same file."""
    ours = proto_fields_1_0()
    theirs = AgentCard.DESCRIPTOR.file.message_types_by_name
    assert set(ours) == set(theirs)
    for name, descriptor in theirs.items():
        assert set(ours[name]) == {f.json_name for f in descriptor.fields}, name


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("how", ["header", "query"])
async def test_asking_for_1_0_gets_a_card_with_only_the_1_0_protos_fields(
    shop: httpx.AsyncClient, path: str, how: str
) -> None:
    if how == "header":
        r = await shop.get(path, headers=V1_0)
    else:
        r = await shop.get(path, params={"A2A-Version": "1.0"})
    assert r.status_code == 200, r.text
    card = r.json()
    assert fields_not_in_1_0(card, "AgentCard") == []
    check_shape_1_0(parse_v1(card, AgentCard))  # strict: no unknown field either
    # The walk reached every nested message the shaped card fills.
    assert card["securitySchemes"]["oauth"]["oauth2SecurityScheme"]["flows"]
    assert card["capabilities"]["extensions"][0]["params"]
    assert card["skills"][0]["securityRequirements"]


async def test_the_field_check_finds_the_0_3_fields_of_the_combined_card(
    shop: httpx.AsyncClient,
) -> None:
    extra = fields_not_in_1_0(await card_at(shop, PATHS[0]), "AgentCard")
    assert {"$.url", "$.preferredTransport", "$.security", "$.skills[0].security"} <= set(extra)
    assert "$.securitySchemes.key.type" in extra
    assert "$.securitySchemes.key.in" in extra


async def test_a_1_0_x_version_gets_the_1_0_card(shop: httpx.AsyncClient) -> None:
    one = await shop.get(PATHS[0], headers=V1_0)
    patch = await shop.get(PATHS[0], headers={"A2A-Version": "1.0.3"})
    assert patch.status_code == 200
    assert patch.content == one.content


@pytest.mark.parametrize("path", PATHS)
async def test_asking_for_0_3_gets_a_valid_0_3_card_without_the_1_0_fields(
    shop: httpx.AsyncClient, path: str
) -> None:
    r = await shop.get(path, headers=V0_3)
    card = validate_03(r.json(), "AgentCard")
    assert card["url"] == "http://a2ad.test/"
    assert card["preferredTransport"] == "JSONRPC"
    assert card["supportsAuthenticatedExtendedCard"] is True
    assert set(card) & {"supportedInterfaces", "securityRequirements"} == set()
    assert "extendedAgentCard" not in card["capabilities"]
    for scheme in card["securitySchemes"].values():
        assert not any(key.endswith("SecurityScheme") for key in scheme), scheme
        validate_03(scheme, "SecurityScheme")
    assert all("securityRequirements" not in skill for skill in card["skills"])
    assert card["skills"][0]["security"] == [{"oauth": ["read"]}]


async def test_without_a_version_the_combined_card_still_validates_as_0_3(
    shop: httpx.AsyncClient,
) -> None:
    card = validate_03(await card_at(shop, PATHS[0]), "AgentCard")
    assert card["supportedInterfaces"] and card["url"]


@pytest.mark.parametrize("version", ["2.0", "0.2", "banana"])
async def test_an_unsupported_version_is_refused_as_version_not_supported(
    client: httpx.AsyncClient, version: str
) -> None:
    r = await fetch(client, PATHS[0], **{"A2A-Version": version})
    assert r.status_code == 400
    info = assert_status(400, r.json(), reason="VERSION_NOT_SUPPORTED")
    assert info["metadata"]["supportedVersions"] == "1.0,0.3"
    assert "A2A-Version: 1.0" in r.json()["error"]["message"]
    assert r.headers["vary"] == "A2A-Version"


async def test_the_official_sdk_parses_the_1_0_card_and_the_0_3_card(
    shop: httpx.AsyncClient,
) -> None:
    v1 = parse_agent_card((await shop.get(PATHS[0], headers=V1_0)).json())
    check_shape_1_0(v1)
    first = v1.supported_interfaces[0]
    assert (first.protocol_binding, first.protocol_version) == ("JSONRPC", "1.0")
    old = (await shop.get(PATHS[0], headers=V0_3)).json()
    v03 = parse_agent_card(copy.deepcopy(old))  # it rewrites what it is given
    assert (v03.name, v03.version, v03.icon_url) == (old["name"], old["version"], old["iconUrl"])
    assert v03.capabilities.extended_agent_card is True
    assert {(i.protocol_binding, i.protocol_version) for i in v03.supported_interfaces} == {
        ("JSONRPC", old["protocolVersion"]),
        ("HTTP+JSON", old["protocolVersion"]),
    }
    assert v03.security_schemes["key"].api_key_security_scheme.location == "header"
    assert [s.id for s in v03.skills] == ["search"]
    assert list(v03.skills[0].security_requirements[0].schemes["oauth"].list) == ["read"]


# --- caching by variant: ETag, Vary, Last-Modified -----------------------------

VARIANTS = [{}, V1_0, V0_3]


async def test_each_variant_has_its_own_etag_and_says_it_varies_by_version(
    client: httpx.AsyncClient,
) -> None:
    answers = [await fetch(client, PATHS[0], **h) for h in VARIANTS]
    assert len({r.headers["etag"] for r in answers}) == 3
    assert len({r.content for r in answers}) == 3
    assert all(r.headers["vary"] == "A2A-Version" for r in answers)
    # One variant's tag does not validate another's body.
    r = await fetch(client, PATHS[0], **{"If-None-Match": answers[1].headers["etag"], **V0_3})
    assert r.status_code == 200
    assert r.content == answers[2].content


async def test_last_modified_is_an_http_date_stable_across_requests_and_variants(
    client: httpx.AsyncClient,
) -> None:
    dates = {
        (await fetch(client, p, **h)).headers["last-modified"] for p in PATHS for h in VARIANTS
    }
    assert len(dates) == 1
    (text,) = dates
    assert text.endswith(" GMT")
    when = parsedate_to_datetime(text)
    assert when <= datetime.now(UTC) < when + timedelta(minutes=5)


def _http_date(when: datetime) -> str:
    return format_datetime(when.astimezone(UTC), usegmt=True)


@pytest.mark.parametrize("headers", VARIANTS)
async def test_if_modified_since_the_card_gives_304_with_the_cache_headers(
    client: httpx.AsyncClient, headers: dict[str, str]
) -> None:
    first = await fetch(client, PATHS[0], **headers)
    modified = parsedate_to_datetime(first.headers["last-modified"])
    for since in (first.headers["last-modified"], _http_date(modified + timedelta(hours=1))):
        r = await fetch(client, PATHS[0], **{"If-Modified-Since": since, **headers})
        assert r.status_code == 304, since
        assert r.content == b""
        for name in ("etag", "last-modified", "cache-control", "vary"):
            assert r.headers[name] == first.headers[name], name


async def test_if_modified_since_before_the_card_gives_the_card(
    client: httpx.AsyncClient,
) -> None:
    first = await fetch(client, PATHS[0])
    earlier = parsedate_to_datetime(first.headers["last-modified"]) - timedelta(seconds=1)
    r = await fetch(client, PATHS[0], **{"If-Modified-Since": _http_date(earlier)})
    assert r.status_code == 200
    assert r.content == first.content


@pytest.mark.parametrize("since", ["yesterday", "Mon, 99 Foo 2020 25:61:00 GMT", "0"])
async def test_an_unreadable_if_modified_since_is_ignored(
    client: httpx.AsyncClient, since: str
) -> None:
    r = await fetch(client, PATHS[0], **{"If-Modified-Since": since})
    assert r.status_code == 200
    assert r.json()["name"]


async def test_if_none_match_decides_over_if_modified_since(client: httpx.AsyncClient) -> None:
    first = await fetch(client, PATHS[0])
    modified = parsedate_to_datetime(first.headers["last-modified"])
    later = _http_date(modified + timedelta(hours=1))
    earlier = _http_date(modified - timedelta(hours=1))
    stale = await fetch(
        client, PATHS[0], **{"If-None-Match": '"another"', "If-Modified-Since": later}
    )
    assert stale.status_code == 200
    fresh = await fetch(
        client,
        PATHS[0],
        **{"If-None-Match": first.headers["etag"], "If-Modified-Since": earlier},
    )
    assert fresh.status_code == 304


async def test_if_none_match_compares_weakly(client: httpx.AsyncClient) -> None:
    etag = (await fetch(client, PATHS[0])).headers["etag"]
    r = await fetch(client, PATHS[0], **{"If-None-Match": f'"x", W/{etag}'})
    assert r.status_code == 304
