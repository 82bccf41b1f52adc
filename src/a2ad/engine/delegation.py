"""Delegation tokens: an agent calling another agent of its own server, as its caller.

An agent's turn acts for whoever owns its task. When it calls an agent that
the same server serves (the lab's orchestrator asks the stock and pricing
agents), the sub-task should belong to that owner too, and its server should
not ask for a credential the agent does not have. So each turn may ask for a
delegation token (``TaskContext.delegation_token``): the owner's tenant and
principal, the delegating task and agent, and an expiry, signed with an HMAC
of a key derived from the server's secret key (engine/secrets.py), the one its
instances and ``--workers`` processes share. A server with auth on accepts it
(server/delegation.py) as that owner, in that tenant only, without roles, and
records the delegating task in what the request creates.

A token is good for ``LIFETIME`` seconds from when it was asked for and
nowhere but a server holding the same secret key; a turn that is over gets
none. Tokens are never logged: they are bearer credentials while they last.

The form is ``a2ad-delegation.<payload>.<mac>``, both parts base64url: the
prefix tells it from an API key and a JWT before anything is parsed.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import time
from collections.abc import Callable

import msgspec

__all__ = ["LIFETIME", "PREFIX", "Delegation", "Delegations", "InvalidDelegation"]

PREFIX = "a2ad-delegation."
LIFETIME = 300.0  # seconds; an agent asks again for a later call
_CONTEXT = b"a2ad delegation token v1"  # keeps this key apart from the secret's other uses


class Delegation(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What a token says: whose turn delegated (``tenant``, ``principal``), from
    which task of which agent, until when (Unix seconds)."""

    tenant: str
    principal: str
    task_id: str
    agent: str
    expires: int


class InvalidDelegation(ValueError):
    """A token that proves nothing: its ``reason`` is a short fixed phrase for
    the log (never the token)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder(Delegation).decode


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Delegations:
    """Issues and verifies the tokens of one server (its ``secret``: the
    server's secret key, 32 bytes). ``clock``: Unix seconds."""

    def __init__(
        self,
        secret: bytes,
        *,
        lifetime: float = LIFETIME,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._key = hmac.new(secret, _CONTEXT, hashlib.sha256).digest()
        self.lifetime = lifetime
        self.clock = clock

    def issue(self, *, tenant: str, principal: str, task_id: str, agent: str) -> str:
        expires = int(self.clock() + self.lifetime)
        payload = _b64(
            _encode(
                Delegation(
                    tenant=tenant,
                    principal=principal,
                    task_id=task_id,
                    agent=agent,
                    expires=expires,
                )
            )
        )
        return f"{PREFIX}{payload}.{_b64(self._mac(payload))}"

    def verify(self, token: str) -> Delegation:
        """What ``token`` says; raises InvalidDelegation."""
        payload, dot, mac = token.removeprefix(PREFIX).partition(".")
        if not token.startswith(PREFIX) or not dot:
            raise InvalidDelegation("malformed delegation")
        try:
            given = _unb64(mac)
        except (binascii.Error, ValueError):
            raise InvalidDelegation("malformed delegation") from None
        if not hmac.compare_digest(given, self._mac(payload)):
            raise InvalidDelegation("bad delegation signature")
        try:
            said = _decode(_unb64(payload))
        except (binascii.Error, ValueError, msgspec.DecodeError):
            raise InvalidDelegation("malformed delegation") from None
        if said.expires < self.clock():
            raise InvalidDelegation("expired delegation")
        return said

    def _mac(self, payload: str) -> bytes:
        return hmac.new(self._key, payload.encode("ascii", "replace"), hashlib.sha256).digest()
