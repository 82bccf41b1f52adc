"""The request handler: one method per A2A operation, whatever the binding.

Typed requests in (already decoded and checked by a dialect), model objects out;
the JSON-RPC endpoint is a thin adapter over it, and so will be any other
binding. A binding first makes the request's ``RequestContext`` with
``request_context``, which activates the extensions the client asked for and
refuses a request that leaves out one the agent requires; every operation then
takes it. The handler holds the server's policy for what the engine does not do: the
extended agent card goes only to callers the ``extended_card_check`` lets
through, and messages are held to the server's ``Limits`` (server/limits.py).
Push notifications are the engine's (engine/push.py); the dialect a
request came in says what its webhook's receiver takes, and where its URL sits
in the params (to name it when it is refused).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence

import msgspec
from msgspec import UNSET

from ..agent import ANONYMOUS, Caller, RequestContext
from ..engine import Engine, EventStream
from ..engine.access import Access, access_for
from ..engine.push import PushNotifications
from ..protocol.card import AgentCardInfo, SecurityScheme
from ..protocol.errors import (
    ExtendedAgentCardNotConfiguredError,
    ExtensionSupportRequiredError,
    PushNotificationNotSupportedError,
    UnsupportedOperationError,
)
from ..protocol.model import (
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    ListTasksResponse,
    Message,
    SendMessageRequest,
    Task,
    TaskIdRequest,
    TaskPushNotificationConfig,
)
from ..protocol.requests import TaskQuery
from ..store.base import LoggedEvent, Webhook
from . import audit
from .card import Interface, with_security
from .delegation import with_via
from .dialect import ServerDialect
from .extensions import PUSH_DELIVERY, SERVER_EXTENSIONS
from .limits import Limits, check_message

__all__ = ["ExtendedCardCheck", "RequestHandler", "allow_everyone"]

# Whether a caller may read the extended agent card; the authentication work
# fills this in. It may also raise an A2AError of its own to answer with.
ExtendedCardCheck = Callable[[RequestContext], bool | Awaitable[bool]]


def allow_everyone(request: RequestContext) -> bool:
    """The default extended-card check, while callers are not authenticated."""
    return True


class RequestHandler:
    def __init__(
        self,
        engine: Engine,
        *,
        extended_card_check: ExtendedCardCheck = allow_everyone,
        security_schemes: Mapping[str, SecurityScheme] | None = None,
        expose_internal_parts: bool = False,
        limits: Limits | None = None,
        agent: str | None = None,
        interfaces: Sequence[Interface] = (),
    ) -> None:
        self.engine = engine
        self.interfaces = tuple(interfaces)  # bindings on ports of their own, for the cards
        # the agent this handler serves, of the engine's (None: its default)
        self.agent_name = engine.default_agent if agent is None else agent
        self.agent = engine.agents[self.agent_name]
        # every caller sees internal parts, not only operators (server/dispatch.py)
        self.expose_internal_parts = expose_internal_parts
        self.limits = limits if limits is not None else Limits()
        self.extended_card_check = extended_card_check
        self.security_schemes = security_schemes or {}  # the server's auth, for the cards
        extensions = self.agent.card_info().extensions
        # the URIs a request may activate: the agent's and a2ad's own
        self.extensions = frozenset(e.uri for e in (*extensions, *SERVER_EXTENSIONS))
        self._required = [e.uri for e in extensions if e.required]
        self._plain: dict[tuple[str, str], RequestContext] = {}

    def request_context(
        self,
        version: str,
        binding: str,
        requested: Collection[str],
        caller: Caller = ANONYMOUS,
    ) -> RequestContext:
        """The context of a request from ``caller`` that asked for the ``requested``
        extension URIs: it activates those the agent declares. Raises
        ExtensionSupportRequiredError when one the agent requires is not among them."""
        if caller is not ANONYMOUS:
            context = self.request_context(version, binding, requested)
            return msgspec.structs.replace(context, caller=caller)
        if not requested and not self._required:  # the common case: one shared context
            plain = self._plain.get((version, binding))
            if plain is None:
                plain = self._plain[version, binding] = RequestContext(
                    version=version, binding=binding
                )
            return plain
        asked = frozenset(requested)
        missing = [uri for uri in self._required if uri not in asked]
        if missing:
            header = "A2A-Extensions" if version != "0.3" else "X-A2A-Extensions"
            raise ExtensionSupportRequiredError(
                f"This agent requires the extension{'s' if len(missing) > 1 else ''} "
                f"{', '.join(missing)}; activate it by sending the header "
                f"{header}: {', '.join(missing)} (comma-separated URIs), "
                "and follow what the extension asks of clients",
                metadata={"extensions": ",".join(missing)},
            )
        return RequestContext(version=version, binding=binding, extensions=asked & self.extensions)

    async def send_message(
        self, request: SendMessageRequest, context: RequestContext, *, dialect: ServerDialect
    ) -> Task | Message:
        access = self._access(context, request.tenant)
        check_message(request.message, self.limits)
        webhooks = await self._webhooks(request, dialect)
        request = with_via(request, context.caller)
        return await self.engine.send(request, context, webhooks=webhooks, access=access)

    async def send_streaming_message(
        self, request: SendMessageRequest, context: RequestContext, *, dialect: ServerDialect
    ) -> EventStream:
        access = self._access(context, request.tenant)
        check_message(request.message, self.limits)
        webhooks = await self._webhooks(request, dialect)
        request = with_via(request, context.caller)
        return await self.engine.stream(request, context, webhooks=webhooks, access=access)

    def get_task(self, request: GetTaskRequest, context: RequestContext) -> Awaitable[Task]:
        """The task (to await: the engine's read, with no frame of this one between);
        raises PermissionDeniedError at once for a tenant not the caller's."""
        access = access_for(context.caller, request.tenant, self.agent_name)  # as _access does
        return self.engine.get_task(request.id, request.history_length, access=access)

    async def list_tasks(self, query: TaskQuery, context: RequestContext) -> ListTasksResponse:
        return await self.engine.list_tasks(query, access=self._access(context, query.tenant))

    async def task_events(
        self, task_id: str, context: RequestContext, tenant: str = ""
    ) -> list[LoggedEvent]:
        """The task's logged events, oldest first (what the store keeps), for a
        caller who may see the task (else TaskNotFoundError)."""
        await self.engine.check_access(task_id, self._access(context, tenant))
        return await self.engine.store.events(task_id, 0)

    async def cancel_task(self, request: TaskIdRequest, context: RequestContext) -> Task:
        access = self._access(context, request.tenant)
        canceled = await self.engine.cancel(request.id, access=access)
        audit.canceled(context, request.id, access.tenant)
        return canceled

    async def subscribe_to_task(
        self, request: TaskIdRequest, context: RequestContext, *, last_event_id: int | None = None
    ) -> EventStream:
        access = self._access(context, request.tenant)
        return await self.engine.subscribe(request.id, last_event_id=last_event_id, access=access)

    async def create_push_config(
        self, config: TaskPushNotificationConfig, context: RequestContext, *, dialect: ServerDialect
    ) -> TaskPushNotificationConfig:
        push = self._push()
        await self.engine.check_access(config.task_id, self._access(context, config.tenant))
        at = dialect.push_config_field
        await push.check(config, field=f"{at}.url" if at else "url")
        return await push.set(config.task_id, Webhook(config, dialect.version))

    async def get_push_config(
        self, request: GetTaskPushNotificationConfigRequest, context: RequestContext
    ) -> TaskPushNotificationConfig:
        push = self._push()
        await self.engine.check_access(request.task_id, self._access(context, request.tenant))
        config = await push.get(request.task_id, request.id)
        return _delivery_shown(config, context)

    async def list_push_configs(
        self, request: ListTaskPushNotificationConfigsRequest, context: RequestContext
    ) -> ListTaskPushNotificationConfigsResponse:
        push = self._push()
        await self.engine.check_access(request.task_id, self._access(context, request.tenant))
        page = await push.list(request)
        if PUSH_DELIVERY.uri in context.extensions:
            return page
        return msgspec.structs.replace(
            page, configs=[_delivery_shown(c, context) for c in page.configs]
        )

    async def delete_push_config(
        self, request: GetTaskPushNotificationConfigRequest, context: RequestContext
    ) -> None:
        push = self._push()
        await self.engine.check_access(request.task_id, self._access(context, request.tenant))
        await push.delete(request.task_id, request.id)

    async def _webhooks(
        self, request: SendMessageRequest, dialect: ServerDialect
    ) -> tuple[Webhook, ...]:
        """The webhook a send names for its task, checked."""
        config = request.configuration
        if config is UNSET or config.task_push_notification_config is UNSET:
            return ()
        webhook = config.task_push_notification_config
        await self._push().check(webhook, field=f"{dialect.send_push_field}.url")
        return (Webhook(webhook, dialect.version),)

    def _access(self, context: RequestContext, tenant: str) -> Access:
        """Whose tasks the request reaches: its caller's, in the tenant it names (or
        the caller's default), run by this handler's agent. Raises
        PermissionDeniedError for a tenant not the caller's."""
        return access_for(context.caller, tenant, self.agent_name)

    def _push(self) -> PushNotifications:
        if self.engine.push is None:
            raise PushNotificationNotSupportedError(
                "Push notifications are not supported with this server's task store "
                "(it keeps no webhooks); follow the task with a stream or GetTask"
            )
        return self.engine.push

    async def get_extended_agent_card(self, method: str, context: RequestContext) -> AgentCardInfo:
        """The agent's extended card, for a caller the ``extended_card_check`` lets
        through (the binding renders it in the request's version: server/card.py)."""
        agent = self.agent
        if not agent.has_extended_card:
            raise UnsupportedOperationError(
                f"{method}: this agent has no extended agent card "
                "(its agent card does not set capabilities.extendedAgentCard)"
            )
        allowed = self.extended_card_check(context)
        if inspect.isawaitable(allowed):
            allowed = await allowed
        info = agent.extended_card(context) if allowed else None
        if info is None:
            raise ExtendedAgentCardNotConfiguredError(
                f"{method}: the extended agent card is not available to this caller",
            )
        return with_security(info, self.security_schemes)


def _delivery_shown(
    config: TaskPushNotificationConfig, context: RequestContext
) -> TaskPushNotificationConfig:
    """``config`` with its ``a2adDelivery`` only for a request that activated PUSH_DELIVERY."""
    if PUSH_DELIVERY.uri in context.extensions or config.a2ad_delivery is UNSET:
        return config
    return msgspec.structs.replace(config, a2ad_delivery=UNSET)
