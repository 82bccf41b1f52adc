"""A small client for OpenAI-compatible chat completions with tool calls.

Any endpoint that speaks ``POST {base}/chat/completions`` works: OpenAI, a
proxy, vLLM, Ollama, llama.cpp. A reply keeps the ``usage`` the endpoint
reported (prompt, completion and total tokens), for the agent to pass on
(``TaskContext.usage``). Failures raise ``LLMError`` with a one-line
reason naming what to check; the API key never appears in one (a 401's body
is dropped, since some servers echo the key they refused).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import httpx

from ..protocol.usage import TokenCounts

if TYPE_CHECKING:
    from ..agent import TaskContext

__all__ = [
    "DEFAULT_BASE_URL",
    "ENV_API_KEY",
    "ENV_BASE_URL",
    "ENV_MODEL",
    "ChatClient",
    "ChatReply",
    "LLMError",
    "LLMNotConfiguredError",
    "LLMSettings",
    "ToolCall",
    "status_message",
]

ENV_BASE_URL = "OPENAI_BASE_URL"
ENV_API_KEY = "OPENAI_API_KEY"
ENV_MODEL = "A2AD_MODEL"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
MAX_RESPONSE_BYTES = 4 * 1024 * 1024
DETAIL_CHARS = 200


class LLMError(Exception):
    """The LLM endpoint failed or answered something unusable; the message is one line."""


class LLMNotConfiguredError(LLMError):
    """No endpoint or no model is configured; the message says what to set."""


@dataclass(frozen=True, kw_only=True)
class LLMSettings:
    base_url: str
    model: str
    api_key: str | None = field(default=None, repr=False)

    @classmethod
    def resolve(
        cls, *, model: str | None = None, base_url: str | None = None, api_key: str | None = None
    ) -> LLMSettings:
        """Settings for the endpoint and model given; the base URL defaults to
        OpenAI's. Raises LLMNotConfiguredError saying what to set (the variables
        ``a2ad serve`` reads them from) when there is neither a key nor a base
        URL (no endpoint was chosen), or no model."""
        base_url = base_url or None
        api_key = api_key or None
        model = model or None
        if base_url is None and api_key is None:
            raise LLMNotConfiguredError(
                f"no LLM is configured: set {ENV_API_KEY} (for OpenAI), or {ENV_BASE_URL} for "
                "another OpenAI-compatible endpoint (e.g. http://127.0.0.1:11434/v1 for Ollama), "
                f"and the model with {ENV_MODEL} (or `a2ad serve --model`)"
            )
        if model is None:
            raise LLMNotConfiguredError(
                f"no LLM model is configured: set {ENV_MODEL} (or `a2ad serve --model`) to a "
                "model the endpoint serves, e.g. gpt-4o-mini"
            )
        return cls(
            base_url=(base_url or DEFAULT_BASE_URL).rstrip("/"), model=model, api_key=api_key
        )

    @property
    def shown_url(self) -> str:
        """The base URL without any user:password in it, for messages."""
        return str(httpx.URL(self.base_url).copy_with(userinfo=b""))


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # JSON text, as the model wrote it


@dataclass(frozen=True)
class ChatReply:
    content: str
    tool_calls: list[ToolCall]
    usage: TokenCounts | None = None  # None: the endpoint reported none (or nonsense)
    model: str = ""  # the model that answered, as the endpoint names it

    async def report_usage(self, ctx: TaskContext) -> None:
        """Report the tokens this reply cost, if the endpoint said."""
        if self.usage is not None:
            await ctx.usage(
                prompt_tokens=self.usage.prompt_tokens,
                completion_tokens=self.usage.completion_tokens,
                total_tokens=self.usage.total_tokens,
                model=self.model,
            )

    def as_message(self) -> dict[str, Any]:
        """The assistant message to send back in the next request's history."""
        message: dict[str, Any] = {"role": "assistant", "content": self.content or None}
        if self.tool_calls:
            message["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                }
                for c in self.tool_calls
            ]
        return message


