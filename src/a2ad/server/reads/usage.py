"""The token usage report on the wire: a2ad's own method and path, not A2A's.

JSON-RPC ``a2ad/GetUsage`` with params ``{"from", "to", "tenant", "agent",
"groupBy"}`` (every one optional), at the JSON-RPC endpoint whatever the
``A2A-Version``; HTTP ``GET /a2ad/usage?from=&to=&tenant=&agent=&groupBy=agent,day``.
Both answer a ``UsageReport`` (protocol/usage.py) or an error in their
binding's terms; who may ask is engine/usage.py's (docs/protocol.md, "Token
usage").
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl

import msgspec

from ...agent import Caller
from ...engine import Engine
from ...engine.usage import usage_report
from ...protocol.errors import A2AError, InvalidParamsError, InvalidRequestError
from ...protocol.usage import USAGE_METHOD, USAGE_PATH
from .. import audit
from ..errors import error_body, internal_error
from ..types import Scope, Send, caller_of, respond

__all__ = ["UsageEndpoint"]


class UsageParams(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    from_day: str = msgspec.field(name="from", default="")
    to_day: str = msgspec.field(name="to", default="")
    tenant: str | None = None
    agent: str | None = None
    group_by: list[str] = msgspec.field(name="groupBy", default_factory=list)


_decode_params = msgspec.json.Decoder(UsageParams).decode
_encode = msgspec.json.Encoder().encode
_FIELD = re.compile(r"at `\$\.(\w+)")
_QUERY_NAMES = ("from", "to", "tenant", "agent", "groupBy")


class UsageEndpoint:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def rpc(self, params: msgspec.Raw, caller: Caller) -> bytes:
        """The report's JSON for ``a2ad/GetUsage``'s params; raises A2AError."""
        try:
            decoded = _decode_params(params)
        except msgspec.ValidationError as exc:
            found = _FIELD.search(str(exc))
            raise InvalidParamsError(
                f"{USAGE_METHOD}: {exc}", field=found.group(1) if found else None
            ) from None
        return await self._report(decoded, caller)

    async def __call__(self, scope: Scope, send: Send) -> None:
        """``GET /a2ad/usage``."""
        if scope["method"] != "GET":
            error: A2AError = InvalidRequestError(
                f"{scope['method']} {USAGE_PATH}: the usage report takes GET"
            )
            await respond(send, 405, error_body(error, 405), headers=[(b"allow", b"GET")])
            return
        try:
            body = await self._report(_query(scope), caller_of(scope))
        except A2AError as exc:
            audit.refused(caller_of(scope), scope.get("client"), exc, method=f"GET {USAGE_PATH}")
            await respond(send, exc.http_status, error_body(exc))
            return
        except Exception:
            failed = internal_error()  # 503 for a store outage, else 500
            await respond(send, failed.http_status, error_body(failed))
            return
        await respond(send, 200, body)

    async def _report(self, params: UsageParams, caller: Caller) -> bytes:
        report = await usage_report(
            self.engine.store,
            caller,
            clock=self.engine.clock,
            from_day=params.from_day,
            to_day=params.to_day,
            tenant=params.tenant,
            group_by=params.group_by,
            agent=params.agent,
        )
        return _encode(report)


def _query(scope: Scope) -> UsageParams:
    text = scope.get("query_string", b"").decode("latin-1")
    values: dict[str, str] = {}
    for name, value in parse_qsl(text, keep_blank_values=True):
        if name not in _QUERY_NAMES:
            raise InvalidParamsError(
                f"{USAGE_PATH} takes the query parameters {', '.join(_QUERY_NAMES)}, not {name!r}",
                field=name,
            )
        values[name] = value
    group_by = values.get("groupBy", "")
    return UsageParams(
        from_day=values.get("from", ""),
        to_day=values.get("to", ""),
        tenant=values.get("tenant"),
        agent=values.get("agent"),
        group_by=[name.strip() for name in group_by.split(",") if name.strip()],
    )
