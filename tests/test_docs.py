"""The examples in README.md and docs/cli.md, run as written against a real
``a2ad serve --agent demo``, the server the pages say they show; and every
``a2ad …`` command any page names, checked against the CLI's commands and
flags (tests/doc_commands.py).

A ``console`` block in docs/cli.md is commands (``$ …``) each followed by what
it prints. They run in the order of the page, in bash, with ``a2ad`` on the
PATH and ``A2AD_URL`` naming the server; what each prints must match line for
line. In the printed text ``0190…e3`` stands for an id: its first appearance
matches any id, and later ones, printed or in a command, are that id. A time
(``14:02:11``) matches any time. The page's URLs become the test server's (and
a free port's, for the one that is down). The ``sh`` blocks run as scripts, and
must succeed; the one that says to press Ctrl-C gets it.
"""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from a2ad import SyncClient, Task, TaskState

from . import doc_commands
from .conftest import free_port
from .served import WITH_DEFAULT_SIGINT, Served

ROOT = Path(__file__).resolve().parent.parent
CLI_MD = ROOT / "docs" / "cli.md"
README = ROOT / "README.md"
DOC_URL = "http://127.0.0.1:8000"
DOWN_URL = "http://127.0.0.1:9999"
PLACEHOLDER = re.compile(r"0190…\w+")
CLOCK = re.compile(r"\d\d:\d\d:\d\d")


def blocks(page: Path, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", page.read_text(), re.MULTILINE | re.DOTALL)


def steps(block: str) -> Iterator[tuple[str, list[str]]]:
    """(command, the lines it prints) for each ``$ command`` of a console block."""
    command: str | None = None
    printed: list[str] = []
    for line in block.splitlines():
        if line.startswith("$ "):
            if command is not None:
                yield command, printed
            command, printed = line[2:], []
        else:
            printed.append(line)
    if command is not None:
        yield command, printed


@pytest.fixture(scope="module")
def demo() -> Iterator[Served]:
    with Served("--agent", "demo") as served:
        served.expect(r"JSON-RPC:")
        yield served


def environment(served: Served) -> dict[str, str]:
    bin_dir = str(Path(sys.executable).parent)  # where `a2ad` is
    clean = {k: v for k, v in os.environ.items() if not k.startswith("A2AD_")}
    path = os.pathsep.join([bin_dir, clean.get("PATH", "")])
    return {**clean, "PATH": path, "A2AD_URL": served.url, "COLUMNS": "200"}


class Ids:
    """What each placeholder id of the page stood for, as the commands printed it."""

    def __init__(self) -> None:
        self.known: dict[str, str] = {}

    def command(self, text: str) -> str:
        def real(m: re.Match[str]) -> str:
            assert m.group() in self.known, f"{m.group()} is used before it is printed"
            return self.known[m.group()]

        return PLACEHOLDER.sub(real, text)

    def match(self, printed: str, got: str) -> bool:
        """Whether ``got`` is the ``printed`` line, placeholders seen already being
        their ids and the others any id (then learnt); a time matches any time."""
        out, groups, at = [], {}, 0
        for m in re.finditer(rf"{PLACEHOLDER.pattern}|{CLOCK.pattern}", printed):
            out.append(re.escape(printed[at : m.start()]))
            token = m.group()
            if CLOCK.fullmatch(token):
                out.append(CLOCK.pattern)
            elif token in self.known:
                out.append(re.escape(self.known[token]))
            elif token in groups:
                out.append(f"(?P={groups[token]})")
            else:
                groups[token] = f"id{len(groups)}"
                out.append(rf"(?P<{groups[token]}>[0-9a-f][0-9a-f-]*)")
            at = m.end()
        out.append(re.escape(printed[at:]))
        found = re.fullmatch("".join(out), got)
        if found:
            self.known.update({token: found.group(name) for token, name in groups.items()})
        return found is not None


def test_every_console_example_of_the_cli_page_prints_what_the_page_shows(
    demo: Served, tmp_path: Path
) -> None:
    down = f"http://127.0.0.1:{free_port()}"
    ids = Ids()
    ran = 0
    for block in blocks(CLI_MD, "console"):
        for command, printed in steps(block):
            command = ids.command(command).replace(DOWN_URL, down)
            expected = [line.replace(DOWN_URL, down).replace(DOC_URL, demo.url) for line in printed]
            done = subprocess.run(
                ["bash", "-c", command],
                capture_output=True,
                text=True,
                timeout=30,
                cwd=tmp_path,
                stdin=subprocess.DEVNULL,
                env=environment(demo),
            )
            shown = (done.stdout + done.stderr).rstrip("\n").splitlines()
            what = f"$ {command}\n{done.stdout}{done.stderr}"
            assert len(shown) == len(expected), what
            for want, got in zip(expected, shown, strict=True):
                assert ids.match(want.rstrip(), got.rstrip()), f"expected {want!r}\n{what}"
            if expected and expected[0].startswith("error:"):
                assert done.returncode != 0, what
            ran += 1
    assert ran == CLI_MD.read_text().count("\n$ a2ad ")  # every one of them


def run_script(served: Served, script: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    script = script.replace("https://agents.example.com", served.url).replace(
        "A2AD_TOKEN=…", "A2AD_TOKEN=a-token"
    )
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        env=environment(served),
    )


def test_every_sh_example_of_the_cli_page_runs(demo: Served, tmp_path: Path) -> None:
    scripts = blocks(CLI_MD, "sh")
    plain = [script for script in scripts if "Ctrl-C" not in script]
    assert len(plain) == len(scripts) - 1
    for script in plain:
        done = run_script(demo, script, tmp_path)
        assert done.returncode == 0, f"{script}\n{done.stdout}{done.stderr}"
        assert "Traceback" not in done.stderr
    # The cron example kept its record.
    assert (tmp_path / "canceled.jsonl").read_text().strip() == "[]"


def test_the_cli_pages_start_follow_and_stop_example_leaves_the_task_canceled(
    demo: Served,
) -> None:
    (script,) = [s for s in blocks(CLI_MD, "sh") if "Ctrl-C" in s]
    # Ctrl-C in a terminal sends SIGINT to the commands in the foreground: the
    # script's process group.
    proc = subprocess.Popen(
        [*WITH_DEFAULT_SIGINT, "/bin/bash", "-c", script],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=environment(demo),
        start_new_session=True,
    )
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 20)
        assert ready, "tasks watch printed nothing"
        watching = proc.stdout.readline()
        task_id = re.search(r"task (\S+) ", watching)
        assert task_id, watching
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert proc.returncode == 0, err
    assert f"stopped watching; task {task_id[1]} keeps running" in err
    assert f"{task_id[1]}  canceled" in out
    with SyncClient(demo.url) as client:
        assert client.get_task(task_id[1]).status.state is TaskState.CANCELED


