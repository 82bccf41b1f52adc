"""The lab's agents as the lab builds them (seed 004), fronted by a2ad: Google
ADK agents on LiteLLM, each served by ADK's own A2A server (``to_a2a``, the
official a2a-sdk underneath) on its own port, against fake OpenAI-compatible
models, with ``a2ad serve --agent stock=a2a+http://...`` (auth on) in front of
the three (tests/adapters/adk_lab.py). The seed's client code with its stream
and GetTask exercise, the tool calls ADK leaks hidden from callers but shown to
operators, usage totalled per tenant by ``a2ad usage``, the multi-agent quote
(the ADK orchestrator asks stock and pricing through a2ad), and a cancel on
a2ad reaching the ADK agent.

The ADK servers and their models are the module's (``lab``), apart from a2ad
(``front``), whose port is chosen first (the orchestrator is told a2ad's URLs
before a2ad starts) and whose SQLite file is the module's: ``front.restart()``
kills a2ad and serves it again there while the ADK agents keep running.
"""

from __future__ import annotations

import importlib.util
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

if importlib.util.find_spec("google.adk") is None:  # ADK is imported by the lab's process only
    pytest.skip("needs google-adk", allow_module_level=True)

from .. import lab_client
from ..fake_model import ToolCallTurn, Turn
from ..jsonrpc import rpc_body
from ..served import run_a2ad
from ..threaded_server import free_port
from .adk_lab import AdkLab, Front, Keys

STOCK_QUESTION = "Stock de CHAISE-ERGO ?"
STOCK_ANSWER = (
    "Le stock disponible pour l'article CHAISE-ERGO est de 12 unités au total, réparties "
    "avec 0 unité dans l'entrepôt de Lille et 12 unités dans celui de Lyon."
)
PRICE_ANSWER = "12 CHAISE-ERGO : 189,00 € HT l'unité, remise de 10 %, soit 2 041,20 € HT."
QUOTE_ANSWER = (
    "Voici votre devis pour **12 unités** de la référence **CHAISE-ERGO** :\n"
    "* **Stock total disponible :** 12 unités (Lyon : 12, Lille : 0)\n"
    "* **Prix unitaire HT :** 189,00 €\n"
    "* **Remise sur volume appliquée :** 10 %\n"
    "* **Montant total HT :** **2 041,20 €**"
)
STOCK_CALL = ToolCallTurn("check_stock", {"sku": "CHAISE-ERGO"})
PRICE_CALL = ToolCallTurn("get_price", {"sku": "CHAISE-ERGO", "quantity": 12})


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fronting-adk")


@pytest.fixture(scope="module")
def keys(folder: Path) -> Keys:
    return Keys.make(folder / "keys.toml")


@pytest.fixture(scope="module")
def front_port() -> int:
    """a2ad's port, chosen before the lab starts: the orchestrator calls a2ad there."""
    return free_port()


@pytest.fixture(scope="module")
def lab(front_port: int, keys: Keys) -> Iterator[AdkLab]:
    with AdkLab(f"http://127.0.0.1:{front_port}", key=keys.orchestrator) as running:
        yield running


@pytest.fixture(scope="module")
def front(lab: AdkLab, keys: Keys, folder: Path, front_port: int) -> Iterator[Front]:
    served = Front(lab, keys, folder, front_port)
    try:
        yield served
    finally:
        served.close()


@pytest.fixture
def as_carla(monkeypatch: pytest.MonkeyPatch, keys: Keys) -> None:
    """The seed's client code with carla's key, as its ``_auth(token)`` sends one."""
    monkeypatch.setitem(lab_client.HEADERS, "Authorization", f"Bearer {keys.carla}")


