"""The 0.3 agent card, rendered from the 1.0 one (``protocol/card.py`` builds that)."""

from __future__ import annotations

from typing import Any

__all__ = ["card_to_03"]

_SCHEME_TYPES = {
    "apiKeySecurityScheme": "apiKey",
    "httpAuthSecurityScheme": "http",
    "oauth2SecurityScheme": "oauth2",
    "openIdConnectSecurityScheme": "openIdConnect",
    "mtlsSecurityScheme": "mutualTLS",
}


def card_to_03(card: dict[str, Any]) -> dict[str, Any]:
    """A 1.0 AgentCard (as builtins) as the 0.3 AgentCard: the 0.3 interfaces as
    ``url``/``preferredTransport`` (the first) and ``additionalInterfaces`` (all,
    when there are several), ``supportsAuthenticatedExtendedCard``, security
    schemes with ``type``, requirements as ``security``."""
    interfaces = [i for i in card["supportedInterfaces"] if i["protocolVersion"] == "0.3"]
    out: dict[str, Any] = {
        "name": card["name"],
        "description": card["description"],
        "url": interfaces[0]["url"],
        "preferredTransport": interfaces[0]["protocolBinding"],
        "protocolVersion": "0.3.0",
        "version": card["version"],
    }
    if len(interfaces) > 1:
        out["additionalInterfaces"] = [
            {"url": i["url"], "transport": i["protocolBinding"]} for i in interfaces
        ]
    for key in ("provider", "documentationUrl", "iconUrl"):
        if key in card:
            out[key] = card[key]
    capabilities = dict(card["capabilities"])
    if capabilities.pop("extendedAgentCard", False):
        out["supportsAuthenticatedExtendedCard"] = True
    out["capabilities"] = capabilities
    if "securitySchemes" in card:
        out["securitySchemes"] = {
            name: _scheme_to_03(scheme) for name, scheme in card["securitySchemes"].items()
        }
    if "securityRequirements" in card:
        out["security"] = _requirements_to_03(card["securityRequirements"])
    out["defaultInputModes"] = card["defaultInputModes"]
    out["defaultOutputModes"] = card["defaultOutputModes"]
    out["skills"] = [_skill_to_03(s) for s in card["skills"]]
    return out


def _requirements_to_03(requirements: list[dict[str, Any]]) -> list[dict[str, list[str]]]:
    return [
        {name: scopes.get("list", []) for name, scopes in r.get("schemes", {}).items()}
        for r in requirements
    ]


def _skill_to_03(skill: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in skill.items() if k != "securityRequirements"}
    if "securityRequirements" in skill:
        out["security"] = _requirements_to_03(skill["securityRequirements"])
    return out


def _scheme_to_03(scheme: dict[str, Any]) -> dict[str, Any]:
    ((key, body),) = scheme.items()
    out: dict[str, Any] = {"type": _SCHEME_TYPES[key]}
    for name, value in body.items():
        if name == "location":
            out["in"] = value
        elif name == "flows":  # 0.3 flows have no pkceRequired
            out["flows"] = {
                k: {n: v for n, v in flow.items() if n != "pkceRequired"}
                for k, flow in value.items()
            }
        else:
            out[name] = value
    return out
