"""The lab's answers, phrased by an LLM when one is configured.

The figures are always computed by the agent's own tools; the model is only
asked to word them, in the request's language, from the figures (as JSON) and
the fixed text the agent would send without a model. Its words stream as the
chunks of one artifact (``append``), and the figures' data part comes last,
with ``lastChunk``, so that agents and clients that read the figures read the
same part as without a model. The call's tokens are reported (``ctx.usage``).

A model that fails (unreachable, an error, a stream cut short, no text) does
not fail the answer: the figures are right whatever the wording, so the agent
logs why, says so in a working update (the reason in an internal part), and
sends the fixed text and the figures as the artifact, replacing whatever
chunks had been sent (an update of the same artifact without ``append``).
"""

from __future__ import annotations

import json
import logging
import ssl
from typing import Any

import httpx

from ...agent import TaskContext
from ...protocol.model import DataPart, Role, TextPart, new_id
from ..llm import ChatClient, LLMError, LLMNotConfiguredError, LLMSettings
from ..settings import AgentSettings
from .request import Lang

__all__ = ["Phrasing", "answer", "phrasing"]

log = logging.getLogger("a2ad.agents.lab")
TIMEOUT = 60.0  # each wait on the model; the fixed text follows a timeout

_SYSTEM = (
    "You word the answer of the {agent} agent of a small office-furniture shop to a "
    "customer's request. Answer in {language}. Use the figures given, exactly as given: "
    "do not change, round, convert or add any number, price, discount or promise. Be brief and "
    "plain; no greeting, no preamble, no offer of further help.{style}"
)
_LANGUAGE = {"fr": "French", "en": "English"}


class Phrasing:
    """A model to word the answers with: ``LLMSettings``, and how long to wait."""

    def __init__(self, settings: LLMSettings, *, timeout: float = TIMEOUT) -> None:
        self.settings = settings
        self.timeout = timeout
        self._tls = ssl.create_default_context()  # once: making one costs milliseconds

    async def stream(
        self,
        ctx: TaskContext,
        *,
        agent: str,
        fixed: str,
        figures: dict[str, Any],
        lang: Lang,
        name: str,
        markdown: bool = False,
    ) -> str:
        """Send the artifact ``name``: the model's words as chunks, then the
        figures; or, when the model fails, the fixed text and the figures.
        Returns the words sent."""
        request = "\n".join(m.text for m in ctx.history if m.role is Role.USER)
        style = " Markdown is welcome." if markdown else " Plain text, no Markdown."
        system = _SYSTEM.format(agent=agent, language=_LANGUAGE[lang], style=style)
        prompt = (
            f"The customer's request:\n{request}\n\n"
            f"The figures (JSON):\n{json.dumps(figures, ensure_ascii=False)}\n\n"
            f"The answer in plain fixed wording, for reference:\n{fixed}"
        )
        messages = [{"role": "system", "content": system}, {"role": "user", "content": prompt}]
        artifact_id = new_id()
        words: list[str] = []

        async def chunk(piece: str) -> None:
            await ctx.artifact(piece, artifact_id=artifact_id, name=name, append=bool(words))
            words.append(piece)

        try:
            async with (
                httpx.AsyncClient(verify=self._tls, timeout=self.timeout) as http,
                ChatClient(self.settings, timeout=self.timeout, http=http) as llm,
            ):
                reply = await llm.stream(messages, chunk)
            await reply.report_usage(ctx)
            if not words:
                raise LLMError(f"the model {self.settings.model!r} answered no text")
        except LLMError as exc:
            log.warning(
                "the %s agent answers in fixed wording: %s", agent, exc,
                extra={"task_id": ctx.task_id},
            )  # fmt: skip
            note = (
                "The model could not word the answer; here it is in fixed wording."
                if lang == "en"
                else "Le modèle n'a pas pu rédiger la réponse ; la voici en texte fixe."
            )
            failure = {"name": "phrase", "model": self.settings.model, "error": str(exc)}
            await ctx.working([TextPart(note), *ctx.internal(DataPart(failure))])
            await ctx.artifact(
                [TextPart(fixed), DataPart(figures)],
                artifact_id=artifact_id,
                name=name,
                last_chunk=bool(words),
            )
            return fixed
        await ctx.artifact(
            DataPart(figures), artifact_id=artifact_id, name=name, append=True, last_chunk=True
        )
        return "".join(words)


def phrasing(
    agent: str,
    settings: AgentSettings | None,
    *,
    model: str | None,
    llm_base_url: str | None,
    llm_api_key: str | None,
) -> Phrasing | None:
    """The model to word ``agent``'s answers with: the arguments, else the
    settings'; None when no model is named (the fixed text, no warning), or
    when one is but no endpoint is (a warning saying what to set)."""
    settings = settings or AgentSettings()
    model = model or settings.model
    if not model:
        return None
    try:
        resolved = LLMSettings.resolve(
            model=model,
            base_url=llm_base_url or settings.llm_base_url,
            api_key=llm_api_key or settings.llm_api_key,
        )
    except LLMNotConfiguredError as exc:
        log.warning("the %s agent answers in fixed wording: %s", agent, exc)
        return None
    return Phrasing(resolved)


async def answer(
    ctx: TaskContext,
    phrased: Phrasing | None,
    *,
    agent: str,
    fixed: str,
    figures: dict[str, Any],
    lang: Lang,
    name: str,
    markdown: bool = False,
) -> str:
    """The artifact ``name``: ``fixed`` and ``figures`` in one update without a
    model, else the model's wording streamed (see the module's docstring).
    Returns the words the answer said, for the agent's final message."""
    if phrased is None:
        await ctx.artifact([TextPart(fixed), DataPart(figures)], name=name)
        return fixed
    return await phrased.stream(
        ctx, agent=agent, fixed=fixed, figures=figures, lang=lang, name=name, markdown=markdown
    )
