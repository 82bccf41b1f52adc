"""User agents written the ways the docs show, for load_agent tests."""

from __future__ import annotations

from types import MappingProxyType

from a2ad import (
    Agent,
    AgentCardInfo,
    AgentExtension,
    AgentProvider,
    AgentSkill,
    APIKeySecurityScheme,
    AuthorizationCodeOAuthFlow,
    DeviceCodeOAuthFlow,
    HTTPAuthSecurityScheme,
    MutualTlsSecurityScheme,
    OAuth2SecurityScheme,
    OpenIdConnectSecurityScheme,
    RequestContext,
    TaskContext,
)
from a2ad.agents.settings import AgentSettings

NOT_AN_AGENT = 42


async def shout(ctx: TaskContext) -> None:
    """Answers with the message in capitals."""
    await ctx.artifact(ctx.text.upper(), name="shout")


class Greeter(Agent):
    name = "greeter"
    description = "Greets whoever writes."
    skills = (AgentSkill(id="greet", name="Greet", description="Says hello.", tags=["greeting"]),)

    async def run(self, ctx: TaskContext) -> None:
        await ctx.working("thinking of a greeting")
        await ctx.artifact(f"hello, {ctx.text}", name="greeting")
        await ctx.complete("greeted")


greeter = Greeter()


class Shouter:
    """Not an Agent: only a run method, as duck typing allows."""

    async def run(self, ctx: TaskContext) -> None:
        await ctx.artifact(ctx.text.upper(), name="shout")


shouter = Shouter()
agent = greeter  # what `--agent tests.agents.sample_agents` loads


class Configured(Agent):
    """An agent that takes what `a2ad serve` read from its flags and environment."""

    name = "configured"

    def __init__(self, settings: AgentSettings) -> None:
        self.settings = settings

    async def run(self, ctx: TaskContext) -> None:
        await ctx.artifact(f"{self.settings.model} at {self.settings.server_url}", name="where")


GLOSSARY = "https://example.com/ext/glossary/v1"
STYLE = "https://example.com/ext/style/v1"


class Storefront(Agent):
    """An agent that shapes every part of its card, and has an extended card."""

    name = "storefront"
    description = "Sells books."
    version = "2.3.1"
    input_modes = ("text/plain", "application/json")
    output_modes = ("text/plain",)
    skills = (
        AgentSkill(
            id="search",
            name="Search",
            description="Finds books.",
            tags=["books", "search"],
            examples=["books about tides"],
            input_modes=["text/plain"],
            output_modes=["application/json"],
            security_requirements=[{"oauth": ["read"]}],
        ),
    )
    extensions = (
        AgentExtension(
            uri=GLOSSARY, description="Terms in answers", params={"languages": ["en", "fr"]}
        ),
        AgentExtension(uri=STYLE, description="House style", required=True),
    )
    security_schemes = MappingProxyType(
        {
            "bearer": HTTPAuthSecurityScheme(scheme="Bearer", bearer_format="JWT"),
            "key": APIKeySecurityScheme(
                name="X-Api-Key", location="header", description="Partners"
            ),
            "oauth": OAuth2SecurityScheme(
                flow=AuthorizationCodeOAuthFlow(
                    authorization_url="https://auth.example.com/authorize",
                    token_url="https://auth.example.com/token",
                    scopes={"read": "Read the catalogue"},
                    pkce_required=True,
                ),
                oauth2_metadata_url="https://auth.example.com/.well-known/oauth-authorization-server",
            ),
            "device": OAuth2SecurityScheme(
                flow=DeviceCodeOAuthFlow(
                    device_authorization_url="https://auth.example.com/device",
                    token_url="https://auth.example.com/token",
                    scopes={"read": "Read the catalogue"},
                )
            ),
            "oidc": OpenIdConnectSecurityScheme(
                open_id_connect_url="https://auth.example.com/.well-known/openid-configuration"
            ),
            "mtls": MutualTlsSecurityScheme(description="Client certificates"),
        }
    )
    security_requirements = ({"bearer": []}, {"oauth": ["read"], "mtls": []})
    provider = AgentProvider(organization="Example Books", url="https://books.example.com")
    documentation_url = "https://books.example.com/docs"
    icon_url = "https://books.example.com/icon.png"

    ADMIN = AgentSkill(id="restock", name="Restock", description="Orders stock.", tags=["admin"])

    async def run(self, ctx: TaskContext) -> None:
        await ctx.artifact("no books yet")

    def extended_card(self, request: RequestContext) -> AgentCardInfo | None:
        return self.card_info().replace(skills=[*self.skills, self.ADMIN])
