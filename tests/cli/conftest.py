"""The live a2ad the client commands' tests talk to. Most tests share one server for
their module (``server``, ``server10``): each looks only at the tasks it made. Those that
see every task on a server (lists, the overdue search) get one of their own
(``own_server``, ``own_server10``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .client_commands import Server, serve


@pytest.fixture(scope="module")
def shared() -> Iterator[Server]:
    yield from serve("1.0")


@pytest.fixture(params=["1.0", "0.3"])
def server(request: pytest.FixtureRequest, shared: Server) -> Server:
    """The module's server, spoken to in each A2A version."""
    return Server(shared.live, shared.recording, str(request.param), shared.clock)


@pytest.fixture
def server10(shared: Server) -> Server:
    return shared


@pytest.fixture(params=["1.0", "0.3"])
def own_server(request: pytest.FixtureRequest) -> Iterator[Server]:
    """A server of the test's own, holding only the tasks it makes."""
    yield from serve(str(request.param))


@pytest.fixture
def own_server10() -> Iterator[Server]:
    yield from serve("1.0")
