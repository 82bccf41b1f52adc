"""The rich consoles the ``a2ad`` commands print with.

On a terminal, lines fit its width. Anywhere else (a file, a pipe, a log)
rich would assume 80 columns and wrap at them, which breaks a command line a
banner prints to be copied (``a2ad demo``'s "Try:") and the ids and URLs in a
table; there no line is wrapped, and a table is cut only past ``$COLUMNS``,
if it is set, or past ``PIPED_WIDTH``.
"""

from __future__ import annotations

import os

from rich.console import Console

__all__ = ["PIPED_WIDTH", "make_console"]

PIPED_WIDTH = 10_000


def make_console(*, stderr: bool = False, markup: bool = True, highlight: bool = True) -> Console:
    """A console on standard output (or error) that wraps only on a terminal."""
    console = Console(stderr=stderr, markup=markup, highlight=highlight)
    if not console.is_terminal:
        console.soft_wrap = True  # the default of every print
        if "COLUMNS" not in os.environ:
            console.width = PIPED_WIDTH
    return console
