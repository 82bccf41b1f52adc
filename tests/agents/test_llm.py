"""``ChatClient.stream`` against a real OpenAI-compatible server on loopback
(tests/fake_model.py): pieces passed on as they come, the usage kept, and a
stream that reports an error or breaks off raised as LLMError."""

from __future__ import annotations

import pytest

from a2ad.agents.llm import ChatClient, LLMError, LLMSettings
from a2ad.protocol.usage import TokenCounts

from ..fake_model import FakeModel, Turn

KEY = "sk-test-secret-0123456789"


async def streamed(model: FakeModel) -> tuple[list[str], str, TokenCounts | None]:
    pieces: list[str] = []

    async def take(piece: str) -> None:
        pieces.append(piece)

    settings = LLMSettings.resolve(model="m", base_url=model.url, api_key=KEY)
    async with ChatClient(settings, timeout=10) as llm:
        reply = await llm.stream([{"role": "user", "content": "hi"}], take)
    return pieces, reply.content, reply.usage


async def test_stream_passes_each_piece_on_and_keeps_the_usage() -> None:
    with FakeModel([Turn(text="one two three", chunks=3, prompt_tokens=5)]) as model:
        pieces, content, usage = await streamed(model)
        sent = model.requests[0]
    assert len(pieces) == 3 and "".join(pieces) == content == "one two three"
    assert usage == TokenCounts(prompt_tokens=5, completion_tokens=7, total_tokens=12)
    assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}


@pytest.mark.parametrize(
    ("raw", "said"),
    [
        (
            f'data: {{"error": {{"message": "overloaded, key {KEY}"}}}}\n\n'.encode(),
            "sent an error in its stream: overloaded, key ***",
        ),
        (
            b'data: {"choices": [{"index": 0, "delta": {"content": "one "}}]}\n\n',
            "ended its stream",
        ),
        (b"data: [1, 2\n\n", "not a chat-completion stream"),
    ],
    ids=["error-event", "cut-short", "not-json"],
)
async def test_a_stream_that_fails_raises_one_readable_line(raw: bytes, said: str) -> None:
    with FakeModel([Turn(raw=raw)]) as model, pytest.raises(LLMError) as failed:
        await streamed(model)
    assert said in str(failed.value) and KEY not in str(failed.value)
