"""User agents written the ways the docs show, for load_agent tests."""

from __future__ import annotations

from a2ad import Agent, AgentSkill, TaskContext
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
agent = greeter  # what `--agent tests.agents.sample_agents` loads


class Configured(Agent):
    """An agent that takes what `a2ad serve` read from its flags and environment."""

    name = "configured"

    def __init__(self, settings: AgentSettings) -> None:
        self.settings = settings

    async def run(self, ctx: TaskContext) -> None:
        await ctx.artifact(f"{self.settings.model} at {self.settings.server_url}", name="where")
