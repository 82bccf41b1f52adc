"""Where a webhook may point: the guard against server-side request forgery.

A webhook URL is the client's, but the request to it is the server's, made from
inside its network. So unless the server allows private webhooks, a URL whose
host is or resolves to an address that is not public (loopback, private,
link-local such as the 169.254.169.254 metadata service, unique-local IPv6,
carrier-grade NAT, multicast, reserved) is refused: when the config is set, and
again before each run of deliveries, after resolving the name afresh. The
delivery then connects to the address that was checked (``Target``), so a name
that resolves to a public address for the check and to a private one for the
connection (DNS rebinding) gains nothing.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from typing import NamedTuple
from urllib.parse import SplitResult, urlsplit

__all__ = ["RESOLVE_SECONDS", "Target", "WebhookRefused", "check_url", "target"]

RESOLVE_SECONDS = 5.0

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
_SHARED = ipaddress.ip_network("100.64.0.0/10")  # carrier-grade NAT: not the internet


class WebhookRefused(Exception):
    """The URL may not be called: its host is not public, or can't be resolved.
    ``permanent`` is False for a resolution that may succeed later."""

    def __init__(self, message: str, *, permanent: bool = True) -> None:
        super().__init__(message)
        self.permanent = permanent


class Target(NamedTuple):
    """How to reach a webhook: ``url`` names the checked address instead of the
    host, and the host goes in the ``Host`` header (and TLS's SNI)."""

    url: str
    host_header: str
    sni_hostname: str | None  # https to a name: the name the certificate must match


def _public(address: Address) -> bool:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_global and not address.is_multicast and address not in _SHARED


def _literal(host: str) -> Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


async def _resolve(host: str, port: int) -> list[Address]:
    """The addresses of ``host``, in the resolver's order; raises WebhookRefused."""
    literal = _literal(host)
    if literal is not None:
        return [literal]
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout(RESOLVE_SECONDS):
            infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, TimeoutError) as exc:
        raise WebhookRefused(f"can't resolve {host}: {exc}", permanent=False) from None
    addresses: list[Address] = []
    for info in infos:
        address = _literal(str(info[4][0]).partition("%")[0])  # drop an IPv6 zone
        if address is not None and address not in addresses:
            addresses.append(address)
    if not addresses:
        raise WebhookRefused(f"can't resolve {host}: no address", permanent=False)
    return addresses


def _parts(url: str) -> tuple[SplitResult, str, int]:
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme.lower() == "https" else 80)
    return parts, host, port


async def _checked(url: str, allow_private: bool) -> tuple[SplitResult, str, int, Address]:
    parts, host, port = _parts(url)
    addresses = await _resolve(host, port)
    if not allow_private:
        private = [a for a in addresses if not _public(a)]
        if private:
            said = host if str(private[0]) == host else f"{host} resolves to {private[0]}, which"
            raise WebhookRefused(
                f"{said} is not a public address (loopback, private, link-local or "
                "reserved); webhooks must be reachable on the internet unless the server "
                "runs with --allow-private-webhooks"
            )
    return parts, host, port, addresses[0]


async def check_url(url: str, *, allow_private: bool) -> None:
    """Raise WebhookRefused if ``url`` (an http(s) URL with a host, checked
    already) may not be called. Every address the host resolves to must be
    public; with ``allow_private`` nothing is resolved."""
    if not allow_private:
        await _checked(url, allow_private)


async def target(url: str, *, allow_private: bool) -> Target:
    """Resolve ``url``'s host afresh and check it as ``check_url`` does (with
    ``allow_private``, any address will do); where to connect."""
    parts, host, port, address = await _checked(url, allow_private)
    netloc = f"[{address}]:{port}" if address.version == 6 else f"{address}:{port}"
    https = parts.scheme.lower() == "https"
    return Target(
        url=parts._replace(netloc=netloc).geturl(),
        host_header=parts.netloc.rpartition("@")[2],
        sni_hostname=host if https and _literal(host) is None else None,
    )
