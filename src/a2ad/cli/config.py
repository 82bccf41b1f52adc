"""One configuration file and ``A2AD_*`` environment variables for ``a2ad serve``
and ``a2ad worker``, and ``a2ad config show``.

Nothing here knows a flag by name. ``ConfiguredCommand`` is the click command
class of both commands: it gives every option the environment variable
``A2AD_<FLAG>`` (unless the option names its own), adds ``--config FILE``
(``$A2AD_CONFIG``), and before click reads the options it loads the file into
click's ``default_map``. Click itself then gives the precedence: a flag, else
its environment variable, else the file, else the default. A flag added to
either command later is covered with no work here.

The file is flat TOML, one key per flag: the flag's name without its dashes
(``max-tasks = 100``). One file may serve both commands: each reads its own
keys and passes over the other's (``worker`` skips ``port``). A key written
with underscores is refused with the right spelling: one spelling, so ``grep``
finds a key and a file never holds the same setting twice. Every value from
the file or the environment is checked here, before the server starts, and a
bad one is an error (exit 2) naming the file and line, or the variable.
"""

from __future__ import annotations

import difflib
import json
import math
import os
import re
import tomllib
from dataclasses import dataclass, field
from typing import Annotated, Any, get_args, get_origin

import typer
from rich.markup import escape
from typer.core import TyperCommand

from ..durations import parse_optional_duration
from ..url_secrets import MASK, mask_url
from .terminal import make_console

__all__ = [
    "DURATION",
    "ENV_AGENTS",
    "ENV_CONFIG",
    "ConfiguredCommand",
    "config_app",
    "env_name",
    "key_name",
    "masked",
]

ENV_CONFIG = "A2AD_CONFIG"
# --agent's variable: A2AD_AGENT already names, for the client commands (send,
# tasks, card), which agent of a server to talk to. Several specs, space-separated.
ENV_AGENTS = "A2AD_AGENTS"
# Given as an option's metavar, this marks its text value as a duration: the file
# may then hold "10s" or a number of seconds, and a malformed one is refused here.
DURATION = "DURATION"
# A value is a secret, and `config show` masks it, when its key's last word is one
# of these (--api-key, --token, --db-password). A key *file* (--secret-key-file,
# --auth FILE) is a path and is shown. A password in any URL is masked too.
SECRET_WORDS = frozenset({"key", "token", "secret", "password", "passwd"})
_META = "a2ad.config"

console = make_console(stderr=True)


class ConfigError(Exception):
    """A configuration file, key, value or environment variable that can't be used."""


def key_name(param: Any) -> str:
    """The file key of an option: its long flag without the dashes."""
    long = [o for o in param.opts if o.startswith("--")]
    return long[0][2:] if long else str(param.name).replace("_", "-")


def env_name(param: Any) -> str:
    return "A2AD_" + key_name(param).upper().replace("-", "_")


@dataclass
class Provenance:
    """Where ``--config`` came from and on which line of it each key is."""

    path: str | None = None
    lines: dict[str, int] = field(default_factory=dict)


class ConfiguredCommand(TyperCommand):
    """A typer command whose options may also come from ``A2AD_*`` variables and
    from a TOML file named by ``--config`` (see the module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for param in self.options():
            if param.envvar is None:
                param.envvar = env_name(param)
        self.params.insert(0, _config_option())

    def options(self) -> list[Any]:
        """The command's own options (not --help, not --config)."""
        return [
            p
            for p in self.params
            if p.param_type_name == "option" and p.expose_value and p.name != "config"
        ]

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        asks_help = any(a in ctx.help_option_names for a in args)
        if not ctx.resilient_parsing and not asks_help:
            try:
                self._configure(ctx, args)
            except ConfigError as exc:
                console.print(f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True)
                raise typer.Exit(2) from None
        return super().parse_args(ctx, args)

    def _configure(self, ctx: Any, args: list[str]) -> None:
        # The command line parsed once ahead of click, to learn --config and which
        # options it gives (their environment variables are then not read).
        opts, _, _ = self.make_parser(ctx).parse_args(args=list(args))
        path = opts.get("config") or os.environ.get(ENV_CONFIG) or None
        named = "--config" if opts.get("config") else ENV_CONFIG
        provenance = Provenance(path=path)
        if path is not None:
            values, provenance.lines = _load(path, named, self, ctx)
            ctx.default_map = {**(ctx.default_map or {}), **values}
        for param in self.options():
            if opts.get(param.name) is not None or not isinstance(param.envvar, str):
                continue
            raw = param.value_from_envvar(ctx)
            if raw is None:
                continue
            try:
                _check(param, ctx, raw)
            except ValueError as exc:
                shown = os.environ.get(param.envvar, "")
                raise ConfigError(f"{param.envvar}={shown!r}: {exc}") from None
        ctx.meta[_META] = provenance


