"""What the lab's stock and pricing agents share: one tool call per request.

A request that names no reference asks for one. Otherwise the agent shows its
progress with the tool call as an internal part, calls the tool (taking
``delay`` seconds, to watch a stream or cancel one), records the result as an
internal part, and answers: the fixed wording or a model's (``phrasing``), with
the figures as a data part. A subclass names its tool and says how to call it
and how to word the result.
"""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

from ...agent import Agent, TaskContext
from ...protocol.model import DataPart, Role, TextPart
from ..settings import AgentSettings
from .phrasing import answer, phrasing
from .request import Lang, Request, read

__all__ = ["LookupAgent"]


class LookupAgent(Agent):
    tool: ClassVar[str]  # the tool's name, as the internal parts show it
    artifact: ClassVar[str]  # the answer's artifact name

    def __init__(
        self,
        settings: AgentSettings | None = None,
        *,
        delay: float = 0.0,
        model: str | None = None,
        llm_base_url: str | None = None,
        llm_api_key: str | None = None,
    ) -> None:
        """With a model (``model``, else the settings'), the answer is worded by it
        (``phrasing``); ``delay``: seconds each tool call takes, to watch a stream
        or cancel one."""
        self.delay = delay
        self.phrasing = phrasing(
            self.name, settings, model=model, llm_base_url=llm_base_url, llm_api_key=llm_api_key
        )

    def arguments(self, request: Request) -> dict[str, Any]:
        """The tool's arguments for ``request`` (which names a reference)."""
        raise NotImplementedError

    def progress(self, arguments: dict[str, Any], lang: Lang) -> str:
        """What the agent says it is doing."""
        raise NotImplementedError

    def lookup(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """The tool itself."""
        raise NotImplementedError

    def wording(self, result: dict[str, Any], lang: Lang) -> str:
        """The fixed answer to ``result``."""
        raise NotImplementedError

    async def run(self, ctx: TaskContext) -> None:
        request = read(m.text for m in ctx.history if m.role is Role.USER)
        if request.sku is None:
            await ctx.require_input(
                "Which item? Give its reference, e.g. CHAISE-ERGO."
                if request.lang == "en"
                else "Quel article ? Donnez sa référence, par exemple CHAISE-ERGO."
            )
            return
        arguments = self.arguments(request)
        call = {"name": self.tool, "args": arguments}
        progress = self.progress(arguments, request.lang)
        await ctx.working([TextPart(progress), *ctx.internal(DataPart(call))])
        await asyncio.sleep(self.delay)
        result = self.lookup(arguments)
        await ctx.working(ctx.internal(DataPart({"name": self.tool, "response": result})))
        said = await answer(
            ctx,
            self.phrasing,
            agent=self.name,
            fixed=self.wording(result, request.lang),
            figures=result,
            lang=request.lang,
            name=self.artifact,
        )
        await ctx.complete(said)  # the answer's words in the history too (docs/protocol.md)
