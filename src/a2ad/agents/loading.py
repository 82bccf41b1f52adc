"""Agents from what names them: ``--agent`` specs, and the agents an app serves.

``load_agent`` turns a spec (``echo``, ``demo``, ``package.module:attr``,
``a2a-sdk:package.module:attr``) into an Agent, through an adapter when the
object is a framework's; ``served_agents`` checks the names of several and puts
the default first, as the engine wants them. They live on the agents' side so
that the server (server/) imports no agent and no adapter: the assembly
(a2ad/assembly.py) loads and chooses, the server serves what it is given."""

from __future__ import annotations

import importlib
import inspect
import re
from collections.abc import Mapping
from typing import Any

from ..adapters import adapt
from ..adapters.command import EXEC_PREFIXES, CommandAgent
from ..adapters.function import FunctionAgent
from ..adapters.remote import REMOTE_PREFIXES, RemoteAgent
from ..agent import Agent
from .demo import DemoAgent
from .echo import EchoAgent
from .settings import AgentSettings

__all__ = ["BUILT_IN_AGENTS", "SDK_PREFIX", "check_agent_name", "load_agent", "served_agents"]

BUILT_IN_AGENTS: dict[str, type[Agent]] = {"echo": EchoAgent, "demo": DemoAgent}  # --agent NAME
SDK_PREFIX = "a2a-sdk"  # --agent a2a-sdk:pkg.module:executor (not a module name: it has a dash)


def served_agents(
    agent: Agent | Mapping[str, Agent] | None, default: str | None
) -> Agent | dict[str, Agent]:
    """``agent`` for the engine: one agent (the echo agent if None), or the named
    ones with the default first. Raises ValueError for a bad name or default."""
    if agent is None:
        return EchoAgent()
    if not isinstance(agent, Mapping):
        if default is not None:
            raise ValueError("default_agent names one of several agents; this app has one")
        return agent
    if not agent:
        raise ValueError("give at least one agent")
    for name in agent:
        check_agent_name(name)
    if default is None:
        return dict(agent)
    if default not in agent:
        raise ValueError(f"default_agent {default!r} is not one of {', '.join(agent)}")
    return {default: agent[default], **{n: a for n, a in agent.items() if n != default}}


_AGENT_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def check_agent_name(name: str) -> None:
    """Raise ValueError unless ``name`` may name an agent (a path segment)."""
    if not _AGENT_NAME.fullmatch(name):
        raise ValueError(
            f"agent name {name!r}: use 1 to 64 letters, digits, '-' or '_' "
            "(it is a path segment: /agents/<name>/)"
        )


def load_agent(spec: str, settings: AgentSettings | None = None) -> Agent:
    """``echo`` or ``demo`` (the built-in agents), or ``package.module:attr``
    naming an Agent instance, an Agent class (instantiated with no arguments),
    or a function (``adapters.function``: ``async def run(ctx)``, or a function
    of the user's text, async, sync or an async generator); a bare
    ``package.module`` means its ``agent`` attribute. ``a2a-sdk:`` before the
    name loads an a2a-sdk AgentExecutor (instance or class) instead
    (``adapters.a2a_sdk``). An object of a framework that ``adapters.adapt``
    recognizes (a compiled LangGraph graph, a PraisonAI agent, a Google ADK agent)
    is served through its adapter. A class, or a plain function returning an agent,
    that has a ``settings`` parameter is called with ``settings`` (default
    ``AgentSettings()``): how ``a2ad serve`` passes what it read from its flags
    and the environment. ``exec:COMMAND`` (``exec-json:COMMAND``) runs a
    command for each turn (``adapters.command``); ``a2a+http://...`` (or
    ``a2a+https://``, ``grpc://``, ``grpcs://``) fronts an A2A agent served
    elsewhere (``adapters.remote``)."""
    if spec in BUILT_IN_AGENTS:
        return BUILT_IN_AGENTS[spec]()
    framework, sep, target = spec.partition(":")
    if sep and framework in REMOTE_PREFIXES:  # an agent served elsewhere: adapters/remote.py
        try:
            return RemoteAgent(spec)
        except ValueError as exc:
            raise ValueError(f"--agent {spec!r}: {exc}") from None
    if sep and framework in EXEC_PREFIXES:  # any command: adapters/command.py
        try:
            return CommandAgent(target, json_input=framework == "exec-json")
        except ValueError as exc:
            raise ValueError(f"--agent {spec!r}: {exc}") from None
    if sep and framework == SDK_PREFIX:
        try:
            from ..adapters.a2a_sdk import SdkExecutorAgent
        except ImportError as exc:
            raise ValueError(
                f"--agent {spec!r} needs the a2a-sdk: pip install 'a2ad[a2a-sdk]' ({exc})"
            ) from None
        executor, attr = _load_object(spec, target, settings)
        try:
            return SdkExecutorAgent(executor, name=attr)
        except TypeError as exc:
            raise ValueError(f"--agent {spec!r}: {exc}") from None
    obj, attr = _load_object(spec, spec, settings)
    if isinstance(obj, Agent):
        return obj
    adapted = adapt(obj, name=attr)  # a framework's agent: a LangGraph graph, ...
    if adapted is not None:
        return adapted
    if hasattr(obj, "run") and callable(obj.run):  # not an Agent: its card is a function's
        obj = obj.run
    if callable(obj):
        try:
            return FunctionAgent(obj, name=attr)
        except TypeError as exc:
            raise ValueError(f"--agent {spec!r}: {exc}") from None
    raise ValueError(f"--agent {spec!r}: {attr!r} is not an agent (it needs an async run(ctx))")


def _load_object(spec: str, target: str, settings: AgentSettings | None) -> tuple[Any, str]:
    """What ``target`` (``package.module:attr``, or ``package.module`` for its
    ``agent``) names, a class instantiated and a factory called; and its name."""
    module_name, sep, attr = target.partition(":")
    if not sep:
        attr = "agent"
    if not module_name or not attr:
        raise ValueError(
            f"--agent {spec!r}: use 'echo', 'demo', 'package.module:attr' or 'package.module' "
            f"(with an `agent` attribute), or '{SDK_PREFIX}:package.module:attr'"
        )
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"--agent {spec!r}: can't import {module_name!r}: {exc}") from None
    try:
        obj: Any = getattr(module, attr)
    except AttributeError:
        raise ValueError(f"--agent {spec!r}: {module_name!r} has no attribute {attr!r}") from None
    if _takes_settings(obj):
        obj = obj(settings=settings if settings is not None else AgentSettings())
    elif isinstance(obj, type):
        obj = obj()
    return obj, attr


def _takes_settings(obj: Any) -> bool:
    factory = isinstance(obj, type) or (
        inspect.isfunction(obj) and not inspect.iscoroutinefunction(obj)
    )
    try:
        return factory and "settings" in inspect.signature(obj).parameters
    except (TypeError, ValueError):  # no signature to read (a builtin)
        return False
