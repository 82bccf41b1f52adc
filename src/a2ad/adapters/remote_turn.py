"""One fronted turn (adapters/remote.py): the upstream's events relayed into
a2ad's task as they come (statuses, artifacts and their chunks, the usage its
metadata reports, the upstream task's id noted in the task's metadata), the
upstream task followed again when its stream breaks or ends early (or polled,
from an upstream that does not stream), and canceled when the turn is
interrupted, also before the upstream's first answer named it. Every text a
front writes goes through ``masked``: a client error repeats the URL it was
given, password and all."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Mapping
from typing import Any, Protocol

from ..agent import TaskContext
from ..protocol.errors import A2AError, UnsupportedOperationError
from ..protocol.model import (
    Artifact,
    Message,
    Role,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
    new_id,
)
from ..url_secrets import mask_url


class Upstream(Protocol):
    """What a turn needs of its agent (remote.py's RemoteAgent): its client, how
    it names the upstream, whether that streams, and the upstream cancels."""

    client: Any  # a2ad's Client, once started
    shown: str
    streams: bool
    cancel_seconds: float

    def canceled_upstream(self, upstream: str) -> bool: ...

    async def cancel_upstream(self, upstream: str) -> str | None: ...


__all__ = ["FOLLOW_ATTEMPTS", "Turn", "Upstream", "masked", "upstream_task", "usage_in"]

log = logging.getLogger("a2ad.agents")

FOLLOW_ATTEMPTS = 5  # resubscriptions to an upstream task whose stream broke, backing off
FOLLOW_BACKOFF = 0.5  # seconds before the first, doubled each time
POLL_FIRST = 0.25  # an upstream that does not stream: its task read again after this,
POLL_MOST = 5.0  # doubling up to this
FIND_SENT_AMONG = 20  # the newest upstream tasks of the context a cancel looks through


_URL = re.compile(r"[a-z][a-z0-9+.-]*://[^\s()'\"]+", re.IGNORECASE)


def masked(text: object) -> str:
    """``text`` with each URL in it masked (its password, its secret query
    parameters): a client error repeats the URL it was given."""
    return _URL.sub(lambda found: mask_url(found.group(0), _secret_parameter), str(text))


def _secret_parameter(name: str) -> bool:
    """A query parameter named like a credential."""
    lowered = name.lower()
    return any(word in lowered for word in ("key", "token", "secret", "password", "auth"))


def upstream_task(metadata: object) -> str | None:
    """The upstream task a2ad's task fronts, as a turn before kept it in the
    task's metadata (``a2ad.upstream.taskId``)."""
    if isinstance(metadata, Mapping):
        ours = metadata.get("a2ad")
        if isinstance(ours, Mapping):
            upstream = ours.get("upstream")
            if isinstance(upstream, Mapping) and isinstance(upstream.get("taskId"), str):
                return str(upstream["taskId"])
    return None


class Turn:
    """One turn's relay of the upstream's events into a2ad's task."""

    def __init__(self, agent: Upstream, ctx: TaskContext, upstream: str | None) -> None:
        self.agent = agent
        self.ctx = ctx
        self.upstream = upstream  # known: noted in a2ad's task (by this turn or one before)
        self.state: TaskState | None = None
        self.counted: set[object] = set()  # the usage reports taken, by event
        # The message sent upstream, its id a2ad's: a cancel before the upstream's first
        # answer finds the upstream task by it.
        self.sent = Message(message_id=new_id(), role=Role.USER, parts=list(ctx.message.parts))

    async def relay(
        self, item: Task | Message | TaskStatusUpdateEvent | TaskArtifactUpdateEvent
    ) -> None:
        ctx = self.ctx
        await self._usage(item)
        if isinstance(item, Message):
            await ctx.reply(list(item.parts))
            self.state = TaskState.COMPLETED
            return
        if isinstance(item, Task):
            await self._note(item.id)
            for artifact in item.artifacts:
                await self._artifact(artifact)
            await self._status(item.status)
            return
        await self._note(item.task_id)
        if isinstance(item, TaskArtifactUpdateEvent):
            await self._artifact(
                item.artifact, append=bool(item.append), last_chunk=bool(item.last_chunk)
            )
            return
        await self._status(item.status)

    async def _artifact(
        self, artifact: Artifact, *, append: bool = False, last_chunk: bool = False
    ) -> None:
        await self.ctx.artifact(
            list(artifact.parts),
            artifact_id=artifact.artifact_id,
            name=artifact.name,
            description=artifact.description,
            append=append,
            last_chunk=last_chunk,
        )

    async def _usage(
        self, item: Task | Message | TaskStatusUpdateEvent | TaskArtifactUpdateEvent
    ) -> None:
        """Record the token usage the event's metadata reports, once an event."""
        sources: list[Any] = []
        if isinstance(item, Message):
            sources.append(item.metadata)
        elif not isinstance(item, Task):  # a task's metadata totals: not a report
            sources.append(item.metadata)
            if isinstance(item, TaskStatusUpdateEvent) and isinstance(item.status.message, Message):
                sources.append(item.status.message.metadata)
        for metadata in sources:
            if not isinstance(metadata, dict):
                continue
            found = usage_in(metadata)
            if found is None:
                continue
            # ADK puts one event's usage on each A2A event made of it: counted once.
            key = metadata.get("adk_event_id")
            if key is not None:
                if key in self.counted:
                    continue
                self.counted.add(key)
            prompt, completion, total = found
            await self.ctx.usage(
                prompt_tokens=prompt, completion_tokens=completion, total_tokens=total
            )

    async def _note(self, task_id: str) -> None:
        """Keep the upstream task's id in a2ad's task's metadata, once."""
        if self.upstream is not None or not task_id:
            return
        self.upstream = task_id
        await self.ctx.working(metadata={"a2ad": {"upstream": {"taskId": task_id}}})

    async def _status(self, status: TaskStatus) -> None:
        ctx, state = self.ctx, status.state
        self.state = state
        message = status.message
        content = list(message.parts) if isinstance(message, Message) else None
        if state is TaskState.WORKING or state is TaskState.SUBMITTED:
            if content:
                await ctx.working(content)
        elif state is TaskState.INPUT_REQUIRED:
            await ctx.require_input(content or "the upstream agent needs input")
        elif state is TaskState.AUTH_REQUIRED:
            await ctx.require_auth(content or "the upstream agent needs authentication")
        elif state is TaskState.COMPLETED:
            await ctx.complete(content)
        elif state is TaskState.FAILED:
            await ctx.fail(content or f"the upstream agent at {self.agent.shown} failed the task")
        elif state is TaskState.REJECTED:
            await ctx.reject(content or f"the upstream agent at {self.agent.shown} rejected it")
        elif state is TaskState.CANCELED:
            await ctx.cancel(content or f"the upstream agent at {self.agent.shown} canceled it")

    @property
    def over(self) -> bool:
        """The upstream ended this turn (a terminal or interrupted state)."""
        return self.state is not None and (self.state.terminal or self.state.interrupted)

    async def follow(self, why: str) -> None:
        """Follow the upstream task again (``why``: what made it needed), with backoff:
        its current state (or, from a server that keeps a log, what was missed),
        then its events, until the turn is over. Raises the last ClientError
        once ``FOLLOW_ATTEMPTS`` in a row brought nothing."""
        from ..client import ClientError

        client, upstream = self.agent.client, self.upstream
        assert client is not None and upstream is not None
        log.warning(
            "following the upstream task again: %s",
            masked(why),
            extra={"upstream": self.agent.shown, "upstream_task_id": upstream},
        )
        delay, failed = FOLLOW_BACKOFF, 0
        while True:
            try:
                async for item in client.subscribe(upstream):
                    failed = 0
                    await self.relay(item)
                    if self.over:
                        return
                return  # the task ended while we were away: its state was relayed
            except UnsupportedOperationError:  # it ended while we were away
                await self.relay(await client.get_task(upstream))
                return
            except ClientError:
                failed += 1
                if failed >= FOLLOW_ATTEMPTS:
                    raise
            await asyncio.sleep(delay)
            delay = min(delay * 2, 10.0)

    async def poll(self) -> None:
        """Read the upstream task (from an upstream that does not stream) until
        it ends or asks for something, backing off from ``POLL_FIRST`` seconds
        to ``POLL_MOST``: each new status relayed as it is seen, the artifacts
        once it is over. Raises the last ClientError once ``FOLLOW_ATTEMPTS``
        reads in a row failed."""
        from ..client import ClientError

        client, upstream = self.agent.client, self.upstream
        if self.over or client is None or upstream is None:
            return
        delay, failed, seen = POLL_FIRST, 0, None
        while True:
            await asyncio.sleep(delay)
            delay = min(delay * 2, POLL_MOST)
            try:
                task = await client.get_task(upstream)
            except ClientError:
                failed += 1
                if failed >= FOLLOW_ATTEMPTS:
                    raise
                continue
            failed, state = 0, task.status.state
            if state.terminal or state.interrupted:
                for artifact in task.artifacts:
                    await self._artifact(artifact)
                await self._status(task.status)
                return
            if task.status.timestamp != seen:
                seen = task.status.timestamp
                await self._status(task.status)

    async def ended(self) -> None:
        """The upstream's answer is over. A turn it left working is followed on:
        its stream ended before its task did, so it is subscribed to again (or
        read until it ends, from an upstream that does not stream); a task that
        still does not end fails the turn, saying so."""
        from ..client import ClientError

        upstream = self.upstream
        if self.over or upstream is None:
            return
        try:
            if self.agent.streams:
                await self.follow("its stream ended before its task did")
            if not self.over:  # no subscription to it, or one that ended early too
                await self.poll()
        except asyncio.CancelledError:
            await self.cancel_upstream()
            raise
        except (ClientError, A2AError) as exc:
            await self.ctx.fail(
                masked(
                    f"the upstream agent at {self.agent.shown}: its answer ended with task "
                    f"{upstream} still running, and following it failed: {exc}"
                )
            )
            return
        if not self.over:
            state = self.state.word if self.state is not None else "in an unknown state"
            await self.ctx.fail(
                f"the upstream agent at {self.agent.shown} ended its answer with task "
                f"{upstream} {state}, and did not end it when followed again"
            )

    async def _find_sent(self) -> str | None:
        """The upstream task the message sent made, before the upstream's first
        answer named it: the newest of a2ad's context's upstream tasks to hold
        that message (a ListTasks, A2A 1.0's), looked for within the cancel's
        bound; None if it can't be found."""
        from ..client import ClientError

        client, sent = self.agent.client, self.sent.message_id
        if client is None:
            return None
        try:
            async with asyncio.timeout(self.agent.cancel_seconds):
                tasks = client.list_tasks(
                    context_id=self.ctx.context_id, limit=FIND_SENT_AMONG, history_length=10
                )
                async for task in tasks:
                    if any(message.message_id == sent for message in task.history):
                        return str(task.id)
        except (TimeoutError, ClientError, A2AError) as exc:
            why = f": {masked(exc)}" if str(exc) else " in time"
        else:
            why = ""
        log.warning(
            "the upstream task of a turn canceled before its first answer was not found%s; "
            "it is not canceled",
            why,
            extra={"upstream": self.agent.shown},
        )
        return None

    async def cancel_upstream(self) -> None:
        """The turn was interrupted (a deadline, a stall; a caller's cancel asked
        already, in ``RemoteAgent.cancelling``): cancel the upstream task,
        bounded. Not at shutdown, once the upstream task is known: a2ad's task is
        left working then, and the next server follows the upstream task again."""
        if self.upstream is not None and self.ctx.stopping:
            return  # the server stops: the task is left working, to be picked up again
        upstream = self.upstream or await self._find_sent()
        if upstream is None or self.agent.canceled_upstream(upstream):
            return
        if self.state is not None and self.state.terminal:
            return  # the upstream task ended already: nothing to cancel
        await self.agent.cancel_upstream(upstream)


_COUNT_NAMES = (  # (prompt, completion, total), as each shape names them
    ("promptTokenCount", "candidatesTokenCount", "totalTokenCount"),  # ADK (Gemini's)
    ("prompt_token_count", "candidates_token_count", "total_token_count"),
    ("prompt_tokens", "completion_tokens", "total_tokens"),
    ("promptTokens", "completionTokens", "totalTokens"),
    ("input_tokens", "output_tokens", "total_tokens"),
)


def usage_in(metadata: dict[str, Any]) -> tuple[int, int, int | None] | None:
    """The token counts an event's ``metadata`` reports, or None: ADK's
    ``adk_usage_metadata``, or a ``usage`` in one of the common shapes."""
    for key in ("adk_usage_metadata", "usage"):
        report = metadata.get(key)
        if not isinstance(report, dict):
            continue
        for prompt_name, completion_name, total_name in _COUNT_NAMES:
            prompt, completion = report.get(prompt_name), report.get(completion_name)
            if prompt is None and completion is None:
                continue
            total = report.get(total_name)
            return (
                _count(prompt),
                _count(completion),
                _count(total) if total is not None else None,
            )
    return None


def _count(value: Any) -> int:
    """A token count as reported (a number, maybe a float from JSON), or 0."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        return 0
    return int(value)
