"""``a2ad send``, run as a user runs it against a real a2ad, in A2A 1.0 and 0.3: what it prints
of the task, its question or reply, and its stream, as text and as JSON."""

from __future__ import annotations

import json
import re

from a2ad import TaskState

from .client_commands import CLOCK, Server, parsed


def test_send_prints_the_task_state_and_its_artifact_text(server: Server) -> None:
    done = server("send", "echo hello there")
    assert done.returncode == 0, done.stderr
    assert "completed" in done.stdout
    assert "hello there" in done.stdout
    assert server.spoke_only(server.version)


def test_send_json_is_the_task_in_the_a2a_1_0_shape(server: Server) -> None:
    task = parsed(server("send", "echo as json", "--json"))
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert task["artifacts"][0]["parts"][0]["text"] == "as json"
    assert task["contextId"]


def test_send_shows_the_agents_question_and_task_continues_the_task(server: Server) -> None:
    asked = server("send", "input which colour?")
    assert asked.returncode == 0, asked.stderr
    assert "input-required" in asked.stdout and "which colour?" in asked.stdout
    task_id = re.search(r"--task (\S+)", asked.stdout)
    assert task_id, asked.stdout

    answered = server("send", "blue", "--task", task_id.group(1))
    assert answered.returncode == 0, answered.stderr
    assert "completed" in answered.stdout and "got: blue" in answered.stdout


def test_send_prints_a_reply_message_as_its_text(server: Server) -> None:
    done = server("send", "reply howdy")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "howdy"


def test_send_exits_1_when_the_task_fails(server10: Server) -> None:
    done = server10("send", "fail")
    assert done.returncode == 1
    assert "failed" in done.stdout and "it broke" in done.stdout


def test_send_no_wait_returns_the_task_while_it_runs(server10: Server) -> None:
    task = parsed(server10("send", "hang", "--no-wait", "--json"))
    assert task["status"]["state"] in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING")
    assert server10.state(task["id"]) is TaskState.WORKING


def test_send_to_another_context_keeps_the_context(server10: Server) -> None:
    first = server10.start("echo one")
    task = parsed(server10("send", "echo two", "--context", first.context_id, "--json"))
    assert task["contextId"] == first.context_id and task["id"] != first.id


def test_send_stream_shows_each_status_change_and_the_artifact_text(server: Server) -> None:
    done = server("send", "chunks 3", "--stream")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert all(CLOCK.match(line) for line in lines if not line.startswith(" ")), done.stdout
    said = "\n".join(lines)
    assert "working" in said
    assert "artifact stream: c0c1c2" in said  # the chunks continue one line
    assert lines[-1].endswith("completed")
    assert server.spoke_only(server.version)


def test_send_stream_json_is_one_a2a_event_per_line(server: Server) -> None:
    done = server("send", "chunks 2", "--stream", "--json")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert "task" in events[0]
    chunks = [e["artifactUpdate"]["artifact"] for e in events if "artifactUpdate" in e]
    assert [c["parts"][0]["text"] for c in chunks] == ["c0", "c1"]
    assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