def python_block(page: Path, containing: str) -> str:
    (code,) = [block for block in blocks(page, "python") if containing in block]
    return code


def test_the_readme_client_example_runs_as_written(demo: Served, tmp_path: Path) -> None:
    code = python_block(README, "from a2ad import Client")
    with SyncClient(demo.url) as client:
        working = client.send("sleep:60 slow", wait=False)
    assert isinstance(working, Task)
    (tmp_path / "example.py").write_text(code.replace(DOC_URL, demo.url))
    done = subprocess.run(
        [sys.executable, "example.py"],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[1:] == ["completed"], done.stdout
    # It canceled the working tasks, as it says.
    with SyncClient(demo.url) as client:
        assert client.get_task(working.id).status.state is TaskState.CANCELED


def test_the_readme_agent_and_python_api_examples_run_as_written(tmp_path: Path) -> None:
    agent = python_block(README, "# my_agent.py")
    (tmp_path / "my_agent.py").write_text(agent)
    (tmp_path / "api.py").write_text(python_block(README, "from a2ad import (TaskState"))
    done = subprocess.run(
        [sys.executable, "api.py"],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "0 tasks\n"
    assert (tmp_path / "tasks.db").exists()


PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]


def test_every_command_a_page_names_exists_with_its_flags() -> None:
    named = [(page, line, words) for page in PAGES for line, words in doc_commands.named(page)]
    wrong = [
        f"{page.relative_to(ROOT)}:{line}: a2ad {' '.join(words)}: {problem}"
        for page, line, words in named
        if (problem := doc_commands.problem(words))
    ]
    assert wrong == []
    assert len(named) > 200  # the pages' commands were found, not skipped


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (
            "same rule as `a2ad tasks overdue --stale-after`",
            "`a2ad tasks` has no command 'overdue'",
        ),
        ("```sh\na2ad send --sream hi | jq .\n```", "`a2ad send` has no flag --sream"),
        ("```console\n$ a2ad serv --agent demo\n```", "`a2ad` has no command 'serv'"),
        (
            "```text\n  Try:  a2ad tasks list --stale 1m\n```",
            "`a2ad tasks list` has no flag --stale",
        ),
        ("`a2ad config show --max-task 5`", "`a2ad config show` has no flag --max-task"),
    ],
)
def test_the_command_check_finds_a_wrong_command_or_flag(
    tmp_path: Path, text: str, problem: str
) -> None:
    page = tmp_path / "page.md"
    page.write_text(f"Some prose: a2ad keeps tasks.\n\n{text}\n")
    ((_, words),) = doc_commands.named(page)
    found = doc_commands.problem(words)
    assert found is not None and found.startswith(problem), found
