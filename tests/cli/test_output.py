"""What the ``a2ad`` commands print where it is not a terminal (a pipe, a file,
a log): lines never wrapped at an assumed 80 columns; and the help, piped or
not, showing each option as it is typed (no ``<bool>``, ``<list[str]>``).

The commands run as processes with their output piped and no ``COLUMNS`` set,
as under a service manager or ``| tee log``; the help of every command is also
read in-process (typer's runner, not a terminal either) and, once, through a
pseudo-terminal, where typer draws its boxes.
"""

from __future__ import annotations

import os
import pty
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from a2ad.cli import app

from ..process_output import ProcessOutput
from ..served import A2AD, PROJECT

# How typer names a value by its Python type: nothing a user can type.
TYPE_PLACEHOLDER = re.compile(r"<(bool|str|int|float|list|tuple|path|datetime)\b[^>]*>", re.I)


def piped_env() -> dict[str, str]:
    """This environment, without a width and without a2ad's variables."""
    return {k: v for k, v in os.environ.items() if k != "COLUMNS" and not k.startswith("A2AD_")}


class Piped(ProcessOutput):
    """``a2ad ARGS`` with standard output and error piped, and no COLUMNS."""

    expect_timeout = 30.0

    def __init__(self, *args: str, cwd: Path = PROJECT) -> None:
        proc = subprocess.Popen(
            [str(A2AD), *args],
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=piped_env(),
        )
        self.watch(proc)

    def __enter__(self) -> Piped:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self.reader.join(10)
        assert self.proc.stdout is not None
        self.proc.stdout.close()


# --- lines stay whole ---


def test_the_demo_banners_try_line_is_one_line_in_a_log() -> None:
    with Piped("demo", "--port", "0") as demo:
        demo.expect("Press Ctrl-C")
        (line,) = [line for line in demo.seen if "Try:" in line]
    assert re.fullmatch(
        r"  Try:\s+a2ad send --stream --url http://127\.0\.0\.1:\d+ "
        r'"Je voudrais un devis pour 12 CHAISE-ERGO"\n',
        line,
    ), line


def test_the_serve_banners_store_line_is_one_line_in_a_log(tmp_path: Path) -> None:
    folder = tmp_path / ("a-folder-whose-name-is-long-enough-to-pass-any-terminal-width-" * 3)
    folder.mkdir()
    store = folder / "tasks.db"
    with Piped("serve", "--port", "0", "--store", f"sqlite:///{store}") as served:
        served.expect("Press Ctrl-C")
        (line,) = [line for line in served.seen if line.startswith("a2ad serving")]
    assert line == f"a2ad serving agent echo (store sqlite {store}, no task cap)\n"


# --- help: options as typed ---


def commands() -> Iterator[tuple[list[str], Any]]:
    """Every command and group of ``a2ad``, as the words that name it."""

    def walk(command: Any, words: list[str]) -> Iterator[tuple[list[str], Any]]:
        yield words, command
        for name, sub in getattr(command, "commands", {}).items():
            yield from walk(sub, [*words, name])

    yield from walk(typer.main.get_command(app), [])


COMMANDS = [" ".join(words) for words, _ in commands()]
# Flags that act as they are parsed (--install-completion writes to ~/.bashrc).
ACTING = {"--install-completion", "--show-completion"}
OPTION_LINE = re.compile(r"^  (--[a-z0-9-]+)(?: / (--[a-z0-9-]+))?(?: (\S+))?(?:  |$)")


def help_of(words: list[str]) -> str:
    result = CliRunner().invoke(app, [*words, "--help"], env={"COLUMNS": None})
    assert result.exit_code == 0, result.output
    return result.stdout


def sample(param: Any, placeholder: str | None) -> list[str]:
    """A value of the kind the help names, as a user would type it."""
    if placeholder is None:
        return []
    if "|" in placeholder:
        return [placeholder.split("|")[-1]]
    if placeholder == "DURATION":
        return ["90s"]
    if placeholder == "INTEGER":
        return [str(max(param.min or 0, 1) if param.max is None else param.max)]
    if placeholder == "NUMBER":
        return [str(max(param.min or 0, 2.5))]
    assert placeholder == "TEXT", placeholder
    return ["x"]