def _config_option() -> Any:
    # Made by typer from a signature, as serve's own options are, so that it
    # prints in --help as they do.
    options = typer.Typer()

    @options.command()
    def _(
        config: Annotated[
            str | None,
            typer.Option(
                envvar=ENV_CONFIG,
                expose_value=False,
                help="Read options from this TOML file (keys are the flags without dashes, "
                "e.g. port = 8000); a flag or an A2AD_* variable overrides it.",
            ),
        ] = None,
    ) -> None:
        """Unused: only its option is taken."""

    (option,) = [p for p in typer.main.get_command(options).params if p.name == "config"]
    return option


# --- the file ---


def _load(
    path: str, named: str, command: ConfiguredCommand, ctx: Any
) -> tuple[dict[str, Any], dict[str, int]]:
    """The file's values by option name (checked), and each key's line."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as exc:
        raise ConfigError(
            f"{named} {path}: can't read the configuration file: {exc.strerror or exc}"
        ) from None
    try:
        text = raw.decode("utf-8")
        settings = tomllib.loads(text)
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text ({exc.reason})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    lines = _key_lines(text)
    by_key = {key_name(p): p for p in command.options()}
    negated = {
        o[2:]: key_name(p) for p in command.options() for o in p.secondary_opts if o[:2] == "--"
    }
    values: dict[str, Any] = {}
    kept: dict[str, int] = {}
    for key, value in settings.items():
        where = f"{path}:{lines.get(key, 1)}"
        param = by_key.get(key)
        if param is None and key in _siblings_keys(command, ctx):
            continue  # one file may configure serve and worker: each reads its own keys
        if param is None:
            raise ConfigError(f"{where}: {_unknown(key, settings, by_key, negated, lines)}")
        try:
            values[param.name] = _file_value(param, value, ctx)
        except ValueError as exc:
            raise ConfigError(f"{where}: {key} = {_toml(value)}: {exc}") from None
        kept[key] = lines.get(key, 1)
    return values, kept


def _siblings_keys(command: ConfiguredCommand, ctx: Any) -> set[str]:
    """The keys of the other commands of this class (serve's, for worker)."""
    root = ctx.find_root()
    commands = getattr(root.command, "commands", {})
    return {
        key_name(p)
        for other in commands.values()
        if isinstance(other, ConfiguredCommand) and other is not command
        for p in other.options()
    }


def _unknown(
    key: str,
    settings: dict[str, Any],
    by_key: dict[str, Any],
    negated: dict[str, str],
    lines: dict[str, int],
) -> str:
    dashed = key.replace("_", "-")
    if dashed != key and dashed in by_key:
        if dashed in settings:
            return f"{key} is {dashed} (line {lines.get(dashed, '?')}) again; keep one"
        return f"write {dashed}, not {key}: keys are the flags' names, with dashes"
    if isinstance(settings[key], dict):
        return f"[{key}]: the file is flat, one key per flag, with no tables"
    if key == "config":
        return "config: a configuration file can't name another one"
    if key in negated:
        return f"write {negated[key]} = false, not {key} = true"
    close = difflib.get_close_matches(dashed, list(by_key), n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return f"unknown key {key!r}{hint}; the keys are the command's flags without the dashes"


_KEY = re.compile(r"""\s*(?:"([^"]*)"|'([^']*)'|([A-Za-z0-9_-]+))\s*[=.]""")
_TABLE = re.compile(r"""\s*\[+\s*(?:"([^"]*)"|'([^']*)'|([A-Za-z0-9_-]+))""")


def _key_lines(text: str) -> dict[str, int]:
    """The line (1-based) of each top-level key: tomllib keeps no positions."""
    lines: dict[str, int] = {}
    in_table = False
    for number, line in enumerate(text.splitlines(), 1):
        table = _TABLE.match(line)
        if table is not None:
            in_table = True
            lines.setdefault(next(g for g in table.groups() if g is not None), number)
            continue
        match = None if in_table else _KEY.match(line)
        if match is not None:
            lines.setdefault(next(g for g in match.groups() if g is not None), number)
    return lines


def _file_value(param: Any, value: Any, ctx: Any) -> Any:
    """``value`` as the option takes it, or ValueError saying what is wrong.
    TOML's own types must match the option's: a port is 8000, not "8000"."""
    if param.multiple:
        if isinstance(value, dict):  # agent = { stock = "pkg.stock", news = "pkg.news" }
            value = [f"{k}={v}" for k, v in value.items()]
        elif not isinstance(value, list):
            value = [value]
        items = [_scalar(param, item) for item in value]
        _check(param, ctx, items)
        return items
    checked = _scalar(param, value)
    _check(param, ctx, checked)
    return checked


def _scalar(param: Any, value: Any) -> Any:
    annotation = _annotation(param)
    wanted: tuple[type, ...] | None = {
        bool: (bool,),
        int: (int,),
        float: (int, float),
        str: (str,),
    }.get(annotation)
    if param.metavar == DURATION and isinstance(value, int | float) and not isinstance(value, bool):
        return f"{value:g}s"
    if wanted is not None and (
        not isinstance(value, wanted) or (annotation is not bool and isinstance(value, bool))
    ):
        return _wrong_type(annotation, value)
    return value


def _wrong_type(annotation: type, value: Any) -> Any:
    said = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}
    got = type(value).__name__
    got = {"str": "a string", "bool": "a boolean", "int": "an integer", "float": "a number"}.get(
        got, f"a TOML {got}"
    )
    raise ValueError(f"give {said[annotation]}, not {got}")


def _toml(value: Any) -> str:
    """``value`` as TOML writes it: what `config show` prints is a file's line."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else f"{'-' if value < 0 else ''}inf"
    if isinstance(value, list):
        return "[" + ", ".join(map(_toml, value)) + "]"
    if isinstance(value, str):
        # JSON's escapes are TOML's, but for DEL, which TOML wants escaped too.
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    return json.dumps(value, default=str)


def _annotation(param: Any) -> Any:
    annotation = getattr(getattr(param, "type_descriptor", None), "annotation", None)
    if get_origin(annotation) is list:
        (annotation,) = get_args(annotation)
    return annotation


def _check(param: Any, ctx: Any, value: Any) -> None:
    """Raise ValueError unless the option takes ``value`` (its type, its range,
    and, for a duration, the form of one)."""
    try:
        param.process_value(ctx, value)
    except typer.BadParameter as exc:
        raise ValueError(_said(exc.message)) from None
    if param.metavar == DURATION:
        for text in value if isinstance(value, list | tuple) else [value]:
            parse_optional_duration(str(text))


def _said(message: str) -> str:
    # typer checks with pydantic, whose messages start "Input should be ...".
    return message[:1].lower() + message[1:] if message.startswith("Input ") else message


# --- a2ad config show ---


config_app = typer.Typer(
    name="config", help="The configuration `a2ad serve` would run with.", no_args_is_help=True
)


@config_app.command(
    "show", context_settings={"allow_extra_args": True, "ignore_unknown_options": True}
)
def show(
    ctx: typer.Context,
    config: Annotated[
        str | None,
        typer.Option(
            help=f"The configuration file, as `a2ad serve --config`. Default: ${ENV_CONFIG}."
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON, for machines.")] = False,
) -> None:
    """Print each option `a2ad serve` would use, its value, and where it came from
    (a flag, an A2AD_* variable, FILE:LINE, or the default); secrets masked.
    Any `a2ad serve` flags after these are taken as `serve` would take them."""
    root = ctx.find_root()
    serve = root.command.get_command(root, "serve")  # type: ignore[attr-defined]
    assert isinstance(serve, ConfiguredCommand)
    args = [*(["--config", config] if config else []), *ctx.args]
    served = serve.make_context("serve", args, parent=root)
    provenance: Provenance = served.meta.get(_META, Provenance())
    entries = {}
    for param in serve.options():
        key = key_name(param)
        source = served.get_parameter_source(param.name)
        origin = source.name if source is not None else "DEFAULT"
        entry: dict[str, Any] = {"value": masked(key, _plain(served.params.get(param.name)))}
        if origin == "COMMANDLINE":
            entry |= {"source": "flag", "flag": param.opts[0]}
        elif origin == "ENVIRONMENT":
            entry |= {"source": "env", "env": param.envvar}
        elif origin == "DEFAULT_MAP":
            entry |= {"source": "file", "file": provenance.path, "line": provenance.lines[key]}
        else:
            entry |= {"source": "default"}
        entries[key] = entry
    if as_json:
        typer.echo(json.dumps({"config": provenance.path, "options": entries}, indent=2))
        return
    typer.echo(f"# a2ad serve, configuration file: {provenance.path or 'none'}")
    width = max(len(k) for k in entries)
    for key, entry in entries.items():
        if entry["value"] is None:  # TOML has no null: a file leaves the key out
            typer.echo(f"# {key} (not set)  # {_origin(entry)}")
        else:
            typer.echo(f"{key:<{width}} = {_toml(entry['value'])}  # {_origin(entry)}")


def _origin(entry: dict[str, Any]) -> str:
    source = entry["source"]
    if source == "flag":
        return f"flag {entry['flag']}"
    if source == "env":
        return f"env {entry['env']}"
    if source == "file":
        return f"{entry['file']}:{entry['line']}"
    return "default"


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return list(value)
    return value


def masked(key: str, value: Any) -> Any:
    """``value`` as `config show` prints it: a secret's (by the key's last word,
    see SECRET_WORDS) as ***, and any URL's password as ***."""
    if value is None or value == [] or value == "":
        return value
    if key.rsplit("-", 1)[-1] in SECRET_WORDS:
        return MASK
    if isinstance(value, str):
        return mask_url(value, _secret)
    if isinstance(value, list):
        return [mask_url(v, _secret) if isinstance(v, str) else v for v in value]
    return value


def _secret(name: str) -> bool:
    """A URL parameter named like a secret: by its last word, or a password in
    one word (PostgreSQL's ``sslpassword``)."""
    last = re.split(r"[-_]", name.lower())[-1]
    return last in SECRET_WORDS or last.endswith(("password", "passwd"))
