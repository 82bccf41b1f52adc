"""Google ADK agents as the lab writes them (seed 004: an ``Agent`` with a tool,
on LiteLLM), for tests/adapters/test_adk.py, against tests/fake_model.py.

``root_agent`` (for ``a2ad serve --agent tests.adapters.adk_agents:root_agent``)
calls the model at ``$ADK_TEST_MODEL_URL``; ``stock_agent(url)`` makes one for a
given model URL.
"""

from __future__ import annotations

import os
from typing import Any

from google.adk.agents import Agent
from google.adk.models.lite_llm import LiteLlm

# LiteLLM fetches its model price list from the network when imported (which ADK
# does on first use, a2ad's adapter when it wraps the agent), unless told not to.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

INVENTORY = {"CHAISE-ERGO": {"Lyon": 12, "Lille": 0}, "BUREAU-120": {"Lyon": 3, "Lille": 5}}


def check_stock(sku: str) -> dict[str, Any]:
    """Stock of an article, per warehouse."""
    if sku == "BOOM":
        raise RuntimeError("the inventory database is down")
    per_site = INVENTORY.get(sku)
    if per_site is None:
        return {"status": "unknown", "sku": sku}
    return {"status": "ok", "sku": sku, "warehouses": per_site, "total": sum(per_site.values())}


def stock_agent(url: str) -> Agent:
    return Agent(
        name="stock_agent",
        model=LiteLlm(model="openai/fake-model", api_base=url, api_key="x"),
        description="Answers stock questions about the catalogue's articles.",
        instruction="Answer stock questions with the check_stock tool.",
        tools=[check_stock],
    )


root_agent = stock_agent(os.environ.get("ADK_TEST_MODEL_URL", "http://127.0.0.1:9/v1"))
