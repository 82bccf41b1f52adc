"""``GET /agents`` (server/reads/agents.py): the agents a server hosts, with
where each is served, its card and its skills; for authenticated callers when
auth is on; the URLs where the caller reached the server."""

from __future__ import annotations

from pathlib import Path

import httpx

from a2ad import Agent, AgentSkill, ApiKeys, CredentialAuthenticator, TaskContext, create_app
from a2ad.server import auth

from ..scripted import ScriptedAgent


class Stock(Agent):
    name = "stock"
    description = "Stock levels by part."
    skills = (AgentSkill(id="levels", name="Levels", description="How many", tags=["stock"]),)

    async def run(self, ctx: TaskContext) -> None:
        await ctx.complete("12")


async def _get(app: object, path: str, **headers: str) -> httpx.Response:
    transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
    async with httpx.AsyncClient(transport=transport, base_url="http://a2ad.test:8000") as http:
        return await http.get(path, headers=headers)


async def test_the_index_lists_each_agent_with_its_urls_card_and_skills(tmp_path: Path) -> None:
    keys = tmp_path / "keys.toml"
    key = auth.add_key(str(keys), "ann")
    app = create_app(
        {"stock": Stock(), "scripted": ScriptedAgent()},
        authenticator=CredentialAuthenticator(keys=ApiKeys.load(str(keys))),
    )
    refused = await _get(app, "/agents")
    assert refused.status_code == 401  # the agents are named to callers only
    answered = await _get(app, "/agents/", **{"X-API-Key": key})
    assert answered.status_code == 200
    assert answered.json() == {
        "agents": [
            {
                "name": "stock",
                "description": "Stock levels by part.",
                "default": True,
                "url": "http://a2ad.test:8000/agents/stock/",
                "card": "http://a2ad.test:8000/agents/stock/.well-known/agent-card.json",
                "skills": [
                    {"id": "levels", "name": "Levels", "description": "How many", "tags": ["stock"]}
                ],
            },
            {
                "name": "scripted",
                "description": ScriptedAgent.description,
                "default": False,
                "url": "http://a2ad.test:8000/agents/scripted/",
                "card": "http://a2ad.test:8000/agents/scripted/.well-known/agent-card.json",
                "skills": [],
            },
        ]
    }
    # Each card URL it gives is the agent's card.
    card = await _get(app, "/agents/stock/.well-known/agent-card.json")
    assert card.json()["name"] == "stock"


async def test_a_lone_agent_is_listed_at_the_root_and_other_methods_are_refused() -> None:
    app = create_app(Stock())
    listed = (await _get(app, "/agents")).json()["agents"]
    assert [(a["name"], a["url"], a["default"]) for a in listed] == [
        ("stock", "http://a2ad.test:8000/", True)
    ]
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://a2ad.test") as http:
        posted = await http.post("/agents", json={})
    assert posted.status_code == 405 and posted.headers["allow"] == "GET"
    assert posted.json()["error"]["details"][0]["reason"] == "INVALID_REQUEST"
