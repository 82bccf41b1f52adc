"""Agents written for something else, served on a2ad's engine, store and cancel.

What exists:

- ``function.FunctionAgent``: a plain function, async or sync, or an async
  generator (``a2ad serve --agent pkg.module:func``);
- ``a2a_sdk.SdkExecutorAgent``: an a2a-sdk ``AgentExecutor``
  (``a2ad serve --agent a2a-sdk:pkg.module:executor``; extra ``a2ad[a2a-sdk]``).

Planned (issue 13): Google ADK agents, PraisonAI agents, LangGraph graphs, each
behind its own extra. An adapter that needs a framework imports it only when it
is used: importing this package imports none of them.
"""

from __future__ import annotations

from .function import FunctionAgent

__all__ = ["FunctionAgent"]
