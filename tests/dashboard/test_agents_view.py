"""The dashboard's agents view (BASE/agents, assets/agents.js) in headless Chromium:
the agents a server hosts as ``GET /agents`` lists them, each with its description,
card link and skills, nothing secret of a fronted agent; with auth on, read with
the page's credential and nothing shown without one."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from a2ad import ApiKeys, CredentialAuthenticator, create_app
from a2ad.adapters.remote import RemoteAgent
from a2ad.agents.echo import EchoAgent
from a2ad.agents.lab import OrchestratorAgent, PricingAgent, StockAgent

from ..conftest import LiveServer
from .conftest import SHOTS

SECRET = "upstream-secret-7f3a"  # what a2ad calls the fronted and lab agents with


@pytest.fixture(scope="module")
def upstream() -> Iterator[LiveServer]:
    """The pricing agent on its own server, for the dashboard's server to front."""
    with LiveServer(create_app(PricingAgent())) as live:
        yield live


@pytest.fixture(scope="module")
def server(upstream: LiveServer) -> Iterator[LiveServer]:
    agents = {
        "echo": EchoAgent(),
        "stock": StockAgent(),
        "orchestrator": OrchestratorAgent(token=SECRET),
        "pricing": RemoteAgent(f"a2a+{upstream.url}/", token=SECRET),
    }
    with LiveServer(create_app(agents)) as live:
        yield live


@pytest.fixture(scope="module")
def secured(keys: dict[str, str]) -> Iterator[LiveServer]:
    authenticator = CredentialAuthenticator(keys=ApiKeys.load(keys["path"]))
    agents = {"echo": EchoAgent(), "stock": StockAgent()}
    with LiveServer(create_app(agents, authenticator=authenticator)) as live:
        yield live


def open_page(browser: Any, url: str) -> tuple[Any, Any, list[str]]:
    """A new tab (context) on ``url``'s server and the errors its console reports
    (but the browser's own line for a 401 a test asks for)."""
    context = browser.new_context(base_url=url, viewport={"width": 1100, "height": 800})
    page = context.new_page()
    page.set_default_timeout(5_000)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on(
        "console",
        lambda m: errors.append(m.text) if m.type == "error" and "401" not in m.text else None,
    )
    return context, page, errors


@pytest.fixture
def page(browser: Any, server: LiveServer) -> Iterator[Any]:
    context, opened, errors = open_page(browser, server.url)
    yield opened
    context.close()
    assert errors == [], f"the page's console had errors: {errors}"


def test_the_view_lists_each_agent_with_its_skills_and_card_link(
    page: Any, server: LiveServer
) -> None:
    index = httpx.get(f"{server.url}/agents").json()["agents"]
    page.goto("/ui")
    page.get_by_role("navigation", name="Views").get_by_role("link", name="Agents").click()
    page.wait_for_url("**/ui/agents")
    page.locator("article.agent").first.wait_for()
    cards = page.locator("article.agent")
    assert cards.evaluate_all("cards => cards.map(c => c.dataset.agent)") == [
        "echo",
        "stock",
        "orchestrator",
        "pricing",
    ]
    assert page.locator(".views a[aria-current=page]").inner_text() == "Agents"
    assert page.locator("#agents-summary").inner_text().startswith("4 agents")
    for agent in index:
        card = page.locator(f'article.agent[data-agent="{agent["name"]}"]')
        assert card.get_by_role("heading", level=2).inner_text().startswith(agent["name"])
        assert agent["description"] in card.inner_text()
        link = card.get_by_role("link", name=agent["card"])
        assert link.get_attribute("href") == agent["card"]
        assert agent["card"] == f"{server.url}/agents/{agent['name']}/.well-known/agent-card.json"
        shown = card.locator("li.skill").evaluate_all("items => items.map(i => i.dataset.skillId)")
        assert shown == [skill["id"] for skill in agent["skills"]]
        for skill in agent["skills"]:
            item = card.locator(f'li.skill[data-skill-id="{skill["id"]}"]')
            assert skill["name"] in item.inner_text()
            assert item.locator(".chip").all_inner_texts() == skill["tags"]
    # The default agent is marked; the stock agent's skill reads as the lab wrote it.
    assert page.locator("article.agent .badge").all_inner_texts() == ["default"]
    assert page.locator('article[data-agent="echo"] .badge').count() == 1
    stock = page.locator('article[data-agent="stock"]')
    assert "Check stock" in stock.inner_text() and "Units in stock" in stock.inner_text()
    # Each card link is the agent's card.
    card_url = stock.get_by_role("link", name=re.compile("agent-card.json")).get_attribute("href")
    assert httpx.get(card_url).json()["name"] == "stock"
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "dashboard-agents.png"), full_page=True)
    # An agent's tasks are a click away: the table, that agent picked.
    stock.get_by_role("link", name="stock's tasks").click()
    page.wait_for_url("**/ui?agent=stock")
    page.locator("table.tasks").wait_for()
    assert page.locator("#agent").input_value() == "stock"


