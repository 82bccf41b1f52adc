"""Authentication: who a request comes from, before any endpoint reads it.

The app asks its ``Authenticator`` for the ``Caller`` of every JSON-RPC and
HTTP+JSON request (the public card stays public), handing it the request's
headers and peer as an ``Inbound`` (server/request.py, no ASGI scope: a binding
of another transport asks it the same way), and leaves the Caller in the ASGI
scope (``types.CALLER_KEY``), where the endpoints read it. A request it cannot
authenticate raises ``AuthenticationFailed`` and is answered 401 with a
``WWW-Authenticate`` challenge, never reaching an endpoint.

a2ad's authenticator, ``CredentialAuthenticator``, takes the credential from
``Authorization: Bearer <token>`` or ``X-API-Key: <token>`` and proves it with

- ``ApiKeys``: a keys file (TOML) of principals, tenants, roles and the SHA-256
  of each key, never the key (``a2ad auth add-key`` writes it);
- ``JwtVerifier``: bearer JWTs of an identity provider, checked against its
  JWKS (signature, expiry, issuer, audience), claims mapped to the Caller.

A JWT-shaped token (three dot-separated parts) goes to the verifier when there
is one; any other token to the keys file (a2ad keys have no dots).

Each issuer names its own principals, and two never share one unless the
operator says so. A key's principal is the name its entry gives (``alice``); a
JWT's is its issuer, ``#``, and its principal claim (``https://idp.example#alice``),
as Kubernetes names OIDC users. ``JwtVerifier(principal_prefix=...)`` replaces the
issuer and ``#``; ``""`` makes a JWT's subject the very principal of the key of
that name, which is how an operator maps the two together. A key whose
principal starts with the JWTs' prefix would stand for a JWT caller:
``CredentialAuthenticator`` refuses it.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import os
import secrets
import time
import tomllib
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any, Protocol

import httpx
import msgspec

from ..agent import Caller, presented
from ..protocol.card import (
    APIKeySecurityScheme,
    HTTPAuthSecurityScheme,
    OpenIdConnectSecurityScheme,
    SecurityScheme,
)
from ..wording import plural
from .request import Inbound

__all__ = [
    "API_KEY_HEADER",
    "ApiKeys",
    "AuthenticationFailed",
    "Authenticator",
    "CredentialAuthenticator",
    "JwtVerifier",
    "KeyFileError",
    "add_key",
    "new_key",
]

log = logging.getLogger("a2ad.auth")

API_KEY_HEADER = "X-API-Key"
REALM = "a2ad"
KEY_PREFIX = "a2ad_"


class AuthenticationFailed(Exception):
    """No credential, or one that proves nothing: the request is answered 401.

    ``message`` is for the caller; ``reason`` a short fixed phrase for the log
    (never the credential); ``given``: whether a credential came at all (the
    challenge then says ``error="invalid_token"``, RFC 6750 §3); ``principal``:
    whose credential it was, when that is known (an expired token's subject)."""

    def __init__(self, message: str, *, reason: str, given: bool, principal: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.reason = reason
        self.given = given
        self.principal = principal

    @property
    def challenge(self) -> str:
        """The ``WWW-Authenticate`` value."""
        if self.given:
            return f'Bearer realm="{REALM}", error="invalid_token"'
        return f'Bearer realm="{REALM}"'


class Authenticator(Protocol):
    """Finds the Caller of a request. ``schemes`` are what the agent card
    declares (securitySchemes; any one of them will do)."""

    schemes: Mapping[str, SecurityScheme]

    async def authenticate(self, request: Inbound) -> Caller:
        """The caller of the request with these headers, from this peer; raises
        AuthenticationFailed."""
        ...


# --- API keys ---------------------------------------------------------------


class KeyFileError(ValueError):
    """The keys file can't be read, or an entry in it is wrong (the message says which)."""


def new_key() -> str:
    """A new API key: 256 random bits, URL-safe, with a prefix that secret
    scanners and people can recognise."""
    return KEY_PREFIX + secrets.token_urlsafe(32)


def _digest(key: str) -> bytes:
    return hashlib.sha256(key.encode("utf-8", "surrogateescape")).digest()


_ENTRY_FIELDS = frozenset({"principal", "tenant", "tenants", "roles", "sha256", "created"})


def _toml_string(text: str) -> str:
    # A JSON string is a TOML basic string, but for DEL, which TOML wants escaped.
    return msgspec.json.encode(text).decode().replace("\x7f", "\\u007f")


class ApiKeys:
    """The keys of a keys file, by the SHA-256 of each key.

    A plain SHA-256 is the right hash here, not a slow KDF (bcrypt, scrypt,
    argon2): those protect low-entropy passwords from guessing, and an a2ad key
    is 256 random bits, which no one can guess from its hash either. A KDF
    would cost milliseconds on every request; SHA-256 costs a microsecond, so
    there is nothing to cache. The lookup is by hash (a dict), and the found
    hash is compared again with ``hmac.compare_digest``; a key not in the file
    is compared against a dummy, so both paths do the same work. What a timing
    difference could reveal is a prefix of a SHA-256 digest, which tells
    nothing about any key."""

    def __init__(self, entries: Mapping[bytes, Caller], *, path: str = "") -> None:
        self.path = path
        self._by_digest = dict(entries)
        self._dummy = bytes(32)

    def __len__(self) -> int:
        return len(self._by_digest)

    @property
    def principals(self) -> frozenset[str]:
        return frozenset(caller.principal for caller in self._by_digest.values())

    @classmethod
    def load(cls, path: str) -> ApiKeys:
        """The keys of the TOML file at ``path``: ``[[key]]`` tables with
        ``principal``, ``tenants`` (or ``tenant``), ``roles`` and ``sha256``
        (hex). Raises KeyFileError naming the file and entry."""
        try:
            with open(path, "rb") as f:
                data = tomllib.load(f)
        except FileNotFoundError:
            raise KeyFileError(
                f"keys file {path}: not found (make one with `a2ad auth add-key --file {path}`)"
            ) from None
        except OSError as exc:
            raise KeyFileError(f"keys file {path}: can't read it: {exc.strerror or exc}") from None
        except tomllib.TOMLDecodeError as exc:
            raise KeyFileError(f"keys file {path}: not valid TOML: {exc}") from None
        unknown = set(data) - {"key"}
        if unknown:
            raise KeyFileError(
                f"keys file {path}: unknown table {sorted(unknown)[0]!r}; keys are [[key]] entries"
            )
        raw = data.get("key", [])
        if not isinstance(raw, list):
            raise KeyFileError(f"keys file {path}: `key` must be an array of tables ([[key]])")
        entries: dict[bytes, Caller] = {}
        for n, entry in enumerate(raw, 1):
            where = f"keys file {path}, key #{n}"
            if not isinstance(entry, dict):
                raise KeyFileError(f"{where}: not a table")
            digest, caller = _entry(entry, where)
            if digest in entries:
                raise KeyFileError(f"{where}: the same key (sha256) is listed twice")
            entries[digest] = caller
        return cls(entries, path=path)

    def verify(self, key: str) -> Caller:
        """The Caller whose key this is; raises AuthenticationFailed."""
        digest = _digest(key)
        caller = self._by_digest.get(digest)
        expected = self._dummy if caller is None else digest
        if not hmac.compare_digest(digest, expected) or caller is None:
            raise AuthenticationFailed(
                "The API key is not valid (unknown or revoked)", reason="unknown key", given=True
            )
        return caller


def _entry(entry: dict[str, Any], where: str) -> tuple[bytes, Caller]:
    unknown = set(entry) - _ENTRY_FIELDS
    if unknown:
        raise KeyFileError(
            f"{where}: unknown field {sorted(unknown)[0]!r} "
            f"(the fields are {', '.join(sorted(_ENTRY_FIELDS))})"
        )
    principal = entry.get("principal")
    if not isinstance(principal, str) or not principal:
        raise KeyFileError(f"{where}: `principal` must be a non-empty string")
    hexed = entry.get("sha256")
    try:
        digest = bytes.fromhex(hexed) if isinstance(hexed, str) else b""
    except ValueError:
        digest = b""
    if len(digest) != 32:
        raise KeyFileError(f"{where} ({principal}): `sha256` must be 64 hex digits")
    if "tenant" in entry and "tenants" in entry:
        raise KeyFileError(f"{where} ({principal}): give `tenant` or `tenants`, not both")
    tenants = _strings(entry.get("tenants", entry.get("tenant", [])))
    roles = _strings(entry.get("roles", []))
    if tenants is None:
        raise KeyFileError(f"{where} ({principal}): `tenants` must be a string or strings")
    if roles is None:
        raise KeyFileError(f"{where} ({principal}): `roles` must be a string or strings")
    return digest, Caller(
        principal=principal, tenants=tenants, roles=frozenset(roles), authenticated=True
    )


def _strings(value: object) -> tuple[str, ...] | None:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    return None


def add_key(
    path: str, principal: str, *, tenants: Sequence[str] = (), roles: Sequence[str] = ()
) -> str:
    """Make a key for ``principal``, append its hashed entry to the keys file at
    ``path`` (created with mode 0600; existing entries kept) and return the key,
    which is written nowhere. Raises KeyFileError if the file is not a valid
    keys file (nothing is written then), or ValueError for an empty principal."""
    if not principal:
        raise ValueError("--principal: give the name of whom the key is for")
    if os.path.exists(path):
        ApiKeys.load(path)  # refuse to append to a file we couldn't read back
    key = new_key()
    lines = [
        "",
        "[[key]]",
        f"principal = {_toml_string(principal)}",
        f"tenants = [{', '.join(_toml_string(t) for t in tenants)}]",
        f"roles = [{', '.join(_toml_string(r) for r in roles)}]",
        f'sha256 = "{_digest(key).hex()}"',
        f"created = {datetime.now(UTC).replace(microsecond=0).isoformat().replace('+00:00', 'Z')}",
        "",
    ]
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    with os.fdopen(fd, "a", encoding="utf-8") as f:
        if f.tell() == 0:
            f.write("# a2ad API keys (`a2ad auth add-key`): hashes only, never the keys.\n")
        f.write("\n".join(lines))
    ApiKeys.load(path)
    return key


# --- JWT --------------------------------------------------------------------

# Public-key algorithms only: a JWKS is public, so an HMAC ("oct") key in it
# would let anyone sign.
_ASYMMETRIC = frozenset(
    {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
)


class JwtVerifier:
    """Verifies bearer JWTs with the keys of a JWKS (a URL, or a file).

    A token must be signed by a key of the set (matched by ``kid``; a set of one
    key also serves tokens without one), with a public-key algorithm, unexpired
    (``leeway`` seconds of clock skew allowed), from ``issuer`` and for
    ``audience``. Its claims become the Caller: ``principal_claim`` (a
    non-empty string) after ``principal_prefix`` (default: the issuer and
    ``#``; see the module docstring), ``tenant_claim`` (a string or a list; absent: no
    tenants) and ``roles_claim`` (a list, or a space-separated string). A claim
    name with dots (``realm_access.roles``) walks nested objects when no claim
    has that name.

    The keys are fetched once and kept; they are fetched again when older than
    ``refresh_seconds``, and when a token names a ``kid`` the set lacks (a key
    rotation), at most once per ``refetch_seconds`` so that made-up kids cannot
    make a2ad hammer the provider. A failed fetch keeps the keys it had."""

    def __init__(
        self,
        jwks: str,
        *,
        issuer: str,
        audience: str,
        principal_claim: str = "sub",
        tenant_claim: str = "tenant",
        roles_claim: str = "roles",
        openid_config_url: str = "",
        principal_prefix: str | None = None,
        refresh_seconds: float = 300.0,
        refetch_seconds: float = 10.0,
        leeway: float = 30.0,
    ) -> None:
        if not issuer or not audience:
            raise ValueError("JWT auth needs both --auth-jwt-issuer and --auth-jwt-audience")
        try:
            import jwt  # noqa: F401  (an extra: say so at start, not at the first request)
        except ImportError:
            raise ValueError("JWT auth needs PyJWT: pip install 'a2ad[jwt]'") from None
        self.jwks = jwks
        self.issuer = issuer
        self.audience = audience
        self.principal_claim = principal_claim
        self.tenant_claim = tenant_claim
        self.roles_claim = roles_claim
        self.principal_prefix = f"{issuer}#" if principal_prefix is None else principal_prefix
        self.openid_config_url = openid_config_url
        self.refresh_seconds = refresh_seconds
        self.refetch_seconds = refetch_seconds
        self.leeway = leeway
        self._remote = jwks.startswith(("http://", "https://"))
        self._keys: dict[str | None, Any] = {}
        self._fetched = -float("inf")
        self._lock = asyncio.Lock()
        if not self._remote:  # a file: read now, so that a bad one stops the start
            self._keys = _key_map(self._read_file())
            self._fetched = time.monotonic()

    async def verify(self, token: str) -> Caller:
        """The Caller the token proves; raises AuthenticationFailed."""
        import jwt

        try:
            head = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise _bad_token("The bearer token is not a JWT", "malformed token") from None
        kid = head.get("kid")
        key = await self._key(kid if isinstance(kid, str) else None)
        if head.get("alg") != key.algorithm_name:
            raise _bad_token("The token's algorithm does not match its key", "algorithm mismatch")
        try:
            claims = jwt.decode(
                token,
                key.key,
                algorithms=[key.algorithm_name],
                audience=self.audience,
                issuer=self.issuer,
                leeway=self.leeway,
                options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.ExpiredSignatureError:
            raise _bad_token("The token has expired", "expired token") from None
        except jwt.InvalidIssuerError:
            raise _bad_token("The token is from another issuer", "wrong issuer") from None
        except jwt.InvalidAudienceError:
            raise _bad_token("The token is for another audience", "wrong audience") from None
        except jwt.InvalidSignatureError:
            raise _bad_token("The token's signature is not valid", "bad signature") from None
        except jwt.MissingRequiredClaimError as exc:
            raise _bad_token(
                f"The token has no {exc.claim!r} claim", f"missing {exc.claim} claim"
            ) from None
        except jwt.PyJWTError:
            raise _bad_token("The token is not valid", "invalid token") from None
        return self._caller(claims)

    def _caller(self, claims: dict[str, Any]) -> Caller:
        subject = _claim(claims, self.principal_claim)
        if not isinstance(subject, str) or not subject:
            raise _bad_token(
                f"The token has no {self.principal_claim!r} claim naming its principal",
                "no principal claim",
            )
        principal = self.principal_prefix + subject
        tenants = _strings(_claim(claims, self.tenant_claim) or [])
        roles_value = _claim(claims, self.roles_claim) or []
        if isinstance(roles_value, str):
            roles_value = roles_value.split()
        roles = _strings(roles_value)
        if tenants is None or roles is None:
            which = self.tenant_claim if tenants is None else self.roles_claim
            raise _bad_token(
                f"The token's {which!r} claim must be a string or strings",
                f"bad {which} claim",
                principal=principal,
            )
        return Caller(
            principal=principal, tenants=tenants, roles=frozenset(roles), authenticated=True
        )

    async def _key(self, kid: str | None) -> Any:
        now = time.monotonic()
        key = self._find(kid)
        stale = now - self._fetched > self.refresh_seconds
        if key is None or stale:
            async with self._lock:
                now = time.monotonic()
                key = self._find(kid)
                # another request may have fetched while this one waited
                due = now - self._fetched > self.refresh_seconds or (
                    key is None and now - self._fetched >= self.refetch_seconds
                )
                if due:
                    await self._refresh()
                    key = self._find(kid)
        if key is None:
            raise _bad_token("The token is signed by an unknown key", "unknown kid")
        return key

    def _find(self, kid: str | None) -> Any:
        key = self._keys.get(kid)
        if key is None and kid is None and len(self._keys) == 1:
            key = next(iter(self._keys.values()))
        return key

    async def _refresh(self) -> None:
        try:
            if self._remote:
                async with httpx.AsyncClient(timeout=10.0) as http:
                    response = await http.get(self.jwks)
                    response.raise_for_status()
                    document = response.json()
            else:
                document = await asyncio.to_thread(self._read_file)
            self._keys = _key_map(document)
        except Exception as exc:  # keep the keys we had; the next due request tries again
            log.warning(
                "JWKS fetch failed; keeping the %s fetched before: %s",
                plural(len(self._keys), "key"),
                exc,
                extra={"jwks": self.jwks},
            )
        self._fetched = time.monotonic()

    def _read_file(self) -> Any:
        try:
            with open(self.jwks, "rb") as f:
                return msgspec.json.decode(f.read())
        except (OSError, msgspec.DecodeError) as exc:
            raise ValueError(f"--auth-jwt-jwks {self.jwks}: can't read a JWKS: {exc}") from None

    @property
    def scheme(self) -> tuple[str, SecurityScheme]:
        if self.openid_config_url:
            return "oidc", OpenIdConnectSecurityScheme(
                open_id_connect_url=self.openid_config_url,
                description=f"An OpenID Connect ID/access token from {self.issuer}",
            )
        return "jwt", HTTPAuthSecurityScheme(
            scheme="Bearer",
            bearer_format="JWT",
            description=f"A JWT from {self.issuer} for the audience {self.audience}",
        )


def _key_map(document: Any) -> dict[str | None, Any]:
    from jwt import PyJWK, PyJWTError

    keys = document.get("keys") if isinstance(document, dict) else None
    if not isinstance(keys, list):
        raise ValueError("not a JWKS: it needs a `keys` array")
    found: dict[str | None, Any] = {}
    for entry in keys:
        if not isinstance(entry, dict):
            continue
        try:
            key = PyJWK(entry)
        except PyJWTError:
            continue  # a key type or curve we can't use; the others still serve
        if key.algorithm_name in _ASYMMETRIC:
            found[entry.get("kid") if isinstance(entry.get("kid"), str) else None] = key
    return found


def _claim(claims: dict[str, Any], name: str) -> Any:
    if name in claims or "." not in name:
        return claims.get(name)
    value: Any = claims
    for step in name.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(step)
    return value


def _bad_token(message: str, reason: str, *, principal: str = "") -> AuthenticationFailed:
    return AuthenticationFailed(message, reason=reason, given=True, principal=principal)


# --- the combination ------------------------------------------------------------


def _looks_like_jwt(token: str) -> bool:
    return token.count(".") == 2


class CredentialAuthenticator:
    """API keys, JWTs, or both: see the module docstring."""

    def __init__(self, *, keys: ApiKeys | None = None, jwt: JwtVerifier | None = None) -> None:
        if keys is None and jwt is None:
            raise ValueError("CredentialAuthenticator needs keys, a JWT verifier, or both")
        if keys is not None and jwt is not None and jwt.principal_prefix:
            _check_apart(keys, jwt)
        self.keys = keys
        self.jwt = jwt
        schemes: dict[str, SecurityScheme] = {}
        if keys is not None:
            schemes["bearer"] = HTTPAuthSecurityScheme(
                scheme="Bearer", description="An a2ad API key, as a bearer token"
            )
            schemes["apiKey"] = APIKeySecurityScheme(
                name=API_KEY_HEADER, location="header", description="An a2ad API key"
            )
        if jwt is not None:
            name, scheme = jwt.scheme
            schemes[name] = scheme
        self.schemes: Mapping[str, SecurityScheme] = MappingProxyType(schemes)

    async def authenticate(self, request: Inbound) -> Caller:
        token = _credential(request)
        if self.jwt is not None and _looks_like_jwt(token):
            caller = await self.jwt.verify(token)
        elif self.keys is not None:
            caller = self.keys.verify(token)
        else:
            raise _bad_token("The bearer token is not a JWT", "malformed token")
        presented(token)  # kept for the turn if an agent asked (pass-caller)
        return caller

    def describe(self) -> str:
        """One line for the start banner."""
        said = []
        if self.keys is not None:
            count = len(self.keys)
            said.append(f"API keys from {self.keys.path} ({plural(count, 'key')})")
        if self.jwt is not None:
            jwt = self.jwt
            said.append(
                f"JWTs from {jwt.issuer} (keys: {jwt.jwks}; principals "
                f"{jwt.principal_prefix}<{jwt.principal_claim}>)"
            )
        return "; ".join(said)


def _check_apart(keys: ApiKeys, jwt: JwtVerifier) -> None:
    """Raise KeyFileError for a key whose principal a JWT of ``jwt``'s issuer
    could also have: the two would share their tasks."""
    prefix = jwt.principal_prefix
    taken = sorted(p for p in keys.principals if p.startswith(prefix))
    if taken:
        raise KeyFileError(
            f"keys file {keys.path}: the principal {taken[0]!r} is the one a JWT of "
            f"{jwt.issuer} with the subject {taken[0][len(prefix) :]!r} gets (JWT principals "
            f"start with {prefix!r}); rename the key's principal, or give "
            "--auth-jwt-principal-prefix another prefix"
        )


def _credential(request: Inbound) -> str:
    """The token of ``Authorization: Bearer`` or, without it, ``X-API-Key``."""
    authorization = request.headers.first(b"authorization")
    if authorization:
        kind, _, token = authorization.strip().partition(" ")
        token = token.strip()
        if kind.lower() != "bearer" or not token:
            raise AuthenticationFailed(
                "Send the credential as 'Authorization: Bearer <token>' or "
                f"'{API_KEY_HEADER}: <key>'",
                reason="unsupported authorization scheme",
                given=True,
            )
        return token
    key = request.headers.first(b"x-api-key").strip()
    if key:
        return key
    raise AuthenticationFailed(
        f"This server needs a credential: 'Authorization: Bearer <token>' or "
        f"'{API_KEY_HEADER}: <key>'",
        reason="no credential",
        given=False,
    )
