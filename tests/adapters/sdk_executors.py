"""a2a-sdk (1.x) AgentExecutors written as the SDK's docs and samples write them, for
the a2a_sdk adapter's tests. They use only the SDK: its helpers, TaskUpdater and
protobuf types. Probes record what happened to them for tests on another thread."""

from __future__ import annotations

import asyncio
import threading

from a2a.helpers import (
    new_data_part,
    new_task_from_user_message,
    new_text_message,
    new_text_part,
)
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types import Part, TaskArtifactUpdateEvent, TaskStatusUpdateEvent
from a2a.types import TaskState as SdkState
from a2a.types import TaskStatus as SdkStatus
from a2a.utils.errors import InvalidParamsError


class HelloExecutor(AgentExecutor):
    """Says hello world, as the SDK's hello-world sample does."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        await event_queue.enqueue_event(new_text_message("Hello World"))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise Exception("cancel not supported")


async def _start(context: RequestContext, event_queue: EventQueue) -> TaskUpdater:
    assert context.message is not None
    task = context.current_task or new_task_from_user_message(context.message)
    await event_queue.enqueue_event(task)
    return TaskUpdater(event_queue, task.id, task.context_id)


class StreamingExecutor(AgentExecutor):
    """Streams the words of the message as chunks of one artifact."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        updater = await _start(context, event_queue)
        await updater.start_work(updater.new_agent_message([new_text_part("streaming")]))
        words = context.get_user_input().split()
        for i, word in enumerate(words):
            await asyncio.sleep(0.01)
            await updater.add_artifact(
                [new_text_part(word)],
                artifact_id="words",
                name="words",
                append=i > 0,
                last_chunk=i == len(words) - 1,
            )
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise Exception("cancel not supported")


class AskingExecutor(AgentExecutor):
    """Asks for a size, then answers with the order (multi-turn on one task)."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        updater = await _start(context, event_queue)
        if context.current_task is None:
            await updater.requires_input(updater.new_agent_message([new_text_part("which size?")]))
            return
        first = context.current_task.history[0].parts[0].text
        await updater.add_artifact([new_text_part(f"{first}, size {context.get_user_input()}")])
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise Exception("cancel not supported")


class RaisingExecutor(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        updater = await _start(context, event_queue)
        await updater.start_work()
        raise ValueError("secret detail")

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise Exception("cancel not supported")


class FailingExecutor(AgentExecutor):
    """Ends its task failed, with a reason, as TaskUpdater.failed does."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        updater = await _start(context, event_queue)
        await updater.failed(updater.new_agent_message([new_text_part("no stock left")]))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise Exception("cancel not supported")


class RefusingExecutor(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise InvalidParamsError("send a size")

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise Exception("cancel not supported")


class StrayExecutor(AgentExecutor):
    """Enqueues an event for a task that is not the one it runs."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        await event_queue.enqueue_event(
            TaskStatusUpdateEvent(
                task_id="another-task",
                context_id=context.context_id,
                status=SdkStatus(state=SdkState.TASK_STATE_WORKING),
            )
        )

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise Exception("cancel not supported")


class Probe:
    def __init__(self) -> None:
        self.working = threading.Event()
        self.interrupted = threading.Event()
        self.cancel_called = threading.Event()
        self.cancel_task_id = ""

    def reset(self) -> None:
        self.__init__()  # type: ignore[misc]


WAITING = Probe()


class WaitingExecutor(AgentExecutor):
    """Emits a partial artifact, then works until canceled; its cancel() says canceled."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        updater = await _start(context, event_queue)
        await updater.start_work()
        await event_queue.enqueue_event(
            TaskArtifactUpdateEvent(
                task_id=context.task_id,
                context_id=context.context_id,
                artifact={"artifact_id": "partial", "parts": [Part(text="partial")]},
            )
        )
        WAITING.working.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            WAITING.interrupted.set()
            raise
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        WAITING.cancel_task_id = context.task_id or ""
        WAITING.cancel_called.set()
        await TaskUpdater(event_queue, context.task_id or "", context.context_id or "").cancel()


class IntrospectingExecutor(AgentExecutor):
    """Answers with what its RequestContext says about the request."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        updater = await _start(context, event_queue)
        user = context.call_context.user
        facts = {
            "user": user.user_name,
            "authenticated": user.is_authenticated,
            "metadata": context.metadata,
            "ids": [context.task_id, context.context_id],
            "message_ids": [context.message.task_id, context.message.context_id]
            if context.message
            else [],
            "version": context.call_context.state["a2ad"].version,
        }
        await updater.add_artifact([new_data_part(facts)])
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise Exception("cancel not supported")


class GivingUpExecutor(AgentExecutor):
    """Cancels its own task while executing (TaskUpdater.cancel)."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        updater = await _start(context, event_queue)
        await updater.start_work()
        await updater.cancel(updater.new_agent_message([new_text_part("the order was withdrawn")]))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise Exception("cancel not supported")
