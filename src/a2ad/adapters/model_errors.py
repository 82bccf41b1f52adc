"""A model's HTTP error, as the frameworks that call models raise it, in one line.

LangChain's OpenAI models and PraisonAI call OpenAI-compatible endpoints with the
``openai`` client, and LiteLLM (Google ADK's LiteLlm) raises subclasses of its
errors, whose ``APIError`` tells a failed call from a bug in the
agent. Such a failure ends the task with a message naming the error class and
the HTTP status (never the error's text, which may quote a credential); any
other exception is the agent's and fails the task as usual. ``openai`` is not
imported here: an exception of its can exist only once it has been.
"""

from __future__ import annotations

import sys

__all__ = ["model_error"]


def model_error(exc: BaseException) -> str | None:
    """The failed task's message for ``exc`` if it is an ``openai.APIError``, else None."""
    openai = sys.modules.get("openai")
    if openai is None or not isinstance(exc, openai.APIError):
        return None
    status = getattr(exc, "status_code", None)
    where = f" (HTTP {status})" if isinstance(status, int) else ""
    return f"The model failed: {type(exc).__name__}{where}"
