"""The PostgreSQL store's URL: what its query parameters may say, checked before
anything connects.

``postgresql://user[:password]@host[:port]/database?name=value&...``. Each name
is one of three kinds, and any other is refused, naming it (a typo must not
pass silently, as it would if it became a server setting that fails at the
first connection, or never):

- a2ad's own, taken out of the URL: the pool's size and the timeouts that
  bound how long a request may wait on the database (``OWN``);
- asyncpg's connection parameters, left in the URL for asyncpg to read: the
  address, the user and password, and TLS (``ASYNCPG``);
- server settings sent with every connection (``SETTINGS``).

A value is checked as far as can be done without connecting: numbers, the
names asyncpg accepts, durations in PostgreSQL's form (``5s``, ``250ms``), and
that a file named (a certificate, a key, a password file) exists.
"""

from __future__ import annotations

import difflib
import math
import re
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from ..url_secrets import mask_url

__all__ = [
    "ASYNCPG",
    "DEFAULT_APPLICATION_NAME",
    "DEFAULT_COMMAND_TIMEOUT",
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_POOL_MAX",
    "DEFAULT_POOL_MIN",
    "OWN",
    "SETTINGS",
    "StoreOptions",
    "host_port",
    "parse_url",
    "safe_url",
]

DEFAULT_POOL_MIN = 2
DEFAULT_POOL_MAX = 10
DEFAULT_CONNECT_TIMEOUT = 10.0  # seconds to open a connection
# Seconds one statement may take, as the client sees it: asyncpg's timer on each
# statement (some tens of microseconds of CPU each); 0 turns it off.
DEFAULT_COMMAND_TIMEOUT = 30.0
DEFAULT_APPLICATION_NAME = "a2ad"  # what pg_stat_activity shows for our connections

_SECRET = frozenset({"password", "sslpassword"})
_SSLMODES = ("disable", "allow", "prefer", "require", "verify-ca", "verify-full")
_TLS_VERSIONS = ("TLSv1", "TLSv1.1", "TLSv1.2", "TLSv1.3")
_DURATION = re.compile(r"\d+(\.\d+)? ?(us|ms|s|min|h|d)?")


class StoreOptions(NamedTuple):
    """What a store URL says: the URL asyncpg reads (a2ad's own parameters and
    the server settings taken out) and the rest."""

    dsn: str
    pool_min: int
    pool_max: int
    connect_timeout: float  # seconds
    command_timeout: float | None  # seconds; None: statements are not timed here
    server_settings: dict[str, str]


# --- checks of one value: each raises ValueError saying what is wrong ---

Check = Callable[[str], None]


def _count(least: int) -> Check:
    def check(value: str) -> None:
        if not value.isdigit():
            raise ValueError(f"must be a whole number, not {value!r}")
        if int(value) < least:
            raise ValueError(f"must be at least {least}, not {value}")

    return check


def _seconds(value: str) -> None:
    try:
        seconds = float(value)
    except ValueError:
        raise ValueError(f"must be a number of seconds, such as 10 or 2.5, not {value!r}") from None
    if not (math.isfinite(seconds) and seconds > 0):
        raise ValueError(f"must be a number of seconds above 0, not {value!r}")


def _seconds_or_off(value: str) -> None:
    if value != "0":
        _seconds(value)


def _duration(value: str) -> None:
    if not _DURATION.fullmatch(value):
        raise ValueError(
            f"must be a duration as PostgreSQL writes it, such as 5s, 250ms or 1min "
            f"(a bare number is milliseconds), not {value!r}"
        )


def _one_of(*allowed: str) -> Check:
    def check(value: str) -> None:
        if value not in allowed:
            raise ValueError(f"must be one of {', '.join(allowed)}, not {value!r}")

    return check


def _file(*also: str) -> Check:
    def check(value: str) -> None:
        if value not in also and not Path(value).expanduser().is_file():
            raise ValueError(f"names {value!r}, which is not a file")

    return check


def _application_name(value: str) -> None:
    if not (value.isascii() and value.isprintable()) or len(value) > 63:
        raise ValueError("must be at most 63 printable ASCII characters")


def _any(value: str) -> None:
    pass


OWN: dict[str, Check] = {
    "pool_min": _count(0),
    "pool_max": _count(1),
    "connect_timeout": _seconds,
    "command_timeout": _seconds_or_off,
}

