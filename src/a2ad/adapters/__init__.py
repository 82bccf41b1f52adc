"""Agents written for something else, served on a2ad's engine, store and cancel.

What exists:

- ``function.FunctionAgent``: a plain function, async or sync, or an async
  generator (``a2ad serve --agent pkg.module:func``);
- ``a2a_sdk.SdkExecutorAgent``: an a2a-sdk ``AgentExecutor``
  (``a2ad serve --agent a2a-sdk:pkg.module:executor``; extra ``a2ad[a2a-sdk]``);
- ``langgraph.GraphAgent``: a compiled LangGraph graph (extra ``a2ad[langgraph]``);
- ``praisonai.PraisonAgent``: a ``praisonaiagents.Agent`` (extra ``a2ad[praisonai]``);
- ``adk.AdkAgent``: a Google ADK agent (``a2ad serve --agent pkg.module:root_agent``;
  extra ``a2ad[adk]``);

An adapter that needs a framework imports it only when it is used: importing
this package imports none of them. ``adapt`` is how ``load_agent`` recognizes a
framework's object: each entry of ``DETECTORS`` looks at the object's type
through the framework's module in ``sys.modules`` (an object of a framework can
exist only once its module has been imported, so an absent module means "not
ours" and nothing is imported to find out).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from ..agent import Agent
from .function import FunctionAgent

__all__ = ["DETECTORS", "FunctionAgent", "adapt"]

Detector = Callable[[Any, str], Agent | None]


def _is_instance(obj: Any, module: str, name: str) -> bool:
    loaded = sys.modules.get(module)
    cls = getattr(loaded, name, None)
    return isinstance(cls, type) and isinstance(obj, cls)


def _langgraph(obj: Any, name: str) -> Agent | None:
    if not _is_instance(obj, "langgraph.pregel", "Pregel"):
        return None
    from .langgraph import GraphAgent

    return GraphAgent(obj, name=name)


def _praisonai(obj: Any, name: str) -> Agent | None:
    if not _is_instance(obj, "praisonaiagents.agent.agent", "Agent"):
        return None
    from .praisonai import PraisonAgent

    return PraisonAgent(obj, name=name)


def _adk(obj: Any, name: str) -> Agent | None:
    if not _is_instance(obj, "google.adk.agents.base_agent", "BaseAgent"):
        return None
    from .adk import AdkAgent

    return AdkAgent(obj)  # the card's name is the ADK agent's own, not the attribute's


# Each takes the loaded object and the attribute's name, and answers its Agent, or
# None when the object is not its framework's.
DETECTORS: list[Detector] = [_langgraph, _praisonai, _adk]


def adapt(obj: Any, *, name: str) -> Agent | None:
    """``obj`` served through the adapter of the framework it belongs to, or None."""
    for detect in DETECTORS:
        agent = detect(obj, name)
        if agent is not None:
            return agent
    return None
