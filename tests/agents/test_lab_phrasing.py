"""The lab's agents with a model (tests/fake_model.py, a real OpenAI-compatible
server on loopback): the figures stay the tools', the model words them, its
words stream as chunks of the artifact that ends with the figures' data part,
its tokens are in the task's metadata, and a model that fails leaves the fixed
text (a note in a working update), never a failed quote."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import Any

import pytest

from a2ad import create_app
from a2ad.agents.lab import OrchestratorAgent, PricingAgent, StockAgent
from a2ad.agents.settings import AgentSettings

from ..conftest import LiveServer
from ..fake_model import FakeModel, Turn
from ..lab_client import QUOTE, data, kind, rpc, send, state, status_text, stream, texts

WORDED = "Pour 12 CHAISE-ERGO : 189,00 € HT l'unité, remise de 10 %, soit 2 041,20 € HT."
FIGURES = {
    "sku": "CHAISE-ERGO",
    "quantity": 12,
    "in_stock": 12,
    "warehouses": {"Lyon": 12, "Lille": 0},
    "currency": "EUR",
    "unit_price": "189.00",
    "discount_percent": 10,
    "total": "2041.20",
}
USAGE = {"promptTokens": 11, "completionTokens": 7, "totalTokens": 18}


@pytest.fixture
def model() -> Iterator[FakeModel]:
    with FakeModel([Turn(text=WORDED, chunks=4)]) as fake:
        yield fake


class Lab:
    """Stock and pricing without a model; the orchestrator with ``model``."""

    def __init__(self, model: FakeModel) -> None:
        self.stock = LiveServer(create_app(StockAgent()))
        self.pricing = LiveServer(create_app(PricingAgent()))
        settings = AgentSettings(model="fake-model", llm_base_url=model.url)
        orchestrator = OrchestratorAgent(
            settings, stock_url=self.stock.url, pricing_url=self.pricing.url
        )
        self.orchestrator = LiveServer(create_app(orchestrator))
        self.url = self.orchestrator.url + "/"

    def __enter__(self) -> Lab:
        for server in (self.stock, self.pricing, self.orchestrator):
            server.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        for server in (self.orchestrator, self.stock, self.pricing):
            server.__exit__(*exc)


def updates(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e["artifactUpdate"] for e in events if kind(e) == "artifactUpdate"]


def test_the_quote_streams_the_models_words_then_the_figures(model: FakeModel) -> None:
    with Lab(model) as lab:
        events = list(stream(lab.url, QUOTE))
        task = rpc(lab.url, "GetTask", {"id": events[0]["task"]["id"]})
    chunks = updates(events)
    assert len(chunks) == 5  # four pieces of text, then the figures
    assert {c["artifact"]["artifactId"] for c in chunks} == {task["artifacts"][0]["artifactId"]}
    assert [c.get("append", False) for c in chunks] == [False, True, True, True, True]
    assert [c.get("lastChunk", False) for c in chunks] == [False] * 4 + [True]
    assert "".join(texts(c["artifact"]["parts"]) for c in chunks[:4]) == WORDED
    assert chunks[-1]["artifact"]["parts"] == [{"data": FIGURES}]
    assert state(events[-1]) == "TASK_STATE_COMPLETED"

    (artifact,) = task["artifacts"]
    assert artifact["name"] == "devis"
    assert "".join(p["text"] for p in artifact["parts"] if "text" in p) == WORDED
    assert data(artifact["parts"]) == FIGURES
    assert task["metadata"]["a2ad"]["usage"] == {**USAGE, "byModel": {"fake-model": USAGE}}


def test_the_model_is_asked_in_the_requests_language_from_the_figures(model: FakeModel) -> None:
    with Lab(model) as lab:
        send(lab.url, "Could I get a quote for 12 CHAISE-ERGO please?")
    (asked,) = model.requests
    assert asked["model"] == "fake-model" and asked["stream"] is True
    system, user = asked["messages"]
    assert "Answer in English" in system["content"]
    assert "Could I get a quote for 12 CHAISE-ERGO please?" in user["content"]
    assert '"total": "2041.20"' in user["content"]
    assert "**2,041.20 EUR**" in user["content"]  # the fixed wording, for reference


@pytest.mark.parametrize(
    "turn",
    [
        Turn(status=500),
        # the stream breaks off after some words: no finish_reason, no [DONE]
        Turn(raw=b'data: {"choices": [{"index": 0, "delta": {"content": "Pour 12 "}}]}\n\n'),
        Turn(text=""),
    ],
    ids=["http-error", "cut-short", "no-text"],
)
def test_a_failing_model_leaves_the_fixed_quote_not_a_failed_one(
    model: FakeModel, turn: Turn, caplog: pytest.LogCaptureFixture
) -> None:
    model.turns = [turn]
    with Lab(model) as lab, caplog.at_level(logging.WARNING, "a2ad.agents.lab"):
        events = list(stream(lab.url, QUOTE))
        task = rpc(lab.url, "GetTask", {"id": events[0]["task"]["id"]})
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    (artifact,) = task["artifacts"]
    text, figures = artifact["parts"]
    assert "**2 041,20 €**" in text["text"]
    assert "Pour 12 " not in text["text"]  # the words sent before the break are replaced
    assert figures == {"data": FIGURES}
    last = updates(events)[-1]
    assert not last.get("append", False) and last["artifact"]["parts"] == artifact["parts"]
    noted = [status_text(e["statusUpdate"]) for e in events if kind(e) == "statusUpdate"]
    assert "Le modèle n'a pas pu rédiger la réponse ; la voici en texte fixe." in noted
    assert any("orchestrator agent answers in fixed wording" in r.message for r in caplog.records)


def test_the_stock_agent_words_its_answer_with_the_model_of_its_settings(
    model: FakeModel,
) -> None:
    model.turns = [Turn(text="Il reste 12 chaises à Lyon, aucune à Lille.", chunks=2)]
    agent = StockAgent(AgentSettings(model="fake-model", llm_base_url=model.url))
    with LiveServer(create_app(agent)) as live:
        task = send(live.url + "/", "Stock de CHAISE-ERGO ?")
    (artifact,) = task["artifacts"]
    assert texts(artifact["parts"]).replace("\n", "") == (
        "Il reste 12 chaises à Lyon, aucune à Lille."
    )
    assert data(artifact["parts"]) == {
        "status": "ok",
        "sku": "CHAISE-ERGO",
        "total": 12,
        "warehouses": {"Lyon": 12, "Lille": 0},
    }
    assert task["metadata"]["a2ad"]["usage"]["totalTokens"] == 18


def test_a_model_without_an_endpoint_warns_when_made_and_keeps_the_fixed_text(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, "a2ad.agents.lab"):
        agent = PricingAgent(model="gpt-4o-mini")
    assert agent.phrasing is None
    assert "OPENAI_BASE_URL" in caplog.text
    assert PricingAgent().phrasing is None  # no model: the fixed text, no warning


def test_cancel_while_the_model_words_hangs_up_on_it(model: FakeModel) -> None:
    model.turns = [Turn(text="Il reste douze chaises à Lyon.", chunks=6, chunk_delay=2.0)]
    agent = StockAgent(AgentSettings(model="fake-model", llm_base_url=model.url))
    with LiveServer(create_app(agent)) as live:
        url = live.url + "/"
        events = stream(url, "Stock de CHAISE-ERGO ?")
        task_id = next(events)["task"]["id"]
        while kind(next(events)) != "artifactUpdate":
            pass  # the first words are in: the model is streaming
        canceled = rpc(url, "CancelTask", {"id": task_id})
        events.close()
        deadline = time.monotonic() + 3
        while not model.disconnects and time.monotonic() < deadline:
            time.sleep(0.02)
    assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
    assert model.disconnects, "the model's stream was still read after the cancel"