class ChatClient:
    """``async with ChatClient(settings) as llm: reply = await llm.chat(messages, tools)``."""

    def __init__(
        self,
        settings: LLMSettings,
        *,
        timeout: float = 120.0,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        self.settings = settings
        self.timeout = timeout
        self._own_http = http is None
        self._http = http or httpx.AsyncClient(timeout=timeout)

    async def __aenter__(self) -> ChatClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._own_http:
            await self._http.aclose()

    async def chat(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ChatReply:
        """One completion: the model's text, and the tools it wants called (if any)."""
        body: dict[str, Any] = {"model": self.settings.model, "messages": messages}
        if tools:
            body |= {"tools": tools, "tool_choice": "auto"}
        headers = {"Content-Type": "application/json"}
        if self.settings.api_key:
            headers["Authorization"] = f"Bearer {self.settings.api_key}"
        status, content = await self._post(json.dumps(body).encode(), headers)
        if status != 200:
            raise LLMError(self._http_error(status, content))
        return self._reply(content)

    async def _post(self, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
        url = self.settings.base_url + "/chat/completions"
        where = self.settings.shown_url
        try:
            async with self._http.stream("POST", url, content=body, headers=headers) as response:
                chunks, size = [], 0
                async for chunk in response.aiter_bytes():
                    size += len(chunk)
                    if size > MAX_RESPONSE_BYTES:
                        raise LLMError(
                            f"the LLM at {where} answered more than {MAX_RESPONSE_BYTES} bytes"
                        )
                    chunks.append(chunk)
                return response.status_code, b"".join(chunks)
        except httpx.TimeoutException:
            raise LLMError(f"the LLM at {where} gave no answer within {self.timeout:g} s") from None
        except httpx.ConnectError:
            raise LLMError(
                f"can't reach the LLM at {where}: connection refused; is {ENV_BASE_URL} right, "
                "and is the server running?"
            ) from None
        except httpx.HTTPError as exc:
            raise LLMError(f"can't reach the LLM at {where}: {type(exc).__name__}") from None

    def _http_error(self, status: int, content: bytes) -> str:
        try:
            payload = json.loads(content)
            error = payload.get("error") if isinstance(payload, dict) else None
            text = error.get("message") if isinstance(error, dict) else error
        except ValueError:
            text = content.decode("utf-8", "replace")
        return status_message(self.settings, status, text if isinstance(text, str) else "")

    def _reply(self, content: bytes) -> ChatReply:
        try:
            payload = json.loads(content)
            message = payload["choices"][0]["message"]
            calls = [
                ToolCall(
                    id=str(call.get("id") or f"call_{i}"),
                    name=str(call["function"]["name"]),
                    arguments=_arguments_text(call["function"].get("arguments")),
                )
                for i, call in enumerate(message.get("tool_calls") or [])
            ]
            text = message.get("content")
            model = payload.get("model")
            return ChatReply(
                content=text if isinstance(text, str) else "",
                tool_calls=calls,
                usage=_usage(payload.get("usage")),
                model=model if isinstance(model, str) and model else self.settings.model,
            )
        except (ValueError, LookupError, TypeError, AttributeError):
            raise LLMError(
                f"the LLM at {self.settings.shown_url} answered something that is not a chat "
                "completion (no choices[0].message); is it OpenAI-compatible?"
            ) from None


def status_message(settings: LLMSettings, status: int, text: str) -> str:
    """One line for an endpoint's HTTP error ``status``, with the error ``text``
    it sent (shortened, without the API key); none after a 401 or 403, since
    some servers echo the key they refused."""
    where = settings.shown_url
    if status in (401, 403):
        return f"the LLM at {where} refused the API key (HTTP {status}); check {ENV_API_KEY}"
    if settings.api_key:
        text = text.replace(settings.api_key, "***")
    text = " ".join(text.split())
    if len(text) > DETAIL_CHARS:
        text = text[: DETAIL_CHARS - 1] + "…"
    detail = f": {text}" if text else ""
    if status == 404:
        return (
            f"the LLM at {where} answered HTTP 404 for model {settings.model!r}{detail}; "
            f"check {ENV_MODEL} (or --model) and {ENV_BASE_URL}"
        )
    if status == 429:
        return f"the LLM at {where} is rate-limiting or out of quota (HTTP 429){detail}"
    return f"the LLM at {where} answered HTTP {status}{detail}"


def _usage(value: Any) -> TokenCounts | None:
    """An OpenAI-style ``usage`` object's counts; None when it is missing or not
    counts (a reply is not refused for what only bookkeeping reads)."""
    if not isinstance(value, dict):
        return None
    counts = {}
    for name in ("prompt_tokens", "completion_tokens", "total_tokens"):
        number = value.get(name, 0 if name != "total_tokens" else None)
        if number is None:
            continue
        if type(number) is not int or number < 0:
            return None
        counts[name] = number
    prompt, completion = counts["prompt_tokens"], counts["completion_tokens"]
    return TokenCounts(
        prompt_tokens=prompt,
        completion_tokens=completion,
        total_tokens=counts.get("total_tokens", prompt + completion),
    )


def _arguments_text(arguments: Any) -> str:
    # Some servers send the arguments as an object rather than JSON text.
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments if arguments is not None else {})
