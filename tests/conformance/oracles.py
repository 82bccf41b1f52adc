"""Independent oracles for a2ad's wire output.

* ``validate_03``: the A2A 0.3.0 JSON Schema (tests/data/a2a-v0.3.schema.json).
* ``fields_not_in_1_0``: the keys of a JSON object that the A2A 1.0 proto
  (the copy a2ad keeps, protocol/grpc_schema/a2a_v10.proto, read as text; its test
  checks it is the spec's) does not give its message, recursively.
* ``parse_v1``: the official A2A 1.0 protobuf types (a2a-sdk, test-only dependency),
  parsed with ``ParseDict(ignore_unknown_fields=False)`` after a strictness pass that
  ParseDict lacks (snake_case keys, integer enums, nulls, empty Parts, non-UTC
  timestamps), then checked for REQUIRED fields.
* ``assert_error``: the error shape every a2ad JSON-RPC error must have;
  ``assert_status``: the google.rpc.Status shape of every HTTP+JSON error.
* ``parse_03_rest``: A2A 0.3 over HTTP+JSON, the 0.3 proto's JSON (the a2a-sdk's
  compiled 0.3 proto), parsed with ``ParseDict(ignore_unknown_fields=False)``.
* ``check_grpc_answer``: a 1.0 gRPC answer, as the official SDK's stub decoded it,
  holds no field the 1.0 proto lacks and has its REQUIRED fields;
  ``assert_grpc_error``: a gRPC error's status is the code the spec's table
  (``GRPC_CODES``) gives its ErrorInfo reason, with its google.rpc.Status in the
  ``grpc-status-details-bin`` trailer.

Nothing here imports a2ad: the oracles must not share code with what they check.
"""

from __future__ import annotations

import json
import re
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

import jsonschema
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.json_format import ParseDict, ParseError
from google.protobuf.message import Message as ProtoMessage

__all__ = [
    "A2A_CODES_03",
    "A2A_CODES_10",
    "GRPC_CODES",
    "SCHEMA_03",
    "STANDARD_CODES",
    "StrictnessError",
    "assert_error",
    "assert_grpc_error",
    "assert_status",
    "check_grpc_answer",
    "error_of",
    "fields_not_in_1_0",
    "parse_03_rest",
    "parse_v1",
    "validate_03",
]

DATA = Path(__file__).resolve().parent.parent / "data"
PROTO_1_0 = resources.files("a2ad.protocol.grpc_schema").joinpath("a2a_v10.proto")
SCHEMA_03: dict[str, Any] = json.loads((DATA / "a2a-v0.3.schema.json").read_text())

STANDARD_CODES = frozenset({-32700, -32600, -32601, -32602, -32603})
A2A_CODES_03 = frozenset(range(-32007, -32000))  # -32001..-32007
A2A_CODES_10 = frozenset(range(-32009, -32000))  # -32001..-32009

ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
ERROR_DOMAIN = "a2a-protocol.org"

M = TypeVar("M", bound=ProtoMessage)


# --- A2A 0.3: JSON Schema ---------------------------------------------------


@cache
def _validator_03(definition_name: str) -> jsonschema.protocols.Validator:
    if definition_name not in SCHEMA_03["definitions"]:
        raise KeyError(f"no definition {definition_name!r} in the A2A 0.3 schema")
    # The whole schema is the root, so every "#/definitions/..." $ref resolves in it.
    root = {**SCHEMA_03, "$ref": f"#/definitions/{definition_name}"}
    cls = jsonschema.validators.validator_for(SCHEMA_03)
    cls.check_schema(root)
    return cls(root)


def validate_03(instance: Any, definition_name: str) -> Any:
    """Raise ``jsonschema.ValidationError`` unless ``instance`` is a valid 0.3
    ``definition_name``; returns ``instance`` for chaining."""
    validator = _validator_03(definition_name)
    error = jsonschema.exceptions.best_match(validator.iter_errors(instance))
    if error is not None:
        raise error
    return instance


# --- A2A 1.0: the proto's field names, read from the .proto text -------------

