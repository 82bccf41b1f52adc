"""Python functions as tools an LLM may call: the JSON Schema of each is read
from its signature and docstring once, when the tool is made.

A parameter may be ``int``, ``float``, ``str``, ``bool``, ``list`` (``list[X]``),
``dict`` (``dict[str, X]``), ``X | None`` (``Optional[X]``), a ``Literal`` of
strings or numbers, or an ``Enum`` whose values are those; any other annotation,
a missing one, or ``*args``/``**kwargs`` raises TypeError naming the function and
the parameter. The docstring's first paragraph describes the tool; an ``Args:``
section (``name: what it is`` lines) describes the parameters.

``await tool.call(arguments_json)`` checks the arguments against the schema,
runs the function (a sync one in a worker thread) and returns its result made
JSON-ready. Bad arguments and exceptions raise ToolError, whose message is
meant for the model to read and try again.
"""

from __future__ import annotations

import asyncio
import enum
import inspect
import json
import re
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Union

__all__ = ["Tool", "ToolError", "tool"]

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_SCALARS: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


class ToolError(Exception):
    """A call the tool could not run: bad arguments, or the function raised."""


@dataclass(frozen=True)
class _Param:
    name: str
    annotation: Any
    schema: dict[str, Any]
    required: bool


@dataclass(frozen=True)
class Tool:
    """A function the model may call, with its JSON Schema; make one with ``tool(fn)``."""

    name: str
    description: str
    parameters: dict[str, Any]
    fn: Callable[..., Any] = field(repr=False)
    _params: tuple[_Param, ...] = field(repr=False, default=())

    def spec(self) -> dict[str, Any]:
        """The tool as a chat-completions request lists it."""
        function: dict[str, Any] = {"name": self.name, "parameters": self.parameters}
        if self.description:
            function["description"] = self.description
        return {"type": "function", "function": function}

    async def call(self, arguments: str) -> Any:
        """Run the function with ``arguments`` (JSON text, as the model wrote them)."""
        try:
            given = json.loads(arguments or "{}")
        except ValueError:
            raise ToolError(
                f"{self.name}: the arguments are not JSON: {arguments[:200]!r}"
            ) from None
        if not isinstance(given, dict):
            raise ToolError(f"{self.name}: the arguments must be a JSON object")
        known = {p.name: p for p in self._params}
        unknown = sorted(set(given) - set(known))
        if unknown:
            raise ToolError(f"{self.name}: no parameter {', '.join(unknown)}")
        kwargs: dict[str, Any] = {}
        for param in self._params:
            if param.name not in given:
                if param.required:
                    raise ToolError(f"{self.name}: the parameter {param.name} is required")
                continue
            kwargs[param.name] = _convert(given[param.name], param.annotation, param.name)
        try:
            if inspect.iscoroutinefunction(self.fn):
                result = await self.fn(**kwargs)
            else:
                result = await asyncio.to_thread(self.fn, **kwargs)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            raise ToolError(f"{self.name} failed: {type(exc).__name__}: {exc}") from exc
        return _jsonable(result)


def tool(fn: Callable[..., Any] | Tool) -> Tool:
    """``fn`` as a Tool (a Tool is returned as it is); TypeError for a parameter
    whose type has no JSON Schema here, or a name the chat API refuses."""
    if isinstance(fn, Tool):
        return fn
    if not callable(fn):
        raise TypeError(f"a tool must be a function, not {fn!r}")
    name = getattr(fn, "__name__", "")
    if not _NAME.match(name):
        raise TypeError(f"tool {name!r}: a name is 1 to 64 letters, digits, '_' or '-'")
    try:
        hints = typing.get_type_hints(fn)
    except Exception as exc:
        raise TypeError(f"tool {name}: can't read its type hints: {exc}") from None
    description, documented = _docstring(inspect.getdoc(fn) or "")
    params: list[_Param] = []
    for param in inspect.signature(fn).parameters.values():
        where = f"tool {name}, parameter {param.name}"
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"{where}: *args and **kwargs can't be described to a model")
        if param.name not in hints:
            raise TypeError(f"{where}: give it a type annotation (int, str, list[str], ...)")
        schema = _schema(hints[param.name], where)
        if param.name in documented:
            schema = {**schema, "description": documented[param.name]}
        required = param.default is inspect.Parameter.empty
        params.append(_Param(param.name, hints[param.name], schema, required))
    parameters = {
        "type": "object",
        "properties": {p.name: p.schema for p in params},
        "required": [p.name for p in params if p.required],
    }
    return Tool(name, description, parameters, fn, tuple(params))


