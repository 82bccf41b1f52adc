"""A JWKS endpoint on a real port, and an identity provider's signing keys,
for the JWT authentication tests.

``Issuer`` holds RSA keys by kid; ``publish`` chooses which of them the JWKS at
``url`` lists (a rotation adds one), and ``token`` signs claims with any of
them. ``fetches`` counts the JWKS requests.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

from .threaded_server import ThreadedServer

ISSUER = "https://idp.example"
AUDIENCE = "a2ad-tests"


class Issuer:
    def __init__(self) -> None:
        self._served = ThreadedServer(self._app, what="the JWKS server", interface="asgi3")
        self.port = self._served.port
        self.url = f"http://127.0.0.1:{self.port}/jwks.json"
        self.keys: dict[str, Any] = {}
        self.published: list[str] = []
        self.fetches = 0
        self._lock = threading.Lock()

    def add_key(self, kid: str, *, curve: bool = False) -> None:
        self.keys[kid] = (
            ec.generate_private_key(ec.SECP256R1())
            if curve
            else rsa.generate_private_key(public_exponent=65537, key_size=2048)
        )

    def publish(self, *kids: str) -> None:
        with self._lock:
            self.published = list(kids)

    def jwks(self) -> dict[str, Any]:
        keys = []
        for kid in self.published:
            private = self.keys[kid]
            if isinstance(private, rsa.RSAPrivateKey):
                jwk = json.loads(RSAAlgorithm.to_jwk(private.public_key()))
                jwk["alg"] = "RS256"
            else:
                jwk = json.loads(ECAlgorithm.to_jwk(private.public_key()))
                jwk["alg"] = "ES256"
            keys.append({**jwk, "kid": kid, "use": "sig"})
        return {"keys": keys}

    def token(
        self,
        kid: str,
        *,
        sub: str = "alice",
        expires_in: float = 600,
        sign_with: str | None = None,
        **claims: Any,
    ) -> str:
        now = int(time.time())
        payload = {"iss": ISSUER, "aud": AUDIENCE, "sub": sub, "iat": now}
        payload["exp"] = now + int(expires_in)
        payload.update(claims)
        payload = {k: v for k, v in payload.items() if v is not None}
        private = self.keys[sign_with or kid]
        alg = "RS256" if isinstance(private, rsa.RSAPrivateKey) else "ES256"
        return jwt.encode(payload, private, algorithm=alg, headers={"kid": kid})

    async def _app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        assert scope["type"] == "http"
        with self._lock:
            self.fetches += 1
            body = json.dumps(self.jwks()).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": body})

    def __enter__(self) -> Issuer:
        self._served.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._served.stop()
