"""The client commands start without the server side: what `a2ad tasks list`,
`a2ad send` and the other commands that talk to a server import, checked by
module name rather than by timing (docs/performance.md, "CLI start-up", has
the times)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

# What only `serve`, `worker` and `demo` need: the server, the engine, the stores, the
# agents and what those import. A client command that imports any of them starts about
# twice as slowly.
SERVER_SIDE = (
    "a2ad.adapters",
    "a2ad.agents",
    "a2ad.engine",
    "a2ad.server",
    "a2ad.store",
    "a2ad.tools",
    "asyncpg",
    "cryptography",
    "prometheus_client",
    "sqlite3",
    "uvicorn",
)

# Runs the `a2ad` command in this process (as the script does) and, on the way out,
# writes the names of the modules it imported to the file named first.
RUN_AND_LIST = """
import atexit, json, runpy, sys
listing = sys.argv[1]
atexit.register(lambda: open(listing, "w").write(json.dumps(sorted(sys.modules))))
sys.argv = ["a2ad", *sys.argv[2:]]
runpy.run_module("a2ad.cli", run_name="__main__")
"""

NOWHERE = "http://127.0.0.1:9/"  # nothing listens: each command fails once it has started


def imported_by(tmp_path: Path, *args: str) -> list[str]:
    listing = tmp_path / "modules.json"
    subprocess.run(
        [sys.executable, "-c", RUN_AND_LIST, str(listing), *args],
        capture_output=True,
        timeout=60,
    )
    modules: list[str] = json.loads(listing.read_text())
    return modules


def server_side(modules: list[str]) -> list[str]:
    return [m for m in modules if any(m == p or m.startswith(f"{p}.") for p in SERVER_SIDE)]


@pytest.mark.parametrize(
    "args",
    [
        ["tasks", "list", "--url", NOWHERE],
        ["send", "hello", "--url", NOWHERE],
        ["tasks", "get", "t1", "--url", NOWHERE],
        ["tasks", "cancel", "t1", "--url", NOWHERE],
        ["card", "--url", NOWHERE],
        ["usage", "--url", NOWHERE],
        ["health", "--url", NOWHERE],
        ["tasks", "list", "--help"],
        ["send", "--help"],
    ],
    ids=" ".join,
)
def test_a_client_command_imports_nothing_of_the_server_side(
    tmp_path: Path, args: list[str]
) -> None:
    modules = imported_by(tmp_path, *args)
    assert "a2ad.cli" in modules  # the command ran
    assert server_side(modules) == []


def test_serve_still_finds_its_modules_when_asked(tmp_path: Path) -> None:
    modules = imported_by(tmp_path, "serve", "--help")
    assert {"a2ad.cli.serve", "a2ad.server.app", "uvicorn"} <= set(modules)


def test_importing_the_client_from_the_package_leaves_the_server_side_alone() -> None:
    code = (
        "import sys, json; from a2ad import SyncClient, Message, TaskState; "
        "print(json.dumps(sorted(sys.modules)))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert server_side(json.loads(done.stdout)) == []
