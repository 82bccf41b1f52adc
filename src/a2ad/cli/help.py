"""How ``a2ad … --help`` shows the commands: each option as it is typed, and,
when the help is not read on a terminal, as plain lines that are never wrapped.

Typer names a value by its Python type (``--stream <bool>``, ``--agent
<list[str]>``, ``--url <str>``), which a user can't type: ``--stream true`` is
refused, and a list is the flag given again. Here an option that takes no value
(a flag, ``--stream``, ``--dashboard/--no-dashboard``) shows none, a choice its
choices (``1.0|0.3``), and any other its kind of value (``TEXT``, ``INTEGER``,
``NUMBER``), with "Repeatable." in the help of one that may be given again. An
option that names its own (``DURATION``) keeps it. An argument shows its name
(``TEXT``), required bare and optional in brackets, without a type beside it.

Piped (to a file, ``grep``, a log), the help is click's plain text, one line an
option, instead of typer's boxes drawn at an assumed 80 columns, which cut
defaults and URLs with an ellipsis (``sqlite:///a2ad.d…``).

``Group`` is the ``a2ad`` command's click group: it fixes each command as the
command is found, so a command added later, or loaded lazily, is covered.
"""

from __future__ import annotations

import sys
from typing import Any

from typer.core import TyperGroup

__all__ = ["Group", "as_typed"]

# A line as long as a help paragraph: piped, click wraps nothing.
UNWRAPPED = 1_000_000
_KINDS = {int: "INTEGER", float: "NUMBER", str: "TEXT", bool: "BOOLEAN"}
_FIXED = "_a2ad_as_typed"


class Group(TyperGroup):
    """The ``a2ad`` group: its commands' options shown as typed in ``--help``,
    and, when standard output is not a terminal, plain help and errors, unwrapped."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Its commands as each is looked up (get_command): a group that imports a
        # command's module on its first lookup (cli/lazy.py) imports none here.
        as_typed(self, recurse=False)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = super().get_command(ctx, cmd_name)
        if command is not None:
            as_typed(command, plain=self.rich_markup_mode is None)
        return command

    def main(self, *args: Any, **kwargs: Any) -> Any:
        if not _terminal():
            self.rich_markup_mode = None  # click's plain help and errors
            kwargs.setdefault("terminal_width", UNWRAPPED)
            kwargs.setdefault("max_content_width", UNWRAPPED)
        return super().main(*args, **kwargs)


def as_typed(command: Any, *, plain: bool = False, recurse: bool = True) -> None:
    """Give ``command``'s parameters, and its subcommands' (unless not
    ``recurse``), placeholders a user can type; with ``plain``, their help
    without rich's boxes."""
    if plain and hasattr(command, "rich_markup_mode"):
        command.rich_markup_mode = None
    for param in command.params:
        _fix(param)
    if not getattr(command, _FIXED, False):
        setattr(command, _FIXED, True)
        # --help is made when a context first asks for it, not with the rest.
        make_help_option = command.get_help_option

        def get_help_option(ctx: Any) -> Any:
            option = make_help_option(ctx)
            if option is not None:
                _fix(option)
            return option

        command.get_help_option = get_help_option
    if recurse:
        for sub in getattr(command, "commands", {}).values():
            as_typed(sub, plain=plain)


def _fix(param: Any) -> None:
    if not getattr(param, _FIXED, False):
        setattr(param, _FIXED, True)
        if param.param_type_name == "argument":
            _fix_argument(param)
        elif param.metavar is None:
            _fix_option(param)


def _fix_option(param: Any) -> None:
    param.metavar = "" if param.is_flag else _kind(param)
    if param.multiple and "repeat" not in (param.help or "").lower():
        param.help = f"{param.help or ''} Repeatable.".strip()


def _kind(param: Any) -> str:
    """What a value of the option is, as a user thinks of it."""
    described = getattr(param, "type_descriptor", None)
    if described is None:
        return "TEXT"
    if described.is_choice and described.choices:
        return "|".join(str(getattr(c, "value", c)) for c in described.choices)
    if described.is_path or described.is_file:
        return "PATH"
    annotation = described.annotation
    args = getattr(annotation, "__args__", None)
    if described.is_list and args:
        annotation = args[0]
    return _KINDS.get(annotation, "TEXT")


def _fix_argument(param: Any) -> None:
    if param.metavar is None:
        param.metavar = str(param.name).upper()
    name = str(param.metavar)
    if param.nargs != 1 and not name.endswith("..."):
        name += "..."
    shown = name if param.required else f"[{name}]"
    # Typer prints an argument's Python type beside its name, and a required
    # one in braces ({TEXT}); these replace the two methods on this one object.
    param.display_type_rich = lambda **_: None
    param.get_usage_pieces = lambda ctx: [shown]


def _terminal() -> bool:
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):  # closed, or replaced by something else
        return False
