"""The ``a2ad`` client commands (send, tasks …, card), run as a user runs them:
the venv's ``a2ad`` script in a subprocess, against a real a2ad on a free port,
in A2A 1.0 (the card's choice) and 0.3 (forced with --a2a-version).

Most tests share one server for the module: each looks only at the tasks it
made. Those that see every task on a server (lists, the overdue search) get
one of their own."""

from __future__ import annotations

import json
import os
import re
import select
import signal
import subprocess
import time
from collections.abc import Iterator
from typing import Any, cast

import pytest

from a2ad import A2AApp, SyncClient, Task, TaskState, TaskStatusUpdateEvent, create_app, tools

from ..conftest import LiveServer, free_port
from ..recording import Recording
from ..scripted import ScriptedAgent
from ..served import A2AD, WITH_DEFAULT_SIGINT

CLOCK = re.compile(r"^\d\d:\d\d:\d\d  ", re.MULTILINE)
# Tasks made quiet by a 4.5 s sleep are past it; one made just before the command
# has 4 s to spare: starting the `a2ad` process takes over a second on a busy
# 2-core machine, and 2.5 s of slack failed there under a parallel benchmark.
QUIET_SECONDS = 4.5
STALE = "4s"


def a2ad(
    *args: str, env: dict[str, str] | None = None, timeout: float = 20
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(A2AD), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        env=_env(env),
    )


def _env(extra: dict[str, str] | None) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("A2AD_")}
    return {**clean, "COLUMNS": "200", **(extra or {})}


class Server:
    """A live a2ad, and the ``a2ad`` command pointed at it in one A2A version."""

    def __init__(self, live: LiveServer, recording: Recording, version: str) -> None:
        self.live = live
        self.url = live.url
        self.recording = recording
        self.version = version
        self.flags = ["--url", self.url] + (["--a2a-version", "0.3"] if version == "0.3" else [])

    def __call__(self, *args: str, **options: Any) -> subprocess.CompletedProcess[str]:
        self.recording.versions.clear()  # note only this command's calls
        return a2ad(*args, *self.flags, **options)

    def client(self) -> SyncClient:
        return SyncClient(self.url)

    def start(self, text: str, **options: Any) -> Task:
        with self.client() as client:
            task = client.send(text, **options)
        assert isinstance(task, Task)
        return task

    def state(self, task_id: str) -> TaskState:
        with self.client() as client:
            return client.get_task(task_id).status.state

    def spoke_only(self, version: str) -> bool:
        """Whether every A2A call the last command made was in ``version``."""
        expected = "1.0" if version == "1.0" else ""
        return bool(self.recording.versions) and set(self.recording.versions) == {expected}


def serve(version: str, token: str | None = None) -> Iterator[Server]:
    recording = Recording(create_app(ScriptedAgent()), token=token)
    with LiveServer(cast(A2AApp, recording)) as live:
        yield Server(live, recording, version)


@pytest.fixture(scope="module")
def shared() -> Iterator[Server]:
    yield from serve("1.0")


@pytest.fixture(params=["1.0", "0.3"])
def server(request: pytest.FixtureRequest, shared: Server) -> Server:
    """The module's server, spoken to in each A2A version."""
    return Server(shared.live, shared.recording, str(request.param))


@pytest.fixture
def server10(shared: Server) -> Server:
    return shared


@pytest.fixture(params=["1.0", "0.3"])
def own_server(request: pytest.FixtureRequest) -> Iterator[Server]:
    """A server of the test's own, holding only the tasks it makes."""
    yield from serve(str(request.param))


@pytest.fixture
def own_server10() -> Iterator[Server]:
    yield from serve("1.0")


def parsed(done: subprocess.CompletedProcess[str]) -> Any:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    """The failure as a user sees it: one line on stderr, no traceback."""
    said = done.stderr.strip()
    assert said.startswith("error: "), done.stderr
    assert "\n" not in said, done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    return said


class Watching:
    """``a2ad tasks watch`` running in the background, read line by line; Ctrl-C
    (SIGINT) stops it as it would in a terminal."""

    def __init__(self, server: Server, task_id: str) -> None:
        self.proc = subprocess.Popen(
            [*WITH_DEFAULT_SIGINT, str(A2AD), "tasks", "watch", task_id, *server.flags],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            env=_env(None),
        )

    def line(self, timeout: float = 10) -> str:
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        assert ready, "tasks watch printed nothing"
        return self.proc.stdout.readline()

    def finish(self, timeout: float = 10) -> tuple[int, str, str]:
        out, err = self.proc.communicate(timeout=timeout)
        return self.proc.returncode, out, err

    def __enter__(self) -> Watching:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.communicate(timeout=10)


# --- send ---


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


# --- tasks list ---


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
    quiet = own_server.start("hang", wait=False)
    finished = own_server.start("echo done")
    time.sleep(QUIET_SECONDS)
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


# --- tasks get ---


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


# --- tasks cancel ---


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
    scene = {
        "hang": server.start("hang", wait=False),
        "input": server.start("input which?"),
    }
    time.sleep(QUIET_SECONDS)
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


