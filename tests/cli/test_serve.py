"""The ``a2ad`` command, run as a user runs it: a subprocess of the venv's script."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import httpx
import pytest

from a2ad import A2AApp, A2AError, SyncClient, Task, TaskState, create_app

from ..conftest import LiveServer, free_port
from ..recording import Recording
from ..scripted import ScriptedAgent
from ..scripted_llm import ScriptedLLM, answer, status, status_text, texts, tool_call
from ..served import A2AD, PROJECT, Served, run_a2ad


@pytest.fixture
def served_echo() -> Iterator[Served]:
    with Served("--max-tasks", "5", "--shutdown-grace", "0") as s:
        yield s


def test_serve_prints_its_urls_answers_and_stops_cleanly_on_ctrl_c(served_echo: Served) -> None:
    s = served_echo
    rpc_url = s.expect(r"JSON-RPC:\s+(http://\S+)").group(1)
    card_url = s.expect(r"Agent card:\s+(http://\S+)").group(1)
    assert f":{s.port}/" in rpc_url
    assert card_url.endswith(f":{s.port}/.well-known/agent-card.json")
    assert re.search(r"\b5 tasks\b", s.output), s.output

    with httpx.Client(timeout=10) as http:
        card = http.get(card_url)
        assert card.status_code == 200
        assert card.json()["name"] == "echo"
        sent = http.post(
            rpc_url,
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "message/send",
                "params": {"message": {"role": "user", "parts": [{"text": "hello cli"}]}},
            },
        )
    task = sent.json()["result"]
    assert task["status"]["state"] == "completed"
    assert task["artifacts"][0]["parts"][0]["text"] == "hello cli"

    asked = time.monotonic()
    assert s.stop() == 0
    assert time.monotonic() - asked < 5
    s.reader.join(5)
    assert "a2ad stopped." in s.output


def test_serve_keeps_at_most_max_tasks_in_flight_and_ctrl_c_still_stops_it(
    served_echo: Served,
) -> None:
    s = served_echo
    rpc_url = s.expect(r"JSON-RPC:\s+(http://\S+)").group(1)

    def send(text: str, n: int) -> httpx.Response:
        return http.post(
            rpc_url,
            json={
                "jsonrpc": "2.0",
                "id": n,
                "method": "message/send",
                "params": {
                    "message": {"role": "user", "parts": [{"text": text}]},
                    "configuration": {"blocking": False},
                },
            },
        )

    with httpx.Client(timeout=10) as http:
        for n in range(5):
            assert "result" in send("sleep:30 busy", n).json()
        refused = send("sleep:30 one too many", 5).json()
    assert "result" not in refused
    assert refused["error"]["code"] == -32000

    asked = time.monotonic()
    assert s.stop() == 0
    assert time.monotonic() - asked < 8
    s.reader.join(5)
    assert "a2ad stopped." in s.output


def test_serve_stops_cleanly_on_sigterm_too() -> None:
    with Served("--store", "memory") as s:
        s.expect(r"Press Ctrl-C to stop")
        s.proc.send_signal(signal.SIGTERM)
        assert s.proc.wait(10) == 0
        s.reader.join(5)
        assert "a2ad stopped." in s.output


def test_serve_loads_a_user_agent_given_as_module_and_attribute() -> None:
    with Served("--agent", "tests.scripted:ScriptedAgent") as s:
        card_url = s.expect(r"Agent card:\s+(http://\S+)").group(1)
        rpc_url = s.expect(r"JSON-RPC:\s+(http://\S+)").group(1)
        with httpx.Client(timeout=10) as http:
            card = http.get(card_url)
            assert card.status_code == 200
            assert card.json()["name"] == "scripted"
            sent = http.post(
                rpc_url,
                json={
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "message/send",
                    "params": {"message": {"role": "user", "parts": [{"text": "reply howdy"}]}},
                },
            )
        reply = sent.json()["result"]
        assert reply["kind"] == "message"
        assert reply["parts"][0]["text"] == "howdy"


def test_serve_with_the_memory_store_keeps_tasks_and_writes_no_file(tmp_path: Path) -> None:
    with Served("--store", "memory", cwd=tmp_path) as s:
        with SyncClient(s.url) as client:
            sent = client.send("kept in memory")
            assert isinstance(sent, Task)
            got = client.get_task(sent.id)
            listed = [t.id for t in client.list_tasks()]
        assert "(store memory, at most 10000 tasks)" in s.output
        assert s.stop() == 0
    assert got.status.state is TaskState.COMPLETED
    assert got.artifacts[0].parts[0].text == "kept in memory"
    assert listed == [sent.id]
    assert list(tmp_path.iterdir()) == []  # where the default ./a2ad.db would be


# --- the task manager, configured by a2ad serve ---------------------------------


@pytest.fixture(scope="module")
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM([]) as llm:
        yield llm


@pytest.fixture(scope="module")
def task_manager(llm: ScriptedLLM) -> Iterator[Served]:
    """The task manager on a port the system picks, its model given only by
    --model; nothing tells it which servers to manage."""
    env = {
        "OPENAI_BASE_URL": llm.url,
        "OPENAI_API_KEY": "sk-x",
        "A2AD_MODEL": "",
        "A2AD_MANAGED_URLS": "",
        "A2AD_URL": "",
    }
    args = ("--agent", "a2ad.agents.task_manager", "--model", "from-the-flag", "--store", "memory")
    with Served(*args, env=env, port=0) as s:
        yield s


def test_serve_hosts_the_task_manager_with_the_model_given_by_flag(
    task_manager: Served, llm: ScriptedLLM
) -> None:
    # The LLM answers 404 for any model; the task's failure names the model the
    # agent asked for, which only --model gave it.
    llm.replies = [status(404, "no such model")]
    asked = len(llm.requests)
    with SyncClient(task_manager.url) as client:
        assert client.card()["name"] == "task-manager"
        task = client.send("List all active A2A tasks")
    assert isinstance(task, Task) and task.status.state is TaskState.FAILED
    assert llm.requests[asked]["model"] == "from-the-flag"
    assert "model 'from-the-flag'" in status_text(task)


def test_serve_task_manager_manages_its_own_server_on_the_port_the_system_chose(
    task_manager: Served, llm: ScriptedLLM
) -> None:
    llm.replies = [tool_call("list_tasks", state="active"), answer("One: this very task.")]
    asked = len(llm.requests)
    url = task_manager.url
    assert not url.endswith(":0")
    with SyncClient(url) as client:
        task = client.send("List the active A2A tasks")
    assert isinstance(task, Task) and task.status.state is TaskState.COMPLETED, texts(task)
    assert f"(server_url): {url}." in llm.requests[asked]["messages"][0]["content"]
    # Its own task, still working while the tool ran, is the one active task.
    assert texts(task)[1:3] == ['calling list_tasks(state="active")', "list_tasks: 1 task"]


def test_serve_task_manager_takes_its_servers_model_and_token_from_the_environment() -> None:
    managed = Recording(create_app(ScriptedAgent()), token="s3cret")
    plan = [tool_call("list_tasks"), answer("One task is working.")]
    with LiveServer(cast(A2AApp, managed)) as live, ScriptedLLM(plan) as llm:
        with SyncClient(live.url, token="s3cret") as client:
            client.send("hang", wait=False)
        env = {
            "OPENAI_BASE_URL": llm.url,
            "OPENAI_API_KEY": "",
            "A2AD_MODEL": "model-from-the-environment",
            "A2AD_MANAGED_URLS": f" {live.url}/ , ",
            "A2AD_URL": "",
            "A2AD_TOKEN": "s3cret",
        }
        with Served("--agent", "a2ad.agents.task_manager", env=env) as s:
            with SyncClient(s.url) as client:
                task = client.send("What runs on the server?")
    assert isinstance(task, Task) and task.status.state is TaskState.COMPLETED, texts(task)
    assert texts(task)[2] == "list_tasks: 1 task"  # the token got it through
    first = llm.requests[0]
    assert first["model"] == "model-from-the-environment"
    assert f"(server_url): {live.url}." in first["messages"][0]["content"]
    assert "authorization" not in {name.lower() for name in llm.headers[0]}


def test_serve_with_unimportable_agent_exits_with_an_error_naming_the_module() -> None:
    done = run_a2ad("serve", "--port", str(free_port()), "--agent", "nope.mod:x")
    assert done.returncode != 0
    said = " ".join((done.stdout + done.stderr).split())
    assert "nope.mod" in said
    assert "error" in said.lower()
    assert "Traceback" not in said


def test_serve_help_lists_its_options() -> None:
    done = run_a2ad("serve", "--help")
    assert done.returncode == 0
    for option in ("--host", "--port", "--store", "--agent", "--max-tasks"):
        assert option in done.stdout, option


def test_serve_names_the_folder_when_the_sqlite_file_cannot_be_created(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-folder" / "tasks.db"
    done = run_a2ad("serve", "--port", str(free_port()), "--store", f"sqlite:///{missing}")
    said = done.stdout + done.stderr
    assert done.returncode != 0
    assert "no-such-folder" in said and "exists" in said
    assert "Traceback" not in said


def test_serve_rejects_an_unknown_store_url() -> None:
    done = run_a2ad("serve", "--port", str(free_port()), "--store", "mysql://nowhere")
    said = " ".join((done.stdout + done.stderr).split())
    assert done.returncode == 2
    assert "mysql://nowhere" in said and "sqlite:///" in said and "postgresql://" in said


def test_serve_on_a_port_in_use_says_so_in_one_line_and_exits_3() -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        done = run_a2ad("serve", "--port", str(port), "--store", "memory")
    said = (done.stdout + done.stderr).strip()
    assert done.returncode == 3, said
    wanted = f"error: port {port} on 127.0.0.1 is in use; pass another --port (0: any free one)"
    assert said == wanted


def test_serve_banner_names_the_sqlite_file_by_its_absolute_path(tmp_path: Path) -> None:
    with Served("--store", "sqlite:///tasks.db", cwd=tmp_path) as s:
        s.expect(re.escape(f"(store sqlite {tmp_path / 'tasks.db'}, no task cap)"))
        assert s.stop() == 0


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--store", "mysql://db/[bold]tasks[/bold]"),
        ("--retention", "[i]7d"),
        ("--task-timeout", "[red]soon"),
        ("--agent", "no_such_module[x]:agent"),
    ],
)
def test_serve_errors_print_bracketed_text_as_given(flag: str, value: str) -> None:
    # Rich reads [..] as markup; a user's value must come back as typed.
    done = run_a2ad("serve", "--port", str(free_port()), flag, value)
    assert done.returncode == 2
    said = done.stdout + done.stderr
    (line,) = said.strip().splitlines()
    assert line.startswith("error: ") and value in line, said


def test_mcp_without_the_sdk_says_to_install_the_mcp_extra(tmp_path: Path) -> None:
    # A Python without the MCP SDK: an `mcp` package that can't be imported.
    (tmp_path / "mcp").mkdir()
    (tmp_path / "mcp" / "__init__.py").write_text("raise ImportError('no MCP SDK here')\n")
    path = os.pathsep.join(p for p in (str(tmp_path), os.environ.get("PYTHONPATH")) if p)
    done = subprocess.run(
        [str(A2AD), "mcp", "--url", "http://127.0.0.1:1"],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=20,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": path, "COLUMNS": "200"},
    )
    assert done.returncode == 1
    assert done.stderr.strip() == (
        "error: the MCP server needs the MCP Python SDK, which is not installed: "
        "pip install 'a2ad[mcp]'"
    )


@pytest.mark.parametrize("exposed", [False, True], ids=["default", "exposed"])
def test_serve_hides_internal_parts_from_callers_unless_told_to_expose_them(
    exposed: bool,
) -> None:
    flags = ["--expose-internal-parts"] if exposed else []
    agent = "tests.server.test_internal_parts:ToolAgent"
    with Served("--agent", agent, "--shutdown-grace", "0", *flags) as s:
        url = s.url
        s.expect("Press Ctrl-C to stop")  # the banner's last line
        assert ("Internal parts: shown to every caller" in s.output) is exposed
        with httpx.Client(timeout=10) as http:
            sent = http.post(
                url,
                json={
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "message/send",
                    "params": {"message": {"role": "user", "parts": [{"text": "go"}]}},
                },
            )
        assert sent.json()["result"]["status"]["state"] == "completed"
        assert ("SECRET" in sent.text) is exposed
        assert "the answer" in sent.text
        assert s.stop() == 0


def test_serve_takes_its_limits_from_flags(tmp_path: Path) -> None:
    with Served(
        "--store", "memory", "--max-part-bytes", "5", "--rate-limit", "100", cwd=tmp_path
    ) as s:
        with SyncClient(s.url) as client:
            assert isinstance(client.send("12345"), Task)  # exactly at the limit
            with pytest.raises(A2AError, match="--max-part-bytes") as refused:
                client.send("123456")
            assert "limit of 5 bytes (maxPartBytes)" in str(refused.value)
        assert s.stop() == 0


def test_serve_refuses_a_limit_out_of_range_as_a_usage_error() -> None:
    result = run_a2ad("serve", "--max-history", "1001")
    assert result.returncode == 2
    assert "--max-history" in result.stdout + result.stderr


def test_serve_runs_several_named_agents_each_beneath_its_name(tmp_path: Path) -> None:
    with Served(
        "--store",
        "memory",
        "--agent",
        "first=echo",
        "--agent",
        "second=demo",
        "--default-agent",
        "second",
        cwd=tmp_path,
    ) as s:
        s.expect("Press Ctrl-C to stop")
        assert "2 agents (default second)" in s.output
        base = s.url.rstrip("/")
        assert f"Agent first: {base}/agents/first/" in s.output
        with httpx.Client(timeout=10) as http:
            first = http.get(f"{base}/agents/first/.well-known/agent-card.json").json()
            root = http.get(f"{base}/.well-known/agent-card.json").json()
        assert first["name"] == "echo" and root["name"] != "echo"
        # The client commands reach one agent by name.
        sent = run_a2ad("send", "--url", base, "--agent", "first", "--json", "hello")
        assert sent.returncode == 0, sent.stderr
        task_id = json.loads(sent.stdout)["id"]
        mine = run_a2ad("tasks", "list", "--url", base, "--agent", "first", "--json")
        theirs = run_a2ad("tasks", "list", "--url", base, "--json")  # the default: second
        assert task_id in mine.stdout and task_id not in theirs.stdout
        assert s.stop() == 0


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--agent", "echo", "--agent", "x=demo"], "give each as NAME=SPEC"),
        (["--agent", "x=echo", "--agent", "x=demo"], "'x' is named twice"),
        (["--agent", "echo", "--default-agent", "x"], "--default-agent"),
        (["--agent", "a=echo", "--default-agent", "b"], "'b' is not one of a"),
        (["--agent", "a/b=echo"], "path segment"),
    ],
)
def test_serve_refuses_a_wrong_set_of_agents_as_a_usage_error(flags: list[str], said: str) -> None:
    result = run_a2ad("serve", "--port", "0", *flags)
    assert result.returncode == 2, result.stdout + result.stderr
    assert said in result.stdout + result.stderr
