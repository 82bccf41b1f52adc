"""The official A2A SDK (a2a-sdk 1.x) serving an echo agent: bench/load.py's peer.

The same convention as a2ad's built-in echo agent: the reply is an artifact holding
the text; a text starting with ``sleep:<seconds> `` waits that long first, and the
wait is cancellable (CancelTask cancels the running ``execute``). Tasks are kept in
the SDK's InMemoryTaskStore; JSON-RPC (A2A 1.0) answers at ``/``, the agent card at
``/.well-known/agent-card.json``; one uvicorn worker.

    .venv/bin/python bench/peers/sdk_echo.py --port 8001
"""

from __future__ import annotations

import argparse
import asyncio
import re

import uvicorn
from a2a.helpers.proto_helpers import new_task_from_user_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill
from starlette.applications import Starlette

SLEEP = re.compile(r"sleep:(\d+(?:\.\d+)?)(?:\s+|$)")  # as a2ad's echo agent


class EchoExecutor(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = context.get_user_input()
        task = context.current_task or new_task_from_user_message(context.message)
        await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        await updater.start_work()
        match = SLEEP.match(text)
        if match:
            await asyncio.sleep(min(float(match.group(1)), 3600.0))
            text = text[match.end() :]
        await updater.add_artifact([new_text_part(text)], name="echo")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


def build_app(port: int) -> Starlette:
    card = AgentCard(
        name="echo",
        description="Echoes the text it receives back as an artifact.",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(
                url=f"http://127.0.0.1:{port}/", protocol_binding="JSONRPC", protocol_version="1.0"
            )
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="echo", name="Echo", description="echoes", tags=["echo"])],
    )
    handler = DefaultRequestHandler(
        agent_executor=EchoExecutor(), task_store=InMemoryTaskStore(), agent_card=card
    )
    routes = create_agent_card_routes(card) + create_jsonrpc_routes(handler, rpc_url="/")
    return Starlette(routes=routes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8001)
    args = parser.parse_args()
    uvicorn.run(build_app(args.port), host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