ASYNCPG: dict[str, Check] = {
    "host": _any,
    "port": _any,
    "user": _any,
    "password": _any,
    "dbname": _any,
    "database": _any,
    "passfile": _file(),
    "service": _any,
    "sslmode": _one_of(*_SSLMODES),
    "sslrootcert": _file(),
    "sslcert": _file(),
    "sslkey": _file(),
    "sslpassword": _any,
    "sslcrl": _file(),
    "ssl_min_protocol_version": _one_of(*_TLS_VERSIONS),
    "ssl_max_protocol_version": _one_of(*_TLS_VERSIONS),
    "sslnegotiation": _one_of("postgres", "direct"),
    "target_session_attrs": _one_of(
        "any", "primary", "standby", "prefer-standby", "read-write", "read-only"
    ),
    "krbsrvname": _any,
    "gsslib": _one_of("gssapi", "sspi"),
}

SETTINGS: dict[str, Check] = {
    "application_name": _application_name,
    "search_path": _any,
    "statement_timeout": _duration,
    "lock_timeout": _duration,
    "idle_in_transaction_session_timeout": _duration,
}

_KNOWN = {**OWN, **ASYNCPG, **SETTINGS}


def parse_url(url: str) -> StoreOptions:
    """The options ``url`` gives (``postgresql://`` or ``postgres://``). Raises
    ValueError naming the parameter that is unknown, repeated or wrong, and
    never showing a password."""
    shown = safe_url(url)
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("postgres", "postgresql"):
        raise ValueError(f"store {shown!r}: use postgresql://user@host:5432/database")
    own: dict[str, str] = {}
    settings = {"application_name": DEFAULT_APPLICATION_NAME}
    rest: list[tuple[str, str]] = []
    seen: set[str] = set()
    for name, value in urllib.parse.parse_qsl(parts.query, keep_blank_values=True):
        check = _KNOWN.get(name)
        if check is None:
            raise ValueError(f"store {shown!r}: {_unknown(name)}")
        if name in seen:
            raise ValueError(f"store {shown!r}: {name} is given twice")
        seen.add(name)
        if not value:
            raise ValueError(f"store {shown!r}: {name} has no value")
        try:
            check(value)
        except ValueError as exc:
            said = "is wrong" if name in _SECRET else str(exc)
            raise ValueError(f"store {shown!r}: {name} {said}") from None
        if name in OWN:
            own[name] = value
        elif name in SETTINGS:
            settings[name] = value
        else:
            rest.append((name, value))
    pool_min = int(own.get("pool_min", -1))
    pool_max = int(own.get("pool_max", max(DEFAULT_POOL_MAX, pool_min)))
    if pool_min < 0:
        pool_min = min(DEFAULT_POOL_MIN, pool_max)
    if pool_min > pool_max:
        raise ValueError(f"store {shown!r}: pool_min ({pool_min}) is above pool_max ({pool_max})")
    return StoreOptions(
        dsn=urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(rest))),
        pool_min=pool_min,
        pool_max=pool_max,
        connect_timeout=float(own.get("connect_timeout", DEFAULT_CONNECT_TIMEOUT)),
        command_timeout=float(own.get("command_timeout", DEFAULT_COMMAND_TIMEOUT)) or None,
        server_settings=settings,
    )


def _unknown(name: str) -> str:
    if name == "ssl":  # asyncpg's Python keyword; in a URL, as in libpq's, it is sslmode
        return f"unknown parameter 'ssl'; TLS is sslmode here ({', '.join(_SSLMODES)})"
    near = difflib.get_close_matches(name, _KNOWN, n=1)
    hint = f"did you mean {near[0]}? " if near else ""
    return (
        f"unknown parameter {name!r}; {hint}the store URL takes {', '.join(OWN)}, the server "
        f"settings {', '.join(SETTINGS)}, and asyncpg's connection parameters "
        "(sslmode, sslrootcert, ...): docs/operations.md lists them all"
    )


def safe_url(url: str) -> str:
    """``url`` without its password (in the address or as a parameter), to show;
    every other character as written, so that it can be pasted back."""
    return mask_url(url, _SECRET.__contains__)


def host_port(url: str) -> str:
    """Where the store is, to name it in messages: ``host:port``."""
    parts = urllib.parse.urlsplit(url)
    try:
        port = parts.port or 5432
    except ValueError:
        port = 5432
    return f"{parts.hostname or 'localhost'}:{port}"
