"""``a2ad serve`` with the LLM agents, run as a user runs it: the LLM agent
answers through the model ``--model`` and ``OPENAI_BASE_URL`` name, and an LLM
agent without a model is warned about when the server starts, in its log and its
banner, before any request."""

from __future__ import annotations

from a2ad import SyncClient, Task, TaskArtifactUpdateEvent, TaskState

from ..fake_model import FakeModel, Turn
from ..served import Served

NO_LLM = {"OPENAI_BASE_URL": "", "OPENAI_API_KEY": "", "A2AD_MODEL": "", "A2AD_URL": ""}


def test_serve_warns_at_start_about_llm_agents_without_a_model() -> None:
    args = ("--agent", "tm=a2ad.agents.task_manager", "--agent", "chat=a2ad.agents.llm_agent")
    with Served(*args, "--store", "memory", env=NO_LLM, port=0) as s:
        s.expect(r"JSON-RPC:")
        s.expect(r"Press Ctrl-C")
        s.expect(r"warning:.*agent llm \(chat\) can't answer: no LLM is configured: set OPENAI")
        s.expect(r"warning:.*agent task-manager \(tm\) can't answer: no LLM is configured")
        s.expect(r"the task manager can't answer until an LLM is configured")  # the log line
        s.expect(r"the LLM agent 'llm' can't answer: no LLM is configured")
        assert s.stop() == 0


def test_serve_runs_the_llm_agent_on_the_model_the_flag_names() -> None:
    with FakeModel([Turn(text="Bonjour, Ann.", chunks=2)]) as model:
        env = {**NO_LLM, "OPENAI_BASE_URL": model.url}
        args = ("--agent", "a2ad.agents.llm_agent", "--model", "fake-model", "--store", "memory")
        with Served(*args, env=env, port=0) as s:
            with SyncClient(s.url) as client:
                events = list(client.stream("Bonjour, je suis Ann."))
                chunks = [e for e in events if isinstance(e, TaskArtifactUpdateEvent)]
                task = client.get_task(chunks[0].task_id)
            assert "can't answer" not in s.output
    assert [c.artifact.parts[0].text for c in chunks] == ["Bonjour", ", Ann."]
    assert isinstance(task, Task) and task.status.state is TaskState.COMPLETED
    assert model.requests[0]["model"] == "fake-model"
