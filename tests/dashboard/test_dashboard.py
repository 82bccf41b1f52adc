"""The task dashboard (server/dashboard/) in a real browser against a real a2ad on
a real port with a SQLite store: the table, its filters in the URL, a task's page,
cancel and answering an input-required task; and how its files are served."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from a2ad import create_app
from a2ad.store.sqlite import SqliteStore

from ..conftest import LiveServer
from ..scripted import ScriptedAgent
from .conftest import SHOTS
from .wire import send

V1 = {"A2A-Version": "1.0"}
TIMEOUT_MS = 5_000


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    store = SqliteStore(str(tmp_path_factory.mktemp("dashboard") / "tasks.db"))
    with LiveServer(create_app(ScriptedAgent(), store=store)) as live:
        yield live


@pytest.fixture
def page(browser: Any, server: LiveServer) -> Iterator[Any]:
    context = browser.new_context(base_url=server.url, viewport={"width": 1280, "height": 800})
    opened = context.new_page()
    opened.set_default_timeout(TIMEOUT_MS)
    errors: list[str] = []
    opened.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    opened.on("pageerror", lambda e: errors.append(str(e)))
    yield opened
    context.close()
    assert errors == [], f"the page's console had errors: {errors}"


def shoot(page: Any, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def test_the_table_lists_tasks_with_their_state_and_request(page: Any, server: LiveServer) -> None:
    done = send(server, "echo the quarterly numbers please")
    failed = send(server, "fail on purpose")
    page.goto("/ui")
    row = page.locator(f'tr[data-task-id="{done["id"]}"]')
    row.wait_for()
    assert "completed" in row.locator(".badge").inner_text()
    assert "echo the quarterly numbers please" in row.inner_text()
    failed_row = page.locator(f'tr[data-task-id="{failed["id"]}"]')
    assert "failed" in failed_row.locator(".badge").inner_text()
    counts = page.locator(".counts")
    counts.locator("button").first.wait_for()
    completed = counts.locator("button", has_text="completed").locator("strong").inner_text()
    assert int(completed.replace(",", "")) >= 1
    shoot(page, "dashboard-table")


def test_tasks_sent_within_a_second_read_apart_in_the_task_and_context_columns(
    page: Any, server: LiveServer
) -> None:
    # Version 7 ids made in one minute share their first 8 characters: the columns must
    # show a part that differs, with the whole id in the tooltip and the link kept.
    tasks = [send(server, f"echo burst {n}") for n in range(4)]
    assert len({t["id"][:8] for t in tasks}) == 1
    page.goto("/ui")
    page.locator(f'tr[data-task-id="{tasks[-1]["id"]}"]').wait_for()
    rows = [page.locator(f'tr[data-task-id="{task["id"]}"]') for task in tasks]
    shown = [row.locator("td").nth(1).inner_text() for row in rows]
    contexts = [row.locator("td.ctx").inner_text() for row in rows]
    assert len(set(shown)) == len(tasks), shown
    assert len(set(contexts)) == len(tasks), contexts
    for task, row, text in zip(tasks, rows, shown, strict=True):
        link = row.locator("td").nth(1).locator("a")
        assert link.get_attribute("href") == f"/ui/tasks/{task['id']}"
        assert link.locator("code").get_attribute("title") == task["id"]
        assert text.strip("…") in task["id"]
        assert row.locator("td.ctx code").get_attribute("title") == task["contextId"]
    page.locator(f'tr[data-task-id="{tasks[2]["id"]}"] td a').click()
    page.wait_for_url(f"**/ui/tasks/{tasks[2]['id']}")


def test_filters_are_kept_in_the_url_and_survive_a_reload(page: Any, server: LiveServer) -> None:
    done = send(server, "echo kept")
    failed = send(server, "fail kept")
    page.goto("/ui")
    page.get_by_label("State", exact=True).select_option("TASK_STATE_FAILED")
    page.get_by_role("button", name="Apply").click()
    page.wait_for_url(re.compile(r"state=TASK_STATE_FAILED"))
    page.locator(f'tr[data-task-id="{failed["id"]}"]').wait_for()
    assert page.locator(f'tr[data-task-id="{done["id"]}"]').count() == 0
    page.reload()
    page.locator(f'tr[data-task-id="{failed["id"]}"]').wait_for()
    assert page.get_by_label("State", exact=True).input_value() == "TASK_STATE_FAILED"
    states = page.locator("tbody tr").evaluate_all("rows => rows.map(r => r.dataset.state)")
    assert states and set(states) == {"TASK_STATE_FAILED"}


def test_a_tasks_page_shows_its_conversation_artifacts_and_metadata(
    page: Any, server: LiveServer
) -> None:
    task = send(server, "parts")
    page.goto("/ui")
    page.locator(f'tr[data-task-id="{task["id"]}"] a').click()
    page.wait_for_url(f"**/ui/tasks/{task['id']}")
    page.locator("#history .message.user", has_text="parts").wait_for()
    artifacts = page.locator("#artifacts")
    assert artifacts.locator(".artifact").count() >= 1
    assert artifacts.locator("pre.data").count() >= 1  # a data part, as formatted JSON
    assert artifacts.locator("a[download]").count() >= 1  # a file part, as a download
    assert "completed" in page.locator("#task-state").inner_text()
    shoot(page, "dashboard-task")


def test_cancel_from_a_tasks_page_after_confirming(page: Any, server: LiveServer) -> None:
    task = send(server, "hang", wait=False)
    page.goto(f"/ui/tasks/{task['id']}")
    page.get_by_role("button", name="Cancel task…").click()
    dialog = page.locator("#confirm-dialog")
    dialog.get_by_role("button", name="Keep").click()
    assert "canceled" not in page.locator("#task-state").inner_text()
    page.get_by_role("button", name="Cancel task…").click()
    dialog.get_by_role("button", name="Cancel task", exact=True).click()
    page.locator("#task-state", has_text="canceled").wait_for()
    stored = httpx.get(f"{server.url}/tasks/{task['id']}", headers=V1).json()
    assert stored["status"]["state"] == "TASK_STATE_CANCELED"


def test_answer_an_input_required_task_from_its_page(page: Any, server: LiveServer) -> None:
    task = send(server, "input which colour?")
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    page.goto(f"/ui/tasks/{task['id']}")
    page.get_by_label("Answer the agent").fill("blue")
    page.get_by_role("button", name="Send").click()
    page.locator("#task-state", has_text="completed").wait_for()
    page.locator("#artifacts", has_text="got: blue").wait_for()


def test_a_task_sent_by_the_cli_appears_within_a_second_and_changes_live(
    page: Any, server: LiveServer
) -> None:
    page.goto("/ui")
    page.locator("tbody tr").first.wait_for()
    sent = subprocess.run(
        [
            sys.executable,
            "-m",
            "a2ad.cli",
            "send",
            "--url",
            server.url,
            "--no-wait",
            "--json",
            "hang until canceled",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    task_id = json.loads(sent.stdout)["id"]
    row = page.locator(f'tr[data-task-id="{task_id}"]')
    row.wait_for(timeout=1_000)  # no reload: the page heard of it
    assert "hang until canceled" in row.inner_text()
    httpx.post(f"{server.url}/tasks/{task_id}:cancel", json={}, headers=V1).raise_for_status()
    page.locator(f'tr[data-task-id="{task_id}"][data-state="TASK_STATE_CANCELED"]').wait_for(
        timeout=1_500
    )
    assert "canceled" in row.locator(".badge").inner_text()


def test_a_tasks_timeline_shows_its_status_changes_in_order(page: Any, server: LiveServer) -> None:
    task = send(server, "input which size?")
    send(server, "large", task_id=task["id"])
    page.goto(f"/ui/tasks/{task['id']}")
    page.locator("#timeline ol.timeline li").first.wait_for()
    states = page.locator("#timeline li").evaluate_all("items => items.map(i => i.dataset.state)")
    assert states[0] in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING")
    assert "TASK_STATE_INPUT_REQUIRED" in states
    assert states[-1] == "TASK_STATE_COMPLETED"
    assert states.index("TASK_STATE_INPUT_REQUIRED") < len(states) - 1
    # Counts in words: several status changes, the one artifact the follow-up made.
    summary = page.locator("#timeline p.muted").inner_text()
    assert re.fullmatch(rf"{len(states)} status changes over .+; 1 artifact update\.", summary)


def test_the_charts_show_recent_activity(page: Any, server: LiveServer) -> None:
    send(server, "echo charted")
    page.goto("/ui")
    throughput = page.locator("#throughput .big")
    throughput.wait_for()
    assert int(throughput.inner_text().split()[0].replace(",", "")) >= 1
    assert page.locator("#chart-states rect.bar").count() >= 1
    assert page.locator("#chart-states .legend li", has_text="completed").count() == 1
    assert "p50" in page.locator("#chart-durations").inner_text()


def test_cancel_overdue_shows_which_before_it_cancels(page: Any, server: LiveServer) -> None:
    stuck = send(server, "hang stuck", wait=False)
    fresh_page = "/ui?stale=1s"
    time.sleep(1.2)  # the hanging task has been unchanged for over 1 s
    page.goto(fresh_page)
    page.locator(f'tr[data-task-id="{stuck["id"]}"] .overdue').wait_for()
    page.get_by_role("button", name="Cancel overdue…").click()
    dialog = page.locator("#confirm-dialog")
    listed = dialog.locator(f'li[data-task-id="{stuck["id"]}"]')
    listed.wait_for()
    assert "no change for" in listed.inner_text()
    assert dialog.locator("li", has_text="completed").count() == 0
    # The title and the button say one task, or how many.
    listed_count = dialog.locator("li").count()
    title = dialog.locator("#confirm-title").inner_text()
    confirm = "Cancel task" if listed_count == 1 else "Cancel tasks"
    if listed_count == 1:
        assert title == "Cancel this overdue task?"
    else:
        assert title == f"Cancel these {listed_count} overdue tasks?"
    dialog.get_by_role("button", name=confirm, exact=True).click()
    page.locator(f'tr[data-task-id="{stuck["id"]}"][data-state="TASK_STATE_CANCELED"]').wait_for()
    stored = httpx.get(f"{server.url}/tasks/{stuck['id']}", headers=V1).json()
    assert stored["status"]["state"] == "TASK_STATE_CANCELED"


def test_copy_a_task_as_json(browser: Any, server: LiveServer) -> None:
    task = send(server, "echo copy me")
    context = browser.new_context(base_url=server.url)
    context.grant_permissions(["clipboard-read", "clipboard-write"])
    try:
        opened = context.new_page()
        opened.goto(f"/ui/tasks/{task['id']}")
        opened.get_by_role("button", name="Copy as JSON").click()
        opened.locator("#live", has_text="copied").wait_for(timeout=TIMEOUT_MS)
        copied = json.loads(opened.evaluate("() => navigator.clipboard.readText()"))
        assert copied["id"] == task["id"]
        assert copied["status"]["state"] == "TASK_STATE_COMPLETED"
    finally:
        context.close()


def test_a_running_tasks_page_follows_it_live(page: Any, server: LiveServer) -> None:
    task = send(server, "hang until told", wait=False)
    page.goto(f"/ui/tasks/{task['id']}")
    page.locator("#live", has_text="following the task live").wait_for()
    page.locator("#task-state", has_text="working").wait_for()
    # Ended elsewhere (the API, not this page): the page hears it without a reload.
    httpx.post(f"{server.url}/tasks/{task['id']}:cancel", json={}, headers=V1).raise_for_status()
    page.locator("#task-state", has_text="canceled").wait_for()
    assert page.get_by_role("button", name="Cancel task…").count() == 0


def test_a_task_that_ends_before_the_page_follows_it_is_shown_ended(
    browser: Any, server: LiveServer
) -> None:
    task = send(server, "hang until told", wait=False)
    context = browser.new_context(base_url=server.url)
    errors: list[str] = []

    def end_it_first(route: Any) -> None:
        # Ended between the page's read of the task and its subscription.
        httpx.post(f"{server.url}/tasks/{task['id']}:cancel", json={}, headers=V1)
        route.continue_()

    try:
        opened = context.new_page()
        opened.set_default_timeout(TIMEOUT_MS)
        opened.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        opened.route("**/tasks/*:subscribe", end_it_first)
        opened.goto(f"/ui/tasks/{task['id']}")
        opened.locator("#task-state", has_text="canceled").wait_for()
        opened.locator("#live", has_text="the task ended").wait_for()
        assert opened.get_by_role("button", name="Cancel task…").count() == 0
    finally:
        context.close()
    # The refused subscription is the browser's own log line, and the only one.
    assert len(errors) == 1 and "400" in errors[0], errors


def test_dark_and_light_follow_the_system(browser: Any, server: LiveServer) -> None:
    backgrounds = {}
    for scheme in ("light", "dark"):
        context = browser.new_context(base_url=server.url, color_scheme=scheme)
        try:
            opened = context.new_page()
            opened.goto("/ui")
            opened.locator("tbody tr").first.wait_for(timeout=TIMEOUT_MS)
            backgrounds[scheme] = opened.evaluate(
                "() => getComputedStyle(document.body).backgroundColor"
            )
            if scheme == "dark":
                shoot(opened, "dashboard-table-dark")
        finally:
            context.close()
    assert backgrounds["light"] == "rgb(255, 255, 255)"
    assert backgrounds["dark"] != backgrounds["light"]


def test_text_and_time_window_filters(page: Any, server: LiveServer) -> None:
    early = send(server, "echo zebra early")
    time.sleep(0.05)
    late = send(server, "echo zebra late")
    for _ in range(30):  # older tasks that don't match, to search past
        send(server, "echo filler")
    page.goto("/ui?text=zebra")
    page.locator(f'tr[data-task-id="{late["id"]}"]').wait_for()
    assert page.locator(f'tr[data-task-id="{early["id"]}"]').count() == 1
    rows = page.locator("tbody tr[data-task-id]").count()
    assert rows >= 2
    assert all("zebra" in t for t in page.locator("tbody td.request").all_inner_texts())
    assert "searched" in page.locator("#page-summary").inner_text()
    # The window's end, to the millisecond: only the earlier of the two.
    cut = late["status"]["timestamp"].removesuffix("Z")
    page.goto(f"/ui?text=zebra&before={cut}")
    page.locator(f'tr[data-task-id="{early["id"]}"]').wait_for()
    assert page.locator(f'tr[data-task-id="{late["id"]}"]').count() == 0
    assert page.get_by_label("and before").input_value().startswith(cut[:16])


def test_send_a_new_task_from_the_table(page: Any, server: LiveServer) -> None:
    page.goto("/ui")
    page.get_by_label("Send a new task").fill("echo from the form")
    page.locator("#new-task").get_by_role("button", name="Send").click()
    page.wait_for_url("**/ui/tasks/**")
    page.locator("#history", has_text="echo from the form").wait_for()
    page.locator("#task-state", has_text="completed").wait_for()


def test_escape_on_a_confirmation_cancels_nothing_even_after_an_earlier_yes(
    page: Any, server: LiveServer
) -> None:
    done = send(server, "hang once", wait=False)
    kept = send(server, "hang twice", wait=False)
    page.goto(f"/ui/tasks/{done['id']}")
    page.get_by_role("button", name="Cancel task…").click()
    page.locator("#confirm-dialog").get_by_role("button", name="Cancel task", exact=True).click()
    page.locator("#task-state", has_text="canceled").wait_for()
    page.goto(f"/ui/tasks/{kept['id']}")
    page.get_by_role("button", name="Cancel task…").click()
    page.locator("#confirm-dialog").wait_for()
    page.keyboard.press("Escape")
    page.wait_for_timeout(300)
    stored = httpx.get(f"{server.url}/tasks/{kept['id']}", headers=V1).json()
    assert stored["status"]["state"] == "TASK_STATE_WORKING"
    httpx.post(f"{server.url}/tasks/{kept['id']}:cancel", json={}, headers=V1)
