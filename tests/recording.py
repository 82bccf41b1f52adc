"""The a2ad app wrapped to note what the ``a2ad`` command sent it: each POST's
A2A-Version header, and a bearer token it may require."""

from __future__ import annotations

from typing import Any

from a2ad import A2AApp


class Recording:
    """The a2ad app, noting each POST's A2A-Version header ("" for 0.3), and
    answering 401 to requests without the bearer token, when one is set."""

    def __init__(self, app: A2AApp, token: str | None = None) -> None:
        self.app = app
        self.engine = app.engine  # LiveServer sets its shutdown grace
        self.token = token
        self.versions: list[str] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = dict(scope["headers"])
            if self.token and headers.get(b"authorization") != f"Bearer {self.token}".encode():
                await send({"type": "http.response.start", "status": 401, "headers": []})
                await send({"type": "http.response.body", "body": b"unauthorized"})
                return
            if scope["method"] == "POST":
                self.versions.append(headers.get(b"a2a-version", b"").decode())
        await self.app(scope, receive, send)
