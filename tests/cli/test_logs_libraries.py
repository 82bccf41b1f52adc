"""An agent's library may reconfigure Python's logging as it is imported
(PraisonAI calls ``logging.basicConfig(force=True)``, LiteLLM gives its loggers
a handler of their own): a2ad's lines stay its own. For each library an adapter
loads, ``a2ad serve`` runs a sample agent of it and is sent a task; every line it
writes but its banner is a2ad's JSON, and the task's lines name it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from a2ad import SyncClient, Task, TaskState

from ..fake_model import MODEL, FakeModel, Turn
from ..served import Served

# The library, the --agent serving a sample of it and the flags it needs.
LIBRARIES = {
    "praisonaiagents": ("tests.adapters.sample_praisonai:agent",),
    "google.adk": ("tests.adapters.adk_agents:root_agent",),
    "langgraph": ("tests.adapters.sample_graphs:graph",),
    "a2a-sdk": ("a2a-sdk:tests.adapters.sdk_executors:StreamingExecutor",),
    "openai": ("a2ad.agents.llm_agent", "--model", MODEL),
    "litellm": ("tests.adapters.sample_litellm:ask",),
}
# A library's own logger that writes a line in the task's turn, with a handler of its
# own (LiteLLM's: "LiteLLM completion() model= ..." at info): in a2ad's JSON too.
OWN_LINES = {"litellm": "LiteLLM"}


@pytest.fixture(scope="module")
def model() -> Iterator[FakeModel]:
    with FakeModel([Turn(text="Twelve in Lyon.")]) as fake:
        yield fake


def served_lines(output: str) -> list[str]:
    """What ``a2ad serve`` wrote but its banner (from "a2ad serving" to "Press
    Ctrl-C to stop.") and its last line ("a2ad stopped.")."""
    lines, banner = [], False
    for line in output.splitlines():
        banner = banner or line.startswith("a2ad serving")
        if not banner and line != "a2ad stopped.":
            lines.append(line)
        banner = banner and "Press Ctrl-C to stop." not in line
    return lines


def a2ad_line(line: str) -> dict[str, Any]:
    try:
        entry = json.loads(line)
    except ValueError:
        entry = None
    if not isinstance(entry, dict) or not {"ts", "level", "logger", "msg"} <= entry.keys():
        pytest.fail(f"not a line of a2ad's JSON: {line}")
    return entry


@pytest.mark.parametrize("library", LIBRARIES)
def test_every_line_stays_json_naming_the_task_whatever_the_agents_library(
    library: str, model: FakeModel
) -> None:
    agent, *flags = LIBRARIES[library]
    env = {
        "OPENAI_BASE_URL": model.url,
        "OPENAI_API_KEY": "test-key",
        "ADK_TEST_MODEL_URL": model.url,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    with Served(
        "--agent", agent, *flags, "--store", "memory", "--shutdown-grace", "0", env=env
    ) as s:
        with SyncClient(s.url) as client:
            task = client.send("Stock of CHAISE-ERGO?")
        assert s.stop() == 0
    assert isinstance(task, Task) and task.status.state is TaskState.COMPLETED, task
    entries = [a2ad_line(line) for line in served_lines(s.output)]
    about = [e for e in entries if e.get("task_id") == task.id]
    # The task's own lines, and the library's in its turn, name its context and agent
    # too (a watchdog line about the task, written from elsewhere, names only the task).
    ours = {"task submitted", "task completed"}
    turn = [e for e in about if e["msg"] in ours or e["logger"] == OWN_LINES.get(library)]
    assert {e["msg"] for e in turn} >= ours, about
    for entry in turn:
        assert entry["context_id"] == task.context_id, entry
        assert entry["agent"], entry
    if library in OWN_LINES:
        assert any(e["logger"] == OWN_LINES[library] for e in turn), entries
