"""``a2ad demo`` and the lab's agents under ``a2ad serve``, as processes: the
lab's client calls (seed 004) against the orchestrator, multi-turn, and a
cancel that reaches the sub-agents."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from a2ad import create_app
from a2ad.agents.lab import PricingAgent, StockAgent
from a2ad.server.auth import add_key

from ..conftest import LiveServer
from ..fake_model import FakeModel, Turn
from ..lab_client import (
    QUOTE,
    assert_sub_tasks_are_only,
    call,
    data,
    kind,
    payload,
    rpc,
    send,
    state,
    status_text,
    stream,
    sub_task_states,
    texts,
)
from ..process_output import ProcessOutput
from ..served import A2AD, PROJECT, Served, run_a2ad


class Demo(ProcessOutput):
    def __init__(self, *args: str, env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            [str(A2AD), "demo", "--port", "0", *args],
            cwd=PROJECT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "COLUMNS": "200", **(env or {})},
        )
        self.watch(self.proc)

    def url(self, name: str) -> str:
        return self.expect(rf"{name}:\s+(http://\S+/)").group(1)

    def own_port_url(self, name: str) -> str:
        return self.expect(rf"{name} at / on its own port: (http://\S+/)").group(1)

    def __enter__(self) -> Demo:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self.reader.join(10)
        assert self.proc.stdout is not None
        self.proc.stdout.close()


@pytest.fixture(scope="module")
def demo() -> Iterator[Demo]:
    with Demo("--delay", "0", "--lab-ports") as running:
        running.expect("Press Ctrl-C")
        yield running


def test_demo_answers_the_labs_streamed_quote_as_the_lab_shows(demo: Demo) -> None:
    events = list(stream(demo.url("orchestrator"), QUOTE))
    assert [kind(e) for e in events[:2]] == ["task", "statusUpdate"]
    assert state(events[0]) == "TASK_STATE_SUBMITTED"
    assert state(events[1]) == "TASK_STATE_WORKING"
    assert [kind(e) for e in events[-2:]] == ["artifactUpdate", "statusUpdate"]
    assert state(events[-1]) == "TASK_STATE_COMPLETED"
    parts = events[-2]["artifactUpdate"]["artifact"]["parts"]
    assert "**2 041,20 €**" in texts(parts)
    figures = data(parts)
    assert (figures["unit_price"], figures["discount_percent"], figures["total"]) == (
        "189.00",
        10,
        "2041.20",
    )


def test_demo_asks_for_the_missing_product_then_quotes(demo: Demo) -> None:
    url = demo.url("orchestrator")
    asked = send(url, "Je voudrais un devis pour 12 pièces")
    assert asked["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert "Quel article" in status_text(asked)
    done = send(url, "CHAISE-ERGO", task_id=asked["id"])
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"


def test_demo_serves_the_stock_agent_the_lab_reads_back(demo: Demo) -> None:
    url = demo.url("stock")
    task = send(url, "Stock de BUREAU-120 ?")
    assert rpc(url, "GetTask", {"id": task["id"]})["status"]["state"] == "TASK_STATE_COMPLETED"


def test_demo_with_lab_ports_serves_the_labs_get_task_exercise_at_a_url_of_its_own(
    demo: Demo,
) -> None:
    # The seed's solution posts to http://localhost:8101/ (stock alone on a port).
    own = demo.own_port_url("stock")
    assert own != demo.url("stock")
    task = send(own, "Stock de BUREAU-120 ?")
    assert rpc(own, "GetTask", {"id": task["id"]})["status"]["state"] == "TASK_STATE_COMPLETED"
    assert data(task["artifacts"][0]["parts"])["sku"] == "BUREAU-120"
    # One server, one store: the stock agent's own port and its path see the same task.
    assert rpc(demo.url("stock"), "GetTask", {"id": task["id"]})["id"] == task["id"]
    card = httpx.get(own + ".well-known/agent-card.json", headers={"A2A-Version": "1.0"}).json()
    assert card["name"] == "stock"
    assert httpx.get(card["supportedInterfaces"][0]["url"]).status_code != 404
    pricing = send(demo.own_port_url("pricing"), "Prix de 12 CHAISE-ERGO ?")
    assert pricing["status"]["state"] == "TASK_STATE_COMPLETED"


def test_cancelling_a_quote_in_the_demo_cancels_its_sub_tasks_and_ctrl_c_stops_it() -> None:
    with Demo("--delay", "60") as demo:
        # Without --lab-ports, the banner says where the lab's ports went.
        demo.expect(r"stock at :8101 and pricing at :8102 are beneath this server")
        orchestrator = demo.url("orchestrator")
        events = stream(orchestrator, QUOTE)
        task_id = next(events)["task"]["id"]
        next(events)  # working: the calls are under way
        canceled = rpc(orchestrator, "CancelTask", {"id": task_id})
        assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
        events.close()
        for name in ("stock", "pricing"):
            assert sub_task_states(demo.url(name)) == ["TASK_STATE_CANCELED"]
        demo.proc.send_signal(signal.SIGINT)
        assert demo.proc.wait(15) == 0
        demo.expect("a2ad demo stopped")


def test_serve_finds_the_orchestrators_agents_in_the_environment() -> None:
    with (
        LiveServer(create_app(StockAgent())) as stock,
        LiveServer(create_app(PricingAgent())) as pricing,
        Served(
            "--agent",
            "a2ad.agents.lab:OrchestratorAgent",
            "--store",
            "memory",
            env={"A2AD_STOCK_URL": stock.url, "A2AD_PRICING_URL": pricing.url},
        ) as served,
    ):
        task = send(served.url + "/", QUOTE)
        assert task["status"]["state"] == "TASK_STATE_COMPLETED", task
        assert served.stop() == 0


def test_demo_with_a_model_streams_its_wording_of_each_agents_figures() -> None:
    worded = "Devis : 12 CHAISE-ERGO, 2 041,20 € HT."
    with (
        FakeModel([Turn(text=worded, chunks=3)]) as model,
        Demo("--delay", "0", "--model", "fake-model", env={"OPENAI_BASE_URL": model.url}) as demo,
    ):
        demo.expect(rf"Answers:\s+worded by fake-model at {model.url}")
        events = list(stream(demo.url("orchestrator"), QUOTE))
        assert state(events[-1]) == "TASK_STATE_COMPLETED"
        chunks = [e["artifactUpdate"]["artifact"]["parts"] for e in events
                  if kind(e) == "artifactUpdate"]  # fmt: skip
        assert len(chunks) == 4  # three pieces of words, then the figures
        assert "".join(texts(parts) for parts in chunks[:-1]) == worded
        assert data(chunks[-1])["total"] == "2041.20"
        systems = sorted(r["messages"][0]["content"].split(" agent ")[0] for r in model.requests)
        assert [s.rsplit(" ", 1)[1] for s in systems] == ["orchestrator", "pricing", "stock"]


def test_serve_passes_its_model_to_a_lab_agent() -> None:
    with (
        FakeModel([Turn(text="12 en stock à Lyon.")]) as model,
        Served(
            "--agent",
            "a2ad.agents.lab:StockAgent",
            "--store",
            "memory",
            "--model",
            "fake-model",
            env={"OPENAI_BASE_URL": model.url},
        ) as served,
    ):
        task = send(served.url + "/", "Stock de CHAISE-ERGO ?")
        assert texts(task["artifacts"][0]["parts"]).replace("\n", "") == "12 en stock à Lyon."
        assert task["metadata"]["a2ad"]["usage"]["byModel"].keys() == {"fake-model"}
        assert served.stop() == 0


def test_demo_refuses_a_port_in_use(demo: Demo) -> None:
    port = demo.url("orchestrator").rsplit(":", 1)[1].rstrip("/")
    taken = subprocess.run(
        [str(A2AD), "demo", "--port", port],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=20,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert taken.returncode == 3
    assert "is in use" in taken.stderr


def test_serve_runs_the_labs_three_agents_on_one_server_as_the_docs_show() -> None:
    lab = "a2ad.agents.lab"
    with Served(
        "--store",
        "memory",
        "--agent",
        f"orchestrator={lab}:OrchestratorAgent",
        "--agent",
        f"stock={lab}:StockAgent",
        "--agent",
        f"pricing={lab}:PricingAgent",
    ) as served:
        task = send(served.url + "/", QUOTE)
        assert task["status"]["state"] == "TASK_STATE_COMPLETED", task
        assert sub_task_states(served.url + "/agents/stock/") == ["TASK_STATE_COMPLETED"]
        assert served.stop() == 0


def test_with_auth_on_the_quote_completes_and_its_sub_tasks_are_the_callers(
    tmp_path: Path,
) -> None:
    keys = tmp_path / "keys.toml"
    alice, bob = (add_key(str(keys), name) for name in ("alice", "bob"))
    lab = "a2ad.agents.lab"
    with Served(
        "--store",
        "memory",
        "--auth",
        str(keys),
        "--agent",
        f"orchestrator={lab}:OrchestratorAgent",
        "--agent",
        f"stock={lab}:StockAgent",
        "--agent",
        f"pricing={lab}:PricingAgent",
    ) as served:
        params = payload("SendMessage", QUOTE)["params"]
        task = call(served.url, "orchestrator", alice, "SendMessage", params)["result"]["task"]
        assert task["status"]["state"] == "TASK_STATE_COMPLETED", task
        assert "2 041,20 €" in texts(task["artifacts"][0]["parts"])
        assert_sub_tasks_are_only(served.url, task["id"], alice, bob)
        assert served.stop() == 0


def test_demo_with_auth_quotes_with_the_command_it_prints_for_the_caller(tmp_path: Path) -> None:
    keys = tmp_path / "keys.toml"
    alice, bob = (add_key(str(keys), name) for name in ("alice", "bob"))
    with Demo("--delay", "0", "--auth", str(keys)) as demo:
        base = demo.url("orchestrator")
        assert "API keys from" in demo.expect(r"Auth:\s+(.*)").group(1)
        tried = shlex.split(demo.expect(r"Try:\s+(a2ad send .*)").group(1))
        assert tried[tried.index("--token") + 1] == "KEY"
        tried[tried.index("--token") + 1] = alice
        done = run_a2ad(*tried[1:], "--json", timeout=60)
        assert done.returncode == 0, done.stderr
        (quote_id,) = set(re.findall(r'"taskId":\s*"([^"]+)"', done.stdout))
        assert "2 041,20" in done.stdout
        assert_sub_tasks_are_only(base, quote_id, alice, bob)
        refused = run_a2ad(*tried[1 : tried.index("--token")], QUOTE)
        assert refused.returncode == 1 and "-31401" in refused.stderr
