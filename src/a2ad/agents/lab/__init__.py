"""The lab's three agents (seed 004), deterministic, no model needed: ``stock``
and ``pricing`` answer from a small catalogue; ``orchestrator`` asks both over
A2A and answers a quote. ``a2ad demo`` serves the three.

Serve one with ``a2ad serve --agent a2ad.agents.lab:StockAgent`` (or
``PricingAgent``, ``OrchestratorAgent``); see docs/agents.md.
"""

from .orchestrator import OrchestratorAgent
from .pricing import PricingAgent
from .stock import StockAgent

__all__ = ["OrchestratorAgent", "PricingAgent", "StockAgent"]
