"""An OTLP/HTTP receiver that keeps nothing: where bench/load.py's ``a2ad-tracing``
exports its spans, so that the run measures what tracing costs the server
(making spans, encoding them, sending them) and not a collector's speed.

    .venv/bin/python -m uvicorn --app-dir bench/peers otlp_sink:app --port 4318
"""

from __future__ import annotations

from typing import Any

_HEADERS = [(b"content-type", b"application/x-protobuf"), (b"content-length", b"0")]


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    while (await receive()).get("more_body"):
        pass
    # An empty ExportTraceServiceResponse: everything accepted.
    await send({"type": "http.response.start", "status": 200, "headers": _HEADERS})
    await send({"type": "http.response.body", "body": b""})
