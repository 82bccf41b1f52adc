"""The ``run`` script, run as a user runs it, in a copy of the checkout whose
``.venv`` records what it is asked instead of installing (no index, no minute of
pip): what ``./run serve`` installs and says, and what ``./run test`` prints."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .served import PROJECT

# Each stands in for the .venv's program: it notes its arguments in ../../calls.
RECORDER = '#!/bin/sh\necho "{name} $*" >> "$(dirname "$0")/../../calls"\n'


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """The run script and pyproject.toml, with a .venv whose python and a2ad only
    record their arguments."""
    shutil.copy(PROJECT / "run", tmp_path / "run")
    shutil.copy(PROJECT / "pyproject.toml", tmp_path / "pyproject.toml")
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    for name in ("python", "a2ad"):
        (bin_dir / name).write_text(RECORDER.format(name=name))
        (bin_dir / name).chmod(0o755)
    return tmp_path


def run(folder: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("A2AD_")}
    return subprocess.run(
        [str(folder / "run"), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**clean, "PYTHON": sys.executable, **env},
    )


def calls(folder: Path) -> list[str]:
    return (folder / "calls").read_text().splitlines()


def test_serve_says_what_it_installs_then_starts(checkout: Path) -> None:
    done = run(checkout, "serve", "--port", "9000")
    assert done.returncode == 0, done.stderr
    assert "installing a2ad and its dependencies into .venv (about a minute" in done.stderr
    assert calls(checkout) == [
        "python -m pip install --quiet --upgrade pip",
        "python -m pip install --quiet -e .",
        "a2ad serve --port 9000",
    ]
    (checkout / "calls").unlink()
    again = run(checkout, "serve")  # installed: nothing to say, nothing to install
    assert (again.stderr, calls(checkout)) == ("", ["a2ad serve"])


@pytest.mark.parametrize(
    ("args", "env"),
    [
        (["--store", "postgresql://a2ad@db:5432/a2ad"], {}),
        (["--store=postgres://a2ad@db/a2ad"], {}),
        ([], {"A2AD_STORE": "postgresql://a2ad@db/a2ad"}),
        ([], {"A2AD_EXTRAS": "postgres"}),
    ],
)
def test_serve_on_postgresql_installs_the_postgres_extra(
    checkout: Path, args: list[str], env: dict[str, str]
) -> None:
    done = run(checkout, "serve", *args, **env)
    assert done.returncode == 0, done.stderr
    assert "installing a2ad[postgres] and its dependencies" in done.stderr
    assert "python -m pip install --quiet -e .[postgres]" in calls(checkout)


def test_serve_installs_the_extras_a2ad_extras_names(checkout: Path) -> None:
    done = run(checkout, "serve", "--store", "postgresql://db/a2ad", A2AD_EXTRAS="otel,jwt,")
    assert done.returncode == 0, done.stderr
    assert "python -m pip install --quiet -e .[jwt,otel,postgres]" in calls(checkout)


SAMPLE = """
import pytest

def test_one():
    pass

@pytest.mark.skip(reason="needs the moon")
def test_two():
    pass
"""


def test_test_names_each_file_as_it_ends_its_skips_and_the_slowest(checkout: Path) -> None:
    # The real pytest this time, through a .venv/bin/python that runs this one, with the
    # set-up already done (its stamp newer than pyproject.toml).
    python = checkout / ".venv" / "bin" / "python"
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    (checkout / ".venv" / ".a2ad-installed[dev]").touch()
    (checkout / "tests").mkdir()
    for name in ("__init__.py", "progress.py"):
        shutil.copy(PROJECT / "tests" / name, checkout / "tests" / name)
    for name in ("test_a.py", "test_b.py"):
        (checkout / "tests" / name).write_text(SAMPLE)
    done = run(checkout, "test", "-p", "no:cacheprovider", A2AD_TEST_PROCESSES="2")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    for name in ("test_a.py", "test_b.py"):
        assert any(
            line.startswith(f"tests/{name}: 1 passed, 1 skipped in ") and "files]" in line
            for line in lines
        ), done.stdout
    assert "SKIPPED [1] tests/test_a.py:7: needs the moon" in lines, done.stdout
    assert "slowest 15 durations" in done.stdout, done.stdout
