"""What installing and running a2ad from a checkout leaves a user to see: the
package's metadata builds without a warning (``./run serve`` once printed
setuptools' deprecation box three times), and nothing a2ad writes beside its
database shows up as untracked in git."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .served import PROJECT, Served


def test_the_metadata_builds_without_a_warning_and_names_the_license(tmp_path: Path) -> None:
    # A copy of what the build reads (pyproject.toml, the README, a package), built by
    # the setuptools installed here (the dev extra's, 77 or later) without the index.
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(PROJECT / name, tmp_path / name)
    (tmp_path / "src" / "a2ad").mkdir(parents=True)
    (tmp_path / "src" / "a2ad" / "__init__.py").touch()
    (tmp_path / "out").mkdir()
    build = "from setuptools import build_meta; build_meta.prepare_metadata_for_build_wheel('out')"
    done = subprocess.run(
        [sys.executable, "-W", "default", "-c", build],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    said = done.stdout + done.stderr
    assert done.returncode == 0, said
    assert "Warning" not in said and "deprecated" not in said, said
    (metadata,) = tmp_path.glob("out/*.dist-info/METADATA")
    assert "License-Expression: Apache-2.0" in metadata.read_text().splitlines()


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A git repository holding the project's .gitignore, committed."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    shutil.copy(PROJECT / ".gitignore", tmp_path / ".gitignore")
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", ".gitignore"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "ignore"], check=True)
    return tmp_path


def untracked(folder: Path) -> list[str]:
    status = ["git", "-C", str(folder), "status", "--porcelain", "--untracked-files=all"]
    return subprocess.run(status, capture_output=True, text=True, check=True).stdout.split()


def test_what_serve_makes_beside_its_database_is_ignored_by_git(checkout: Path) -> None:
    with Served("--shutdown-grace", "0", "--store", "sqlite:///a2ad.db", cwd=checkout) as served:
        assert served.url  # listening: the database, its WAL, the key and the lock are there
        made = sorted(p.name for p in checkout.iterdir() if p.name.startswith("a2ad.db"))
        assert {"a2ad.db", "a2ad.db-a2ad.key", "a2ad.db-a2ad.lock"} <= set(made)
        assert untracked(checkout) == [], made
        assert served.stop() == 0
    assert untracked(checkout) == []
