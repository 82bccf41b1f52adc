"""``a2ad tasks cancel`` and ``a2ad tasks cancel-overdue``, run as a user runs them against a
real a2ad, in A2A 1.0 and 0.3: each task's result, and which quiet tasks are overdue."""

from __future__ import annotations

import json

from a2ad import Task, TaskState

from ..clock import reached
from .client_commands import QUIET_SECONDS, STALE, Server, one_line_error, parsed


def test_tasks_cancel_reports_each_task_and_fails_if_any_did(server: Server) -> None:
    running = server.start("hang", wait=False)
    finished = server.start("echo done")
    done = server("tasks", "cancel", running.id, finished.id, "no-such-task")
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert len(lines) == 3
    assert lines[0].startswith(running.id) and lines[0].endswith("canceled")
    assert lines[1].startswith(finished.id) and "already completed" in lines[1]
    assert lines[2].startswith("no-such-task") and "not found" in lines[2]
    assert server.state(running.id) is TaskState.CANCELED
    assert server.state(finished.id) is TaskState.COMPLETED


def test_tasks_cancel_json_gives_one_result_per_task(server10: Server) -> None:
    running = server10.start("input which?")
    finished = server10.start("echo done")
    done = server10("tasks", "cancel", running.id, finished.id, "--json")
    assert done.returncode == 1
    assert json.loads(done.stdout) == [
        {"taskId": running.id, "ok": True, "state": "canceled", "error": None},
        {"taskId": finished.id, "ok": False, "state": "completed", "error": "already completed"},
    ]


def test_tasks_cancel_of_running_tasks_exits_0(server10: Server) -> None:
    ids = [server10.start("hang", wait=False).id for _ in range(2)]
    done = server10("tasks", "cancel", *ids)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("canceled") == 2


# --- tasks cancel-overdue ---


def overdue_scene(server: Server) -> dict[str, Task]:
    """Two active tasks quiet for QUIET_SECONDS, then a fresh one and a finished one."""
    with server.clock.behind(QUIET_SECONDS):
        scene = {
            "hang": server.start("hang", wait=False),
            "input": server.start("input which?"),
        }
        reached(server.url, scene["hang"].id)
    scene["fresh"] = server.start("hang", wait=False)
    scene["finished"] = server.start("echo done")
    return scene


def test_cancel_overdue_yes_cancels_only_the_overdue_tasks(own_server: Server) -> None:
    scene = overdue_scene(own_server)
    done = own_server("tasks", "cancel-overdue", "--stale-after", STALE, "--yes")
    assert done.returncode == 0, done.stderr
    for name in ("hang", "input"):
        assert scene[name].id in done.stdout
        assert own_server.state(scene[name].id) is TaskState.CANCELED
    assert "no status change" in done.stdout
    assert "canceled 2 of 2 overdue tasks" in done.stdout
    assert scene["fresh"].id not in done.stdout
    assert own_server.state(scene["fresh"].id) is TaskState.WORKING
    assert own_server.state(scene["finished"].id) is TaskState.COMPLETED


def test_cancel_overdue_json_gives_each_result_with_its_reason(own_server10: Server) -> None:
    scene = overdue_scene(own_server10)
    results = parsed(
        own_server10("tasks", "cancel-overdue", "--stale-after", STALE, "--yes", "--json")
    )
    assert {r["taskId"] for r in results} == {scene["hang"].id, scene["input"].id}
    for r in results:
        assert r["ok"] is True and r["state"] == "canceled" and r["error"] is None
        assert r["reason"].startswith("no status change for")


def test_cancel_overdue_dry_run_lists_and_cancels_nothing(server: Server) -> None:
    scene = overdue_scene(server)
    done = server("tasks", "cancel-overdue", "--stale-after", STALE, "--dry-run")
    assert done.returncode == 0, done.stderr
    assert scene["hang"].id in done.stdout and scene["input"].id in done.stdout
    assert "dry run" in done.stdout
    assert server.state(scene["hang"].id) is TaskState.WORKING
    assert server.state(scene["input"].id) is TaskState.INPUT_REQUIRED
    assert scene["fresh"].id not in done.stdout
    listed = parsed(
        server("tasks", "cancel-overdue", "--stale-after", STALE, "--dry-run", "--json")
    )
    # By now the fresh task may be overdue too; the quiet two are listed still.
    assert {scene["hang"].id, scene["input"].id} <= {t["taskId"] for t in listed}
    assert all(t["reason"].startswith("no status change") for t in listed)


def test_cancel_overdue_without_yes_and_no_terminal_refuses(server10: Server) -> None:
    scene = overdue_scene(server10)
    done = server10("tasks", "cancel-overdue", "--stale-after", STALE)
    assert done.returncode == 2
    assert "--yes" in one_line_error(done)
    assert server10.state(scene["hang"].id) is TaskState.WORKING


def test_cancel_overdue_with_nothing_overdue_says_so(own_server10: Server) -> None:
    own_server10.start("hang", wait=False)
    done = own_server10("tasks", "cancel-overdue")  # default: quiet for 10m
    assert done.returncode == 0, done.stderr
    assert "no overdue tasks" in done.stdout
