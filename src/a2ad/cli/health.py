"""``a2ad health``: ask a server's ``/healthz`` (or ``/readyz``) and exit 0 if it
answers 200, 1 if not: a container's HEALTHCHECK or a probe's command, with no
curl in the image.

Without a URL it asks the server this machine's ``a2ad serve`` would run: the
port (and address) as ``serve`` takes them, from ``$A2AD_CONFIG``'s file and
``A2AD_*`` variables, so a probe follows the configuration it runs beside.
"""

from __future__ import annotations

from typing import Annotated

import httpx
import typer
from rich.markup import escape

from .config import ConfiguredCommand
from .terminal import make_console

__all__ = ["health"]

console = make_console(stderr=True)
UNHEALTHY = 1


def health(
    ctx: typer.Context,
    url: Annotated[
        str | None,
        typer.Argument(
            help="The server's base URL. Default: http://127.0.0.1:PORT, PORT as `a2ad serve` "
            "would take it (A2AD_CONFIG's file, A2AD_PORT)."
        ),
    ] = None,
    ready: Annotated[
        bool,
        typer.Option(
            "--ready",
            help="Ask /readyz (the store answers, the server is not shutting down) "
            "instead of /healthz (the process serves).",
        ),
    ] = False,
    timeout: Annotated[float, typer.Option(min=0.1, help="Seconds to wait for the answer.")] = 3.0,
) -> None:
    """Exit 0 if an a2ad server is healthy (or ready, with --ready), 1 if not."""
    base = (url or _served_url(ctx)).rstrip("/")
    probe = f"{base}/{'readyz' if ready else 'healthz'}"
    try:
        answer = httpx.get(probe, timeout=timeout)
    except httpx.HTTPError as exc:
        console.print(
            f"[red]unhealthy:[/red] {escape(probe)}: {escape(str(exc) or type(exc).__name__)}"
        )
        raise typer.Exit(UNHEALTHY) from None
    if answer.status_code != 200:
        said = f"{answer.status_code} {answer.text[:200]}"
        console.print(f"[red]unhealthy:[/red] {escape(probe)}: {escape(said)}")
        raise typer.Exit(UNHEALTHY)
    typer.echo(f"ok: {probe}")


def _served_url(ctx: typer.Context) -> str:
    root = ctx.find_root()
    serve = root.command.get_command(root, "serve")  # type: ignore[attr-defined]
    assert isinstance(serve, ConfiguredCommand)
    served = serve.make_context("serve", [], parent=root)
    host, port = served.params["host"], served.params["port"]
    if port == 0:
        console.print("[red]error:[/red] a2ad serve takes any free port (port 0): give the URL")
        raise typer.Exit(2)
    if host in ("0.0.0.0", ""):  # every interface: ask on loopback
        host = "127.0.0.1"
    elif host in ("::", "[::]"):
        host = "[::1]"
    elif ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"http://{host}:{port}"