def call(url: str, key: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """A JSON-RPC call with an API key; its result (an error fails the test)."""
    headers = {"A2A-Version": "1.0", "X-API-Key": key}
    r = httpx.post(url, json=rpc_body(method, params), headers=headers, timeout=30)
    answer: dict[str, Any] = r.json()
    assert "result" in answer, answer
    return answer["result"]  # type: ignore[no-any-return]


def message(text: str) -> dict[str, Any]:
    return lab_client.payload("SendMessage", text)["params"]  # type: ignore[no-any-return]


def until(check: Callable[[], Any], what: str, timeout: float = 15) -> Any:
    """``check()``'s value once it is true; fails naming ``what`` after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while not (found := check()):
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not in {timeout} s")
        time.sleep(0.02)
    return found


def agent_parts(task: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for m in task.get("history", []) if m["role"] == "ROLE_AGENT" for p in m["parts"]]


def adk_steps(task: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The ADK tool steps in a task's history: (adk_type, data)."""
    return [
        (p["metadata"]["adk_type"], p["data"])
        for p in agent_parts(task)
        if "adk_type" in p.get("metadata", {})
    ]


def upstream_of(task: dict[str, Any]) -> str | None:
    """The upstream task a2ad keeps in its task's metadata (``a2ad.upstream.taskId``)."""
    noted = task.get("metadata", {}).get("a2ad", {}).get("upstream", {}).get("taskId")
    return None if noted is None else str(noted)


def adk_rpc(lab: AdkLab, agent: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """A call to the ADK server of ``agent`` itself, not through a2ad."""
    return lab_client.rpc(lab.urls[agent] + "/", method, params)


def adk_tasks(lab: AdkLab, agent: str, context_id: str) -> list[dict[str, Any]]:
    """The tasks the ADK server of ``agent`` holds in a context (a2ad passes its
    task's context upstream)."""
    listed = adk_rpc(lab, agent, "ListTasks", {"contextId": context_id})
    return listed["tasks"]  # type: ignore[no-any-return]


def tool_results(request: dict[str, Any]) -> str:
    """What the tools answered, as a model request carries it."""
    return "\n".join(m["content"] for m in request["messages"] if m["role"] == "tool")


def test_the_seeds_client_sends_streams_and_reads_back_through_a2ad(
    lab: AdkLab, front: Front, as_carla: None
) -> None:
    url = front.agent_url("stock")
    stock = lab.script("stock", Turn(tool_calls=[STOCK_CALL]), Turn(text=STOCK_ANSWER))
    asked = len(stock.requests)
    task = lab_client.send(url, STOCK_QUESTION)
    assert task["status"]["state"] == "TASK_STATE_COMPLETED", task
    (artifact,) = task["artifacts"]
    assert lab_client.texts(artifact["parts"]) == STOCK_ANSWER
    assert lab_client.texts(task["history"][-1]["parts"]) == STOCK_ANSWER
    # The tool ran in the ADK agent, whose model got its result...
    assert '"total": 12' in tool_results(stock.requests[asked + 1])
    # ... and the turn was a task of the ADK server's, in a2ad's task's context.
    (theirs,) = adk_tasks(lab, "stock", task["contextId"])
    assert theirs["status"]["state"] == "TASK_STATE_COMPLETED"

    # The stream, as the lab prints it: the task, its work, the answer, done.
    lab.script("stock", Turn(tool_calls=[STOCK_CALL]), Turn(text=STOCK_ANSWER))
    events = list(lab_client.stream(url, STOCK_QUESTION))
    kinds = [lab_client.kind(e) for e in events]
    assert kinds[0] == "task" and lab_client.state(events[0]) == "TASK_STATE_SUBMITTED"
    assert kinds[-1] == "statusUpdate"
    assert lab_client.state(events[-1]) == "TASK_STATE_COMPLETED"
    middle = events[1:-1]
    assert kinds[1:-2] == ["statusUpdate"] * (len(middle) - 1), kinds
    assert {lab_client.state(e) for e in middle[:-1]} == {"TASK_STATE_WORKING"}
    assert len(middle) - 1 >= 3  # at least the tool's call, its result and the answer
    assert kinds[-2] == "artifactUpdate"
    assert lab_client.texts(middle[-1]["artifactUpdate"]["artifact"]["parts"]) == STOCK_ANSWER
    assert "adk_type" not in str(events)  # the tool's steps: working, with nothing shown

    # The lab's exercise: GetTask by id, after the fact, of each.
    streamed = events[0]["task"]["id"]
    for task_id in (task["id"], streamed):
        again = lab_client.rpc(url, "GetTask", {"id": task_id})
        assert again["status"]["state"] == "TASK_STATE_COMPLETED"
        assert lab_client.texts(again["artifacts"][0]["parts"]) == STOCK_ANSWER


def test_the_tool_calls_adk_sends_are_hidden_from_the_caller_and_shown_to_an_operator(
    lab: AdkLab, front: Front, keys: Keys
) -> None:
    url = front.agent_url("stock")
    lab.script("stock", Turn(tool_calls=[STOCK_CALL]), Turn(text=STOCK_ANSWER))
    task = call(url, keys.carla, "SendMessage", message(STOCK_QUESTION))["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    # What ADK's server shows every caller: its tool's call and result (the seed says so).
    (theirs,) = adk_tasks(lab, "stock", task["contextId"])
    assert [kind for kind, _ in adk_steps(theirs)] == ["function_call", "function_response"]

    # Through a2ad the caller sees the question and the answer only.
    listed = call(url, keys.carla, "ListTasks", {"contextId": task["contextId"]})["tasks"]
    for seen in (task, call(url, keys.carla, "GetTask", {"id": task["id"]}), *listed):
        assert adk_steps(seen) == []
        assert "check_stock" not in str(seen)
        assert lab.urls["stock"] not in str(seen)  # nor where the agent runs
        assert [lab_client.texts(m["parts"]) for m in seen["history"]] == [
            STOCK_QUESTION,
            STOCK_ANSWER,
        ]

    # An operator of the tenant reads the same task with the tool's steps.
    (call_step, call_data), (result_step, result_data) = adk_steps(
        call(url, keys.olivier, "GetTask", {"id": task["id"]})
    )
    assert (call_step, result_step) == ("function_call", "function_response")
    assert (call_data["name"], call_data["args"]) == ("check_stock", {"sku": "CHAISE-ERGO"})
    assert result_data["name"] == "check_stock"
    assert result_data["response"]["total"] == 12
    assert result_data["response"]["warehouses"] == {"Lyon": 12, "Lille": 0}


def test_usage_the_adk_agents_report_is_totalled_per_tenant_and_agent_by_a2ad_usage(
    lab: AdkLab, front: Front, keys: Keys
) -> None:
    lab.script(
        "stock",
        Turn(tool_calls=[STOCK_CALL], prompt_tokens=350, completion_tokens=20),
        Turn(text=STOCK_ANSWER, prompt_tokens=400, completion_tokens=126),
    )
    ann = call(front.agent_url("stock"), keys.ann, "SendMessage", message(STOCK_QUESTION))
    lab.script(
        "pricing",
        Turn(tool_calls=[PRICE_CALL], prompt_tokens=200, completion_tokens=15),
        Turn(text=PRICE_ANSWER, prompt_tokens=260, completion_tokens=40),
    )
    bob = call(front.agent_url("pricing"), keys.bob, "SendMessage", message("Prix de 12 ?"))
    # Each caller's task says what its turn used (ADK's adk_usage_metadata, per model call).
    for answer, counts in ((ann, (750, 146, 896)), (bob, (460, 55, 515))):
        task = answer["task"]
        assert task["status"]["state"] == "TASK_STATE_COMPLETED"
        used = task["metadata"]["a2ad"]["usage"]
        assert (used["promptTokens"], used["completionTokens"], used["totalTokens"]) == counts

    target = ("--url", front.url, "--token", keys.olga)
    report = run_a2ad("usage", *target, "--json")
    assert report.returncode == 0, report.stderr
    got = json.loads(report.stdout)
    assert got["rows"] == [
        {"tenant": "team-a", "principal": "ann", "promptTokens": 750, "completionTokens": 146,
         "totalTokens": 896},
        {"tenant": "team-b", "principal": "bob", "promptTokens": 460, "completionTokens": 55,
         "totalTokens": 515},
    ]  # fmt: skip
    assert got["total"] == {"promptTokens": 1210, "completionTokens": 201, "totalTokens": 1411}
    table = run_a2ad("usage", *target, "--group-by", "tenant")
    assert table.returncode == 0, table.stderr
    assert table.stdout.splitlines()[1:] == [
        "TENANT  PROMPT  COMPLETION  TOTAL",
        "team-a     750         146    896",
        "team-b     460          55    515",
        "total    1,210         201  1,411",
    ]
    # "Bill each team": each agent's usage, as the tasks it ran were written.
    by_agent = run_a2ad("usage", *target, "--group-by", "tenant,agent")
    assert by_agent.returncode == 0, by_agent.stderr
    assert by_agent.stdout.splitlines()[1:] == [
        "TENANT  AGENT    PROMPT  COMPLETION  TOTAL",
        "team-a  stock       750         146    896",
        "team-b  pricing     460          55    515",
        "total             1,210         201  1,411",
    ]


def _script_quote(lab: AdkLab) -> tuple[Any, Any]:
    """The models of a quote: the orchestrator asks stock, then pricing, then words the
    quote; each sub-agent calls its tool, then answers. (The orchestrator's and
    pricing's models, to read their requests.)"""
    orchestrator = lab.script(
        "orchestrator",
        Turn(tool_calls=[ToolCallTurn("stock", {"request": STOCK_QUESTION})]),
        Turn(tool_calls=[ToolCallTurn("pricing", {"request": "Prix de 12 CHAISE-ERGO ?"})]),
        Turn(text=QUOTE_ANSWER),
    )
    lab.script("stock", Turn(tool_calls=[STOCK_CALL]), Turn(text=STOCK_ANSWER))
    pricing = lab.script("pricing", Turn(tool_calls=[PRICE_CALL]), Turn(text=PRICE_ANSWER))
    return orchestrator, pricing


def test_the_quote_asks_stock_and_pricing_through_a2ad(
    lab: AdkLab, front: Front, keys: Keys, as_carla: None
) -> None:
    orchestrator, pricing = _script_quote(lab)
    asked = len(orchestrator.requests), len(pricing.requests)

    def subtasks(agent: str) -> dict[str, dict[str, Any]]:
        params = {"includeArtifacts": True}
        listed = call(front.agent_url(agent), keys.orchestrator, "ListTasks", params)["tasks"]
        return {t["id"]: t for t in listed}

    before = {agent: subtasks(agent) for agent in ("stock", "pricing")}

    # The seed's run: python client.py --stream "Je voudrais un devis..." to the orchestrator.
    events = list(lab_client.stream(front.agent_url("orchestrator"), lab_client.QUOTE))
    kinds = [lab_client.kind(e) for e in events]
    assert kinds[0] == "task" and lab_client.state(events[0]) == "TASK_STATE_SUBMITTED"
    assert lab_client.state(events[-1]) == "TASK_STATE_COMPLETED"
    assert kinds[-2] == "artifactUpdate"
    working = [e for e in events[1:-2] if lab_client.state(e) == "TASK_STATE_WORKING"]
    assert len(working) == len(events) - 3 >= 4, kinds
    quote = lab_client.texts(events[-2]["artifactUpdate"]["artifact"]["parts"])
    assert quote == QUOTE_ANSWER
    for figure in ("**12 unités**", "CHAISE-ERGO", "189,00 €", "10 %", "**2 041,20 €**"):
        assert figure in quote

    # The orchestrator asked each sub-agent through a2ad (with its own key: a task of
    # its own at each, not the caller's), and its model got their answers.
    for agent, answer in (("stock", STOCK_ANSWER), ("pricing", PRICE_ANSWER)):
        new = [t for i, t in subtasks(agent).items() if i not in before[agent]]
        (sub,) = new
        assert sub["status"]["state"] == "TASK_STATE_COMPLETED"
        assert lab_client.texts(sub["artifacts"][0]["parts"]) == answer
        mine = call(front.agent_url(agent), keys.carla, "ListTasks", {})["tasks"]
        assert sub["id"] not in {t["id"] for t in mine}
    last = orchestrator.requests[-1]
    assert len(orchestrator.requests) == asked[0] + 3
    assert STOCK_ANSWER in tool_results(last) and PRICE_ANSWER in tool_results(last)
    # The pricing agent's tool priced 12 units with the volume discount.
    priced = tool_results(pricing.requests[asked[1] + 1])
    assert '"unit_price": "189.00"' in priced and '"discount_percent": 10' in priced
    assert '"total": "2041.20"' in priced

    # The caller's task holds the quote, not the orchestrator's calls; an operator sees them.
    quote_id = events[0]["task"]["id"]
    url = front.agent_url("orchestrator")
    task = lab_client.rpc(url, "GetTask", {"id": quote_id})
    assert lab_client.texts(task["artifacts"][0]["parts"]) == QUOTE_ANSWER
    assert adk_steps(task) == []
    steps = adk_steps(call(url, keys.olivier, "GetTask", {"id": quote_id}))
    assert [(kind, data["name"]) for kind, data in steps] == [
        ("function_call", "stock"),
        ("function_response", "stock"),
        ("function_call", "pricing"),
        ("function_response", "pricing"),
    ]
    assert steps[3][1]["response"] == {"result": PRICE_ANSWER}


def test_a_cancel_on_a2ad_cancels_the_adk_agents_task(
    lab: AdkLab, front: Front, keys: Keys
) -> None:
    url = front.agent_url("stock")
    model = lab.script("stock", Turn(text="trop tard"))
    model.hold()  # the ADK agent's model call waits: the task is working upstream
    try:
        dropped = len(model.disconnects)
        params = {**message(STOCK_QUESTION), "configuration": {"returnImmediately": True}}
        task = call(url, keys.carla, "SendMessage", params)["task"]
        until(lambda: model.waiting == 1, "the ADK agent calling its model")

        # The ADK server's task: a2ad keeps its id in its task (read by an operator),
        # and the ADK server holds it in the context of a2ad's task.
        def noted() -> str | None:
            return upstream_of(call(url, keys.olivier, "GetTask", {"id": task["id"]}))

        upstream = until(noted, "a2ad noting the upstream task")
        (theirs,) = adk_tasks(lab, "stock", task["contextId"])
        assert theirs["id"] == upstream

        def upstream_state() -> str:
            return str(adk_rpc(lab, "stock", "GetTask", {"id": upstream})["status"]["state"])

        until(lambda: upstream_state() == "TASK_STATE_WORKING", "the ADK task working")
        canceled = call(url, keys.carla, "CancelTask", {"id": task["id"]})
        assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
        until(lambda: upstream_state() == "TASK_STATE_CANCELED", "the ADK task canceled")
        # The ADK agent's run stopped: it hung up on its model, which was still thinking.
        until(lambda: len(model.disconnects) > dropped, "the model call dropped")
        again = call(url, keys.carla, "GetTask", {"id": task["id"]})
        assert again["status"]["state"] == "TASK_STATE_CANCELED"
    finally:
        model.release()


def test_a2ad_restarted_mid_quote_picks_the_quote_up_again(
    lab: AdkLab, front: Front, keys: Keys
) -> None:
    orchestrator, _ = _script_quote(lab)
    url = front.agent_url("orchestrator")
    orchestrator.hold()  # each of its model calls waits for the test
    try:
        params = {**message(lab_client.QUOTE), "configuration": {"returnImmediately": True}}
        quote = call(url, keys.carla, "SendMessage", params)["task"]
        for step in ("asks stock", "asks pricing"):
            until(lambda: orchestrator.waiting == 1, f"the orchestrator's model: it {step}")
            orchestrator.release()
            orchestrator.hold()
        # Both sub-agents answered; the orchestrator's model words the quote. a2ad dies.
        until(lambda: orchestrator.waiting == 1, "the orchestrator wording the quote")
        assert call(url, keys.carla, "GetTask", {"id": quote["id"]})["status"]["state"] == (
            "TASK_STATE_WORKING"
        )
        front.restart(kill=True)
        # The new a2ad found the quote working, as ADK has it, and follows it.
        again = call(url, keys.carla, "GetTask", {"id": quote["id"]})
        assert again["status"]["state"] == "TASK_STATE_WORKING", again
        orchestrator.release()

        def done() -> dict[str, Any] | None:
            task = call(url, keys.carla, "GetTask", {"id": quote["id"]})
            return task if task["status"]["state"] != "TASK_STATE_WORKING" else None

        task = until(done, "the quote ending")
        assert task["status"]["state"] == "TASK_STATE_COMPLETED", task
        assert lab_client.texts(task["artifacts"][0]["parts"]) == QUOTE_ANSWER
    finally:
        orchestrator.release()
