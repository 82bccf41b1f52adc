"""Fixtures shared by the SSE tests: the dialect in use and a client of the live server."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from ..conftest import LiveServer
from .sse_client import Dialect


@pytest.fixture(params=[True, False], ids=["v1.0", "v0.3"])
def d(request: pytest.FixtureRequest) -> Dialect:
    return Dialect(request.param)


@pytest.fixture
async def http(live: LiveServer) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=live.url, timeout=10) as c:
        yield c
