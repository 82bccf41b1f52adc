"""``a2ad tasks list``, run as a user runs it against a real a2ad, in A2A 1.0 and 0.3: rows,
JSON, filters, pages, and the quiet tasks ``--stale-after`` finds (the same as the tools'),
each on a server of the test's own."""

from __future__ import annotations

import re

import pytest

from a2ad import tools

from ..clock import reached
from .client_commands import QUIET_SECONDS, STALE, Server, parsed


def test_tasks_list_shows_id_state_context_age_and_request(own_server: Server) -> None:
    done_task = own_server.start("echo first words of it")
    asking = own_server.start("input pick one")
    done = own_server("tasks", "list")
    assert done.returncode == 0, done.stderr
    header, *rows = done.stdout.splitlines()
    assert header.split() == ["ID", "STATE", "CONTEXT", "UPDATED", "REQUEST"]
    assert len(rows) == 2
    assert rows[0].startswith(asking.id)  # newest first
    assert "input-required" in rows[0] and asking.context_id in rows[0]
    assert "input pick one" in rows[0]
    assert rows[1].startswith(done_task.id) and "completed" in rows[1]
    assert "echo first words of it" in rows[1]
    assert re.search(r"just now|\ds ago", rows[1])
    assert own_server.spoke_only(own_server.version)


def test_tasks_list_json_filters_by_state_and_context(own_server: Server) -> None:
    finished = own_server.start("echo x")
    asking = own_server.start("input which?")
    by_state = parsed(own_server("tasks", "list", "--state", "input-required", "--json"))
    assert [t["id"] for t in by_state] == [asking.id]
    assert by_state[0]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    by_context = parsed(own_server("tasks", "list", "--context", finished.context_id, "--json"))
    assert [t["id"] for t in by_context] == [finished.id]


def test_tasks_list_shows_one_page_unless_all(own_server10: Server) -> None:
    ids = [own_server10.start(f"echo {n}").id for n in range(3)]
    page = own_server10("tasks", "list", "--limit", "2")
    assert page.returncode == 0, page.stderr
    assert ids[2] in page.stdout and ids[1] in page.stdout and ids[0] not in page.stdout
    assert "2 of 3 tasks" in page.stdout and "--all" in page.stdout
    every = parsed(own_server10("tasks", "list", "--limit", "1", "--all", "--json"))
    assert [t["id"] for t in every] == ids[::-1]


def test_tasks_list_stale_after_shows_only_quiet_active_tasks(own_server: Server) -> None:
    with own_server.clock.behind(QUIET_SECONDS):
        quiet = own_server.start("hang", wait=False)
        finished = own_server.start("echo done")
        reached(own_server.url, quiet.id)
    fresh = own_server.start("hang", wait=False)
    done = own_server("tasks", "list", "--stale-after", STALE)
    assert done.returncode == 0, done.stderr
    assert quiet.id in done.stdout and "no status change" in done.stdout
    assert fresh.id not in done.stdout and finished.id not in done.stdout


@pytest.mark.parametrize(
    ("stale_after", "counts_the_working_task"),
    [("off", False), ("None", False), ("1h", False), ("0s", True)],
)
def test_stale_after_means_the_same_to_the_cli_and_the_tools(
    own_server10: Server, stale_after: str, counts_the_working_task: bool
) -> None:
    # off (or none): deadlines only; 0s: every active task. The task has no deadline.
    working = own_server10.start("hang", wait=False)
    expected = {working.id} if counts_the_working_task else set()
    listed = parsed(own_server10("tasks", "list", "--stale-after", stale_after, "--json"))
    found = parsed(
        own_server10("tasks", "cancel-overdue", "--stale-after", stale_after, "--dry-run", "--json")
    )
    assert {t["id"] for t in listed} == expected
    assert {t["taskId"] for t in found} == expected
    tool_list = tools.list_tasks("active", stale_after=stale_after, server_url=own_server10.url)
    tool_found = tools.cancel_overdue_tasks(stale_after, dry_run=True, server_url=own_server10.url)
    assert {t["id"] for t in tool_list["tasks"] if "overdue" in t} == expected
    assert {t["id"] for t in tool_found["found"]} == expected
    if not counts_the_working_task:
        said = own_server10("tasks", "cancel-overdue", "--stale-after", stale_after)
        assert said.returncode == 0, said.stderr
        assert "no overdue tasks" in said.stdout


def test_tasks_list_with_nothing_to_show_says_so(own_server10: Server) -> None:
    done = own_server10("tasks", "list")
    assert done.returncode == 0 and "no tasks" in done.stdout
    assert parsed(own_server10("tasks", "list", "--json")) == []
