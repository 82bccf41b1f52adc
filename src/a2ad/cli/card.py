"""``a2ad card``: the server's agent card, readably or as served."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from rich.text import Text

from ..client import DEFAULT_URL
from .output import console_for, print_json
from .remote import AgentOption, JsonOption, Target, TokenOption, UrlOption, VersionOption, session

__all__ = ["card"]


def card(
    url: UrlOption = DEFAULT_URL,
    agent: AgentOption = None,
    token: TokenOption = None,
    a2a_version: VersionOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show the server's agent card: who it is, where, and what it can do."""
    target = Target(url, token, a2a_version, agent)
    with session(target) as s:
        the_card = s.run(s.client.card())
        version = s.run(s.client.version())
    if as_json:
        print_json(the_card)
    else:
        how = "as --a2a-version says" if a2a_version else "chosen from this card"
        _show_card(the_card, f"this client speaks A2A {version} to it ({how})")


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
    for entry in _dicts(card.get("supportedInterfaces")):
        binding = entry.get("protocolBinding", "?")
        out.print(Text(f"  {binding} {entry.get('protocolVersion', '?')}  {entry.get('url', '')}"))
    if card.get("url"):
        transport = card.get("preferredTransport") or "JSONRPC"
        out.print(
            Text(f"  {transport} {card.get('protocolVersion', '0.3')}  {card['url']}  (0.3 fields)")
        )
    for entry in _dicts(card.get("additionalInterfaces")):
        out.print(Text(f"  {entry.get('transport', '?')}  {entry.get('url', '')}"))
    out.print(Text(f"  {speaking}", style="dim"))
    capabilities = card.get("capabilities")
    if isinstance(capabilities, dict) and capabilities:
        out.print()
        out.print(Text("capabilities", style="bold"))
        for name, value in capabilities.items():
            shown = ("yes" if value else "no") if isinstance(value, bool) else str(value)
            out.print(Text(f"  {name}: {shown}"))
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


def _dicts(value: Any) -> Iterator[dict[str, Any]]:
    for entry in value if isinstance(value, list) else []:
        if isinstance(entry, dict):
            yield entry
