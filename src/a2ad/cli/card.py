"""``a2ad card``: the server's agent card, readably or as served."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from rich.text import Text

from ..client import DEFAULT_URL
from .output import console_for, print_json
from .remote import (
    AgentOption,
    BindingOption,
    JsonOption,
    Target,
    TokenOption,
    UrlOption,
    VersionOption,
    session,
)

__all__ = ["card"]


def card(
    url: UrlOption = DEFAULT_URL,
    agent: AgentOption = None,
    token: TokenOption = None,
    a2a_version: VersionOption = None,
    binding: BindingOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show the server's agent card: who it is, where, and what it can do."""
    target = Target(url, token, a2a_version, agent, binding)
    with session(target) as s:
        the_card = s.run(s.client.card())
        version = s.run(s.client.version())
        over = " over gRPC" if s.client.binding == "grpc" else ""
    if as_json:
        print_json(the_card)
    else:
        how = "as --a2a-version says" if a2a_version and not over else "chosen from this card"
        _show_card(the_card, f"this client speaks A2A {version}{over} to it ({how})")


def _show_card(card: dict[str, Any], speaking: str) -> None:
    out = console_for()
    title = Text(str(card.get("name") or "(no name)"), style="bold")
    if card.get("version"):
        title.append(f"  version {card['version']}", style="dim")
    out.print(title)
    if card.get("description"):
        out.print(Text(str(card["description"])), soft_wrap=True)
    provider = card.get("provider")
    if isinstance(provider, dict) and provider.get("organization"):
        out.print(Text(f"by {provider['organization']} {provider.get('url') or ''}".rstrip()))
    out.print()
    out.print(Text("interfaces", style="bold"))
    interfaces = _interfaces(card)
    width = max((len(binding) for binding, _, _ in interfaces), default=0)
    for binding, url, versions in interfaces:
        out.print(Text(f"  {binding:<{width}}  {url}  A2A {', '.join(versions)}"))
    out.print(Text(f"  {speaking}", style="dim"))
    capabilities = card.get("capabilities")
    if isinstance(capabilities, dict) and capabilities:
        out.print()
        out.print(Text("capabilities", style="bold"))
        for name, value in capabilities.items():
            for line in _capability(str(name), value):
                out.print(line)
    modes = [
        (label, card.get(key))
        for label, key in (("input", "defaultInputModes"), ("output", "defaultOutputModes"))
    ]
    if any(isinstance(v, list) and v for _, v in modes):
        out.print()
        for label, value in modes:
            if isinstance(value, list) and value:
                out.print(Text.assemble((f"{label}: ", "bold"), ", ".join(map(str, value))))
    skills = list(_dicts(card.get("skills")))
    out.print()
    out.print(Text(f"skills ({len(skills)})", style="bold"))
    for skill in skills:
        name = skill.get("name") or skill.get("id") or "?"
        out.print(Text.assemble("  ", (str(name), "bold"), (f"  ({skill.get('id', '')})", "dim")))
        if skill.get("description"):
            out.print(Text(f"    {skill['description']}"), soft_wrap=True)
        tags = skill.get("tags")
        if isinstance(tags, list) and tags:
            out.print(Text(f"    tags: {', '.join(map(str, tags))}", style="dim"))
        examples = skill.get("examples")
        for example in examples if isinstance(examples, list) else []:
            out.print(Text(f"    e.g. {example}"), soft_wrap=True)


def _interfaces(card: dict[str, Any]) -> list[tuple[str, str, list[str]]]:
    """Each interface of ``card`` once, as (binding, URL, its A2A versions), in
    the card's order. A card names an interface twice when it is served in 1.0
    and 0.3: in ``supportedInterfaces`` (1.0), and in the 0.3 fields beside them
    (``url`` with ``preferredTransport``, ``additionalInterfaces``), whose version
    is the card's ``protocolVersion``. Versions are told apart by major.minor
    (0.3.0 is 0.3), URLs with and without their last slash are one."""
    found: dict[tuple[str, str], tuple[str, list[str]]] = {}

    def add(binding: Any, url: Any, version: Any) -> None:
        shown = str(url or "?")
        _, versions = found.setdefault((str(binding or "?"), shown.rstrip("/")), (shown, []))
        if not any(_minor(v) == _minor(str(version)) for v in versions):
            versions.append(str(version))

    for entry in _dicts(card.get("supportedInterfaces")):
        add(entry.get("protocolBinding"), entry.get("url"), entry.get("protocolVersion", "?"))
    old = card.get("protocolVersion") or "0.3"
    if card.get("url"):
        add(card.get("preferredTransport") or "JSONRPC", card["url"], old)
    for entry in _dicts(card.get("additionalInterfaces")):
        add(entry.get("transport"), entry.get("url"), old)
    return [(binding, url, versions) for (binding, _), (url, versions) in found.items()]


def _minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def _capability(name: str, value: Any) -> Iterator[Text]:
    if name == "extensions" and isinstance(value, list):
        for extension in _dicts(value):
            required = " (required)" if extension.get("required") else ""
            yield Text(f"  extension {extension.get('uri', '?')}{required}")
            if extension.get("description"):
                yield Text(f"    {extension['description']}", style="dim")
        return
    if isinstance(value, bool):
        shown = "yes" if value else "no"
    else:
        shown = value if isinstance(value, str) else json.dumps(value)
    yield Text(f"  {name}: {shown}")


def _dicts(value: Any) -> Iterator[dict[str, Any]]:
    for entry in value if isinstance(value, list) else []:
        if isinstance(entry, dict):
            yield entry
