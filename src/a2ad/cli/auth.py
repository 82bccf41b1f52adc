"""``a2ad auth add-key``: make an API key and add its hash to a keys file.

The key goes to stdout, alone, once (``KEY=$(a2ad auth add-key ...)``); what
was done goes to stderr. The file keeps the key's SHA-256, never the key.
"""

from __future__ import annotations

import os
from typing import Annotated

import typer
from rich.markup import escape

from ..server.auth import KeyFileError, add_key
from .terminal import make_console

__all__ = ["ENV_AUTH_FILE", "auth_app"]

ENV_AUTH_FILE = "A2AD_AUTH_FILE"
DEFAULT_KEYS_FILE = "keys.toml"

console = make_console(stderr=True)

auth_app = typer.Typer(
    name="auth",
    help="Manage who may call `a2ad serve --auth`: API keys in a keys file.",
    no_args_is_help=True,
)


@auth_app.command("add-key")
def add_key_command(
    principal: Annotated[
        str, typer.Option(help="Whom the key is for: the caller's name (its tasks are its own).")
    ],
    tenant: Annotated[
        list[str] | None,
        typer.Option(
            help="A tenant the key may use (repeat for more; the first is its default). "
            "None: the default tenant only."
        ),
    ] = None,
    role: Annotated[
        list[str] | None,
        typer.Option(help="A role, such as 'operator' (sees every task of its tenants)."),
    ] = None,
    file: Annotated[
        str | None,
        typer.Option(
            help=f"The keys file (TOML), created with mode 0600 if missing. "
            f"Default: ${ENV_AUTH_FILE}, else {DEFAULT_KEYS_FILE}."
        ),
    ] = None,
) -> None:
    """Make a new API key for PRINCIPAL: print it once, store only its hash."""
    path = file or os.environ.get(ENV_AUTH_FILE) or DEFAULT_KEYS_FILE
    try:
        key = add_key(path, principal, tenants=tenant or (), roles=role or ())
    except (KeyFileError, ValueError) as exc:
        console.print(f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True)
        raise typer.Exit(2) from None
    except OSError as exc:
        said = f"can't write the keys file {path}: {exc.strerror or exc}"
        console.print(f"[red]error:[/red] {escape(said)}", soft_wrap=True)
        raise typer.Exit(2) from None
    print(key)
    console.print(
        f"Added a key for [bold]{escape(principal)}[/bold] to {escape(os.path.abspath(path))}. "
        "It is shown this once; the file keeps only its hash. "
        "Send it as 'Authorization: Bearer <key>' or 'X-API-Key: <key>'.",
        soft_wrap=True,
    )