def required_args(command: Any) -> list[str]:
    """What the command can't be run without: its required arguments and options."""
    given: list[str] = []
    for param in command.params:
        if param.required and param.param_type_name == "argument":
            given.append("x")
        elif param.required:
            given += [param.opts[0], "x"]
    return given


@pytest.mark.parametrize("name", COMMANDS)
def test_help_shows_each_option_as_it_is_typed_and_it_is_accepted(
    name: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for key in [k for k in os.environ if k.startswith("A2AD_")]:
        monkeypatch.delenv(key)
    words = name.split()
    command = dict((" ".join(w), c) for w, c in commands())[name]
    text = help_of(words)
    assert not TYPE_PLACEHOLDER.search(text), TYPE_PLACEHOLDER.search(text)
    assert "{" not in text.splitlines()[0]  # the usage line: ARGUMENT, not {argument}
    by_flag = {opt: p for p in command.params for opt in [*p.opts, *p.secondary_opts]}
    shown = [OPTION_LINE.match(line) for line in text.splitlines()]
    for found in filter(None, shown):
        flag, negative, placeholder = found.groups()
        if flag == "--help" or flag not in by_flag:
            assert placeholder is None, found[0]
            continue
        param = by_flag[flag]
        assert (placeholder is None) == bool(param.is_flag), found[0]
        if flag in ACTING:
            continue
        for option in filter(None, [flag, negative]):
            args = [*required_args(command), option, *sample(param, placeholder)]
            # Parsed as the command parses them, in a folder where "x" is an
            # empty file (for --config x).
            monkeypatch.chdir(tmp_path)
            (tmp_path / "x").write_text("")
            command.make_context(words[-1] if words else "a2ad", args, resilient_parsing=False)


def test_a_flag_takes_no_value_and_a_list_is_the_flag_repeated() -> None:
    send = help_of(["send"])
    assert re.search(r"^  --stream  +Show status changes", send, re.M)
    serve = help_of(["serve"])
    assert re.search(r"^  --dashboard / --no-dashboard  +Serve the task dashboard", serve, re.M)
    assert re.search(r"^  --agent TEXT  +'echo', .* Repeat as NAME=SPEC", serve, re.M)
    assert "default: echo]" in serve
    add_key = help_of(["auth", "add-key"])
    assert re.search(r"^  --role TEXT  +A role, .* Repeatable\.", add_key, re.M)


def test_piped_help_is_one_line_an_option_with_nothing_cut() -> None:
    done = subprocess.run(
        [str(A2AD), "serve", "--help"],
        capture_output=True,
        text=True,
        timeout=30,
        env=piped_env(),
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    (store,) = [line for line in done.stdout.splitlines() if line.startswith("  --store ")]
    assert store.startswith("  --store TEXT  ")
    assert "sqlite:////abs/path.db" in store and "postgresql://user@host:5432/db" in store
    assert store.endswith("[env var: A2AD_STORE; default: sqlite:///a2ad.db]")
    assert "…" not in done.stdout and "╭" not in done.stdout


def test_help_on_a_terminal_shows_no_python_types_either() -> None:
    controller, terminal = pty.openpty()
    try:
        proc = subprocess.Popen(
            [str(A2AD), "send", "--help"],
            stdin=subprocess.DEVNULL,
            stdout=terminal,
            stderr=terminal,
            env={**piped_env(), "COLUMNS": "150", "NO_COLOR": "1"},
        )
        os.close(terminal)
        chunks = []
        while True:
            try:
                chunk = os.read(controller, 65536)
            except OSError:  # the terminal's other end is closed: all read
                break
            if not chunk:
                break
            chunks.append(chunk)
        assert proc.wait(30) == 0
    finally:
        os.close(controller)
    text = re.sub(r"\x1b\[[0-9;]*m", "", b"".join(chunks).decode())
    assert "╭" in text  # typer's boxes: a terminal
    assert re.search(r"--stream +Show status changes", text)
    assert re.search(r"--url +TEXT +Base URL", text)
    assert re.search(r"--a2a-version +1\.0\|0\.3 ", text)
    assert not TYPE_PLACEHOLDER.search(text), TYPE_PLACEHOLDER.search(text)
