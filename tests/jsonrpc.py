"""JSON-RPC 2.0 as the tests speak it to a2ad over HTTP: the request body
(``rpc_body``), the answer a response carries (``answer``, for a response of an
``httpx.Client`` or an ``httpx.AsyncClient``), and ``call``, which posts a request
with an ``httpx.AsyncClient`` and returns its answer (``result`` or ``error``) as
parsed JSON. A JSON-RPC answer, an error included, comes with HTTP 200; a test
that expects another status reads the response itself."""

from __future__ import annotations

from typing import Any

import httpx


def rpc_body(method: str, params: Any, request_id: int | str = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def answer(r: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC answer a response carries, which must come with HTTP 200."""
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


async def call(
    http: httpx.AsyncClient,
    method: str,
    params: Any,
    *,
    url: str = "/",
    headers: dict[str, str] | None = None,
    request_id: int | str = 1,
) -> dict[str, Any]:
    """``method`` posted to ``url`` (a path on the client's base URL, or a whole URL)."""
    body = rpc_body(method, params, request_id)
    return answer(await http.post(url, json=body, headers=headers or {}))
