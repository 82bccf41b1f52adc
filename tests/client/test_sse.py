"""client/sse.py: Server-Sent Events read from a response's bytes as the HTML
standard says, however the bytes are cut into chunks."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from a2ad.client.sse import sse_events


class _Chunks(httpx.AsyncByteStream):
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            yield chunk


async def _events(chunks: list[bytes]) -> list[tuple[str, bytes]]:
    response = httpx.Response(200, stream=_Chunks(chunks))
    return [event async for event in sse_events(response)]


STREAM = (
    b"\xef\xbb\xbf: a comment, then an event of two data lines\r\n"
    b"id: 7\r\n"
    b'data: {"a":\r\n'
    b"data:1}\r\n"
    b"\r\n"
    b"event: ignored\rretry: 10\rdata: x" + "\u2028".encode() + b"y\r\r"  # CR alone ends lines
    b"data\n"  # a field with no colon: data, empty
    b"data: z\n\n"
    b"id: 8\x00\ndata: kept id\n\n"  # an id holding NUL is ignored
    b"data: no blank line after it: never dispatched"
)
EXPECTED = [
    ("7", b'{"a":\n1}'),
    ("7", "x\u2028y".encode()),  # the id stays; U+2028 is no line break
    ("7", b"\nz"),
    ("7", b"kept id"),
]


async def test_a_stream_in_one_chunk() -> None:
    assert await _events([STREAM]) == EXPECTED


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 64])
async def test_a_stream_cut_anywhere_reads_the_same(size: int) -> None:
    chunks = [STREAM[i : i + size] for i in range(0, len(STREAM), size)]
    assert await _events(chunks) == EXPECTED


async def test_an_event_of_no_data_is_not_one() -> None:
    assert await _events([b"id: 1\n\n: only a comment\n\ndata: a\n\n"]) == [("1", b"a")]
