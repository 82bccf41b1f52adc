"""The dashboard with auth on, on several agents, and by keyboard, in headless
Chromium: it asks for a credential, keeps it for the tab only, and shows only
what that caller may see; every control is reachable and labelled."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from a2ad import (
    Agent,
    ApiKeys,
    CredentialAuthenticator,
    DataPart,
    FilePart,
    TaskContext,
    TextPart,
    create_app,
)
from a2ad.store.sqlite import SqliteStore

from ..conftest import LiveServer
from ..scripted import ScriptedAgent
from .wire import send

V1 = {"A2A-Version": "1.0"}


class Streams(Agent):
    """Streams its answer as appended chunks: three, then the rest once told to
    go on (so a page can be following it before it ends)."""

    name = "streams"

    def __init__(self) -> None:
        self.go_on = threading.Event()

    async def run(self, ctx: TaskContext) -> None:
        for i in range(5):
            if i == 3:
                await asyncio.to_thread(self.go_on.wait, 30)
            await ctx.artifact(f"piece-{i} ", artifact_id="answer", append=i > 0)
            await asyncio.sleep(0.05)
        await ctx.artifact("", artifact_id="answer", append=True, last_chunk=True)
        await ctx.complete()


class Links(Agent):
    """Answers with a file at a web address and one at a javascript: URL."""

    name = "links"

    async def run(self, ctx: TaskContext) -> None:
        await ctx.artifact(FilePart(url="https://example.com/report.pdf", filename="report.pdf"))
        await ctx.artifact(FilePart(url="javascript:alert(document.domain)", filename="x.html"))
        await ctx.complete("two files")


class UsesTools(Agent):
    """Says what it does, and keeps the tool call it made as an internal part."""

    name = "tools"

    async def run(self, ctx: TaskContext) -> None:
        call = DataPart({"tool": "lookup_stock", "args": {"sku": "A1"}})
        await ctx.working([TextPart("Searching the stock"), *ctx.internal(call)])
        await ctx.complete("12 in stock")


STREAMS = Streams()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, keys: dict[str, str]) -> Iterator[LiveServer]:
    store = SqliteStore(str(tmp_path_factory.mktemp("auth-ui") / "tasks.db"))
    agents = {
        "stock": ScriptedAgent(),
        "pricing": ScriptedAgent(),
        "tools": UsesTools(),
        "links": Links(),
        "streams": STREAMS,
    }
    authenticator = CredentialAuthenticator(keys=ApiKeys.load(keys["path"]))
    with LiveServer(create_app(agents, store=store, authenticator=authenticator)) as live:
        yield live


@pytest.fixture
def page(browser: Any, server: LiveServer) -> Iterator[Any]:
    context = browser.new_context(base_url=server.url)
    opened = context.new_page()
    opened.set_default_timeout(5_000)
    errors: list[str] = []
    opened.on("pageerror", lambda e: errors.append(str(e)))
    opened.on(
        "console",
        # A 404 the page shows as "not found" is also the browser's own log line.
        lambda m: errors.append(m.text) if m.type == "error" and "404" not in m.text else None,
    )
    yield opened
    context.close()
    assert errors == [], f"the page's console had errors: {errors}"


def sign_in(page: Any, key: str) -> None:
    dialog = page.locator("#token-dialog")
    dialog.wait_for()
    dialog.get_by_label("API key or bearer token").fill(key)
    dialog.get_by_role("button", name="Sign in").click()


def test_it_asks_for_a_key_and_shows_only_that_callers_tasks(
    page: Any, server: LiveServer, keys: dict[str, str]
) -> None:
    hers = send(server, "echo ann's numbers", key=keys["ann"])
    his = send(server, "echo bob's numbers", key=keys["bob"])
    page.goto("/ui")
    sign_in(page, keys["ann"])
    page.locator(f'tr[data-task-id="{hers["id"]}"]').wait_for()
    assert page.locator(f'tr[data-task-id="{his["id"]}"]').count() == 0
    # Kept for this tab: a reload doesn't ask again, a new tab (context) does.
    page.reload()
    page.locator(f'tr[data-task-id="{hers["id"]}"]').wait_for()
    assert not page.locator("#token-dialog").is_visible()
    stored = page.evaluate("() => [sessionStorage.length, localStorage.length]")
    assert stored == [1, 0]
    # Another caller's task by its URL: not found, as for a task that doesn't exist.
    page.goto(f"/ui/tasks/{his['id']}")
    page.get_by_role("alert").wait_for()
    assert "not found" in page.get_by_role("alert").inner_text().lower()


def test_each_agent_has_its_own_tasks(page: Any, server: LiveServer, keys: dict[str, str]) -> None:
    stock = send(server, "echo stock task", key=keys["ann"], agent="stock")
    pricing = send(server, "echo pricing task", key=keys["ann"], agent="pricing")
    page.goto("/ui")
    sign_in(page, keys["ann"])
    page.locator(f'tr[data-task-id="{stock["id"]}"]').wait_for()
    assert page.locator(f'tr[data-task-id="{pricing["id"]}"]').count() == 0
    page.locator("#agent").select_option("pricing")
    page.locator(f'tr[data-task-id="{pricing["id"]}"]').wait_for()
    assert page.locator(f'tr[data-task-id="{stock["id"]}"]').count() == 0
    assert "agent=pricing" in page.url
    page.locator(f'tr[data-task-id="{pricing["id"]}"] a').click()
    page.locator("#history", has_text="echo pricing task").wait_for()


def test_the_filters_are_reached_and_used_by_keyboard(
    page: Any, server: LiveServer, keys: dict[str, str]
) -> None:
    failed = send(server, "fail by keyboard", key=keys["ann"])
    page.goto("/ui")
    sign_in(page, keys["ann"])
    page.locator("tbody tr").first.wait_for()
    for control in page.locator("main input, main select, main button").all():
        name = control.evaluate(
            "e => (e.labels && e.labels.length ? e.labels[0].innerText : '') || e.innerText"
            " || e.getAttribute('aria-label') || ''"
        )
        assert name.strip(), f"a control without a label: {control.evaluate('e => e.outerHTML')}"
    page.get_by_label("State", exact=True).focus()
    outline = page.evaluate("() => getComputedStyle(document.activeElement).outlineStyle")
    assert outline != "none"  # the focus is visible
    page.keyboard.press("End")  # the last state: rejected; then up past canceled to failed
    page.keyboard.press("ArrowUp")
    page.keyboard.press("ArrowUp")
    page.keyboard.press("Tab")  # to the context box
    page.keyboard.press("Enter")  # submits the form
    page.wait_for_url("**state=TASK_STATE_FAILED**")
    page.locator(f'tr[data-task-id="{failed["id"]}"]').wait_for()
    # The state is said in words, not by colour alone.
    assert "failed" in page.locator(f'tr[data-task-id="{failed["id"]}"] .badge').inner_text()


def test_internal_parts_are_shown_to_operators_only_and_marked(
    browser: Any, server: LiveServer, keys: dict[str, str]
) -> None:
    task = send(server, "how many A1?", key=keys["ann"], agent="tools")
    for key, sees in ((keys["ann"], False), (keys["olga"], True)):
        context = browser.new_context(base_url=server.url)
        try:
            opened = context.new_page()
            opened.set_default_timeout(5_000)
            opened.goto(f"/ui/tasks/{task['id']}?agent=tools")
            sign_in(opened, key)
            history = opened.locator("#history")
            history.get_by_text("Searching the stock").wait_for()
            assert (history.get_by_text("lookup_stock").count() > 0) is sees
            assert (history.locator(".internal .tag").count() > 0) is sees
        finally:
            context.close()


def test_only_web_addresses_become_links(
    page: Any, server: LiveServer, keys: dict[str, str]
) -> None:
    task = send(server, "files please", key=keys["ann"], agent="links")
    page.goto(f"/ui/tasks/{task['id']}?agent=links")
    sign_in(page, keys["ann"])
    page.locator("#artifacts", has_text="javascript:alert").wait_for()
    hrefs = page.locator("#artifacts a").evaluate_all("links => links.map(a => a.href)")
    assert hrefs == ["https://example.com/report.pdf"]


def test_a_streamed_answer_is_shown_whole_while_it_grows_and_at_the_end(
    page: Any, server: LiveServer, keys: dict[str, str]
) -> None:
    task = send(server, "go", key=keys["ann"], agent="streams", wait=False)
    page.goto(f"/ui/tasks/{task['id']}?agent=streams")
    sign_in(page, keys["ann"])
    page.locator("#live", has_text="following the task live").wait_for()
    page.locator("#artifacts", has_text="piece-2").wait_for()
    assert "piece-0" in page.locator("#artifacts").inner_text()  # appended, not replaced
    STREAMS.go_on.set()
    page.locator("#task-state", has_text="completed").wait_for()
    text = page.locator("#artifacts").inner_text()
    assert all(f"piece-{i}" in text for i in range(5)), text
