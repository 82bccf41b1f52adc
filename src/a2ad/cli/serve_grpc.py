"""``a2ad serve --grpc-port``: the gRPC listener's settings, read and checked
with the other flags, and the listener made for the app once it is built.

Off unless ``--grpc-port`` (or ``grpc_port`` in the config file, or
``A2AD_GRPC_PORT``) is given. Every usage error is a ValueError naming the flag,
read before anything starts: a missing ``grpc`` extra, a TLS certificate
without its key, a file that can't be read, an unknown error table, the main
port's number. Port 0 is made a real port before the app is built, since its
cards list it, and before a group's processes start, since they share it.
"""

from __future__ import annotations

import importlib.util
import socket
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..protocol.rpc_status import TABLES
from ..server.card import Interface

if TYPE_CHECKING:
    from ..server.app import A2AApp
    from ..server.grpc_server import GrpcServer

__all__ = ["GrpcSettings", "grpc_banner", "grpc_server", "grpc_settings", "with_grpc_port"]

_PEM = b"-----BEGIN "


@dataclass(frozen=True, slots=True)
class GrpcSettings:
    """What ``--grpc-port`` and its flags ask for (docs/cli.md)."""

    port: int
    tls: tuple[bytes, bytes] | None  # the PEM certificate chain and key; None: plaintext
    error_table: str  # a key of rpc_status.TABLES
    public_address: str = ""  # host:port the cards name instead of the listener's

    @property
    def interfaces(self) -> tuple[Interface, ...]:
        """What the cards list for it."""
        public = self.public_address
        return (
            Interface("GRPC", "1.0", self.port, public),
            Interface("GRPC", "0.3", self.port, public),
        )


def grpc_settings(flags: dict[str, Any]) -> GrpcSettings | None:
    """The gRPC listener ``serve``'s flags ask for, or None; raises ValueError
    for a usage error."""
    port = flags["grpc_port"]
    cert, key = flags["grpc_tls_cert"], flags["grpc_tls_key"]
    public = flags["grpc_public_address"]
    if port is None:
        if cert or key or public:
            given = "--grpc-public-address" if public else "--grpc-tls-cert/--grpc-tls-key"
            raise ValueError(f"{given} is for the gRPC port: give --grpc-port")
        return None
    if port == flags["port"] and port != 0:
        raise ValueError(f"--grpc-port {port} is --port too: gRPC needs a port of its own")
    table = flags["grpc_error_table"]
    if table not in TABLES:
        raise ValueError(f"--grpc-error-table {table}: give {' or '.join(TABLES)}")
    if importlib.util.find_spec("grpc") is None:
        raise ValueError("--grpc-port: gRPC support is not installed; pip install 'a2ad[grpc]'")
    if bool(cert) != bool(key):
        given, missing = (
            ("--grpc-tls-cert", "--grpc-tls-key")
            if cert
            else (
                "--grpc-tls-key",
                "--grpc-tls-cert",
            )
        )
        raise ValueError(f"{given} needs {missing} too")
    tls = (_pem(cert, "--grpc-tls-cert"), _pem(key, "--grpc-tls-key")) if cert else None
    address = _address(public) if public else ""
    return GrpcSettings(port=port, tls=tls, error_table=table, public_address=address)


def _address(text: str) -> str:
    """``--grpc-public-address``: a ``host:port`` (an IPv6 host in brackets)."""
    host, _, port = text.strip().rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536 or "/" in text:
        raise ValueError(
            f"--grpc-public-address {text!r}: give HOST:PORT as clients reach it, "
            "e.g. a2a.example.com:443"
        )
    return text.strip()


def _pem(path: str, flag: str) -> bytes:
    try:
        with open(path, "rb") as file:
            data = file.read(1 << 20)
    except OSError as exc:
        raise ValueError(f"{flag} {path}: {exc.strerror or exc}") from None
    if _PEM not in data:
        raise ValueError(f"{flag} {path}: not a PEM file (no '-----BEGIN' line)")
    return data


def with_grpc_port(settings: GrpcSettings, host: str) -> GrpcSettings:
    """``settings`` once its port is known free on ``host`` (port 0: one the
    system has free); raises OSError when it is in use or can't be had."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.bind((host, settings.port))
        port = probe.getsockname()[1]
    return replace(settings, port=port)


def grpc_server(
    settings: GrpcSettings, app: A2AApp, host: str, base_url: str, *, shared: bool = False
) -> GrpcServer:
    """The listener serving ``app`` on ``settings.port``; ``shared`` by the
    processes of a group."""
    from ..server.grpc_server import GrpcServer  # only with --grpc-port: grpc's import

    return GrpcServer(
        app,
        host=host,
        port=settings.port,
        tls=settings.tls,
        table=TABLES[settings.error_table],
        base_url=base_url,
        shared=shared,
    )


def grpc_banner(settings: GrpcSettings, host: str) -> str:
    """The banner's line for the listener."""
    shown = f"[{host}]" if ":" in host else host
    security = "TLS" if settings.tls is not None else "plaintext"
    return (
        f"  gRPC:       {shown}:{settings.port}  (A2A 1.0 lf.a2a.v1.A2AService and "
        f"0.3 a2a.v1.A2AService, {security})"
    )
