"""How a2ad proves itself to the agents it fronts (adapters/remote.py): per
upstream, a bearer token, an API key in a header of its choice, or OAuth2
client credentials, read from ``--upstream-auth FILE`` (TOML, one table per
fronted agent) and the environment (``A2AD_AGENT_<NAME>_TOKEN``,
``_API_KEY``, which win over the file).

```toml
[stock]
token-file = "/run/secrets/stock-token"      # or token = "..."

[pricing]
api-key = "..."                               # or api-key-file
api-key-header = "X-Pricing-Key"              # default X-API-Key

[orchestrator.oauth2]
token-url = "https://idp.example/oauth2/token"
client-id = "a2ad"
client-secret-file = "/run/secrets/idp"       # or client-secret
scope = "a2a.invoke"                          # optional, as is audience
```

OAuth2's token is fetched (``grant_type=client_credentials``, the client's id
and secret in HTTP Basic) before the first call, kept until 30 s before it
expires, and fetched again at once when the upstream answers 401. No secret is
logged or put in an error: errors name the file, the agent and the key.
"""

from __future__ import annotations

import asyncio
import time
import tomllib
from collections.abc import AsyncGenerator, Mapping
from pathlib import Path
from typing import Any

import httpx
import msgspec

from ..agent import caller_credential

__all__ = ["OAuth2", "OAuth2Auth", "PassCaller", "UpstreamCredential", "read_upstream_auth"]

EARLY_SECONDS = 30.0  # a token is fetched again this long before it expires
DEFAULT_LIFETIME = 300.0  # a token answer without expires_in is kept this long


class OAuth2(msgspec.Struct, frozen=True, kw_only=True):
    """OAuth2 client credentials: where to ask for a token, and as whom."""

    token_url: str
    client_id: str
    client_secret: str = msgspec.field(default="")
    scope: str = ""
    audience: str = ""

    def __repr__(self) -> str:  # never the secret
        return f"OAuth2(token_url={self.token_url!r}, client_id={self.client_id!r})"


class UpstreamCredential(msgspec.Struct, frozen=True, kw_only=True):
    """What a2ad sends an upstream: ``token`` as ``Authorization: Bearer``,
    ``api_key`` in ``api_key_header``, or a token from ``oauth2``."""

    token: str | None = None
    api_key: str | None = None
    api_key_header: str = "X-API-Key"
    oauth2: OAuth2 | None = None
    # Send the caller's own credential (caller_credential) when a request's turn has
    # one; the others above, if any, otherwise.
    pass_caller: bool = False

    def __repr__(self) -> str:  # never a secret
        kinds = [k for k in ("token", "api_key", "oauth2", "pass_caller") if getattr(self, k)]
        return f"UpstreamCredential({', '.join(kinds) or 'none'})"


_AGENT_KEYS = {
    "token",
    "token-file",
    "api-key",
    "api-key-file",
    "api-key-header",
    "oauth2",
    "pass-caller",
}
_OAUTH2_KEYS = {
    "token-url",
    "client-id",
    "client-secret",
    "client-secret-file",
    "scope",
    "audience",
}


