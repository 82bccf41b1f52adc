"""The code base stays type-checked (mypy strict) and lint-clean (ruff)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_source_passes_mypy_strict() -> None:
    result = run(str(BIN / "mypy"))
    assert result.returncode == 0, result.stdout + result.stderr


def test_source_and_tests_pass_ruff() -> None:
    result = run(str(BIN / "ruff"), "check", "src", "tests")
    assert result.returncode == 0, result.stdout + result.stderr
