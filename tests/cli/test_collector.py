"""What ``a2ad serve`` and ``a2ad worker`` do to the cycle collector once up
(cli/collector.py), each case in a fresh interpreter: the collector is
process-wide, and this one runs the rest of the suite."""

import subprocess
import sys

import pytest


def _after(prelude: str) -> str:
    code = (
        "import gc\n"
        f"{prelude}\n"
        "from a2ad.cli.collector import settle_collector\n"
        "settle_collector()\n"
        "print(gc.get_threshold(), gc.get_freeze_count() > 0, gc.isenabled())\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return done.stdout.strip()


@pytest.mark.parametrize(
    ("prelude", "expected"),
    [
        ("", "(10000, 10, 10) True True"),  # the default 700 is raised
        ("gc.set_threshold(50_000, 20, 5)", "(50000, 20, 5) True True"),  # more asked: kept
        ("gc.disable()", "(700, 10, 10) True False"),  # off: stays off, untouched
    ],
)
def test_start_up_is_frozen_and_young_passes_wait(prelude: str, expected: str) -> None:
    assert _after(prelude) == expected
