"""What ``a2ad serve`` hands the agent it serves.

The command reads its flags and the environment once, when it starts, and
passes them down as an ``AgentSettings``: ``load_agent`` calls an agent class
or factory function that has a ``settings`` parameter with it. Nothing below
the command reads the environment, so an agent built in Python gets the same
settings only as arguments.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ..client.client import DEFAULT_URL

__all__ = ["AgentSettings"]


@dataclass(frozen=True, kw_only=True)
class AgentSettings:
    """Each field names where ``a2ad serve`` takes it from."""

    server_url: str = DEFAULT_URL
    """This server's base URL: ``$A2AD_URL``, else the address it listens on
    (with ``--port 0``, the port the system chose)."""

    model: str | None = None
    """The LLM an LLM-backed agent uses: ``--model``, else ``$A2AD_MODEL``."""

    llm_base_url: str | None = None
    """The OpenAI-compatible endpoint: ``$OPENAI_BASE_URL``."""

    llm_api_key: str | None = field(default=None, repr=False)
    """``$OPENAI_API_KEY``."""

    managed_urls: tuple[str, ...] = ()
    """The A2A servers an agent that manages tasks may reach:
    ``$A2AD_MANAGED_URLS`` (comma-separated); empty when it is unset."""

    token: str | None = field(default=None, repr=False)
    """The bearer token for those servers: ``$A2AD_TOKEN``."""

    agent_urls: Mapping[str, str] = field(default_factory=dict)
    """Base URLs of the agents this one calls, by name: ``$A2AD_<NAME>_URL``
    (``A2AD_STOCK_URL`` gives ``stock``), lower-cased names."""
