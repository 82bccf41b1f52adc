"""A message's ``configuration.acceptedOutputModes`` against what its agent
produces (the output modes on its card: the agent's and its skills'). Checked
before a turn starts, and for a message sent again (which starts nothing) as
for its first send."""

from __future__ import annotations

from collections.abc import Sequence

from msgspec import UNSET, UnsetType

from ..protocol.errors import ContentTypeNotSupportedError
from ..protocol.model import SendMessageConfiguration

__all__ = ["check_accepted"]


def check_accepted(config: SendMessageConfiguration | UnsetType, produced: Sequence[str]) -> None:
    """Raise ContentTypeNotSupportedError when ``config`` names accepted output
    modes and none of them covers one of ``produced``."""
    if config is UNSET or not config.accepted_output_modes:
        return
    accepted = config.accepted_output_modes
    if any(_media_match(a, p) for a in accepted for p in produced):
        return
    raise ContentTypeNotSupportedError(
        f"configuration.acceptedOutputModes {accepted} has nothing this agent produces: "
        f"it answers in {', '.join(produced)} (its card's output modes); accept one of "
        "them, or send no acceptedOutputModes",
        field="configuration.acceptedOutputModes",
        metadata={"acceptedOutputModes": ",".join(accepted), "outputModes": ",".join(produced)},
    )


def _media_match(accepted: str, produced: str) -> bool:
    """Whether media type ``accepted`` covers ``produced`` or the reverse (either may
    be a wildcard, ``*/*`` or ``text/*``); parameters and case do not matter."""
    a = accepted.partition(";")[0].strip().lower()
    p = produced.partition(";")[0].strip().lower()
    if a == p or a == "*/*" or p == "*/*":
        return True
    a_type, _, a_sub = a.partition("/")
    p_type, _, p_sub = p.partition("/")
    return a_type == p_type and "*" in (a_sub, p_sub)