def _optional(annotation: Any) -> Any | None:
    """X for ``X | None``/``Optional[X]``; None for anything else."""
    origin = typing.get_origin(annotation)
    if origin is Union or origin is types.UnionType:
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1 and len(typing.get_args(annotation)) == 2:
            return args[0]
    return None


def _schema(annotation: Any, where: str) -> dict[str, Any]:
    if annotation in _SCALARS:
        return {"type": _SCALARS[annotation]}
    inner = _optional(annotation)
    if inner is not None:
        return {"anyOf": [_schema(inner, where), {"type": "null"}]}
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if annotation is list or origin is list:
        return {"type": "array", **({"items": _schema(args[0], where)} if args else {})}
    if annotation is dict or origin is dict:
        if args and args[0] is not str:
            raise TypeError(f"{where}: a dict's keys must be str (JSON objects' keys are)")
        return {
            "type": "object",
            **({"additionalProperties": _schema(args[1], where)} if args else {}),
        }
    if origin is Literal:
        return _enum_schema(list(args), where)
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return _enum_schema([m.value for m in annotation], where)
    raise TypeError(
        f"{where}: {annotation!r} has no JSON Schema here; use int, float, str, bool, list, "
        "dict, Optional, Literal or an Enum"
    )


def _enum_schema(values: list[Any], where: str) -> dict[str, Any]:
    kinds = {_SCALARS.get(type(v)) for v in values}
    if not values or None in kinds or len(kinds) != 1:
        raise TypeError(f"{where}: a Literal or Enum needs values of one type: str, int or float")
    return {"type": kinds.pop(), "enum": values}


def _convert(value: Any, annotation: Any, name: str) -> Any:
    """``value`` checked against ``annotation`` (Enums made from their values)."""
    inner = _optional(annotation)
    if inner is not None:
        return None if value is None else _convert(value, inner, name)
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if annotation is float and type(value) in (int, float):
        return float(value)
    if annotation in _SCALARS:
        if type(value) is annotation:
            return value
    elif annotation is list or origin is list:
        if isinstance(value, list):
            return [_convert(v, args[0], name) for v in value] if args else value
    elif annotation is dict or origin is dict:
        if isinstance(value, dict):
            return {k: _convert(v, args[1], name) for k, v in value.items()} if args else value
    elif origin is Literal:
        if value in args:
            return value
    elif issubclass(annotation, enum.Enum):
        try:
            return annotation(value)
        except ValueError:
            pass
    raise ToolError(f"the parameter {name} can't be {json.dumps(value)[:100]}")


def _jsonable(result: Any) -> Any:
    """``result`` as JSON values: an Enum as its value, anything else JSON has
    no type for as its ``str``."""
    return json.loads(json.dumps(result, default=_plain))


def _plain(value: Any) -> Any:
    return value.value if isinstance(value, enum.Enum) else str(value)


def _docstring(doc: str) -> tuple[str, dict[str, str]]:
    """The description (the first paragraph) and the ``Args:`` lines, by name."""
    description = doc.split("\n\n", 1)[0].strip()
    documented: dict[str, str] = {}
    match = re.search(r"^(?:Args|Arguments|Parameters):\s*\n((?:[ \t]+.*\n?)+)", doc, re.M)
    if match:
        for line in match.group(1).splitlines():
            found = re.match(r"\s+(\w+)\s*(?:\([^)]*\))?\s*:\s*(.+)", line)
            if found:
                documented[found.group(1)] = found.group(2).strip()
    return " ".join(description.split()), documented
