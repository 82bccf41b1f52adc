"""An HTTP+JSON request as the params JSON its dialect decodes, as JSON-RPC would
carry them: the body's fields, then the path's (``id``, ``tenant``) and the
query's (``historyLength=2`` as the number 2).

Every body of every route, in both versions, is checked here once before
anything else looks at it (``check_body``): it must be UTF-8, JSON, an object, nest at
most ``MAX_BODY_DEPTH`` levels of lists and objects, and hold only numbers a
float or a 4,300-digit integer can hold. What fails is the caller's 400 naming
the problem, so no decoder or key conversion after it meets a body deeper than
Python's stack or a number it cannot read.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any
from urllib.parse import parse_qsl

import msgspec

from ...protocol.dialect import Operation
from ...protocol.errors import InvalidParamsError, InvalidRequestError, JSONParseError
from ...protocol.jsonrpc import check_utf8

__all__ = ["MAX_BODY_DEPTH", "check_body", "query_params", "request_params", "snake"]

# How deep a body may nest lists and objects: above what a request needs (its
# free-form JSON may nest 32 levels, protocol/model.py's MAX_JSON_DEPTH, a few
# levels down), far below what Python's stack holds.
MAX_BODY_DEPTH = 64

_encode = msgspec.json.Encoder().encode
_fields = msgspec.json.Decoder(dict[str, msgspec.Raw]).decode
_whole = msgspec.json.Decoder().decode
_SHOWN = 60  # characters of a value a message repeats


class _Kind(enum.Enum):
    INT = "an integer"
    BOOL = "true or false"
    TEXT = "text"


# The query parameters each operation takes (A2A 1.0 §11.5: camelCase names; the
# proto's snake_case names are accepted too). `A2A-Version` is read apart.
_QUERY: Mapping[Operation, Mapping[str, _Kind]] = MappingProxyType(
    {
        Operation.GET: {"historyLength": _Kind.INT},
        Operation.LIST: {
            "contextId": _Kind.TEXT,
            "status": _Kind.TEXT,
            "pageSize": _Kind.INT,
            "pageToken": _Kind.TEXT,
            "historyLength": _Kind.INT,
            "statusTimestampAfter": _Kind.TEXT,
            "includeArtifacts": _Kind.BOOL,
            "overdue": _Kind.BOOL,  # a2ad extension, as in ListTasks' params
            "statusTimestampBefore": _Kind.TEXT,  # a2ad extension too
        },
        Operation.LIST_PUSH_CONFIGS: {"pageSize": _Kind.INT, "pageToken": _Kind.TEXT},
    }
)
_NO_QUERY: Mapping[str, _Kind] = MappingProxyType({})


def snake(name: str) -> str:
    """``taskId`` as the proto spells it: ``task_id``."""
    return "".join("_" + c.lower() if c.isupper() else c for c in name)


_ALIASES = MappingProxyType(
    {snake(name): name for names in _QUERY.values() for name in names if snake(name) != name}
)


def query_params(query: bytes, label: str, operation: Operation) -> dict[str, Any]:
    """The query's parameters, typed, for the route ``label`` (``GET /tasks``);
    raises InvalidParamsError naming one it does not take or cannot read."""
    text = query.decode("latin-1")
    if not text:
        return {}
    takes = _QUERY.get(operation, _NO_QUERY)
    out: dict[str, Any] = {}
    for raw_name, value in parse_qsl(text, keep_blank_values=True):
        if raw_name == "A2A-Version":
            continue
        name = _ALIASES.get(raw_name, raw_name)
        kind = takes.get(name)
        if kind is None:
            known = ", ".join(takes) if takes else "none"
            raise InvalidParamsError(
                f"{label} has no query parameter `{_cut(raw_name)}` (it takes: {known})",
                field=raw_name[:_SHOWN],
            )
        if name in out:
            raise InvalidParamsError(
                f"{label}: the query parameter `{name}` is given twice; give it once",
                field=name,
            )
        out[name] = _typed(label, raw_name, value, kind)
    return out


def _typed(label: str, name: str, value: str, kind: _Kind) -> Any:
    if kind is _Kind.INT:
        digits = value[1:] if value[:1] == "-" else value
        if digits.isascii() and digits.isdigit() and len(digits) <= 19:
            return int(value)
    elif kind is _Kind.BOOL:
        if value in ("true", "false"):
            return value == "true"
    else:
        return value
    raise InvalidParamsError(
        f"{label}: the query parameter `{name}` must be {kind.value}, not `{_cut(value)}`",
        field=name,
    )


def request_params(
    body: bytes, label: str, path: Mapping[str, str], query: dict[str, Any], *, proto: bool
) -> msgspec.Raw:
    """The request as the params JSON the dialect decodes: the body's fields,
    then the path's and the query's (which must agree with the body's).
    ``proto``: the body may name a field as the proto does (``task_id``)."""
    extra = {**query, **path}
    text = body.strip()
    if not text:
        return msgspec.Raw(_encode(extra) if extra else b"{}")
    check_body(text, label)
    if not extra:
        return msgspec.Raw(text)
    fields = _fields(text)
    for name, value in extra.items():
        encoded = _encode(value)
        # A 1.0 body may name the field as the proto does (`task_id`); taken out
        # here, it does not meet the path's `taskId` as a field given twice.
        for spelled in dict.fromkeys((name, snake(name)) if proto else (name,)):
            given = fields.pop(spelled, None)
            if given is not None and _whole(given) != value:
                raise InvalidParamsError(
                    f"{label}: the body's `{spelled}` {_cut(bytes(given).decode())} differs "
                    f"from the path's or query's {_cut(encoded.decode())}; leave it out of "
                    "the body",
                    field=spelled,
                )
        fields[name] = msgspec.Raw(encoded)
    return msgspec.Raw(_encode(fields))


def check_body(body: bytes, label: str) -> None:
    """Raise JSONParseError, InvalidRequestError (not an object; nested deeper
    than MAX_BODY_DEPTH) or InvalidParamsError (a number out of range, naming the
    field) unless ``body`` is fit for a dialect to decode (``label``: the route,
    for messages)."""
    check_utf8(body)  # msgspec checks only the strings it decodes
    try:
        whole = _whole(body)  # all of it, as no later decoder may fail to
    except RecursionError:
        raise _too_deep(label) from None
    except msgspec.ValidationError:  # the one thing JSON may hold that Python can't
        raise _out_of_range(body, label) from None
    except msgspec.DecodeError as exc:
        raise JSONParseError(f"Invalid JSON body: {exc}") from None
    if not isinstance(whole, dict):
        raise InvalidRequestError(
            f"{label}: the request body must be a JSON object (the request's fields), "
            f"not `{_cut(body.decode())}`"
        )
    if body.count(b"[") + body.count(b"{") > MAX_BODY_DEPTH and _deeper(whole):
        raise _too_deep(label)


def _deeper(value: dict[str, Any]) -> bool:
    """Whether ``value`` nests lists and objects more than MAX_BODY_DEPTH deep
    (``{"a": [1]}`` is 2 deep); walked level by level, containers only."""
    level: list[Any] = [value]
    for _ in range(MAX_BODY_DEPTH):
        level = [
            child
            for container in level
            for child in (container.values() if isinstance(container, dict) else container)
            if isinstance(child, dict | list)
        ]
        if not level:
            return False
    return True


def _too_deep(label: str) -> InvalidRequestError:
    return InvalidRequestError(
        f"{label}: the request body nests lists and objects more than {MAX_BODY_DEPTH} "
        "levels deep; flatten it",
        metadata={"maxDepth": str(MAX_BODY_DEPTH)},
    )


def _out_of_range(body: bytes, label: str) -> InvalidParamsError:
    """The error for a body holding a number Python cannot read, naming the
    first field that holds one."""
    field = "body"
    try:
        for name, raw in _fields(body).items():
            try:
                _whole(raw)
            except msgspec.ValidationError:
                field = name
                break
    except (msgspec.DecodeError, RecursionError):
        pass  # not an object of fields: the body as a whole is named
    return InvalidParamsError(
        f"{label}: `{_cut(field)}` holds a number out of range (past ±1.8e308, or an integer "
        "of more than 4,300 digits); send a smaller number, or the value as text",
        field=field[:_SHOWN],
    )


def _cut(text: str) -> str:
    """``text`` as a message repeats it: at most _SHOWN characters."""
    return text if len(text) <= _SHOWN else text[:_SHOWN] + "..."
