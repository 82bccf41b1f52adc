"""A user of the official A2A 0.3 SDK (a2a-sdk 0.3.x) talking to a2ad.

Run by tests/interop/test_sdk03.py with the Python of a venv that holds a2a-sdk
0.3.x (it cannot share one with the 1.x SDK the suite runs on), so this file
imports nothing of a2ad's or of the tests':

    python -I sdk03_client.py BASE_URL WEBHOOK_BASE

It reads the card as the SDK's docs show (A2ACardResolver, no A2A-Version),
lets ClientFactory pick JSON-RPC and then HTTP+JSON from it, and runs each
scenario through both, printing one JSON line per scenario: {"transport",
"scenario", ...what it saw}. A scenario that raises something unexpected prints
{"raised": traceback} instead, and the others still run.
"""

from __future__ import annotations

import asyncio
import json
import sys
import traceback
import uuid
from collections.abc import Awaitable, Callable
from importlib.metadata import version
from typing import Any

import httpx
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from a2a.client.errors import A2AClientHTTPError, A2AClientJSONRPCError
from a2a.types import (
    AgentCard,
    GetTaskPushNotificationConfigParams,
    Message,
    Part,
    PushNotificationConfig,
    Role,
    Task,
    TaskIdParams,
    TaskPushNotificationConfig,
    TaskQueryParams,
    TaskState,
    TextPart,
    TransportProtocol,
)

TIMEOUT = 10


def emit(transport: str, scenario: str, **seen: Any) -> None:
    print(json.dumps({"transport": transport, "scenario": scenario, **seen}), flush=True)


def dump(model: Any) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def message(text: str) -> Message:
    return Message(
        role=Role.user, parts=[Part(root=TextPart(text=text))], message_id=str(uuid.uuid4())
    )


def error(exc: Exception) -> dict[str, Any]:
    """What a caller of the SDK can read from the error it raised."""
    if isinstance(exc, A2AClientJSONRPCError):
        return {"code": exc.error.code, "message": exc.error.message}
    if isinstance(exc, A2AClientHTTPError):
        seen: dict[str, Any] = {"status": exc.status_code}
        cause = exc.__cause__
        if isinstance(cause, httpx.HTTPStatusError):
            seen["body"] = cause.response.json()
        return seen
    raise exc


async def send(client: Client, text: str) -> Task:
    """A non-streaming send; the task it answers with."""
    events = [event async for event in client.send_message(message(text))]
    assert len(events) == 1, events
    (event,) = events
    assert isinstance(event, tuple), event
    task, update = event
    assert update is None
    return task


async def scenarios(card: AgentCard, transport: str, hook: str) -> None:
    # Closing an SDK client closes its httpx client, so these three share one of their own.
    async with httpx.AsyncClient(timeout=TIMEOUT) as http:
        await run_scenarios(http, card, transport, hook)


async def run_scenarios(
    http: httpx.AsyncClient, card: AgentCard, transport: str, hook: str
) -> None:
    def make(**config: Any) -> Client:
        chosen = ClientConfig(httpx_client=http, supported_transports=[transport], **config)
        return ClientFactory(chosen).create(card)

    plain = make(streaming=False)
    streamer = make(streaming=True)
    poller = make(streaming=False, polling=True)

    async def sent() -> None:
        emit(transport, "send", task=dump(await send(plain, "echo hello there")))

    async def got() -> None:
        task = await send(plain, "echo again")
        newest = await plain.get_task(TaskQueryParams(id=task.id, history_length=1))
        emit(transport, "get", sent=dump(task), got=dump(newest))

    async def streamed() -> None:
        events = []
        async for task, update in streamer.send_message(message("chunks 3")):
            events.append({"task": dump(task), "update": None if update is None else dump(update)})
        emit(transport, "stream", events=events)

    async def canceled() -> None:
        started = await send(poller, "hang x")
        state = started.status.state
        for _ in range(500):  # the agent says "working" before it hangs
            if state == TaskState.working:
                break
            await asyncio.sleep(0.01)
            state = (await poller.get_task(TaskQueryParams(id=started.id))).status.state
        seen: dict[str, Any] = {"before": state.value}
        seen["canceled"] = dump(await poller.cancel_task(TaskIdParams(id=started.id)))
        try:
            again = await poller.cancel_task(TaskIdParams(id=started.id))
            seen["again"] = {"answered": dump(again)}
        except (A2AClientJSONRPCError, A2AClientHTTPError) as exc:
            seen["again"] = error(exc)
        emit(transport, "cancel", **seen)

    async def unknown() -> None:
        try:
            got = await plain.get_task(TaskQueryParams(id="no-such-task"))
            emit(transport, "unknown", answered=dump(got))
        except (A2AClientJSONRPCError, A2AClientHTTPError) as exc:
            emit(transport, "unknown", **error(exc))

    ids: list[str] = []  # the task push_set set a webhook on

    async def push_set() -> None:
        task = await send(plain, "input which one?")  # waits for input: a webhook starts here
        config = TaskPushNotificationConfig(
            task_id=task.id,
            push_notification_config=PushNotificationConfig(
                id="hook", url=f"{hook}/{transport}", token="tok-03"
            ),
        )
        emit(
            transport, "push_set", task=dump(task), set=dump(await plain.set_task_callback(config))
        )
        ids.append(task.id)

    async def push_got() -> None:
        (task_id,) = ids
        got = await plain.get_task_callback(
            GetTaskPushNotificationConfigParams(id=task_id, push_notification_config_id="hook")
        )
        emit(transport, "push_get", got=dump(got))

    runs: list[tuple[str, Callable[[], Awaitable[None]]]] = [
        ("send", sent),
        ("get", got),
        ("stream", streamed),
        ("cancel", canceled),
        ("unknown", unknown),
        ("push_set", push_set),
        ("push_get", push_got),
    ]
    try:
        for name, run in runs:
            try:
                async with asyncio.timeout(TIMEOUT):
                    await run()
            except Exception:
                emit(transport, name, raised=traceback.format_exc())
    finally:
        for client in (plain, streamer, poller):
            await client.close()


async def main(base_url: str, hook: str) -> None:
    async with httpx.AsyncClient(timeout=TIMEOUT) as http:
        card = await A2ACardResolver(http, base_url).get_agent_card()
    emit("", "card", sdk=version("a2a-sdk"), card=dump(card))
    for transport in (TransportProtocol.jsonrpc, TransportProtocol.http_json):
        await scenarios(card, transport.value, hook)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:]))
