"""``a2ad usage``: the token usage totals an a2ad server keeps, for operators."""

from __future__ import annotations

from typing import Annotated

import msgspec
import typer
from rich.text import Text

from ..client import DEFAULT_URL
from ..protocol.usage import GROUPS, TokenCounts, UsageReport
from .output import Column, Columns, console_for, fail, print_json, print_table
from .remote import JsonOption, Target, TokenOption, UrlOption, session

__all__ = ["usage"]


def usage(
    from_day: Annotated[
        str,
        typer.Option(
            "--from", help="First day (YYYY-MM-DD, UTC). Default: the 1st of --to's month."
        ),
    ] = "",
    to_day: Annotated[
        str, typer.Option("--to", help="Last day, included (YYYY-MM-DD, UTC). Default: today.")
    ] = "",
    tenant: Annotated[
        str | None,
        typer.Option("--tenant", help="Only this tenant. Default: every tenant you may read."),
    ] = None,
    agent: Annotated[
        str | None,
        typer.Option(
            "--agent",
            envvar=None,
            help="Only this agent (its name on a server of several; '' for the unnamed one). "
            "Default: every agent.",
        ),
    ] = None,
    group_by: Annotated[
        str,
        typer.Option(
            "--group-by",
            help=f"Sum per these, comma-separated: {', '.join(GROUPS)}; '' for one sum.",
        ),
    ] = "tenant,principal",
    url: UrlOption = DEFAULT_URL,
    token: TokenOption = None,
    as_json: JsonOption = False,
) -> None:
    """Token usage of the server's agents: totals per tenant, principal, agent,
    day and model (needs the operator role when the server has auth)."""
    groups = [name.strip() for name in group_by.split(",") if name.strip()]
    for name in groups:
        if name not in GROUPS:
            fail(f"--group-by: {name!r} is not one of {', '.join(GROUPS)}", code=2)
    if len(set(groups)) < len(groups):
        fail("--group-by: name each at most once", code=2)
    target = Target(url, token, None)
    with session(target) as s:
        report = s.run(
            s.client.usage(
                from_day=from_day, to_day=to_day, tenant=tenant, group_by=groups, agent=agent
            )
        )
    if as_json:
        print_json(msgspec.to_builtins(report))
        return
    out = console_for()
    out.print(f"token usage {report.from_day} to {report.to_day}", soft_wrap=True)
    if not report.rows:
        out.print("no usage")
        return
    print_table(out, _table(report))


def _table(report: UsageReport) -> Columns:
    """The groups' values ("-" for "": the default tenant, the unnamed agent,
    a model not named), then the counts, right-aligned, and a total line when
    there are several rows."""
    names = list(report.group_by)
    lines = [
        ([getattr(row, name) or "-" for name in names], _counts(row.counts)) for row in report.rows
    ]
    if names and len(lines) > 1:
        lines.append((["total"] + [""] * (len(names) - 1), _counts(report.total)))
    titles = ["PROMPT", "COMPLETION", "TOTAL"]
    widths = [max([len(t), *(len(line[1][i]) for line in lines)]) for i, t in enumerate(titles)]
    columns = [Column(name.upper()) for name in names] + [
        Column(title.rjust(width)) for title, width in zip(titles, widths, strict=True)
    ]
    rows = [
        [Text(value) for value in groups]
        + [Text(n.rjust(width)) for n, width in zip(numbers, widths, strict=True)]
        for groups, numbers in lines
    ]
    if names and len(lines) > 1:
        rows[-1][0].stylize("bold")
    return columns, rows


def _counts(counts: TokenCounts) -> list[str]:
    return [
        f"{counts.prompt_tokens:,}",
        f"{counts.completion_tokens:,}",
        f"{counts.total_tokens:,}",
    ]
