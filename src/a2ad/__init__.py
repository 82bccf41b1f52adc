"""a2ad: an A2A (Agent2Agent protocol) task server.

from a2ad import Agent, TaskContext, create_app

class Hello(Agent):
    async def run(self, ctx: TaskContext) -> None:
        await ctx.artifact(f"hello, {ctx.text}")

app = create_app(Hello())   # any ASGI server runs it
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .agent import Agent, Caller, RequestContext, TaskContext
    from .agents.echo import EchoAgent
    from .agents.loading import load_agent
    from .assembly import assemble, create_app
    from .client import Client, ClientError, SyncClient
    from .engine import Engine
    from .engine.config import EngineConfig
    from .engine.push import PushPolicy
    from .protocol.card import (
        AgentCardInfo,
        AgentExtension,
        AgentProvider,
        AgentSkill,
        APIKeySecurityScheme,
        AuthorizationCodeOAuthFlow,
        ClientCredentialsOAuthFlow,
        DeviceCodeOAuthFlow,
        HTTPAuthSecurityScheme,
        MutualTlsSecurityScheme,
        OAuth2SecurityScheme,
        OpenIdConnectSecurityScheme,
    )
    from .protocol.errors import (
        A2AError,
        ContentTypeNotSupportedError,
        ExtensionSupportRequiredError,
        InvalidParamsError,
        UnsupportedOperationError,
    )
    from .protocol.model import (
        Artifact,
        DataPart,
        FilePart,
        Message,
        Part,
        Role,
        Task,
        TaskArtifactUpdateEvent,
        TaskState,
        TaskStatus,
        TaskStatusUpdateEvent,
        TextPart,
    )
    from .protocol.usage import TokenCounts, UsageReport, UsageRow
    from .server.app import A2AApp
    from .server.auth import (
        ApiKeys,
        AuthenticationFailed,
        Authenticator,
        CredentialAuthenticator,
        JwtVerifier,
    )
    from .server.limits import Limits
    from .settings import AppSettings, Observability
    from .store.base import TaskStore
    from .store.memory import MemoryStore
    from .store.sqlite import SqliteStore

# Where each public name lives, imported the first time it is asked for: `import a2ad`
# (which every `a2ad.…` module import runs first) then costs nothing, and the `a2ad`
# command's client side starts without the server, the engine and the stores.
_SOURCES = {
    "agent": ("Agent", "Caller", "RequestContext", "TaskContext"),
    "agents.echo": ("EchoAgent",),
    "client": ("Client", "ClientError", "SyncClient"),
    "engine": ("Engine",),
    "engine.push": ("PushPolicy",),
    "protocol.card": (
        "AgentCardInfo",
        "AgentExtension",
        "AgentProvider",
        "AgentSkill",
        "APIKeySecurityScheme",
        "AuthorizationCodeOAuthFlow",
        "ClientCredentialsOAuthFlow",
        "DeviceCodeOAuthFlow",
        "HTTPAuthSecurityScheme",
        "MutualTlsSecurityScheme",
        "OAuth2SecurityScheme",
        "OpenIdConnectSecurityScheme",
    ),
    "protocol.errors": (
        "A2AError",
        "ContentTypeNotSupportedError",
        "ExtensionSupportRequiredError",
        "InvalidParamsError",
        "UnsupportedOperationError",
    ),
    "protocol.model": (
        "Artifact",
        "DataPart",
        "FilePart",
        "Message",
        "Part",
        "Role",
        "Task",
        "TaskArtifactUpdateEvent",
        "TaskState",
        "TaskStatus",
        "TaskStatusUpdateEvent",
        "TextPart",
    ),
    "protocol.usage": ("TokenCounts", "UsageReport", "UsageRow"),
    "agents.loading": ("load_agent",),
    "assembly": ("assemble", "create_app"),
    "engine.config": ("EngineConfig",),
    "server.app": ("A2AApp",),
    "server.limits": ("Limits",),
    "settings": ("AppSettings", "Observability"),
    "server.auth": (
        "ApiKeys",
        "AuthenticationFailed",
        "Authenticator",
        "CredentialAuthenticator",
        "JwtVerifier",
    ),
    "store.base": ("TaskStore",),
    "store.memory": ("MemoryStore",),
    "store.sqlite": ("SqliteStore",),
}
_MODULE_OF = {name: module for module, names in _SOURCES.items() for name in names}

__all__ = [
    "A2AApp",
    "A2AError",
    "APIKeySecurityScheme",
    "Agent",
    "AgentCardInfo",
    "AgentExtension",
    "AgentProvider",
    "AgentSkill",
    "ApiKeys",
    "AppSettings",
    "Artifact",
    "AuthenticationFailed",
    "Authenticator",
    "AuthorizationCodeOAuthFlow",
    "Caller",
    "Client",
    "ClientCredentialsOAuthFlow",
    "ClientError",
    "ContentTypeNotSupportedError",
    "CredentialAuthenticator",
    "DataPart",
    "DeviceCodeOAuthFlow",
    "EchoAgent",
    "Engine",
    "EngineConfig",
    "ExtensionSupportRequiredError",
    "FilePart",
    "HTTPAuthSecurityScheme",
    "InvalidParamsError",
    "JwtVerifier",
    "Limits",
    "MemoryStore",
    "Message",
    "MutualTlsSecurityScheme",
    "OAuth2SecurityScheme",
    "Observability",
    "OpenIdConnectSecurityScheme",
    "Part",
    "PushPolicy",
    "RequestContext",
    "Role",
    "SqliteStore",
    "SyncClient",
    "Task",
    "TaskArtifactUpdateEvent",
    "TaskContext",
    "TaskState",
    "TaskStatus",
    "TaskStatusUpdateEvent",
    "TaskStore",
    "TextPart",
    "TokenCounts",
    "UnsupportedOperationError",
    "UsageReport",
    "UsageRow",
    "assemble",
    "create_app",
    "load_agent",
]

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'a2ad' has no attribute '{name}'")
    value = getattr(importlib.import_module(f"a2ad.{module}"), name)
    globals()[name] = value  # asked once: later reads find it without this call
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
