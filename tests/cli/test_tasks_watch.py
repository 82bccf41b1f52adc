"""``a2ad tasks get`` and ``a2ad tasks watch``, run as a user runs them against a real a2ad,
in A2A 1.0 and 0.3: one task's state, history and artifacts, and its timeline, live or
after it ended."""

from __future__ import annotations

import json
import re
import signal

from a2ad import SyncClient, Task, TaskState, TaskStatusUpdateEvent

from .client_commands import CLOCK, Server, Watching, a2ad, one_line_error, parsed


def test_tasks_get_shows_state_context_history_and_artifacts(server: Server) -> None:
    task = server.start("input which colour?")
    server.start("green", task_id=task.id)
    done = server("tasks", "get", task.id)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert task.id in out and task.context_id in out
    assert re.search(r"state\s+completed", out)
    assert re.search(r"updated\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", out)
    assert "history (4 messages)" in out
    assert re.search(r"user\s+input which colour\?", out)
    assert re.search(r"agent\s+which colour\?", out)
    assert "artifacts (1)" in out and "got: green" in out


def test_tasks_get_history_keeps_the_newest_messages(server: Server) -> None:
    task = server.start("input which colour?")
    got = parsed(server("tasks", "get", task.id, "--history", "1", "--json"))
    assert got["id"] == task.id
    assert [m["parts"][0]["text"] for m in got["history"]] == ["which colour?"]


def test_tasks_get_of_an_unknown_task_names_it_and_exits_1(server: Server) -> None:
    done = server("tasks", "get", "no-such-task")
    assert done.returncode == 1
    said = one_line_error(done)
    assert "no-such-task" in said and "not found" in said and server.url in said


# --- tasks watch ---


def test_tasks_watch_prints_a_timeline_until_the_task_ends(server: Server) -> None:
    task = server.start("input which colour?")
    with Watching(server, task.id) as watching:
        first = watching.line()
        assert CLOCK.match(first) and task.id in first and "input-required" in first
        server.start("red", task_id=task.id)
        code, out, err = watching.finish()
    assert code == 0, err
    lines = out.splitlines()
    assert any(CLOCK.match(line) and "working" in line for line in lines), out
    assert any("artifact answer: got: red" in line for line in lines), out
    assert lines[-1].endswith("completed")


def test_tasks_watch_ctrl_c_stops_watching_and_leaves_the_task_running(server10: Server) -> None:
    task = server10.start("hang", wait=False)
    with Watching(server10, task.id) as watching:
        assert task.id in watching.line()
        watching.proc.send_signal(signal.SIGINT)
        code, _, err = watching.finish()
    assert code == 130
    assert "keeps running" in err and task.id in err and "Traceback" not in err
    assert server10.state(task.id) is TaskState.WORKING


def test_tasks_watch_of_an_ended_task_shows_its_events_in_the_order_they_happened(
    server: Server,
) -> None:
    asking = server.start("input which colour?")
    server.start("red", task_id=asking.id)
    done = server("tasks", "watch", asking.id)
    assert done.returncode == 0, done.stderr
    header, *lines = done.stdout.splitlines()
    assert header.startswith(f"task {asking.id}  (context {asking.context_id})")
    shown = [CLOCK.sub("", line) for line in lines]
    assert shown == [
        "working  on it",
        "input-required  which colour?",
        "working",
        "artifact answer: got: red",
        "completed",
    ], done.stdout
    # Every line carries its event's time, and time never goes back.
    clocks = [line[:8] for line in lines]
    assert all(CLOCK.match(line) for line in lines) and clocks == sorted(clocks), done.stdout

    watched = server("tasks", "watch", asking.id, "--json")
    events = [json.loads(line) for line in watched.stdout.splitlines()]
    kinds = [next(iter(event)) for event in events]
    assert kinds == ["statusUpdate"] * 3 + ["artifactUpdate", "statusUpdate"]
    assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"


def test_tasks_watch_of_an_ended_streamed_artifact_shows_it_before_the_end(
    server10: Server,
) -> None:
    with server10.client() as client:
        *_, last = client.stream("chunks 3")
    assert isinstance(last, TaskStatusUpdateEvent)
    done = server10("tasks", "watch", last.task_id)
    assert done.returncode == 0, done.stderr
    assert [CLOCK.sub("", line) for line in done.stdout.splitlines()[1:]] == [
        "working  on it",
        "artifact stream: c0c1c2",
        "completed",
    ], done.stdout


def test_tasks_watch_of_an_ended_task_on_a_server_without_an_event_log(sdk_url: str) -> None:
    # The official SDK keeps no event log: the task as it ended is what there is,
    # shown in the order it happened: its artifact, then its end.
    with SyncClient(sdk_url) as client:
        task = client.send("hello sdk")
    assert isinstance(task, Task)
    done = a2ad("tasks", "watch", task.id, "--url", sdk_url)
    assert done.returncode == 0, done.stderr
    header, artifact, end = done.stdout.splitlines()
    assert header.startswith(f"task {task.id}")
    assert artifact == " " * 10 + "artifact echo: hello sdk"  # when it came is not known
    assert CLOCK.match(end) and end.endswith("completed")
