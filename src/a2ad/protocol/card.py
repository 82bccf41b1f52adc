"""The agent card as an agent declares it, and its A2A 1.0 JSON.

An agent describes itself with these Structs (its skills, extensions, security
schemes, provider, ...), gathered in an ``AgentCardInfo``. Field names follow
the 1.0 proto (snake_case here, camelCase on the wire). What only the server
knows (the interfaces it serves, its capabilities) is passed to ``card_v1``,
which renders the whole 1.0 card; ``protocol/v03.py`` turns that into 0.3.

A security requirement is a mapping of scheme names to the scopes each needs,
``{"oauth": ["read"], "mtls": []}``; a list of them means any one will do.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal

import msgspec
from msgspec import UNSET, UnsetType

__all__ = [
    "APIKeySecurityScheme",
    "AgentCardInfo",
    "AgentExtension",
    "AgentProvider",
    "AgentSkill",
    "AuthorizationCodeOAuthFlow",
    "ClientCredentialsOAuthFlow",
    "DeviceCodeOAuthFlow",
    "HTTPAuthSecurityScheme",
    "MutualTlsSecurityScheme",
    "OAuth2SecurityScheme",
    "OAuthFlow",
    "OpenIdConnectSecurityScheme",
    "SecurityRequirement",
    "SecurityScheme",
    "card_v1",
]

SecurityRequirement = Mapping[str, Sequence[str]]


class _Part(msgspec.Struct, rename="camel", omit_defaults=True, kw_only=True, frozen=True):
    pass


class AgentSkill(_Part, frozen=True):
    """A skill as the agent card shows it (``tags``: at least one, as the card
    requires). ``input_modes`` / ``output_modes`` override the agent's for this
    skill; ``security_requirements`` are what calling it needs."""

    id: str
    name: str
    description: str
    tags: Sequence[str]
    examples: Sequence[str] = ()
    input_modes: Sequence[str] = ()
    output_modes: Sequence[str] = ()
    security_requirements: Sequence[SecurityRequirement] = ()

    def __post_init__(self) -> None:
        if not self.tags:
            raise ValueError(
                f"AgentSkill {self.id!r} needs tags=[...]: the agent card requires them"
            )


class AgentExtension(_Part, frozen=True):
    """A protocol extension the agent supports. A client that does not activate a
    ``required`` one (``A2A-Extensions`` header) is refused with -32008."""

    uri: str
    description: str = ""
    required: bool = False
    params: dict[str, Any] | UnsetType = UNSET


class AgentProvider(_Part, frozen=True):
    organization: str
    url: str


# --- security schemes (the 1.0 SecurityScheme oneof: one class per member) ---


class APIKeySecurityScheme(_Part, frozen=True):
    key: ClassVar[str] = "apiKeySecurityScheme"
    name: str  # of the header, query parameter or cookie
    location: Literal["header", "query", "cookie"]
    description: str = ""


class HTTPAuthSecurityScheme(_Part, frozen=True):
    key: ClassVar[str] = "httpAuthSecurityScheme"
    scheme: str  # e.g. "Bearer", "Basic"
    bearer_format: str = ""
    description: str = ""


class AuthorizationCodeOAuthFlow(_Part, frozen=True):
    key: ClassVar[str] = "authorizationCode"
    authorization_url: str
    token_url: str
    scopes: Mapping[str, str]
    refresh_url: str = ""
    pkce_required: bool = False


class ClientCredentialsOAuthFlow(_Part, frozen=True):
    key: ClassVar[str] = "clientCredentials"
    token_url: str
    scopes: Mapping[str, str]
    refresh_url: str = ""


class DeviceCodeOAuthFlow(_Part, frozen=True):
    """1.0 only: 0.3 clients do not know this flow."""

    key: ClassVar[str] = "deviceCode"
    device_authorization_url: str
    token_url: str
    scopes: Mapping[str, str]
    refresh_url: str = ""


OAuthFlow = AuthorizationCodeOAuthFlow | ClientCredentialsOAuthFlow | DeviceCodeOAuthFlow


class OAuth2SecurityScheme(_Part, frozen=True):
    """OAuth 2.0 with one flow (1.0's OAuthFlows is a oneof)."""

    key: ClassVar[str] = "oauth2SecurityScheme"
    flow: OAuthFlow
    oauth2_metadata_url: str = ""
    description: str = ""


class OpenIdConnectSecurityScheme(_Part, frozen=True):
    key: ClassVar[str] = "openIdConnectSecurityScheme"
    open_id_connect_url: str
    description: str = ""


class MutualTlsSecurityScheme(_Part, frozen=True):
    key: ClassVar[str] = "mtlsSecurityScheme"
    description: str = ""


SecurityScheme = (
    APIKeySecurityScheme
    | HTTPAuthSecurityScheme
    | OAuth2SecurityScheme
    | OpenIdConnectSecurityScheme
    | MutualTlsSecurityScheme
)


class AgentCardInfo(_Part, frozen=True):
    """Everything an agent says about itself on its card; ``Agent.card_info()``
    gathers it from the agent's attributes. ``replace`` gives a changed copy
    (an extended card: ``self.card_info().replace(skills=[...])``)."""

    name: str
    description: str
    version: str = "1.0.0"
    skills: Sequence[AgentSkill] = ()
    input_modes: Sequence[str] = ("text/plain",)
    output_modes: Sequence[str] = ("text/plain",)
    extensions: Sequence[AgentExtension] = ()
    security_schemes: Mapping[str, SecurityScheme] = msgspec.field(default_factory=dict)
    security_requirements: Sequence[SecurityRequirement] = ()
    provider: AgentProvider | None = None
    documentation_url: str = ""
    icon_url: str = ""

    def replace(self, **changes: Any) -> AgentCardInfo:
        return msgspec.structs.replace(self, **changes)

    @property
    def all_output_modes(self) -> list[str]:
        """The agent's output modes and every skill's, each once."""
        modes = dict.fromkeys(self.output_modes)
        for skill in self.skills:
            modes.update(dict.fromkeys(skill.output_modes))
        return list(modes)


_to_json = msgspec.to_builtins


def card_v1(
    info: AgentCardInfo,
    *,
    interfaces: Sequence[Mapping[str, str]],
    capabilities: Mapping[str, bool],
) -> dict[str, Any]:
    """The A2A 1.0 AgentCard (ProtoJSON as builtins) of ``info``, served over
    ``interfaces`` with ``capabilities`` (the server's booleans; the agent's
    extensions are added to them)."""
    card: dict[str, Any] = {
        "name": info.name,
        "description": info.description,
        "supportedInterfaces": [dict(i) for i in interfaces],
    }
    if info.provider is not None:
        card["provider"] = _to_json(info.provider)
    card["version"] = info.version
    if info.documentation_url:
        card["documentationUrl"] = info.documentation_url
    caps: dict[str, Any] = dict(capabilities)
    if info.extensions:
        caps["extensions"] = [_to_json(e) for e in info.extensions]
    card["capabilities"] = caps
    if info.security_schemes:
        card["securitySchemes"] = {
            name: _scheme_v1(scheme) for name, scheme in info.security_schemes.items()
        }
    if info.security_requirements:
        card["securityRequirements"] = _requirements_v1(info.security_requirements)
    card["defaultInputModes"] = list(info.input_modes)
    card["defaultOutputModes"] = list(info.output_modes)
    card["skills"] = [_skill_v1(s) for s in info.skills] or [
        {"id": "default", "name": info.name, "description": info.description, "tags": ["general"]}
    ]
    if info.icon_url:
        card["iconUrl"] = info.icon_url
    return card


def _skill_v1(skill: AgentSkill) -> dict[str, Any]:
    out: dict[str, Any] = _to_json(skill)
    if skill.security_requirements:
        out["securityRequirements"] = _requirements_v1(skill.security_requirements)
    return out


def _requirements_v1(requirements: Sequence[SecurityRequirement]) -> list[dict[str, Any]]:
    return [
        {"schemes": {name: {"list": list(scopes)} for name, scopes in r.items()}}
        for r in requirements
    ]


def _scheme_v1(scheme: SecurityScheme) -> dict[str, Any]:
    body: dict[str, Any] = _to_json(scheme)
    if isinstance(scheme, OAuth2SecurityScheme):
        body["flows"] = {scheme.flow.key: body.pop("flow")}
    return {scheme.key: body}
