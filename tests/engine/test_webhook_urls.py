"""The webhook guard, one row per address form: refused when a config is set
(``check_url``) and again when a delivery resolves where to connect
(``target``), unless the server allows private webhooks; public addresses, and
IPv6 forms that carry a public IPv4 address, stay accepted and the delivery
connects to the very address that was checked."""

from __future__ import annotations

import pytest

from a2ad.engine.webhook_urls import WebhookRefused, check_url, target

# (host as written in the URL, what the refusal names)
NOT_PUBLIC = [
    ("127.0.0.1", "127.0.0.1"),
    ("169.254.169.254", "169.254.169.254"),
    ("10.1.2.3", "10.1.2.3"),
    ("100.64.0.1", "100.64.0.1"),
    ("0.0.0.0", "0.0.0.0"),
    ("192.0.0.1", "192.0.0.1"),  # IETF protocol assignments
    ("192.0.0.8", "192.0.0.8"),
    ("192.0.0.170", "192.0.0.170"),  # NAT64 discovery
    ("192.0.2.1", "192.0.2.1"),  # documentation
    ("192.88.99.1", "192.88.99.1"),  # 6to4 relay anycast, deprecated
    ("198.18.0.1", "198.18.0.1"),  # benchmarking
    ("198.51.100.7", "198.51.100.7"),
    ("203.0.113.7", "203.0.113.7"),
    ("224.0.0.251", "224.0.0.251"),  # multicast
    ("240.0.0.1", "240.0.0.1"),
    ("255.255.255.255", "255.255.255.255"),
    ("[::1]", "::1"),
    ("[::]", "::"),
    ("[::127.0.0.1]", "::127.0.0.1"),  # IPv4-compatible, deprecated
    ("[::169.254.169.254]", "::169.254.169.254"),
    ("[::a9fe:a9fe]", "::a9fe:a9fe"),
    ("[::8.8.8.8]", "::8.8.8.8"),  # IPv4-compatible, even to a public address
    ("[::ffff:127.0.0.1]", "reaches 127.0.0.1"),  # IPv4-mapped
    ("[::ffff:169.254.169.254]", "reaches 169.254.169.254"),
    ("[::ffff:0:127.0.0.1]", "::ffff:0:127.0.0.1"),  # IPv4-translated (SIIT)
    ("[64:ff9b::127.0.0.1]", "reaches 127.0.0.1"),  # NAT64, well-known prefix
    ("[64:ff9b::a9fe:a9fe]", "reaches 169.254.169.254"),
    ("[64:ff9b::10.0.0.1]", "reaches 10.0.0.1"),
    ("[64:ff9b:1::a9fe:a9fe]", "64:ff9b:1::a9fe:a9fe"),  # NAT64, local use
    ("[64:ff9b:1::808:808]", "64:ff9b:1::808:808"),
    ("[2002:7f00:1::]", "reaches 127.0.0.1"),  # 6to4
    ("[2002:a9fe:a9fe::1]", "reaches 169.254.169.254"),
    ("[2002:c0a8:101::1]", "reaches 192.168.1.1"),
    ("[100::1]", "100::1"),  # discard-only
    ("[2001::1]", "2001::1"),  # Teredo
    ("[2001:2::1]", "2001:2::1"),  # benchmarking
    ("[2001:20::1]", "2001:20::1"),  # ORCHIDv2
    ("[2001:db8::1]", "2001:db8::1"),  # documentation
    ("[3fff::1]", "3fff::1"),  # documentation
    ("[5f00::1]", "5f00::1"),  # segment routing
    ("[fc00::1]", "fc00::1"),  # unique-local
    ("[fd12:3456::1]", "fd12:3456::1"),
    ("[fe80::1]", "fe80::1"),  # link-local
    ("[fec0::1]", "fec0::1"),  # site-local, deprecated
    ("[ff02::1]", "ff02::1"),  # multicast
    ("[4000::1]", "4000::1"),  # not allocated
    # IPv4 spelled as the resolver reads it: checked as the address it resolves to
    ("2130706433", "resolves to 127.0.0.1"),
    ("0x7f.0.0.1", "resolves to 127.0.0.1"),
    ("0177.0.0.1", "resolves to 127.0.0.1"),
    ("127.1", "resolves to 127.0.0.1"),
    ("[0:0:0:0:0:ffff:169.254.169.254]", "reaches 169.254.169.254"),
]

# (host as written, the address the delivery connects to)
PUBLIC = [
    ("93.184.215.14", "93.184.215.14"),
    ("8.8.8.8", "8.8.8.8"),
    ("192.0.1.1", "192.0.1.1"),  # just past 192.0.0.0/24
    ("100.128.0.1", "100.128.0.1"),  # just past carrier-grade NAT
    ("[2606:4700:4700::1111]", "[2606:4700:4700::1111]"),
    ("[2620:4f:8000::1]", "[2620:4f:8000::1]"),  # AS112, globally reachable
    ("[::ffff:8.8.8.8]", "[::ffff:808:808]"),
    ("[64:ff9b::8.8.8.8]", "[64:ff9b::808:808]"),
    ("[2002:808:808::1]", "[2002:808:808::1]"),
]


@pytest.mark.parametrize(("host", "named"), NOT_PUBLIC)
async def test_a_host_that_is_not_public_is_refused_when_set_and_at_delivery(
    host: str, named: str
) -> None:
    url = f"https://{host}/hook"
    with pytest.raises(WebhookRefused) as when_set:
        await check_url(url, allow_private=False)
    with pytest.raises(WebhookRefused) as at_delivery:
        await target(url, allow_private=False)
    for refused in (when_set.value, at_delivery.value):
        assert named in str(refused) and "not a public address" in str(refused)
        assert "--allow-private-webhooks" in str(refused)
        assert refused.permanent


@pytest.mark.parametrize(("host", "named"), NOT_PUBLIC[:3] + NOT_PUBLIC[-10:-5])
async def test_allowing_private_webhooks_accepts_every_form(host: str, named: str) -> None:
    url = f"http://{host}:8080/hook"
    await check_url(url, allow_private=True)
    assert (await target(url, allow_private=True)).host_header == f"{host}:8080"


@pytest.mark.parametrize(("host", "connects"), PUBLIC)
async def test_a_public_host_is_accepted_and_delivered_to_as_checked(
    host: str, connects: str
) -> None:
    url = f"https://{host}/hook?x=1"
    await check_url(url, allow_private=False)
    reached = await target(url, allow_private=False)
    assert reached.url == f"https://{connects}:443/hook?x=1"
    assert reached.host_header == host
    assert reached.sni_hostname is None  # an address: no name for the certificate
