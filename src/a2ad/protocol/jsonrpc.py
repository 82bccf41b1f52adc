"""The JSON-RPC 2.0 envelope: decode a request, encode a result or an error.

Params stay raw (``msgspec.Raw``) until the method is known, so each method
decodes them once, straight into its own typed request. A request without an
``id`` is a notification, which the server does not answer (docs/protocol.md).
"""

from __future__ import annotations

import re
from typing import Any, Literal, TypeVar

import msgspec
from msgspec import UNSET, UnsetType

from .errors import A2AError, InvalidParamsError, InvalidRequestError, JSONParseError

__all__ = [
    "Request",
    "RequestId",
    "decode_params",
    "decode_request",
    "encode_error",
    "encode_result",
    "readable_id",
]

RequestId = str | int | float | None
T = TypeVar("T")

_encode = msgspec.json.Encoder().encode
_EMPTY_PARAMS = msgspec.Raw(b"{}")


class Request(msgspec.Struct):
    jsonrpc: Literal["2.0"]
    method: str
    id: RequestId | UnsetType = UNSET  # UNSET: a notification
    params: msgspec.Raw = _EMPTY_PARAMS


class _IdOnly(msgspec.Struct):
    id: Any = None


_request_decoder = msgspec.json.Decoder(Request)
_id_decoder = msgspec.json.Decoder(_IdOnly)


def decode_request(body: bytes) -> Request:
    """The request envelope (``id`` UNSET for a notification); raises
    JSONParseError (not JSON, or not UTF-8) or InvalidRequestError."""
    # msgspec checks UTF-8 only in the strings it decodes, not in the params it
    # keeps raw nor in fields it skips; the whole body must be UTF-8 (RFC 8259 §8.1).
    check_utf8(body)
    try:
        request = _request_decoder.decode(body)
    except msgspec.ValidationError as exc:
        raise InvalidRequestError(
            f"Invalid JSON-RPC request: {_readable(str(exc), 'request')}. "
            'Send one object like {"jsonrpc": "2.0", "id": 1, "method": "...", "params": {...}}'
        ) from None
    except msgspec.DecodeError as exc:
        raise JSONParseError(f"Invalid JSON payload: {exc}") from None
    except RecursionError:
        raise InvalidRequestError(_TOO_DEEP) from None
    return request


def check_utf8(body: bytes) -> None:
    """Raise JSONParseError unless ``body`` is UTF-8 (ASCII passes at once)."""
    if body.isascii():
        return
    try:
        body.decode()
    except UnicodeDecodeError as exc:
        raise JSONParseError(
            f"Invalid JSON payload: byte 0x{body[exc.start]:02x} at offset {exc.start} is not "
            "valid UTF-8; send the body as UTF-8"
        ) from None


def readable_id(body: bytes) -> RequestId:
    """The ``id`` of a body that is not a valid request, for its error response:
    the id if the body is a JSON object whose ``id`` is a string or a number,
    else None (JSON-RPC 2.0 §5: null when the id cannot be read)."""
    try:
        found = _id_decoder.decode(body).id
    except (msgspec.DecodeError, RecursionError):
        return None
    if isinstance(found, bool) or not isinstance(found, str | int | float):
        return None
    return found


_TOO_DEEP = "the JSON is nested too deeply to process; flatten it"

_decoders: dict[type[Any], msgspec.json.Decoder[Any]] = {}
_MISSING = re.compile(r"missing required field `([^`]+)`")
_AT = re.compile(r" - at `\$\.?([^`]*)`")


def decode_params(raw: msgspec.Raw, type_: type[T], *, method: str) -> T:
    """Params decoded into ``type_``; raises InvalidParamsError naming the field."""
    decoder = _decoders.get(type_)
    if decoder is None:
        decoder = _decoders[type_] = msgspec.json.Decoder(type_)
    try:
        return decoder.decode(raw)  # type: ignore[no-any-return]
    except msgspec.ValidationError as exc:
        text = str(exc)
        raise InvalidParamsError(
            f"Invalid params for {method}: {_readable(text, 'params')}",
            field=_field_of(text),
        ) from None
    except msgspec.DecodeError as exc:  # params are Raw slices of valid JSON
        raise InvalidParamsError(f"Invalid params for {method}: {exc}") from None
    except RecursionError:
        raise InvalidParamsError(f"Invalid params for {method}: {_TOO_DEEP}") from None


def _field_of(text: str) -> str:
    at = _AT.search(text)
    path = at.group(1) if at else ""
    missing = _MISSING.search(text)
    if missing:
        path = f"{path}.{missing.group(1)}" if path else missing.group(1)
    return path or "params"


def _readable(text: str, root: str) -> str:
    return text.replace("`$.", f"`{root}.").replace("`$`", f"`{root}`").replace("`$[", f"`{root}[")


def encode_result(request_id: RequestId, result: bytes) -> bytes:
    """A success response around an already-encoded result."""
    return b'{"jsonrpc":"2.0","id":%s,"result":%s}' % (_encode(request_id), result)


def encode_error(request_id: RequestId, error: A2AError) -> bytes:
    body = {"code": error.code, "message": error.message, "data": error.details()}
    return b'{"jsonrpc":"2.0","id":%s,"error":%s}' % (_encode(request_id), _encode(body))
