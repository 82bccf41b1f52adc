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
from typing import Any

import httpx

from ..agent import Agent, TaskContext, keep_caller_credentials
from ..protocol.card import AgentProvider, AgentSkill
from ..protocol.errors import A2AError
from ..protocol.model import Task
from .remote_turn import FOLLOW_ATTEMPTS, Turn, masked, upstream_task, usage_in
from .upstream_auth import OAuth2Auth, PassCaller, UpstreamCredential

__all__ = ["REMOTE_PREFIXES", "RemoteAgent", "usage_in"]

log = logging.getLogger("a2ad.agents")

REMOTE_PREFIXES = ("a2a+http", "a2a+https", "grpc", "grpcs")
CANCEL_SECONDS = 5.0
CANCELED_KEPT = 1024


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
        self.shown = masked(self.url)
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
            log.log(level, "the upstream agent's card can't be read now: %s", masked(exc),
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
        upstream = upstream_task(task.metadata)
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
        said = masked(said)
        log.warning("%s", said, extra={"upstream": self.shown, "upstream_task_id": upstream})
        return said

    def resumes(self, task: Task) -> bool:
        """A task whose a2ad runner was lost (a restart) is followed again when
        the upstream task it called is known: the upstream may still have it."""
        return upstream_task(task.metadata) is not None

    async def run(self, ctx: TaskContext) -> None:
        turn = Turn(self, ctx, upstream_task(ctx.task_metadata))
        try:
            await self._relay(turn)
        finally:
            if turn.upstream is not None:  # a caller's cancel of it is over too
                self._canceled.pop(turn.upstream, None)

    async def _relay(self, turn: Turn) -> None:
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
            await ctx.fail(masked(f"the upstream agent at {self.shown} answered: {exc.message}"))
            return
        except ClientError as exc:
            if turn.upstream is None or turn.over or ctx.resumed:
                await ctx.fail(masked(f"the upstream agent at {self.shown}: {exc}"))
                return
            if not await self._follow_again(turn, exc):
                return
        await turn.ended()

    async def _follow_again(self, turn: Turn, broke: Exception) -> bool:
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
                masked(
                    f"the upstream agent at {self.shown}: its stream of task {turn.upstream} "
                    f"broke ({broke}), and following the task again failed "
                    f"{FOLLOW_ATTEMPTS} times: {again}"
                )
            )
            return False
        return True


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