_COMMENT = re.compile(r"//[^\n]*")
_MESSAGE = re.compile(r"\bmessage\s+(\w+)\s*\{")
_FIELD = re.compile(
    r"(?:\b(?:repeated|optional)\s+)?(?:map<\s*\w+\s*,\s*([\w.]+)\s*>|([\w.]+))"
    r"\s+(\w+)\s*=\s*\d+\s*(?:\[([^\]]*)\])?\s*;"
)
_JSON_NAME = re.compile(r'\bjson_name\s*=\s*"([^"]+)"')


class ProtoField(NamedTuple):
    type: str  # the message or scalar type; a map's value type
    is_map: bool


def _lower_camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


@cache
def proto_fields_1_0() -> dict[str, dict[str, ProtoField]]:
    """Each message of the 1.0 proto: its fields by JSON name (``json_name``, else
    the lowerCamelCase of the field name), oneof members included."""
    text = _COMMENT.sub("", PROTO_1_0.read_text())
    messages: dict[str, dict[str, ProtoField]] = {}
    for match in _MESSAGE.finditer(text):
        depth, end = 1, match.end()
        while depth:
            depth += {"{": 1, "}": -1}.get(text[end], 0)
            end += 1
        fields: dict[str, ProtoField] = {}
        for field in _FIELD.finditer(text, match.end(), end - 1):
            map_value, kind, name, options = field.groups()
            json_name = _JSON_NAME.search(options or "")
            key = json_name.group(1) if json_name else _lower_camel(name)
            fields[key] = ProtoField(map_value or kind, map_value is not None)
        messages[match.group(1)] = fields
    return messages


def fields_not_in_1_0(obj: Any, message: str, path: str = "$") -> list[str]:
    """The paths of ``obj``'s keys that the 1.0 ``message`` (and the messages its
    fields hold) lacks; ``google.protobuf.Struct`` values are free JSON."""
    messages = proto_fields_1_0()
    fields = messages[message]
    extra: list[str] = []
    for key, value in obj.items():
        where = f"{path}.{key}"
        field = fields.get(key)
        if field is None:
            extra.append(where)
            continue
        if field.type not in messages:
            continue  # a scalar, an enum, or a well-known type
        if field.is_map:
            items = [(f"{where}.{k}", v) for k, v in value.items()]
        elif isinstance(value, list):
            items = [(f"{where}[{i}]", v) for i, v in enumerate(value)]
        else:
            items = [(where, value)]
        for item_path, item in items:
            extra += fields_not_in_1_0(item, field.type, item_path)
    return extra


# --- A2A 1.0: strict ProtoJSON into the official protobuf types --------------


class StrictnessError(ParseError):
    """Valid for ParseDict, but not the exact ProtoJSON a 1.0 peer must send."""


_FREE_JSON = {"google.protobuf.Struct", "google.protobuf.Value", "google.protobuf.ListValue"}
_TIMESTAMP = "google.protobuf.Timestamp"
_PART = "lf.a2a.v1.Part"
_PART_CONTENT = ("text", "raw", "url", "data")


def _strict_check(obj: Any, desc: Descriptor, path: str, ignore_unknown: bool) -> None:
    if not isinstance(obj, dict):
        raise StrictnessError(
            f"{path}: expected a JSON object for {desc.full_name}, got {type(obj).__name__}"
        )
    by_json = {f.json_name: f for f in desc.fields}
    by_proto = {f.name: f for f in desc.fields}
    for key, value in obj.items():
        field = by_json.get(key)
        where = f"{path}.{key}"
        if field is None:
            if key in by_proto:
                raise StrictnessError(
                    f"{where}: proto field name; ProtoJSON uses {by_proto[key].json_name!r}"
                )
            if ignore_unknown:
                continue
            raise StrictnessError(f"{where}: {desc.full_name} has no field {key!r}")
        _check_field(field, value, where, ignore_unknown)
    if desc.full_name == _PART:
        present = [k for k in _PART_CONTENT if k in obj]
        if len(present) != 1:
            raise StrictnessError(
                f"{path}: a Part needs exactly one of text/raw/url/data, has {present or 'none'}"
            )


