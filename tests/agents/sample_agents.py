"""User agents written the ways the docs show, for load_agent tests."""

from __future__ import annotations

from a2ad import Agent, AgentSkill, TaskContext

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
