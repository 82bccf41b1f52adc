"""The ``a2ad …`` commands a Markdown page names, and what is wrong with each
against the typer app the ``a2ad`` command runs (``a2ad.cli.app``): read from
its commands and their parameters, nothing run.

A page names a command in a command line of a code block (an ``sh`` block's
lines, a ``console`` block's ``$ …`` lines), in inline code
(`` `a2ad tasks list --stale-after` ``) and in the printed text of other
blocks (a banner's "Try:" line). Outside command lines, ``a2ad`` followed by
a word that is no command of it is prose or output ("another a2ad process",
`` `a2ad serving agent echo` ``) and left alone. Comments (``# …``) are not
read; a command ends at the shell's ``|``, ``;``, ``&&``, ``)`` or ``>``, at
a backtick, and at a word ending in ``:`` or ``,`` (prose).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import typer

CODE_BLOCK = re.compile(r"^ *```(\w*)\n(.*?)^ *```$", re.MULTILINE | re.DOTALL)
INLINE_CODE = re.compile(r"`([^`]+)`")
# `a2ad` as a word followed by another: at the start, after a space, `(`, `$(` or a backtick.
COMMAND = re.compile(r"(?:^|(?<=[\s(`]))a2ad\s+(?=[a-z-])")
COMMENT = re.compile(r"(?:^|\s)#(?:\s.*)?$")
AFTER_FLAG = re.compile(r"(?:^|\s)-\S*\s+$")  # `docker run --name a2ad -p …`: a value
# What a page writes where a user writes their own value.
PLACEHOLDER = re.compile(r"^(?:…|\.\.\.|<.*>|\[.*\])$")
# Commands whose unknown flags are another's: `config show` takes `serve`'s.
PASSES_ON = {("config", "show"): ("serve",)}


def named(page: Path) -> Iterator[tuple[int, list[str]]]:
    """(line number, the command's words after ``a2ad``) for each command ``page`` names."""
    text = page.read_text()
    for block in CODE_BLOCK.finditer(text):
        first = text.count("\n", 0, block.start(2)) + 1
        for offset, line in enumerate(block.group(2).splitlines()):
            typed = block.group(1) == "sh" or line.startswith("$ ")
            if block.group(1) in ("python", "json", "toml", "nginx"):
                continue
            for words in commands_in(line.removeprefix("$ "), typed=typed):
                yield first + offset, words
    # Code blocks blanked out (their lines kept) so that only prose's inline code is left.
    prose = CODE_BLOCK.sub(lambda m: "\n" * m.group().count("\n"), text)
    for span in INLINE_CODE.finditer(prose):
        if "\n\n" in span.group(1):
            continue
        for words in commands_in(span.group(1).replace("\n", " "), typed=False):
            yield prose.count("\n", 0, span.start()) + 1, words


def commands_in(line: str, *, typed: bool) -> Iterator[list[str]]:
    """The commands of ``line``; of its printed text (not ``typed``) only those whose
    first word is a command or a flag of ``a2ad``."""
    line = COMMENT.sub("", line)
    for found in COMMAND.finditer(line):
        if AFTER_FLAG.search(line[: found.start()]):
            continue
        words = words_of(line[found.end() :].split("`", 1)[0])
        if typed or words[0].startswith("-") or words[0] in root().commands:
            yield words


def words_of(rest: str) -> list[str]:
    """The words of a command line up to the shell's first operator."""
    lexer = shlex.shlex(rest, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    words: list[str] = []
    try:
        for word in lexer:
            if word and set(word) <= set("();<>|&"):
                break
            words.append(word)
    except ValueError:  # an unclosed quote: a line of output, cut short
        words = rest.split()
    for at, word in enumerate(words):
        if word.endswith((":", ",")):
            return [*words[:at], word[:-1]]
    return words


@cache
def root() -> Any:
    # typer 0.2x carries its own copy of click: its classes are not click's, so the
    # tree is read by its attributes (a group's ``commands``, an option's ``opts``).
    from a2ad.cli import app

    return typer.main.get_command(app)


def problem(words: list[str]) -> str | None:
    """What is wrong with ``a2ad <words>``: a command that does not exist or a flag
    its command does not take; None if nothing is."""
    command, path = root(), ["a2ad"]
    at = 0
    while hasattr(command, "commands") and at < len(words):
        word = words[at]
        if word.startswith("-"):
            break
        if PLACEHOLDER.match(word):
            return None
        sub = command.commands.get(word)
        if sub is None:
            known = ", ".join(command.commands)
            return f"`{' '.join(path)}` has no command {word!r} (it has {known})"
        command, path = sub, [*path, word]
        at += 1
    flags = {"--help"}
    for taker in [command, *(root().commands[n] for n in PASSES_ON.get(tuple(path[1:]), ()))]:
        for param in taker.params:
            if param.param_type_name == "option":
                flags.update(param.opts, param.secondary_opts)
    for word in words[at:]:
        if word == "--":
            break
        flag = word.split("=", 1)[0]
        if word.startswith("-") and word != "-" and not flag[1:2].isdigit() and flag not in flags:
            return f"`{' '.join(path)}` has no flag {flag}"
    return None
