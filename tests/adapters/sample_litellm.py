"""A plain function agent that asks its model through LiteLLM, as LiteLLM's docs
write it: ``a2ad serve --agent tests.adapters.sample_litellm:ask`` calls the model
at ``$OPENAI_BASE_URL`` (the fake model). LiteLLM puts a handler of its own on its
loggers when imported, here as the module is loaded."""

from __future__ import annotations

import os

import litellm

from ..fake_model import MODEL


async def ask(text: str) -> str:
    reply = await litellm.acompletion(
        model=f"openai/{MODEL}",
        api_base=os.environ["OPENAI_BASE_URL"],
        api_key="test-key",
        messages=[{"role": "user", "content": text}],
    )
    return str(reply.choices[0].message.content)
