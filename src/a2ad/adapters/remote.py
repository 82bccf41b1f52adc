"""An A2A agent that runs elsewhere, fronted by a2ad: ``--agent
stock=a2a+http://127.0.0.1:8101/`` (or ``a2a+https://``, ``grpc://``,
``grpcs://``).

a2ad's task is the caller's; each of its turns is a call to the upstream agent
through a2ad's own client (whichever version and binding its card offers): a
stream when the upstream card says it streams, else a blocking send. Every
event the upstream sends is stored in a2ad's task as it arrives (its status
messages, its artifacts and their chunks), so a2ad's callers get a2ad's
durable task, replay, auth, tenants, deadlines and dashboard over an agent that
changed nothing. The upstream task's id is kept in a2ad's task's metadata
(``a2ad.upstream.taskId``): a follow-up (input-required, auth-required) goes
to the same upstream task, and a task whose a2ad turn was lost (a2ad restarted
or its instance died mid-turn) is picked up again (``Agent.resumes``): its new
turn follows the upstream task instead of the task failing.

What the upstream leaks, a2ad hides; what it reports, a2ad counts. Its parts
keep their metadata, so the tool calls and thoughts ADK (and kagent) mark are
internal parts in a2ad's task (protocol/internal.py). Token usage the upstream
puts in an event's metadata is recorded as the task's usage (``ctx.usage``),
totalled per tenant, principal and agent by ``a2ad usage``: ADK's
``adk_usage_metadata`` (counted once per ADK event, ``adk_event_id``), and a
``usage`` of ``prompt_tokens``/``completion_tokens`` (or ``input_tokens``/
``output_tokens``, or their camelCase).

A cancel on a2ad cancels the upstream task (bounded by ``cancel_seconds``). An
upstream stream that breaks mid-turn is followed again (SubscribeToTask, with
backoff: the missed events from an upstream that keeps a log). An upstream that
can't be reached, or answers with an error, fails the turn with a message
naming the upstream and what was tried. The card a2ad serves for the
agent is the upstream card's name, description, skills and modes, with a2ad's
own interfaces and security. Credentials for the upstream: ``token`` or
``api_key`` (never logged, never in a2ad's answers).
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Mapping
from typing import Any

import httpx

from ..agent import Agent, TaskContext, keep_caller_credentials
from ..protocol.card import AgentProvider, AgentSkill
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
from .upstream_auth import OAuth2Auth, PassCaller, UpstreamCredential

__all__ = ["REMOTE_PREFIXES", "RemoteAgent", "usage_in"]

log = logging.getLogger("a2ad.agents")

REMOTE_PREFIXES = ("a2a+http", "a2a+https", "grpc", "grpcs")
CANCEL_SECONDS = 5.0
FOLLOW_ATTEMPTS = 5  # resubscriptions to an upstream task whose stream broke, backing off
FOLLOW_BACKOFF = 0.5  # seconds before the first, doubled each time
POLL_FIRST = 0.25  # an upstream that does not stream: its task read again after this,
POLL_MOST = 5.0  # doubling up to this
CANCELED_KEPT = 1024
FIND_SENT_AMONG = 20  # the newest upstream tasks of the context a cancel looks through


class RemoteAgent(Agent):
    """The A2A agent at ``url`` (``a2a+http://``, ``a2a+https://``, ``grpc://``,
    ``grpcs://``), fronted: see the module docstring."""

    def __init__(
        self,
        url: str,
        *,
        name: str | None = None,
        token: str | None = None,
        api_key: str | None = None,
        credential: UpstreamCredential | None = None,
        timeout: float = 30.0,
        cancel_seconds: float = CANCEL_SECONDS,
    ) -> None:
        scheme, sep, _ = url.partition("://")
        if not sep or scheme not in REMOTE_PREFIXES:
            raise ValueError(
                f"{url!r}: give the upstream as a2a+http://HOST:PORT/ (its card's base URL, "
                "or its card's own URL ending .json), a2a+https://..., or grpc://HOST:PORT"
            )
        self.url = url.removeprefix("a2a+")  # what a2ad's client takes
        # How messages and logs name it: without a password or a secret query parameter.
        self.shown = mask_url(self.url, _secret_parameter)
        self.name = name or "remote agent"  # the upstream card's, once read
        # Not its address: the card and /agents are public, and a URL may hold a user:password.
        self.description = "An A2A agent served elsewhere, fronted by a2ad."
        self.credential = credential or UpstreamCredential(token=token, api_key=api_key)
        self.timeout = timeout
        self.cancel_seconds = cancel_seconds
        self.streams = True
        self._card_read = False
        self.client: Any = None  # a2ad's Client, once started
        self._http: httpx.AsyncClient | None = None  # with OAuth2 or pass-caller: calls upstream
        self._token_client: httpx.AsyncClient | None = None  # asks OAuth2's token endpoint
        # Upstream tasks a cancel asked to cancel, for their turn not to ask again (the
        # newest CANCELED_KEPT: a task that had no turn running leaves its entry).
        self._canceled: dict[str, None] = {}

    def use_credential(self, credential: UpstreamCredential) -> None:
        """Call the upstream with ``credential`` from now on; before ``start``.
        Raises ValueError for OAuth2 to a gRPC upstream (tokens are fetched over HTTP
        and sent by the HTTP bindings)."""
        if (credential.oauth2 is not None or credential.pass_caller) and self.url.startswith(
            "grpc"
        ):
            raise ValueError(
                f"{self.shown}: OAuth2 client credentials and pass-caller are for an HTTP "
                "upstream (a2a+http:// or a2a+https://); give a gRPC upstream a token or an API key"
            )
        self.credential = credential

    async def start(self) -> None:
        """Open the client and read the upstream card (its name, skills, modes);
        an upstream not reachable yet is logged, and its turns fail until it is."""
        from ..client import Client  # the client's imports: only to front
        from ..client.rpc import NoCookies

        credential = self.credential
        auth: httpx.Auth | None = None
        if credential.oauth2 is not None:
            self._token_client = httpx.AsyncClient(timeout=self.timeout)
            auth = OAuth2Auth(credential.oauth2, self._token_client)
        if credential.pass_caller:
            keep_caller_credentials()
            own = (credential.api_key_header,) if credential.api_key else ()
            auth = PassCaller(auth, own_headers=own)
        if auth is not None:
            self._http = httpx.AsyncClient(timeout=self.timeout, auth=auth, cookies=NoCookies())
        self.client = Client(
            self.url,
            token=credential.token,
            api_key=credential.api_key,
            api_key_header=credential.api_key_header,
            timeout=self.timeout,
            http=self._http,
        )
        self._card_read = self.url.startswith("grpc")  # no card over gRPC alone
        await self._read_card(logging.WARNING)

    async def _read_card(self, level: int) -> None:
        """Read the upstream card and learn from it (at start, then before each
        turn until it has been read: an upstream down at start is learnt when it
        is back); one that can't be read is logged at ``level``."""
        from ..client import ClientError

        if self._card_read:
            return
        try:
            card = await self.client.card()
        except ClientError as exc:
            log.log(level, "the upstream agent's card can't be read now: %s", _masked(exc),
                    extra={"upstream": self.shown})  # fmt: skip
            return
        self._learn(card)
        self._card_read = True

    async def stop(self) -> None:
        if self.client is not None:
            await self.client.aclose()
        for http in (self._http, self._token_client):
            if http is not None:
                await http.aclose()

    def _learn(self, card: dict[str, Any]) -> None:
        """What a2ad's card says of the agent, from the upstream's: its name,
        description, version, provider, links, skills and modes (its interfaces,
        security and capabilities are a2ad's own); what is not text is passed over."""
        self.name = _text(card.get("name")) or self.name
        self.description = _text(card.get("description")) or self.description
        self.version = _text(card.get("version")) or self.version
        self.documentation_url = _text(card.get("documentationUrl"))
        self.icon_url = _text(card.get("iconUrl"))
        provider = card.get("provider")
        if isinstance(provider, dict) and _text(provider.get("organization")):
            self.provider = AgentProvider(
                organization=_text(provider.get("organization")), url=_text(provider.get("url"))
            )
        skills = card.get("skills")
        found = (_skill(s) for s in skills) if isinstance(skills, list) else ()
        self.skills = tuple(skill for skill in found if skill is not None)
        self.input_modes = _texts(card.get("defaultInputModes")) or self.input_modes
        self.output_modes = _texts(card.get("defaultOutputModes")) or self.output_modes
        capabilities = card.get("capabilities")
        self.streams = isinstance(capabilities, dict) and capabilities.get("streaming") is True

    async def cancelling(self, task: Task) -> str | None:
        """A caller's cancel: the upstream task is canceled before a2ad's task is
        stored canceled, which says so if the upstream did not agree in time."""
        upstream = _upstream_task(task.metadata)
        if self.client is None or upstream is None:
            return None
        self._canceled[upstream] = None
        if len(self._canceled) > CANCELED_KEPT:
            del self._canceled[next(iter(self._canceled))]
        return await self.cancel_upstream(upstream)

    def canceled_upstream(self, upstream: str) -> bool:
        """Whether a caller's cancel asked the upstream to cancel ``upstream``
        already (each asked once)."""
        return self._canceled.pop(upstream, False) is None

    async def cancel_upstream(self, upstream: str) -> str | None:
        """Cancel the upstream task, waiting ``cancel_seconds`` at most; None
        once it is canceled, else what happened (also logged)."""
        from ..client import ClientError

        client = self.client
        if client is None:
            return None
        try:
            async with asyncio.timeout(self.cancel_seconds):
                await client.cancel_task(upstream)
            return None
        except TimeoutError:
            said = (
                f"the upstream agent at {self.shown} did not confirm the cancel of its task "
                f"{upstream} within {self.cancel_seconds:g} s; it may still be running"
            )
        except A2AError as exc:
            said = (
                f"the upstream agent at {self.shown} did not cancel task {upstream}: {exc.message}"
            )
        except ClientError as exc:
            said = f"the upstream agent at {self.shown} was not reached to cancel {upstream}: {exc}"
        said = _masked(said)
        log.warning("%s", said, extra={"upstream": self.shown, "upstream_task_id": upstream})
        return said

    def resumes(self, task: Task) -> bool:
        """A task whose a2ad runner was lost (a restart) is followed again when
        the upstream task it called is known: the upstream may still have it."""
        return _upstream_task(task.metadata) is not None

    async def run(self, ctx: TaskContext) -> None:
        turn = _Turn(self, ctx, _upstream_task(ctx.task_metadata))
        try:
            await self._relay(turn)
        finally:
            if turn.upstream is not None:  # a caller's cancel of it is over too
                self._canceled.pop(turn.upstream, None)

    async def _relay(self, turn: _Turn) -> None:
        """The turn's call upstream, its events relayed, and its faults."""
        from ..client import ClientError

        client, ctx = self.client, turn.ctx
        assert client is not None, "the agent was not started"
        await self._read_card(logging.DEBUG)
        try:
            if ctx.resumed and turn.upstream is not None:
                await turn.follow("a2ad lost the turn that followed it")
            elif self.streams:
                async for item in client.stream(
                    turn.sent, context_id=ctx.context_id, task_id=turn.upstream
                ):
                    await turn.relay(item)
            else:  # send, answered at once, then poll the task to its end
                answer = await client.send(
                    turn.sent, context_id=ctx.context_id, task_id=turn.upstream, wait=False
                )
                await turn.relay(answer)
                await turn.poll()
        except asyncio.CancelledError:
            await turn.cancel_upstream()
            raise
        except A2AError as exc:  # the upstream refused: its error, named
            await ctx.fail(_masked(f"the upstream agent at {self.shown} answered: {exc.message}"))
            return
        except ClientError as exc:
            if turn.upstream is None or turn.over or ctx.resumed:
                await ctx.fail(_masked(f"the upstream agent at {self.shown}: {exc}"))
                return
            if not await self._follow_again(turn, exc):
                return
        await turn.ended()

    async def _follow_again(self, turn: _Turn, broke: Exception) -> bool:
        """Follow the upstream task again after its stream broke mid-turn; False
        once the turn failed for it."""
        from ..client import ClientError

        try:
            await turn.follow(f"its stream broke: {broke}")
        except asyncio.CancelledError:
            await turn.cancel_upstream()
            raise
        except (ClientError, A2AError) as again:
            await turn.ctx.fail(
                _masked(
                    f"the upstream agent at {self.shown}: its stream of task {turn.upstream} "
                    f"broke ({broke}), and following the task again failed "
                    f"{FOLLOW_ATTEMPTS} times: {again}"
                )
            )
            return False
        return True


_URL = re.compile(r"[a-z][a-z0-9+.-]*://[^\s()'\"]+", re.IGNORECASE)


def _masked(text: object) -> str:
    """``text`` with each URL in it masked (its password, its secret query
    parameters): a client error repeats the URL it was given."""
    return _URL.sub(lambda found: mask_url(found.group(0), _secret_parameter), str(text))


def _secret_parameter(name: str) -> bool:
    lowered = name.lower()
    return any(word in lowered for word in ("key", "token", "secret", "password", "auth"))


def _text(value: object) -> str:
    return value.strip() if isinstance(value, str) else ""


def _texts(value: object) -> tuple[str, ...]:
    return tuple(t for t in (_text(v) for v in value) if t) if isinstance(value, list) else ()


def _skill(skill: object) -> AgentSkill | None:
    """A skill of the upstream card as a2ad's card shows it; None for one with
    no id. A card must give each skill a tag: one with none gets its id."""
    if not isinstance(skill, dict) or not _text(skill.get("id")):
        return None
    skill_id = _text(skill.get("id"))
    return AgentSkill(
        id=skill_id,
        name=_text(skill.get("name")) or skill_id,
        description=_text(skill.get("description")),
        tags=_texts(skill.get("tags")) or (skill_id,),
        examples=_texts(skill.get("examples")),
        input_modes=_texts(skill.get("inputModes")),
        output_modes=_texts(skill.get("outputModes")),
    )


def _upstream_task(metadata: object) -> str | None:
    """The upstream task a2ad's task fronts, as a turn before kept it in the
    task's metadata (``a2ad.upstream.taskId``)."""
    if isinstance(metadata, Mapping):
        ours = metadata.get("a2ad")
        if isinstance(ours, Mapping):
            upstream = ours.get("upstream")
            if isinstance(upstream, Mapping) and isinstance(upstream.get("taskId"), str):
                return str(upstream["taskId"])
    return None


class _Turn:
    """One turn's relay of the upstream's events into a2ad's task."""

    def __init__(self, agent: RemoteAgent, ctx: TaskContext, upstream: str | None) -> None:
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
            _masked(why),
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
                _masked(
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
            why = f": {_masked(exc)}" if str(exc) else " in time"
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
