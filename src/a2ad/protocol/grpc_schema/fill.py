"""ProtoJSON values into protobuf messages, quickly: what gRPC answers are made with.

a2ad writes every answer as its dialect's JSON (ProtoJSON, for the gRPC
services' messages); a gRPC answer is that JSON as the rpc's message. protobuf's
``json_format.Parse`` does this in Python, checking every value and parsing
every timestamp with ``strptime``: it was 60% of a gRPC GetTask's cost. The JSON
here is a2ad's own, already valid, so ``fill`` only sets what it names: the
fields of each message type looked up once (by their JSON names), scalars set
as they are, enums by name, messages and lists filled in place, maps, and the
well-known types a2ad sends (Struct, Value, ListValue, Timestamp). A name the
message lacks is passed over, as ``ignore_unknown_fields`` does.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from datetime import datetime
from typing import Any

__all__ = ["fill"]

Setter = Callable[[Any, Any], None]

_SETTERS: dict[Any, dict[str, Setter]] = {}  # by message descriptor: JSON name -> setter


def fill(message: Any, data: dict[str, Any]) -> Any:
    """``message`` with the fields ``data`` (ProtoJSON, as a dict) names set; returns it."""
    setters = _SETTERS.get(message.DESCRIPTOR)
    if setters is None:
        setters = _setters(message.DESCRIPTOR)
    for key, value in data.items():
        setter = setters.get(key)
        if setter is not None and value is not None:
            setter(message, value)
    return message


def _setters(descriptor: Any) -> dict[str, Setter]:
    setters: dict[str, Setter] = {}
    for field in descriptor.fields:
        setter = _setter(field)
        setters[field.json_name] = setters[field.name] = setter
    _SETTERS[descriptor] = setters
    return setters


def _setter(field: Any) -> Setter:
    name = field.name
    if field.message_type is not None and field.message_type.GetOptions().map_entry:
        return _map_setter(name, field.message_type.fields_by_name["value"])
    one = _value_of(field)
    if _repeated(field):
        if field.message_type is not None:
            kind = field.message_type.full_name

            def add_each(message: Any, values: Any) -> None:
                items = getattr(message, name)
                for value in values:
                    _fill_message(items.add(), kind, value)

            return add_each

        def extend(message: Any, values: Any) -> None:
            getattr(message, name).extend(one(value) for value in values)

        return extend
    if field.message_type is not None:
        kind = field.message_type.full_name

        def fill_field(message: Any, value: Any) -> None:
            _fill_message(getattr(message, name), kind, value)

        return fill_field

    def set_scalar(message: Any, value: Any) -> None:
        setattr(message, name, one(value))

    return set_scalar


def _repeated(field: Any) -> bool:
    repeated = getattr(field, "is_repeated", None)  # protobuf 6.31+; ``label`` before
    return bool(repeated) if repeated is not None else field.label == field.LABEL_REPEATED


def _map_setter(name: str, value_field: Any) -> Setter:
    if value_field.message_type is not None:
        kind = value_field.message_type.full_name

        def fill_entries(message: Any, values: Any) -> None:
            entries = getattr(message, name)
            for key, value in values.items():
                _fill_message(entries[key], kind, value)

        return fill_entries
    one = _value_of(value_field)

    def set_entries(message: Any, values: Any) -> None:
        entries = getattr(message, name)
        for key, value in values.items():
            entries[key] = one(value)

    return set_entries


def _value_of(field: Any) -> Callable[[Any], Any]:
    """How one JSON value becomes the field's (for a scalar or an enum field)."""
    if field.enum_type is not None:
        numbers = {value.name: value.number for value in field.enum_type.values}
        return lambda value: numbers[value] if isinstance(value, str) else int(value)
    if field.type == field.TYPE_BYTES:
        return base64.b64decode
    if field.cpp_type in (field.CPPTYPE_INT64, field.CPPTYPE_UINT64):
        return int  # ProtoJSON writes 64-bit integers as strings
    return _same


def _same(value: Any) -> Any:
    return value


def _fill_message(target: Any, kind: str, value: Any) -> None:
    """Fill the message field ``target`` of type ``kind`` from ``value``."""
    if kind == "google.protobuf.Struct":
        target.update(value)
    elif kind == "google.protobuf.Value":
        _set_value(target, value)
    elif kind == "google.protobuf.ListValue":
        target.extend(value)
    elif kind == "google.protobuf.Timestamp":
        target.FromDatetime(datetime.fromisoformat(value))
    elif kind == "google.protobuf.Empty":
        target.SetInParent()
    else:
        target.SetInParent()  # present even when empty, as Parse makes it
        fill(target, value)


def _set_value(target: Any, value: Any) -> None:
    """A ``google.protobuf.Value`` holding the JSON ``value``."""
    if value is None:
        target.null_value = 0
    elif isinstance(value, bool):
        target.bool_value = value
    elif isinstance(value, int | float):
        target.number_value = value
    elif isinstance(value, str):
        target.string_value = value
    elif isinstance(value, dict):
        target.struct_value.update(value)
    else:
        target.list_value.extend(value)
