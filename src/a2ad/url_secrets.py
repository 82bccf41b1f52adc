"""A URL as it may be shown: its password, and each query parameter a caller
deems secret, replaced by ``***``, and every other character kept as written.

Kept as written, because what is shown is pasted back: ``a2ad config show``'s
store URL into ``--store``, the banner's into a config file. Rebuilding a URL
from its parts (``urlunsplit``) does not give it back: ``sqlite:///a2ad.db``
(empty host, relative path) comes out ``sqlite:/a2ad.db``, which no store
takes, and ``sqlite:////srv/a2ad.db`` comes out ``sqlite://srv/a2ad.db``,
whose ``srv`` reads as a host; parameters come back re-encoded.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import unquote_plus

__all__ = ["MASK", "mask_url"]

MASK = "***"


def mask_url(url: str, secret: Callable[[str], bool]) -> str:
    """``url`` with the password of its address, and the value of each query
    parameter whose (decoded) name ``secret`` accepts, as ``***``. Text that is
    not a URL (no ``://``) is returned as it is."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    # Where urlsplit puts the parts: the fragment after the first #, the query
    # after the first ? before it, the address up to the first / ? or #.
    rest, hash_mark, fragment = rest.partition("#")
    rest, question_mark, query = rest.partition("?")
    address, slash, path = rest.partition("/")
    userinfo, at, host = address.rpartition("@")
    if at and ":" in userinfo:
        address = f"{userinfo.partition(':')[0]}:{MASK}@{host}"
    if question_mark:
        query = "&".join(_masked_parameter(pair, secret) for pair in query.split("&"))
    return f"{scheme}{sep}{address}{slash}{path}{question_mark}{query}{hash_mark}{fragment}"


def _masked_parameter(pair: str, secret: Callable[[str], bool]) -> str:
    name, _, _ = pair.partition("=")
    return f"{name}={MASK}" if secret(unquote_plus(name)) else pair
