"""The lab's three agents (seed 004) on real ports: the orchestrator asks stock
and pricing over A2A, streams their progress, answers the quote, asks for what
a request lacks, and cancels its calls when it is canceled."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from a2ad import create_app
from a2ad.agents.lab import OrchestratorAgent, PricingAgent, StockAgent
from a2ad.agents.lab.request import read
from a2ad.agents.settings import AgentSettings
from a2ad.engine.config import EngineConfig

from ..conftest import LiveServer, free_port
from ..lab_client import (
    QUOTE,
    data,
    kind,
    rpc,
    send,
    state,
    status_text,
    stream,
    sub_task_states,
    texts,
)

INTERNAL = {"a2ad": {"internal": True}}


class Lab:
    def __init__(self, *, delay: float = 0.0, expose: bool = False) -> None:
        self.stock = LiveServer(
            create_app(StockAgent(delay=delay), engine=EngineConfig(expose_internal_parts=expose))
        )
        self.pricing = LiveServer(
            create_app(PricingAgent(delay=delay), engine=EngineConfig(expose_internal_parts=expose))
        )
        orchestrator = OrchestratorAgent(stock_url=self.stock.url, pricing_url=self.pricing.url)
        self.orchestrator = LiveServer(
            create_app(orchestrator, engine=EngineConfig(expose_internal_parts=expose))
        )

    def __enter__(self) -> Lab:
        for server in (self.stock, self.pricing, self.orchestrator):
            server.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        for server in (self.orchestrator, self.stock, self.pricing):
            server.__exit__(*exc)


@pytest.fixture(scope="module")
def lab() -> Iterator[Lab]:
    with Lab() as running:
        yield running


def artifact_parts(task: dict[str, Any]) -> list[dict[str, Any]]:
    (artifact,) = task["artifacts"]
    return artifact["parts"]  # type: ignore[no-any-return]


def test_the_quote_streams_as_the_lab_shows(lab: Lab) -> None:
    events = list(stream(lab.orchestrator.url + "/", QUOTE))
    kinds = [kind(e) for e in events]
    assert kinds[0] == "task" and state(events[0]) == "TASK_STATE_SUBMITTED"
    assert kinds[-1] == "statusUpdate" and state(events[-1]) == "TASK_STATE_COMPLETED"
    middle = events[1:-1]
    assert [kind(e) for e in middle[:-1]] == ["statusUpdate"] * (len(middle) - 1)
    assert {state(e) for e in middle[:-1]} == {"TASK_STATE_WORKING"}
    assert kind(middle[-1]) == "artifactUpdate"
    progress = [texts(e["statusUpdate"]["status"].get("message", {}).get("parts", []))
                for e in middle[:-1]]  # fmt: skip
    assert any(p.startswith("stock : ") for p in progress), progress
    assert any(p.startswith("pricing : ") for p in progress), progress

    parts = middle[-1]["artifactUpdate"]["artifact"]["parts"]
    quote = texts(parts)
    for figure in ("**12 unités**", "CHAISE-ERGO", "Lyon : 12 unités", "Lille : 0 unité",
                   "189,00 €", "10 %", "**2 041,20 €**"):  # fmt: skip
        assert figure in quote, quote
    assert data(parts) == {
        "sku": "CHAISE-ERGO",
        "quantity": 12,
        "in_stock": 12,
        "warehouses": {"Lyon": 12, "Lille": 0},
        "currency": "EUR",
        "unit_price": "189.00",
        "discount_percent": 10,
        "total": "2041.20",
    }


def test_an_english_request_gets_an_english_quote(lab: Lab) -> None:
    task = send(lab.orchestrator.url + "/", "Could I get a quote for 12 CHAISE-ERGO please?")
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    quote = texts(artifact_parts(task))
    for figure in ("**12 units**", "189.00 EUR", "10%", "**2,041.20 EUR**"):
        assert figure in quote, quote
    # The quote is the agent's final message too, the history's last (seed 000's reading).
    last = task["history"][-1]
    assert last["role"] == "ROLE_AGENT"
    assert texts(last["parts"]) == quote
    assert texts(task["status"]["message"]["parts"]) == quote


def test_a_task_read_back_is_completed_as_the_labs_exercise_shows(lab: Lab) -> None:
    url = lab.stock.url + "/"
    task = send(url, "Stock de BUREAU-120 ?")
    again = rpc(url, "GetTask", {"id": task["id"]})
    assert again["status"]["state"] == "TASK_STATE_COMPLETED"
    assert texts(artifact_parts(again)) == (
        "Le stock disponible pour l'article BUREAU-120 est de 11 unités au total, "
        "réparties avec 4 unités dans l'entrepôt de Lyon et 7 unités dans l'entrepôt de Lille."
    )


def test_the_pricing_agent_applies_the_volume_discount_from_ten_units(lab: Lab) -> None:
    url = lab.pricing.url + "/"
    nine = data(artifact_parts(send(url, "Prix de 9 CHAISE-ERGO ?")))
    ten = data(artifact_parts(send(url, "Prix de 10 CHAISE-ERGO ?")))
    assert (nine["discount_percent"], nine["total"]) == (0, "1701.00")
    assert (ten["discount_percent"], ten["total"]) == (10, "1701.00")


def test_a_request_without_a_product_asks_for_it_and_the_answer_completes_the_quote(
    lab: Lab,
) -> None:
    url = lab.orchestrator.url + "/"
    asked = send(url, "Je voudrais un devis pour 12 chaises")
    assert asked["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert "Quel article" in status_text(asked)

    answered = send(url, "CHAISE-ERGO", task_id=asked["id"])
    assert answered["id"] == asked["id"]
    assert answered["status"]["state"] == "TASK_STATE_COMPLETED"
    assert data(artifact_parts(answered))["total"] == "2041.20"


def test_a_request_without_product_or_quantity_asks_twice(lab: Lab) -> None:
    url = lab.orchestrator.url + "/"
    asked = send(url, "Bonjour, je voudrais un devis")
    assert "Quel article, et combien" in status_text(asked)
    product = send(url, "BUREAU-120", task_id=asked["id"])
    assert product["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert status_text(product) == "Combien de BUREAU-120 voulez-vous ?"
    done = send(url, "5", task_id=asked["id"])
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    figures = data(artifact_parts(done))
    assert (figures["quantity"], figures["discount_percent"], figures["total"]) == (
        5, 5, "1657.75"
    )  # fmt: skip


def test_an_unknown_reference_is_named_and_another_asked_for(lab: Lab) -> None:
    url = lab.orchestrator.url + "/"
    asked = send(url, "Je voudrais un devis pour 3 TABLE-XL")
    assert asked["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    question = status_text(asked)
    assert "TABLE-XL n'existe pas" in question and "CHAISE-ERGO" in question, question
    done = send(url, "LAMPE-LED", task_id=asked["id"])
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    assert data(artifact_parts(done))["sku"] == "LAMPE-LED"

    stock = send(lab.stock.url + "/", "Stock de TABLE-XL ?")
    assert stock["status"]["state"] == "TASK_STATE_COMPLETED"
    assert "L'article TABLE-XL n'existe pas" in texts(artifact_parts(stock))


def test_out_of_stock_and_short_stock_are_said_in_the_quote(lab: Lab) -> None:
    url = lab.orchestrator.url + "/"
    none = send(url, "Je voudrais un devis pour 2 CAISSON-3T")
    assert "Rupture de stock" in texts(artifact_parts(none))
    short = send(url, "A quote for 20 CHAISE-ERGO")
    assert "only 12 of the 20 units are available" in texts(artifact_parts(short))


def test_tool_calls_and_results_are_internal_parts_of_the_history() -> None:
    with Lab(expose=True) as lab:
        stock = send(lab.stock.url + "/", "Stock de CHAISE-ERGO ?")
        internal = [p for m in stock["history"] for p in m["parts"]
                    if p.get("metadata") == INTERNAL]  # fmt: skip
        assert [p["data"] for p in internal] == [
            {"name": "check_stock", "args": {"sku": "CHAISE-ERGO"}},
            {"name": "check_stock", "response": {
                "status": "ok", "sku": "CHAISE-ERGO", "total": 12,
                "warehouses": {"Lyon": 12, "Lille": 0}}},
        ]  # fmt: skip
        quote = send(lab.orchestrator.url + "/", QUOTE)
        calls = [p["data"] for m in quote["history"] for p in m["parts"]
                 if p.get("metadata") == INTERNAL]  # fmt: skip
        assert {c["name"] for c in calls if "args" in c} == {"stock", "pricing"}
        results = {c["name"]: c for c in calls if "response" in c}
        assert results["pricing"]["response"]["total"] == "2041.20"
        read_back = rpc(lab.stock.url + "/", "GetTask", {"id": results["stock"]["task_id"]})
        assert read_back["status"]["state"] == "TASK_STATE_COMPLETED"


def test_internal_parts_stay_hidden_from_ordinary_callers(lab: Lab) -> None:
    stock = send(lab.stock.url + "/", "Stock de CHAISE-ERGO ?")
    assert all("data" not in p for m in stock["history"] for p in m["parts"])


def test_cancelling_the_quote_cancels_its_calls_to_stock_and_pricing() -> None:
    with Lab(delay=60) as lab:
        events = stream(lab.orchestrator.url + "/", QUOTE)
        first = next(events)
        task_id = first["task"]["id"]
        seen: set[str] = set()
        for event in events:  # until both calls are under way
            message = event.get("statusUpdate", {}).get("status", {}).get("message", {})
            seen.update(texts(message.get("parts", [])).split(" : ")[:1])
            if {"stock", "pricing"} <= seen:
                break
        canceled = rpc(lab.orchestrator.url + "/", "CancelTask", {"id": task_id})
        assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
        events.close()
        for server in (lab.stock, lab.pricing):
            assert sub_task_states(server.url + "/") == ["TASK_STATE_CANCELED"]


def test_a_stock_agent_that_cannot_be_reached_fails_the_quote_naming_it() -> None:
    gone = f"http://127.0.0.1:{free_port()}"
    with (
        LiveServer(create_app(PricingAgent(delay=60))) as pricing,
        LiveServer(
            create_app(OrchestratorAgent(stock_url=gone, pricing_url=pricing.url))
        ) as orchestrator,
    ):
        task = send(orchestrator.url + "/", QUOTE)
        assert task["status"]["state"] == "TASK_STATE_FAILED"
        assert f"L'agent stock ({gone}) n'a pas répondu" in status_text(task)
        assert sub_task_states(pricing.url + "/") == ["TASK_STATE_CANCELED"]


def test_the_agent_urls_default_to_this_servers_agents_path_and_settings_override_them() -> None:
    plain = OrchestratorAgent(AgentSettings(server_url="http://h:1/"))
    assert (plain.stock_url, plain.pricing_url) == (
        "http://h:1/agents/stock", "http://h:1/agents/pricing"
    )  # fmt: skip
    set_ = OrchestratorAgent(AgentSettings(agent_urls={"stock": "http://s", "pricing": "http://p"}))
    assert (set_.stock_url, set_.pricing_url) == ("http://s", "http://p")


@pytest.mark.parametrize(
    ("texts_", "sku", "quantity", "lang"),
    [
        (["Je voudrais un devis pour 12 CHAISE-ERGO"], "CHAISE-ERGO", 12, "fr"),
        (["A quote for 3 bureau-120, please"], "BUREAU-120", 3, "en"),
        (["Stock de BUREAU-120 ?"], "BUREAU-120", None, "fr"),
        (["devis pour 2x ECRAN-27"], "ECRAN-27", 2, "fr"),
        (["devis pour 12 chaises", "CHAISE-ERGO"], "CHAISE-ERGO", 12, "fr"),
        (["un devis", "TABLE-XL", "LAMPE-LED", "4"], "LAMPE-LED", 4, "fr"),
        (["quote for 1.5 FOO-BAR"], "FOO-BAR", None, "en"),
    ],
)
def test_requests_are_read_in_french_and_english(
    texts_: list[str], sku: str, quantity: int | None, lang: str
) -> None:
    request = read(texts_)
    assert (request.sku, request.quantity, request.lang) == (sku, quantity, lang)


def test_the_lab_client_gets_json_rpc_errors_for_a_missing_task(lab: Lab) -> None:
    body = {"jsonrpc": "2.0", "id": "1", "method": "GetTask", "params": {"id": "nope"}}
    r = httpx.post(lab.orchestrator.url + "/", json=body, headers={"A2A-Version": "1.0"})
    assert r.json()["error"]["code"] == -32001
