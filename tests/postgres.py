"""A PostgreSQL database for tests: a fresh schema on the server at
A2AD_TEST_POSTGRES (default postgresql://postgres@127.0.0.1:5432/postgres), dropped
after. Without a server (or asyncpg) the test is skipped, saying why, unless
A2AD_REQUIRE_POSTGRES=1 (set by .ci/run), which makes that a failure."""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager

import pytest

SERVER = os.environ.get("A2AD_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/postgres")


def _unavailable(why: str) -> None:
    if os.environ.get("A2AD_REQUIRE_POSTGRES") == "1":
        pytest.fail(f"PostgreSQL is required (A2AD_REQUIRE_POSTGRES=1) but {why}")
    pytest.skip(f"no PostgreSQL for this test: {why} (set A2AD_TEST_POSTGRES)")


@asynccontextmanager
async def fresh_schema() -> AsyncIterator[str]:
    """The store URL of a new, empty schema (its name in ``search_path``),
    dropped with all it holds when the block ends."""
    try:
        import asyncpg  # type: ignore[import-untyped]
    except ImportError:
        _unavailable("asyncpg is not installed (pip install -e '.[postgres]')")
    try:
        admin = await asyncpg.connect(SERVER, timeout=5)
    except (OSError, TimeoutError, asyncpg.PostgresError) as exc:
        _unavailable(f"{SERVER} can't be reached ({exc})")
    schema = f"a2ad_test_{uuid.uuid4().hex[:16]}"
    try:
        await admin.execute(f"CREATE SCHEMA {schema}")
        separator = "&" if "?" in SERVER else "?"
        yield f"{SERVER}{separator}search_path={schema}"
    finally:
        await admin.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        await admin.close()


@contextmanager
def fresh_schema_sync() -> Iterator[str]:
    """``fresh_schema`` for a test or fixture that is not async (one that runs
    ``a2ad serve`` processes)."""
    loop = asyncio.new_event_loop()
    made = fresh_schema()
    try:
        url = loop.run_until_complete(made.__aenter__())
        try:
            yield url
        finally:
            loop.run_until_complete(made.__aexit__(None, None, None))
    finally:
        loop.close()
