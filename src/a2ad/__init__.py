"""a2ad: an A2A (Agent2Agent protocol) task server.

from a2ad import Agent, TaskContext, create_app

class Hello(Agent):
    async def run(self, ctx: TaskContext) -> None:
        await ctx.artifact(f"hello, {ctx.text}")

app = create_app(Hello())   # any ASGI server runs it
"""

from .agent import Agent, Caller, RequestContext, TaskContext
from .agents.echo import EchoAgent
from .client import Client, ClientError, SyncClient
from .engine import Engine
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
from .server.app import A2AApp, create_app, load_agent
from .server.auth import (
    ApiKeys,
    AuthenticationFailed,
    Authenticator,
    CredentialAuthenticator,
    JwtVerifier,
)
from .store.base import TaskStore
from .store.memory import MemoryStore
from .store.sqlite import SqliteStore

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
    "ExtensionSupportRequiredError",
    "FilePart",
    "HTTPAuthSecurityScheme",
    "InvalidParamsError",
    "JwtVerifier",
    "MemoryStore",
    "Message",
    "MutualTlsSecurityScheme",
    "OAuth2SecurityScheme",
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
    "create_app",
    "load_agent",
]

__version__ = "0.1.0"