def read_upstream_auth(path: str) -> dict[str, UpstreamCredential]:
    """The credentials ``path`` gives, by fronted agent name. Raises ValueError
    naming the file, the agent and the key for what is wrong."""
    try:
        with open(path, "rb") as file:
            tables = tomllib.load(file)
    except OSError as exc:
        raise ValueError(f"--upstream-auth {path}: can't read it: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"--upstream-auth {path}: not TOML: {exc}") from None
    found = {}
    for name, table in tables.items():
        where = f"--upstream-auth {path}: [{name}]"
        if not isinstance(table, dict):
            raise ValueError(f"{where} must be a table of the agent's credential")
        found[name] = _credential(table, where, Path(path).parent)
    return found


def _credential(table: Mapping[str, Any], where: str, here: Path) -> UpstreamCredential:
    unknown = sorted(set(table) - _AGENT_KEYS)
    if unknown:
        raise ValueError(
            f"{where}: unknown key {unknown[0]!r}; keys: {', '.join(sorted(_AGENT_KEYS))}"
        )
    token = _secret(table, "token", where, here)
    api_key = _secret(table, "api-key", where, here)
    header = table.get("api-key-header", "X-API-Key")
    if not isinstance(header, str) or not header.strip():
        raise ValueError(f"{where}: api-key-header must be a header name")
    oauth2 = None
    if "oauth2" in table:
        oauth2 = _oauth2(table["oauth2"], f"{where}.oauth2", here)
    pass_caller = table.get("pass-caller", False)
    if not isinstance(pass_caller, bool):
        raise ValueError(f"{where}: pass-caller must be true or false")
    kinds = (("token", token), ("api-key", api_key), ("oauth2", oauth2))
    given = [kind for kind, value in kinds if value]
    if len(given) > 1 or not (given or pass_caller):
        raise ValueError(
            f"{where}: give one of token (or token-file), api-key (or api-key-file) and "
            "[oauth2] (with pass-caller = true, one or none); "
            f"{'found ' + ' and '.join(given) if given else 'found none'}"
        )
    return UpstreamCredential(
        token=token,
        api_key=api_key,
        api_key_header=header.strip(),
        oauth2=oauth2,
        pass_caller=pass_caller,
    )


def _oauth2(table: object, where: str, here: Path) -> OAuth2:
    if not isinstance(table, dict):
        raise ValueError(f"{where} must be a table (token-url, client-id, client-secret)")
    unknown = sorted(set(table) - _OAUTH2_KEYS)
    if unknown:
        raise ValueError(
            f"{where}: unknown key {unknown[0]!r}; keys: {', '.join(sorted(_OAUTH2_KEYS))}"
        )
    texts = {}
    for key in ("token-url", "client-id", "scope", "audience"):
        value = table.get(key, "")
        if not isinstance(value, str):
            raise ValueError(f"{where}: {key} must be a string")
        texts[key] = value.strip()
    if not texts["token-url"].startswith(("https://", "http://")):
        raise ValueError(f"{where}: token-url must be the token endpoint's http(s) URL")
    if not texts["client-id"]:
        raise ValueError(f"{where}: client-id is missing")
    secret = _secret(table, "client-secret", where, here)
    if not secret:
        raise ValueError(f"{where}: client-secret (or client-secret-file) is missing")
    return OAuth2(
        token_url=texts["token-url"],
        client_id=texts["client-id"],
        client_secret=secret,
        scope=texts["scope"],
        audience=texts["audience"],
    )


def _known(table: Mapping[str, Any], keys: set[str], where: str) -> None:
    unknown = sorted(set(table) - keys)
    if unknown:
        raise ValueError(f"{where}: unknown key {unknown[0]!r}; keys: {', '.join(sorted(keys))}")


def _secret(table: Mapping[str, Any], key: str, where: str, here: Path) -> str | None:
    """``key``'s value, or the first line of the file ``key-file`` names
    (relative to the credentials file); never quoted in an error."""
    value, named = table.get(key), table.get(key + "-file")
    if value is not None and named is not None:
        raise ValueError(f"{where}: give {key} or {key}-file, not both")
    if named is not None:
        if not isinstance(named, str) or not named:
            raise ValueError(f"{where}: {key}-file must be a path")
        try:
            value = (here / named).read_text().strip()
        except OSError as exc:
            raise ValueError(
                f"{where}: {key}-file {named}: can't read it: {exc.strerror}"
            ) from None
        if not value:
            raise ValueError(f"{where}: {key}-file {named} is empty")
        return value
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{where}: {key} must be a non-empty string")
    return value.strip()


class OAuth2Auth(httpx.Auth):
    """httpx auth that sends an OAuth2 client-credentials token, fetched with
    ``fetch`` (an httpx client for the token endpoint), kept until shortly
    before it expires, and fetched again once when a request is answered 401."""

    def __init__(self, grant: OAuth2, fetch: httpx.AsyncClient) -> None:
        self._grant = grant
        self._fetch = fetch
        self._token = ""
        self._until = 0.0
        self._lock = asyncio.Lock()
        self.fetched = 0  # tokens fetched (for tests and metrics)

    async def async_auth_flow(
        self, request: httpx.Request
    ) -> AsyncGenerator[httpx.Request, httpx.Response]:
        token = await self._current(stale="")
        request.headers["Authorization"] = f"Bearer {token}"
        response = yield request
        if response.status_code == 401:  # revoked or expired early: once more, fresh
            await response.aread()
            token = await self._current(stale=token)
            request.headers["Authorization"] = f"Bearer {token}"
            yield request

    async def _current(self, *, stale: str) -> str:
        """The token to send: the one kept, unless it is ``stale`` (refused) or
        about to expire; then a new one."""
        async with self._lock:
            if not self._token or self._token == stale or time.monotonic() >= self._until:
                await self._refresh()
            return self._token

    async def _refresh(self) -> None:
        grant = self._grant
        form = {"grant_type": "client_credentials"}
        if grant.scope:
            form["scope"] = grant.scope
        if grant.audience:
            form["audience"] = grant.audience
        where = f"the OAuth2 token endpoint {grant.token_url}"
        try:
            response = await self._fetch.post(
                grant.token_url, data=form, auth=(grant.client_id, grant.client_secret)
            )
        except httpx.HTTPError as exc:
            raise httpx.RequestError(f"{where} can't be reached: {exc}") from None
        if response.status_code != 200:
            raise httpx.RequestError(
                f"{where} refused client {grant.client_id!r}: HTTP {response.status_code}"
            )
        try:
            answer = response.json()
            token = answer["access_token"]
        except (ValueError, KeyError, TypeError):
            raise httpx.RequestError(f"{where} answered without an access_token") from None
        if not isinstance(token, str) or not token:
            raise httpx.RequestError(f"{where} answered without an access_token")
        lifetime = answer.get("expires_in", DEFAULT_LIFETIME)
        if isinstance(lifetime, bool) or not isinstance(lifetime, int | float):
            lifetime = DEFAULT_LIFETIME
        self._token = token
        self._until = time.monotonic() + max(float(lifetime) - EARLY_SECONDS, 1.0)
        self.fetched += 1


class PassCaller(httpx.Auth):
    """httpx auth that sends the caller's own credential (``caller_credential``:
    the request whose turn makes the call) as ``Authorization: Bearer``; without
    one, ``fallback``'s (OAuth2), or the client's own headers."""

    def __init__(
        self, fallback: httpx.Auth | None = None, *, own_headers: tuple[str, ...] = ()
    ) -> None:
        self._fallback = fallback
        self._own_headers = own_headers  # a2ad's own API key header: not beside the caller's

    async def async_auth_flow(
        self, request: httpx.Request
    ) -> AsyncGenerator[httpx.Request, httpx.Response]:
        token = caller_credential()
        if token is not None or self._fallback is None:
            if token is not None:
                request.headers["Authorization"] = f"Bearer {token}"
                for header in self._own_headers:
                    request.headers.pop(header, None)
            yield request
            return
        flow = self._fallback.async_auth_flow(request)
        request = await flow.__anext__()
        while True:
            response = yield request
            try:
                request = await flow.asend(response)
            except StopAsyncIteration:
                return
