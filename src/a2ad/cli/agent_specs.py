"""``--agent``: the agents a serving command names, and what they are told.

``load_agents`` reads ``--agent`` (one SPEC, or several NAME=SPEC) and
``--default-agent`` for ``a2ad serve``, its group's processes and ``a2ad
worker``; ``agent_settings`` reads, once, what an agent may need from the
environment (its server's URL, its model, the agents it calls), which
agents/loading.py hands to a factory that asks for it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from ..adapters.command import EXEC_PREFIXES
from ..adapters.remote import RemoteAgent
from ..adapters.upstream_auth import UpstreamCredential, read_upstream_auth
from ..agent import Agent
from ..agents.llm import ENV_API_KEY, ENV_BASE_URL, ENV_MODEL
from ..agents.loading import check_agent_name, load_agent
from ..agents.settings import AgentSettings
from ..agents.task_manager import ENV_MANAGED_URLS
from ..tools import ENV_TOKEN, ENV_URL

__all__ = ["agent_settings", "agent_urls", "load_agents"]


def load_agents(
    specs: list[str],
    default: str | None,
    base: str,
    model: str | None,
    upstream_auth: str | None = None,
) -> Agent | dict[str, Agent]:
    """The agents ``--agent`` names: one SPEC, or several NAME=SPEC (each told
    the server's URL: agent NAME is at /agents/NAME/ beneath it); the agents
    served elsewhere get their credential (``--upstream-auth FILE``, the
    environment). Raises ValueError for a usage error."""
    named = [_named(spec) for spec in specs]
    credentials = read_upstream_auth(upstream_auth) if upstream_auth else {}
    if len(specs) == 1 and not named[0][1]:
        if default is not None:
            raise ValueError("--default-agent: name one of several --agent NAME=SPEC")
        agent = load_agent(specs[0], agent_settings(base, model))
        _no_strays(credentials, {"": agent}, upstream_auth)
        return _credentialed("", agent, credentials)
    agents: dict[str, Agent] = {}
    for name, equals, spec in named:
        if not equals or not name or not spec:
            raise ValueError(
                "--agent: to serve several agents, give each as NAME=SPEC "
                f"(e.g. --agent stock=pkg.stock); not {name + equals + spec!r}"
            )
        if name in agents:
            raise ValueError(f"--agent: {name!r} is named twice")
        check_agent_name(name)
        agents[name] = load_agent(spec, agent_settings(base, model))
    _no_strays(credentials, agents, upstream_auth)
    if default is not None and default not in agents:
        raise ValueError(f"--default-agent {default!r} is not one of {', '.join(agents)}")
    return {name: _credentialed(name, agent, credentials) for name, agent in agents.items()}


def _no_strays(
    credentials: Mapping[str, UpstreamCredential], agents: Mapping[str, Agent], path: str | None
) -> None:
    """Refuse a credential for no agent served elsewhere: a typo would leave
    the upstream called without it."""
    for name in credentials:
        if not isinstance(agents.get(name), RemoteAgent):
            fronted = [n for n, agent in agents.items() if isinstance(agent, RemoteAgent) and n]
            raise ValueError(
                f"--upstream-auth {path}: [{name}] names no agent served elsewhere "
                f"(--agent {name or 'NAME'}=a2a+http://...); "
                + (f"those served here: {', '.join(fronted)}" if fronted else "none is")
            )


def _credentialed(name: str, agent: Agent, credentials: Mapping[str, UpstreamCredential]) -> Agent:
    """An agent served elsewhere (``a2a+http://...``) with its upstream's
    credential: from the environment, ``A2AD_AGENT_<NAME>_TOKEN`` (a bearer
    token) or ``A2AD_AGENT_<NAME>_API_KEY``, NAME in capitals with ``-`` as
    ``_`` (``A2AD_AGENT_TOKEN`` and ``A2AD_AGENT_API_KEY`` for an agent served
    alone); else ``--upstream-auth``'s table for it."""
    if isinstance(agent, RemoteAgent):
        prefix = f"A2AD_AGENT_{name.upper().replace('-', '_')}_" if name else "A2AD_AGENT_"
        token, api_key = os.environ.get(prefix + "TOKEN"), os.environ.get(prefix + "API_KEY")
        if token or api_key:
            agent.use_credential(UpstreamCredential(token=token or None, api_key=api_key or None))
        elif name in credentials:
            agent.use_credential(credentials[name])
    return agent


def _named(spec: str) -> tuple[str, str, str]:
    """(NAME, "=", SPEC) of ``NAME=SPEC``; ("", "", SPEC) of a SPEC alone, also
    of a command whose words hold an ``=`` (``exec:tool --mode=fast``)."""
    if spec.partition(":")[0] in EXEC_PREFIXES:
        return "", "", spec
    return spec.partition("=")


def agent_settings(base: str, model: str | None) -> AgentSettings:
    """What the agent may need, from the environment, read here and only here."""
    env = os.environ
    managed = [url.strip().rstrip("/") for url in env.get(ENV_MANAGED_URLS, "").split(",")]
    return AgentSettings(
        server_url=env.get(ENV_URL) or base,
        model=model or env.get(ENV_MODEL) or None,
        llm_base_url=env.get(ENV_BASE_URL) or None,
        llm_api_key=env.get(ENV_API_KEY) or None,
        managed_urls=tuple(url for url in managed if url),
        token=env.get(ENV_TOKEN) or None,
        agent_urls=agent_urls(env),
    )


_AGENT_URL = re.compile(r"A2AD_([A-Z0-9]+(?:_[A-Z0-9]+)*)_URL")


def agent_urls(env: Mapping[str, str]) -> dict[str, str]:
    """``$A2AD_<NAME>_URL`` as {name: URL}: where the agents an agent calls are."""
    found = {}
    for key, value in env.items():
        match = _AGENT_URL.fullmatch(key)
        if match and value.strip():
            found[match.group(1).lower()] = value.strip().rstrip("/")
    return found