# --- card ---


def test_card_shows_the_agent_its_interfaces_and_skills(server: Server) -> None:
    done = server("card")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "scripted" in out and "driven by the first word" in out
    assert f"JSONRPC    {server.url}/  A2A 1.0, 0.3" in out
    assert "streaming: yes" in out
    assert "skills (1)" in out
    assert f"speaks A2A {server.version}" in out


def test_card_shows_each_interface_of_a2ad_serve_once_with_its_versions() -> None:
    # The card names each twice: in supportedInterfaces (1.0 and 0.3) and in
    # the 0.3 fields (url, preferredTransport, additionalInterfaces).
    from ..served import Served

    with Served("--store", "memory") as served:
        url = served.url
        done = a2ad("card", "--url", url)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    start = lines.index("interfaces") + 1
    assert lines[start : start + 3] == [
        f"  JSONRPC    {url}/  A2A 1.0, 0.3",
        f"  HTTP+JSON  {url}/  A2A 1.0, 0.3",
        "  this client speaks A2A 1.0 to it (chosen from this card)",
    ]
    # The card's extension by its URI, not as a Python list of dicts.
    assert "  extension urn:a2ad:ext:push-delivery:v1" in lines
    assert "{'" not in done.stdout


def test_card_json_is_the_card_as_served(server10: Server) -> None:
    card = parsed(server10("card", "--json"))
    assert card["name"] == "scripted"
    assert {i["protocolVersion"] for i in card["supportedInterfaces"]} == {"1.0", "0.3"}


def test_url_and_version_come_from_the_environment(server10: Server) -> None:
    done = a2ad("card", env={"A2AD_URL": server10.url, "A2AD_A2A_VERSION": "0.3"})
    assert done.returncode == 0, done.stderr
    assert "speaks A2A 0.3" in done.stdout


def test_token_is_sent_as_a_bearer_token() -> None:
    for server in serve("1.0", token="s3cret"):
        refused = server("tasks", "list")
        assert refused.returncode == 1
        assert server.url in one_line_error(refused)
        done = a2ad("tasks", "list", "--url", server.url, env={"A2AD_TOKEN": "s3cret"})
        assert done.returncode == 0, done.stderr
        assert "no tasks" in done.stdout


# --- failures ---


@pytest.mark.parametrize(
    "command",
    [
        ["send", "hi"],
        ["send", "hi", "--stream"],
        ["tasks", "list"],
        ["tasks", "get", "t-1"],
        ["tasks", "watch", "t-1"],
        ["tasks", "cancel", "t-1"],
        ["tasks", "cancel-overdue", "--yes"],
        ["card", "--json"],
    ],
)
def test_server_down_is_one_line_naming_the_url(command: list[str]) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    done = a2ad(*command, "--url", url)
    assert done.returncode == 1
    said = one_line_error(done)
    assert url in said and "is the server running" in said
    assert done.stdout == ""


@pytest.mark.parametrize(
    "command",
    [
        ["tasks", "list", "--stale-after", "ten minutes"],
        ["tasks", "cancel-overdue", "--stale-after", "10x"],
        ["tasks", "list", "--state", "sleeping"],
        ["tasks", "list", "--state", "completed", "--stale-after", "1m"],
        ["send", "hi", "--timeout", "soon"],
        ["send", "hi", "--stream", "--no-wait"],
    ],
)
def test_bad_flag_values_exit_2_before_calling_the_server(command: list[str]) -> None:
    done = a2ad(*command, "--url", f"http://127.0.0.1:{free_port()}")
    assert done.returncode == 2
    said = one_line_error(done)
    assert command[-2] in said or "--no-wait" in said


def test_bracketed_text_in_an_error_is_printed_as_given(server10: Server) -> None:
    # Rich would read [bold] as markup; ids and URLs are printed as they are.
    said = one_line_error(server10("tasks", "get", "[bold]t-1[/bold]"))
    assert "task [bold]t-1[/bold] not found" in said
    down = f"http://[::1]:{free_port()}/[i]x"
    assert down in one_line_error(a2ad("tasks", "list", "--url", down))


def test_an_unknown_a2a_version_is_a_usage_error() -> None:
    done = a2ad("card", "--a2a-version", "2.0")
    assert done.returncode == 2
    assert "--a2a-version" in done.stderr and "Traceback" not in done.stderr


def test_a_message_to_an_ended_task_names_the_task(server10: Server) -> None:
    task = server10.start("echo done")
    done = server10("send", "more", "--task", task.id)
    assert done.returncode == 1
    said = one_line_error(done)
    assert task.id in said and server10.url in said


def test_help_offers_shell_completion_and_every_command() -> None:
    top = a2ad("--help")
    assert top.returncode == 0
    for word in ("--install-completion", "--show-completion", "serve", "send", "tasks", "card"):
        assert word in top.stdout, word
    tasks = a2ad("tasks", "--help")
    for word in ("list", "get", "watch", "cancel", "cancel-overdue"):
        assert word in tasks.stdout, word