def _check_field(field: FieldDescriptor, value: Any, where: str, ignore_unknown: bool) -> None:
    message_type = field.message_type
    type_name = message_type.full_name if message_type is not None else ""
    if value is None:
        # Only a google.protobuf.Value may be JSON null (it means NullValue).
        if type_name != "google.protobuf.Value":
            raise StrictnessError(f"{where}: null is not a value for this field; omit it")
        return
    if message_type is not None and message_type.GetOptions().map_entry:
        if not isinstance(value, dict):
            raise StrictnessError(f"{where}: a map must be a JSON object")
        value_field = message_type.fields_by_name["value"]
        for map_key, map_value in value.items():
            _check_field(value_field, map_value, f"{where}[{map_key!r}]", ignore_unknown)
        return
    if field.is_repeated:
        if not isinstance(value, list):
            raise StrictnessError(f"{where}: a repeated field must be a JSON array")
        items = [(f"{where}[{i}]", item) for i, item in enumerate(value)]
    else:
        items = [(where, value)]
    for item_where, item in items:
        if item is None and type_name != "google.protobuf.Value":
            raise StrictnessError(f"{item_where}: null is not allowed here")
        if field.type == FieldDescriptor.TYPE_ENUM:
            if not isinstance(item, str) or item not in field.enum_type.values_by_name:
                raise StrictnessError(
                    f"{item_where}: enum {field.enum_type.full_name} must be one of its "
                    f"names, got {item!r}"
                )
        elif type_name == _TIMESTAMP:
            if not isinstance(item, str) or not item.endswith("Z"):
                raise StrictnessError(
                    f"{item_where}: a Timestamp must be RFC 3339 UTC ending in 'Z', got {item!r}"
                )
        elif message_type is not None and type_name not in _FREE_JSON:
            _strict_check(item, message_type, item_where, ignore_unknown)


def parse_v1(
    obj: Any,
    message_type: type[M] | M,
    *,
    ignore_unknown_fields: bool = False,
    check_required: bool = True,
) -> M:
    """``obj`` (decoded JSON) strictly parsed as the 1.0 ``message_type``.

    Raises ParseError (StrictnessError for what ParseDict would let through), or
    a2a's InvalidParamsError when a REQUIRED field is missing. For a
    ListTasksResponse the four response fields must be present as keys (the spec
    says so, though ProtoJSON would omit zero values), and REQUIRED fields are
    checked per task rather than on the response (whose REQUIRED marks reject an
    empty list and the "" token the spec demands on the last page)."""
    message = message_type() if isinstance(message_type, type) else message_type
    desc = message.DESCRIPTOR
    _strict_check(obj, desc, desc.name, ignore_unknown_fields)
    ParseDict(obj, message, ignore_unknown_fields=ignore_unknown_fields)
    if check_required:
        if desc.full_name == "lf.a2a.v1.ListTasksResponse":
            missing = {"tasks", "nextPageToken", "pageSize", "totalSize"} - set(obj)
            if missing:
                raise StrictnessError(f"ListTasksResponse lacks {sorted(missing)}")
            for i, task in enumerate(message.tasks):  # type: ignore[attr-defined]
                _require(task, f"ListTasksResponse.tasks[{i}]")
        else:
            _require(message, desc.name)
    return message  # type: ignore[return-value]


def _require(message: ProtoMessage, where: str) -> None:
    from a2a.utils.errors import InvalidParamsError
    from a2a.utils.proto_utils import validate_proto_required_fields

    try:
        validate_proto_required_fields(message)
    except InvalidParamsError as exc:
        raise StrictnessError(f"{where}: REQUIRED fields missing or empty: {exc.data}") from None


# --- errors -------------------------------------------------------------------


def error_of(body: dict[str, Any]) -> dict[str, Any]:
    """The ``error`` member of a JSON-RPC response, failing if it is a result."""
    assert "error" in body, f"expected an error, got {json.dumps(body)[:500]}"
    assert "result" not in body, body
    return body["error"]  # type: ignore[no-any-return]


