"""The PostgreSQL store's URL: every option it takes reaches asyncpg or the
server, and anything else is refused before a server starts, naming it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from a2ad.store.base import ListQuery, StoreError
from a2ad.store.postgres_url import parse_url, safe_url

from ..postgres import fresh_schema
from ..served import run_a2ad

BASE = "postgresql://me:hunter2@db.internal:5432/a2ad"


@pytest.fixture
async def url() -> AsyncIterator[str]:
    async with fresh_schema() as made:
        yield made


def test_defaults_name_the_connections_a2ad_and_bound_every_wait() -> None:
    options = parse_url(BASE)
    assert options.dsn == BASE
    assert (options.pool_min, options.pool_max) == (2, 10)
    assert (options.connect_timeout, options.command_timeout) == (10.0, 30.0)
    assert options.server_settings == {"application_name": "a2ad"}


def test_a2ad_options_and_server_settings_are_taken_out_and_asyncpg_keeps_the_rest(
    tmp_path: Path,
) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_text("not read here")
    options = parse_url(
        f"{BASE}?pool_min=1&pool_max=4&connect_timeout=2.5&command_timeout=60"
        f"&statement_timeout=5s&lock_timeout=250ms&idle_in_transaction_session_timeout=1min"
        f"&application_name=a2ad-eu-1&search_path=a2ad&sslmode=verify-full&sslrootcert={ca}"
        "&target_session_attrs=read-write&ssl_min_protocol_version=TLSv1.2"
    )
    assert (options.pool_min, options.pool_max) == (1, 4)
    assert (options.connect_timeout, options.command_timeout) == (2.5, 60.0)
    assert options.server_settings == {
        "statement_timeout": "5s",
        "lock_timeout": "250ms",
        "idle_in_transaction_session_timeout": "1min",
        "application_name": "a2ad-eu-1",
        "search_path": "a2ad",
    }
    assert options.dsn == (
        f"{BASE}?sslmode=verify-full&sslrootcert={str(ca).replace('/', '%2F')}"
        "&target_session_attrs=read-write&ssl_min_protocol_version=TLSv1.2"
    )


def test_command_timeout_0_times_no_statement() -> None:
    assert parse_url(f"{BASE}?command_timeout=0").command_timeout is None
    assert parse_url(f"{BASE}?command_timeout=0.25").command_timeout == 0.25


@pytest.mark.parametrize(
    ("query", "said"),
    [
        ("pool_maxx=5", "unknown parameter 'pool_maxx'; did you mean pool_max?"),
        ("work_mem=64MB", "unknown parameter 'work_mem'"),
        ("pool_max=5&pool_max=6", "pool_max is given twice"),
        ("pool_max=", "pool_max has no value"),
        ("pool_max=0", "pool_max must be at least 1, not 0"),
        ("pool_min=two", "pool_min must be a whole number, not 'two'"),
        ("pool_min=5&pool_max=2", "pool_min (5) is above pool_max (2)"),
        ("connect_timeout=-1", "connect_timeout must be a number of seconds above 0"),
        ("command_timeout=soon", "command_timeout must be a number of seconds"),
        ("statement_timeout=5%20seconds", "statement_timeout must be a duration"),
        ("sslmode=on", "sslmode must be one of disable, allow, prefer, require"),
        ("ssl=true", "unknown parameter 'ssl'; TLS is sslmode here (disable, allow"),
        ("sslrootcert=/nonexistent/ca.pem", "sslrootcert names '/nonexistent/ca.pem'"),
        ("ssl_min_protocol_version=SSLv3", "ssl_min_protocol_version must be one of TLSv1"),
        ("application_name=caf%C3%A9", "application_name must be at most 63 printable ASCII"),
    ],
)
def test_a_wrong_option_is_refused_naming_it_and_never_the_password(query: str, said: str) -> None:
    with pytest.raises(ValueError) as raised:
        parse_url(f"{BASE}?{query}")
    message = str(raised.value)
    assert said in message
    assert "hunter2" not in message and "me:***@db.internal" in message


def test_a_password_given_as_a_parameter_is_hidden_too() -> None:
    shown = safe_url(f"{BASE}?password=s3cret&sslpassword=k3y&sslmode=require")
    assert "s3cret" not in shown and "k3y" not in shown and "hunter2" not in shown
    with pytest.raises(ValueError) as raised:
        parse_url("postgresql://me@h/d?password=s3cret&bogus=1")
    assert "s3cret" not in str(raised.value)


def test_serve_refuses_an_unknown_option_before_it_starts(tmp_path: Path) -> None:
    done = run_a2ad(
        "serve",
        "--port",
        "0",
        "--store",
        f"{BASE}?statement_timout=5s",
        "--secret-key-file",
        str(tmp_path / "key"),
    )
    said = done.stdout + done.stderr
    assert done.returncode == 2, said
    assert "statement_timout" in said and "did you mean statement_timeout" in said
    assert "hunter2" not in said
    assert not (tmp_path / "key").exists()  # refused before anything was made


async def test_server_settings_from_the_url_apply_to_every_connection(url: str) -> None:
    from a2ad.store.postgres import PostgresStore

    async with PostgresStore(
        f"{url}&statement_timeout=1500ms&lock_timeout=2s&application_name=a2ad-url-test",
        pool_min=2,
    ) as store:
        await store.list(ListQuery(page_size=1))
        pool = store._pool
        for _ in range(2):
            async with pool.acquire() as conn:
                assert await conn.fetchval("SHOW statement_timeout") == "1500ms"
                assert await conn.fetchval("SHOW lock_timeout") == "2s"
                assert await conn.fetchval("SHOW application_name") == "a2ad-url-test"


async def test_tls_options_reach_asyncpg(url: str) -> None:
    from a2ad.store.postgres import PostgresStore

    # The test server speaks no TLS: sslmode=disable connects, sslmode=require is refused.
    async with PostgresStore(f"{url}&sslmode=disable") as plain:
        assert (await plain.list(ListQuery(page_size=1))).total == 0
    store = PostgresStore(f"{url}&sslmode=require")
    with pytest.raises(StoreError, match="refused a2ad"):
        await store.open()
    await store.aclose()


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (
            "postgresql:///a2ad?host=/var/run/postgresql",
            "postgresql:///a2ad?host=/var/run/postgresql",
        ),
        ("postgresql://me:pw@/a2ad?host=/tmp", "postgresql://me:***@/a2ad?host=/tmp"),
        (
            "postgres://h/d?application_name=a%20b&password=x",
            "postgres://h/d?application_name=a%20b&password=***",
        ),
    ],
)
def test_the_url_shown_is_the_url_given_but_for_its_passwords(url: str, shown: str) -> None:
    # Not rebuilt from its parts, which drops an empty host's // and re-encodes.
    assert safe_url(url) == shown
