"""Where a webhook may point: the guard against server-side request forgery.

A webhook URL is the client's, but the request to it is the server's, made from
inside its network. So unless the server allows private webhooks, a URL whose
host is or resolves to an address that is not public (loopback, private,
link-local such as the 169.254.169.254 metadata service, unique-local IPv6,
carrier-grade NAT, multicast, reserved, any special-purpose range IANA does not
mark globally reachable, or an IPv6 form whose embedded IPv4 address is one of
these) is refused: when the config is set, and
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
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def _networks(*cidrs: str) -> tuple[Network, ...]:
    return tuple(ipaddress.ip_network(cidr) for cidr in cidrs)


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


# The IPv4 ranges that are not the internet: every entry of IANA's IPv4
# Special-Purpose Address Registry not marked globally reachable, plus multicast
# and the deprecated 6to4 relay anycast. All of 192.0.0.0/24 is refused, though
# the registry marks two anycast services in it (PCP, TURN) as global: no
# webhook is served there.
_NOT_PUBLIC_V4 = _networks(
    "0.0.0.0/8",  # "this network"
    "10.0.0.0/8",  # private
    "100.64.0.0/10",  # carrier-grade NAT
    "127.0.0.0/8",  # loopback
    "169.254.0.0/16",  # link-local, with the 169.254.169.254 metadata service
    "172.16.0.0/12",  # private
    "192.0.0.0/24",  # IETF protocol assignments
    "192.0.2.0/24",  # documentation
    "192.88.99.0/24",  # 6to4 relay anycast, deprecated
    "192.168.0.0/16",  # private
    "198.18.0.0/15",  # benchmarking
    "198.51.100.0/24",  # documentation
    "203.0.113.0/24",  # documentation
    "224.0.0.0/4",  # multicast
    "240.0.0.0/4",  # reserved, and the broadcast address
)
# Only 2000::/3 is IPv6's global unicast space: outside it lie loopback,
# unspecified, IPv4-compatible (deprecated) and the rest of ::/8, discard-only,
# unique-local, link-local, the deprecated site-local fec0::/10, multicast and
# what is not allocated. Inside it, IANA's IPv6 Special-Purpose Address Registry
# marks these as not globally reachable (2001::/23 whole, Teredo with it).
_GLOBAL_V6 = ipaddress.ip_network("2000::/3")
_NOT_PUBLIC_V6 = _networks("2001::/23", "2001:db8::/32", "3fff::/20")
# IPv6 forms that carry an IPv4 address the connection reaches in the end: they
# are as public as that IPv4 address. NAT64's local-use 64:ff9b:1::/48 is not
# among them: its embedding is the operator's choice, so it is refused whole.
_MAPPED = ipaddress.ip_network("::ffff:0:0/96")  # IPv4-mapped
_NAT64 = ipaddress.ip_network("64:ff9b::/96")  # the well-known NAT64 prefix
_SIX_TO_FOUR = ipaddress.ip_network("2002::/16")  # the IPv4 address in bits 16-48


def _embedded(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address ``address`` reaches through mapping, NAT64 or 6to4."""
    if address in _MAPPED or address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address in _SIX_TO_FOUR:
        return ipaddress.IPv4Address((int(address) >> 80) & 0xFFFFFFFF)
    return None


def _public(address: Address) -> bool:
    """Whether ``address`` is on the internet. A table of its own instead of
    ``ipaddress``'s ``is_global``, whose answers change between Python versions
    and which takes ``[::127.0.0.1]`` and ``[64:ff9b::a9fe:a9fe]`` for global."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = _embedded(address)
        if embedded is not None:
            return _public(embedded)
        return address in _GLOBAL_V6 and not any(address in n for n in _NOT_PUBLIC_V6)
    return not any(address in n for n in _NOT_PUBLIC_V4)


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
            first = private[0]
            said = host if _literal(host) == first else f"{host} resolves to {first}, which"
            embedded = _embedded(first) if first.version == 6 else None
            if embedded is not None:
                said = f"{said} reaches {embedded}, which"
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