def assert_error(
    body: dict[str, Any],
    code: int,
    *,
    reason: str | None = None,
    dialect: str = "1.0",
) -> dict[str, Any]:
    """``body`` is a JSON-RPC error response with ``code``, a non-empty message and
    ErrorInfo details; 0.3 bodies are also checked against the 0.3 schema.
    Returns the error object."""
    assert body.get("jsonrpc") == "2.0", body
    assert "id" in body, body
    error = error_of(body)
    assert error.get("code") == code, f"expected code {code}, got {error}"
    assert isinstance(error.get("message"), str) and error["message"].strip(), error
    data = error.get("data")
    assert isinstance(data, list) and data, f"error.data must be a non-empty list: {error}"
    assert all(isinstance(d, dict) and isinstance(d.get("@type"), str) for d in data), data
    info = data[0]
    assert info["@type"] == ERROR_INFO, info
    assert isinstance(info.get("reason"), str) and info["reason"], info
    assert info.get("domain") == ERROR_DOMAIN, info
    if reason is not None:
        assert info["reason"] == reason, info
    if dialect == "0.3":
        validate_03(body, "JSONRPCErrorResponse")
    return error


# --- HTTP+JSON ----------------------------------------------------------------


def parse_03_rest(obj: Any, message_type: type[M]) -> M:
    """``obj`` (decoded JSON) strictly parsed as the A2A 0.3 proto's ``message_type``
    (``a2a.compat.v0_3.a2a_v0_3_pb2``): what 0.3 HTTP+JSON carries."""
    message = message_type()
    ParseDict(obj, message, ignore_unknown_fields=False)
    return message


RPC_CODES = {
    400: {"INVALID_ARGUMENT", "FAILED_PRECONDITION", "OUT_OF_RANGE"},
    404: {"NOT_FOUND"},
    405: {"UNIMPLEMENTED"},
    413: {"INVALID_ARGUMENT"},
    500: {"INTERNAL"},
}


def assert_status(
    status: int, body: dict[str, Any], *, reason: str | None = None
) -> dict[str, Any]:
    """``body`` is a google.rpc.Status error (AIP-193) for HTTP ``status``: code,
    a google.rpc.Code name that fits it, a message, and an ErrorInfo first in
    ``details``. Returns the ErrorInfo."""
    error = body.get("error")
    assert isinstance(error, dict), body
    assert error.get("code") == status, error
    assert error.get("status") in RPC_CODES.get(status, {error.get("status")}), error
    assert isinstance(error.get("message"), str) and error["message"].strip(), error
    details = error.get("details")
    assert isinstance(details, list) and details, error
    info = details[0]
    assert info.get("@type") == ERROR_INFO, info
    assert info.get("domain") == ERROR_DOMAIN, info
    assert isinstance(info.get("reason"), str) and info["reason"], info
    if reason is not None:
        assert info["reason"] == reason, info
    return info  # type: ignore[no-any-return]


# --- gRPC ---------------------------------------------------------------------

# The google.rpc.Code of each ErrorInfo reason: the spec's table (1.0.1 on, NOTES.md
# §3.2) for the A2A errors; for the JSON-RPC ones, the official SDK's mapping; for
# the rest, the canonical code of what the reason says (google/rpc/code.proto).
GRPC_CODES = {
    "TASK_NOT_FOUND": "NOT_FOUND",
    "TASK_NOT_CANCELABLE": "FAILED_PRECONDITION",
    "PUSH_NOTIFICATION_NOT_SUPPORTED": "FAILED_PRECONDITION",
    "UNSUPPORTED_OPERATION": "FAILED_PRECONDITION",
    "CONTENT_TYPE_NOT_SUPPORTED": "INVALID_ARGUMENT",
    "INVALID_AGENT_RESPONSE": "INTERNAL",
    "EXTENDED_AGENT_CARD_NOT_CONFIGURED": "FAILED_PRECONDITION",
    "EXTENSION_SUPPORT_REQUIRED": "FAILED_PRECONDITION",
    "VERSION_NOT_SUPPORTED": "FAILED_PRECONDITION",
    "PARSE_ERROR": "INVALID_ARGUMENT",
    "INVALID_REQUEST": "INVALID_ARGUMENT",
    "INVALID_PARAMS": "INVALID_ARGUMENT",
    "METHOD_NOT_FOUND": "NOT_FOUND",
    "INTERNAL_ERROR": "INTERNAL",
    "UNAUTHENTICATED": "UNAUTHENTICATED",
    "PERMISSION_DENIED": "PERMISSION_DENIED",
    "QUOTA_EXCEEDED": "RESOURCE_EXHAUSTED",
    "SERVER_BUSY": "UNAVAILABLE",
    "NO_WORKER": "UNAVAILABLE",
    "STREAM_READER_FELL_BEHIND": "UNAVAILABLE",
    "TASK_STORE_UNAVAILABLE": "UNAVAILABLE",
}
STATUS_DETAILS = "grpc-status-details-bin"


