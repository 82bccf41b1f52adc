"""Commands whose module is imported only when they are asked for.

The ``a2ad`` group knows every command's name from the start (for the
suggestion on a mistyped one, and for ``--help``) but imports a command's
module the first time that command is looked up. ``a2ad tasks list`` and
``a2ad send`` then start without the server, the engine and the stores, which
only ``serve``, ``worker`` and ``demo`` import (docs/performance.md, "CLI
start-up"). ``a2ad --help`` still imports every command: it shows each one's
help.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any, ClassVar

import typer
import typer.main
from typer.core import TyperCommand, TyperGroup

__all__ = ["Lazy", "LazyGroup"]


@dataclass(frozen=True)
class Lazy:
    """Where a command lives: ``attribute`` of the module ``module`` of
    ``a2ad.cli``, either a function (one command) or a ``typer.Typer`` (a group
    of commands). ``cls``: the function's command class, as ``"module:attribute"``
    (imported with it), when it is not typer's own."""

    module: str
    attribute: str
    cls: str | None = None


def _imported(module: str, attribute: str) -> Any:
    return getattr(importlib.import_module(f".{module}", __package__), attribute)


class _Commands(MutableMapping[str, Any]):
    """A group's commands by name (click commands; typer's own click has no public
    name for their type): each in ``lazy`` is built on its first lookup."""

    def __init__(self, built: MutableMapping[str, Any], lazy: Mapping[str, Lazy], group: LazyGroup):
        self._built = built
        self._lazy = lazy
        self._group = group

    def __getitem__(self, name: str) -> Any:
        if name not in self._built:
            if name not in self._lazy:
                raise KeyError(name)
            self._built[name] = self._group.build(name, self._lazy[name])
        return self._built[name]

    def __setitem__(self, name: str, command: Any) -> None:
        self._built[name] = command

    def __delitem__(self, name: str) -> None:
        raise TypeError(f"the command '{name}' cannot be removed")

    def __iter__(self) -> Iterator[str]:
        yield from self._lazy
        yield from (name for name in self._built if name not in self._lazy)

    def __len__(self) -> int:
        return len(self._lazy.keys() | self._built.keys())


class LazyGroup(TyperGroup):
    """A typer group (``typer.Typer(cls=...)``) whose subclass names its commands in
    ``lazy``, in the order ``--help`` lists them."""

    lazy: ClassVar[Mapping[str, Lazy]] = {}

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.commands = _Commands(self.commands, self.lazy, self)

    def build(self, name: str, where: Lazy) -> Any:
        """The click command (or group) for ``name``, its module imported now."""
        target = _imported(where.module, where.attribute)
        if isinstance(target, typer.Typer):
            return typer.main.get_group(target)
        cls: type[TyperCommand] | None = None
        if where.cls is not None:
            cls = _imported(*where.cls.split(":"))
        one = typer.Typer(add_completion=False, rich_markup_mode=self.rich_markup_mode)
        one.command(name, cls=cls)(target)
        return typer.main.get_command(one)