def test_a_fronted_agent_shows_its_upstream_skills_and_nothing_secret(
    page: Any, server: LiveServer, upstream: LiveServer
) -> None:
    page.goto("/ui/agents?agent=pricing")  # the view is the server's, whichever agent is picked
    pricing = page.locator('article[data-agent="pricing"]')
    pricing.locator('li.skill[data-skill-id="get_price"]').wait_for()  # from the upstream's card
    assert "Price" in pricing.inner_text()
    assert pricing.get_by_role("link", name=re.compile("agent-card.json")).get_attribute(
        "href"
    ) == (f"{server.url}/agents/pricing/.well-known/agent-card.json")
    shown = page.locator("main").inner_text() + page.content()
    assert SECRET not in shown
    assert f":{upstream.port}" not in shown  # the upstream's address stays on the server


def test_with_auth_the_view_uses_the_pages_credential_and_shows_nothing_without_one(
    browser: Any, secured: LiveServer, keys: dict[str, str]
) -> None:
    context, page, errors = open_page(browser, secured.url)
    try:
        asked: list[str] = []
        index = f"{secured.url}/agents"
        page.on("request", lambda r: asked.append(r.url) if r.url == index else None)
        page.goto("/ui/agents")
        dialog = page.locator("#token-dialog")
        dialog.wait_for()
        assert page.locator("main").inner_text() == "Sign in to see this server's agents."
        dialog.get_by_role("button", name="Cancel").click()
        assert page.locator("article.agent").count() == 0 and asked == []
        # A wrong key: refused, asked again (the view waits, as the others do), nothing listed.
        page.evaluate("() => sessionStorage.setItem('a2ad.token', 'not-a-key')")
        page.reload()
        dialog.wait_for()
        assert page.locator("article.agent").count() == 0 and len(asked) == 1
        # The dashboard's credential: the agents, read with it.
        dialog.get_by_label("API key or bearer token").fill(keys["ann"])
        dialog.get_by_role("button", name="Sign in").click()
        page.locator('article[data-agent="stock"] li.skill').wait_for()
        names = page.locator("article.agent").evaluate_all("a => a.map(e => e.dataset.agent)")
        assert names == ["echo", "stock"]
        assert page.locator("#live").inner_text() == "2 agents shown"
    finally:
        context.close()
    assert errors == [], f"the page's console had errors: {errors}"


def test_every_module_is_imported_by_its_hashed_name_and_cached(server: LiveServer) -> None:
    page = httpx.get(f"{server.url}/ui/agents").text  # a page route: the page itself
    script = re.search(r'src="/ui/assets/(app\.[0-9a-f]+\.js)"', page)
    assert script is not None
    seen: dict[str, str] = {}
    todo = [script.group(1)]
    while todo:  # app.js and everything it imports, at any depth
        name = todo.pop()
        if name in seen:
            continue
        module = httpx.get(f"{server.url}/ui/assets/{name}")
        assert module.status_code == 200, name
        assert module.headers["content-type"].startswith("text/javascript")
        assert module.headers["cache-control"] == "public, max-age=31536000, immutable"
        seen[name] = module.text
        imports = re.findall(r'(?:from|import) "\./([^"]+)"', module.text)
        assert all(re.fullmatch(r"[a-z]+\.[0-9a-f]{12}\.js", i) for i in imports), imports
        todo += imports
    names = {name.split(".")[0] for name in seen}
    assert {"app", "agents", "page", "api", "list", "task"} <= names, names
    agents = next(text for name, text in seen.items() if name.startswith("agents."))
    assert "export function agentsView" in agents
