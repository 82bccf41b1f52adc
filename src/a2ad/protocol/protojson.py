"""A2A 1.0 params under the proto's field names too: ``message_id`` as ``messageId``.

ProtoJSON parsers accept a field under its lowerCamelCase JSON name and under
the proto's own (snake_case) name, and a 1.0 request is ProtoJSON, so a client
built on a protobuf library may send either. The wire model (``model.py``) is
msgspec Structs with ``rename="camel"``, and msgspec has no field aliases: so
before a Struct decodes the params, each key that is a field's proto name is
renamed to its JSON name. The rename follows the target type, through nested
messages (a message's parts, a send's configuration, its push config's
authentication), and never into a free-form value (``metadata``, a data part's
``data``, google.protobuf.Struct and Value): those keys are the caller's, and
those values are copied byte for byte (``msgspec.Raw``). A field given under
both names in one object is refused, as ProtoJSON parsers refuse it.

Most clients send camelCase, so the walk runs only when the params hold a key
that looks like snake_case; other params go straight to the decoder. An error
found while decoding names the field as the caller spelled it.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple, TypeVar

import msgspec
import msgspec.inspect as mi

from . import jsonrpc
from .errors import InvalidParamsError

__all__ = ["decode_params"]

T = TypeVar("T")

# The end of a key whose last word follows an underscore: of a proto name, or of
# a free-form key or a text that merely looks like one (then the walk renames
# nothing). Starting at the `_` lets the search skip from underscore to underscore
# (`ROLE_USER` has one, but ends no key).
_SNAKE_KEY = re.compile(rb'_[a-z0-9]*"\s*:')

_object = msgspec.json.Decoder(dict[str, msgspec.Raw]).decode
_array = msgspec.json.Decoder(list[msgspec.Raw]).decode
_encode = msgspec.json.Encoder().encode


class _Field(NamedTuple):
    json_name: str
    node: _Node | None  # None: nothing inside to rename (a scalar or free-form)


class _Message:
    """A Struct: its fields by JSON name and by proto name."""

    __slots__ = ("fields",)

    def __init__(self) -> None:
        self.fields: dict[str, _Field] = {}


class _Repeated(NamedTuple):
    item: _Node


class _Map(NamedTuple):
    value: _Node


_Node = _Message | _Repeated | _Map

_nodes: dict[Any, _Node | None] = {}


def decode_params(raw: msgspec.Raw, type_: type[T], *, method: str) -> T:
    """Params decoded into ``type_`` (``jsonrpc.decode_params``), a field under
    its proto name read as under its JSON name; raises InvalidParamsError naming
    the field as sent, or both names of a field given twice."""
    if _SNAKE_KEY.search(raw) is None:
        return jsonrpc.decode_params(raw, type_, method=method)
    if type_ in _nodes:
        node = _nodes[type_]
    else:
        node = _nodes[type_] = _node(mi.type_info(type_), {})
    if node is None:
        return jsonrpc.decode_params(raw, type_, method=method)
    spelled: dict[str, str] = {}
    try:
        renamed = _rename(raw, node, "", "", spelled, method)
    except RecursionError:  # the decoder says it, in its words
        renamed = raw
    try:
        return jsonrpc.decode_params(renamed, type_, method=method)
    except InvalidParamsError as exc:
        if spelled and exc.field:
            raise _as_sent(exc, spelled) from None
        raise


def _node(info: mi.Type, seen: dict[type, _Message]) -> _Node | None:
    if isinstance(info, mi.StructType):
        if info.cls in seen:  # a recursive type
            return seen[info.cls]
        message = seen[info.cls] = _Message()
        for f in info.fields:
            field = _Field(f.encode_name, _node(f.type, seen))
            message.fields[f.encode_name] = field
            message.fields[f.name] = field
        return message
    if isinstance(info, mi.ListType | mi.VarTupleType | mi.SetType | mi.FrozenSetType):
        item = _node(info.item_type, seen)
        return None if item is None else _Repeated(item)
    if isinstance(info, mi.DictType):  # free-form keys; only Struct values are walked
        value = _node(info.value_type, seen)
        return None if value is None else _Map(value)
    if isinstance(info, mi.UnionType):
        inside = [n for n in (_node(t, seen) for t in info.types) if n is not None]
        return inside[0] if len(inside) == 1 else None
    if isinstance(info, mi.Metadata):
        return _node(info.type, seen)
    return None  # scalars, enums, Any (google.protobuf.Value)


def _rename(
    raw: msgspec.Raw, node: _Node, path: str, as_sent: str, spelled: dict[str, str], method: str
) -> msgspec.Raw:
    """``raw`` with ``node``'s proto names as JSON names (``raw`` itself if none
    was); a value not of the expected shape is left for the decoder to refuse.
    ``path`` is where ``raw`` is in JSON names, ``as_sent`` in the caller's;
    ``spelled`` gets both for each renamed field."""
    changed = False
    if isinstance(node, _Repeated):
        try:
            items = _array(raw)
        except msgspec.DecodeError:
            return raw
        for i, item in enumerate(items):
            new = _rename(item, node.item, f"{path}[{i}]", f"{as_sent}[{i}]", spelled, method)
            if new is not item:
                items[i], changed = new, True
        return msgspec.Raw(_encode(items)) if changed else raw
    try:
        fields = _object(raw)
    except msgspec.DecodeError:
        return raw
    out: dict[str, msgspec.Raw] = {}
    at, at_sent = (f"{path}.", f"{as_sent}.") if path else ("", "")
    for key, value in fields.items():
        if isinstance(node, _Map):
            field = _Field(key, node.value)
        else:
            found = node.fields.get(key)
            if found is None:  # unknown: skipped by the decoder, as ProtoJSON does
                out[key] = value
                continue
            field = found
        name = field.json_name
        if name != key:
            if name in fields:
                raise InvalidParamsError(
                    f"Invalid params for {method}: `{at_sent}{name}` and `{at_sent}{key}` "
                    f"are the same field (its JSON and proto names); send it once",
                    field=f"{at}{name}",
                )
            spelled[f"{at}{name}"] = f"{at_sent}{key}"
            changed = True
        if field.node is not None:
            new = _rename(value, field.node, f"{at}{name}", f"{at_sent}{key}", spelled, method)
            if new is not value:
                value, changed = new, True
        out[name] = value
    return msgspec.Raw(_encode(out)) if changed else raw


def _as_sent(error: InvalidParamsError, spelled: dict[str, str]) -> InvalidParamsError:
    """``error`` naming its field as the caller spelled it: the longest renamed
    path that starts its field, in the caller's spelling."""
    field = error.field or ""
    best = ""
    for path in spelled:
        if len(path) > len(best) and (field == path or field.startswith((f"{path}.", f"{path}["))):
            best = path
    if not best:
        return error
    sent = spelled[best]
    message = re.sub(rf"`params\.{re.escape(best)}(?=[.\[`])", f"`params.{sent}", error.message)
    return InvalidParamsError(
        message, metadata=error.metadata or None, field=sent + field[len(best) :]
    )
