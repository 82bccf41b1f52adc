"""The gRPC listener: A2A's gRPC binding (1.0's service and 0.3's) on a port of
its own, beside the app.

gRPC needs HTTP/2, which the HTTP app's server does not speak, so it listens
apart (``a2ad serve --grpc-port``), with ``grpc.aio`` in the app's own event
loop and process: its calls reach the same agents, tasks, streams and bus,
through the app's authenticator, limits and observers
(bindings/grpc_service.py). Plaintext (h2c) unless given a certificate and
its key. Import this module only to serve gRPC: it needs the ``grpc`` extra.

The listener's options, each for what a careful operator expects:
- messages up to the app's ``max_body_bytes``, as a request body over HTTP;
- a ping every keep-alive interval on an idle connection (an open stream with
  nothing to say), so that proxies that drop quiet connections keep it, and
  clients may ping every 10 s;
- the port is the listener's alone (no ``SO_REUSEPORT``, unless the processes
  of a group share it), so a port in use is an error at start, not a second
  server that silently shares it;
- at most 100 calls at once on one connection.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import grpc  # type: ignore[import-untyped]
import grpc.aio  # type: ignore[import-untyped]

from ..protocol.rpc_status import TABLE_1_0_1
from .bindings.grpc_service import GrpcService
from .bindings.sse import KEEPALIVE_SECONDS

__all__ = ["MAX_CALLS_PER_CONNECTION", "GrpcServer"]

MAX_CALLS_PER_CONNECTION = 100
_PING_TIMEOUT_MS = 20_000
_CLIENT_PING_MS = 10_000  # the most often a client may ping an idle connection


class GrpcServer:
    """Serves ``app``'s agents (an A2AApp) over gRPC on ``host``:``port`` (0:
    any free one; ``port`` says which once started). ``tls``: the PEM
    certificate chain and private key, else plaintext. ``table``: the error
    table (protocol/rpc_status.py); ``base_url``: the app's own URL, which
    the extended card names. ``shared``: the processes of a group listen on the
    port together (``SO_REUSEPORT``: the system spreads new connections among
    them), as ``a2ad serve --workers`` does."""

    def __init__(
        self,
        app: Any,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        tls: tuple[bytes, bytes] | None = None,
        table: Mapping[str, str] = TABLE_1_0_1,
        base_url: str = "",
        keepalive_seconds: float = KEEPALIVE_SECONDS,
        shared: bool = False,
    ) -> None:
        # A2A 1.0's service and 0.3's, on the one port.
        self.services = [
            GrpcService(
                app,
                version=version,
                table=table,
                base_url=base_url,
                keepalive_seconds=keepalive_seconds,
            )
            for version in ("1.0", "0.3")
        ]
        self.host = host
        self.port = port
        self.tls = tls
        self.options = [
            ("grpc.so_reuseport", 1 if shared else 0),
            ("grpc.max_receive_message_length", app.limits.max_body_bytes),
            ("grpc.keepalive_time_ms", int(keepalive_seconds * 1000)),
            ("grpc.keepalive_timeout_ms", _PING_TIMEOUT_MS),
            ("grpc.keepalive_permit_without_calls", 1),
            ("grpc.http2.min_ping_interval_without_data_ms", _CLIENT_PING_MS),
            ("grpc.http2.max_pings_without_data", 0),
            ("grpc.max_concurrent_streams", MAX_CALLS_PER_CONNECTION),
        ]
        self._server: Any = None

    @property
    def address(self) -> str:
        """``host:port`` as a gRPC client names it."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    async def start(self) -> None:
        """Listen and serve, in the running event loop. Raises OSError for an
        address it can't listen on (in use, not this machine's)."""
        server = grpc.aio.server(options=self.options)
        server.add_generic_rpc_handlers([one.generic_handler() for one in self.services])
        address = self.address
        try:
            if self.tls is None:
                port = server.add_insecure_port(address)
            else:
                chain, key = self.tls
                credentials = grpc.ssl_server_credentials([(key, chain)])
                port = server.add_secure_port(address, credentials)
        except RuntimeError as exc:  # grpc says only "Failed to bind to address ..."
            said = f"can't listen on {address} for gRPC: in use, or not an address here"
            raise OSError(said) from exc
        self.port = port
        await server.start()
        self._server = server

    async def stop(self, grace: float | None = 1.0) -> None:
        """Stop listening; calls still open get ``grace`` seconds to end, then
        are cancelled (their clients see CANCELLED)."""
        server, self._server = self._server, None
        if server is not None:
            await server.stop(grace)
