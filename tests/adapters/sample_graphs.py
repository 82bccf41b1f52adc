"""LangGraph graphs written as LangGraph's docs write them, for the langgraph adapter's
tests: a chat model (``ChatOpenAI``, pointed at the fake model) bound to tools, in a
``StateGraph`` of messages that loops model → tools → model; and a graph that asks a
human with ``interrupt()``. ``graph`` (module level) reads the model's URL from
``OPENAI_BASE_URL``, as ``a2ad serve --agent tests.adapters.sample_graphs:graph``
loads it. Probes record what a tool went through for tests on another thread."""

from __future__ import annotations

import asyncio
import os
import threading

import httpx
from langchain_core.messages import AIMessage
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import interrupt

from ..fake_model import MODEL


class Probe:
    def __init__(self) -> None:
        self.started = threading.Event()
        self.stopped = threading.Event()
        self.saw_cancel = False

    def reset(self) -> None:
        self.__init__()  # type: ignore[misc]


SLOW = Probe()


def check_stock(sku: str) -> str:
    """Units in stock of a reference."""
    return f"{sku}: 12 in Lyon"


async def slow_lookup(sku: str) -> str:
    """Looks a reference up in a slow catalogue."""
    SLOW.started.set()
    try:
        await asyncio.sleep(30)
    except asyncio.CancelledError:
        SLOW.saw_cancel = True
        raise
    finally:
        SLOW.stopped.set()
    return f"{sku} found"


def chat_model(base_url: str) -> ChatOpenAI:
    return ChatOpenAI(
        model=MODEL,
        base_url=base_url,
        api_key="test-key",  # type: ignore[arg-type]
        max_retries=0,
        # No connection outlives its request: the server's loop ends with each test.
        http_async_client=httpx.AsyncClient(limits=httpx.Limits(max_keepalive_connections=0)),
    )


def build(base_url: str, *, name: str = "stock") -> CompiledStateGraph:  # type: ignore[type-arg]
    tools = [check_stock, slow_lookup]
    model = chat_model(base_url).bind_tools(tools)

    async def call_model(state: MessagesState) -> dict[str, list[object]]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("model", call_model)
    builder.add_node("tools", ToolNode(tools))
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", tools_condition)
    builder.add_edge("tools", "model")
    return builder.compile(name=name)


def build_asking(checkpointer: BaseCheckpointSaver | None) -> CompiledStateGraph:  # type: ignore[type-arg]
    """Asks how many units, then notes the answer (human in the loop)."""

    async def ask(state: MessagesState) -> dict[str, list[object]]:
        units = interrupt("How many units?")
        return {"messages": [AIMessage(f"{units} units of {state['messages'][0].content}")]}

    builder = StateGraph(MessagesState)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    return builder.compile(checkpointer=checkpointer)


def build_broken() -> CompiledStateGraph:  # type: ignore[type-arg]
    async def fail(state: MessagesState) -> dict[str, list[object]]:
        raise RuntimeError("secret detail")

    builder = StateGraph(MessagesState)
    builder.add_node("fail", fail)
    builder.add_edge(START, "fail")
    return builder.compile()


graph = build(os.environ.get("OPENAI_BASE_URL", "http://127.0.0.1:9/v1"))
