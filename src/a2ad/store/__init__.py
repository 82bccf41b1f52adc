"""Task stores: one contract (base.py), several backends, chosen by URL."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import TaskStore

if TYPE_CHECKING:
    from .sqlite_group import SqliteGroup

__all__ = ["DEFAULT_STORE", "store_from_url"]

DEFAULT_STORE = "sqlite:///a2ad.db"


def store_from_url(
    url: str, *, max_tasks: int | None = None, group: SqliteGroup | None = None
) -> TaskStore:
    """The store a URL names:

    - ``memory``: in this process only, at most ``max_tasks`` (default 10,000);
    - ``sqlite`` or ``sqlite:///a2ad.db``: ``./a2ad.db``; ``sqlite:///rel/path.db`` is
      relative to the working directory, ``sqlite:////abs/path.db`` absolute (as in
      SQLAlchemy); unbounded unless ``max_tasks`` is given;
    - ``postgresql://user@host:5432/db`` (or ``postgres://``): PostgreSQL, shared by
      every instance that names it (``store/postgres.py`` for the query parameters:
      ``pool_min``, ``pool_max``, ``sslmode``, ``statement_timeout``, ...); unbounded
      unless ``max_tasks`` is given. Needs asyncpg (``pip install 'a2ad[postgres]'``).

    ``group``: this process is a member of a group of processes serving the SQLite
    file together (``store/sqlite_group.py``); not for other stores, whose
    processes need nothing of the kind. Raises ValueError naming what is wrong."""
    text = url.strip()
    if text == "memory":
        from .memory import DEFAULT_MAX_TASKS, MemoryStore

        return MemoryStore(max_tasks=max_tasks or DEFAULT_MAX_TASKS)
    if text == "sqlite":
        text = DEFAULT_STORE
    if text.startswith("sqlite:///"):
        path = text[len("sqlite:///") :]
        if not path:
            raise ValueError(f"store {url!r}: name the file, e.g. sqlite:///a2ad.db")
        from .sqlite import SqliteStore

        return SqliteStore(path, max_tasks=max_tasks, group=group)
    if group is not None:
        raise ValueError(f"store {url.split('@')[-1]!r}: only a SQLite file is served by a group")
    if text.startswith(("postgresql://", "postgres://")):
        try:
            from .postgres import PostgresStore
        except ImportError:
            raise ValueError(
                "a PostgreSQL store needs asyncpg: pip install 'a2ad[postgres]' (in a checkout "
                "set up by ./run: A2AD_EXTRAS=postgres ./run serve ...)"
            ) from None
        return PostgresStore(text, max_tasks=max_tasks)
    raise ValueError(
        f"store {url.split('@')[-1]!r}: use 'memory', 'sqlite', 'sqlite:///relative/file.db', "
        "'sqlite:////absolute/file.db' or 'postgresql://user@host:5432/database'"
    )