def assert_grpc_error(
    code: Any, message: str | None, trailers: Any, *, reason: str | None = None
) -> Any:
    """A gRPC error (its ``grpc.StatusCode``, details and trailing metadata) as
    A2A's gRPC binding must send it: a google.rpc.Status in the
    ``grpc-status-details-bin`` trailer with the call's own code and message, an
    ErrorInfo of the A2A domain first in its details (then perhaps a BadRequest
    naming fields), and the code the spec's table gives the ErrorInfo's reason.
    Returns the ErrorInfo."""
    from google.rpc import error_details_pb2, status_pb2

    assert message and message.strip(), f"{code} without a message"
    found = [value for key, value in trailers or () if key == STATUS_DETAILS]
    said = f"{code.name} {message[:300]!r}"
    assert len(found) == 1, f"{said}: not one {STATUS_DETAILS} trailer: {len(found)}"
    status = status_pb2.Status.FromString(found[0])
    assert (status.code, status.message) == (code.value[0], message), (
        f"the call ended {said}, but its trailer's Status says code {status.code}, "
        f"{status.message[:100]!r}"
    )
    assert status.details, f"{said}: a Status without details"
    info = error_details_pb2.ErrorInfo()
    assert status.details[0].Unpack(info), f"{said}: the first detail is not an ErrorInfo"
    assert info.domain == ERROR_DOMAIN and info.reason, f"{said}: {info}"
    for detail in status.details[1:]:
        assert detail.Is(error_details_pb2.BadRequest.DESCRIPTOR), f"{said}: {detail.type_url}"
    assert info.reason in GRPC_CODES, f"{said}: a reason the table lacks: {info.reason}"
    assert code.name == GRPC_CODES[info.reason], f"{said}: the table's code for {info.reason}"
    if reason is not None:
        assert info.reason == reason, info
    return info


def check_grpc_answer(message: ProtoMessage) -> None:
    """A 1.0 gRPC answer, decoded by the official SDK's stub: no field the 1.0
    proto lacks at any depth (an unknown field is one a2ad added), and the
    REQUIRED fields (of each task, for a ListTasksResponse, as parse_v1)."""
    unknown = _unknown_fields(message, message.DESCRIPTOR.name)
    assert not unknown, f"fields the 1.0 proto lacks: {unknown}"
    if message.DESCRIPTOR.full_name == "lf.a2a.v1.ListTasksResponse":
        for i, task in enumerate(message.tasks):  # type: ignore[attr-defined]
            _require(task, f"ListTasksResponse.tasks[{i}]")
    else:
        _require(message, message.DESCRIPTOR.name)


def _unknown_fields(message: ProtoMessage, where: str) -> list[str]:
    from google.protobuf.unknown_fields import UnknownFieldSet

    found = [f"{where}: field {f.field_number}" for f in UnknownFieldSet(message)]
    for field, value in message.ListFields():
        if field.type != FieldDescriptor.TYPE_MESSAGE:
            continue
        if field.message_type.GetOptions().map_entry:
            entry = field.message_type.fields_by_name["value"]
            items = value.values() if entry.type == FieldDescriptor.TYPE_MESSAGE else []
        elif field.is_repeated:
            items = value
        else:
            items = [value]
        for item in items:
            found += _unknown_fields(item, f"{where}.{field.name}")
    return found
