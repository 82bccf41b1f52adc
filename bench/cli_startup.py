"""How long an ``a2ad`` command takes to start: each command run as a user runs
it (a new process), several times, and the median wall and CPU time (user and
system, of the process and its children) printed for each.

    .venv/bin/python bench/cli_startup.py                          # about 30 s
    .venv/bin/python bench/cli_startup.py --tree before=/tmp/old/src --tree after=src

``--tree LABEL=SRC`` runs the commands with ``SRC`` first on ``PYTHONPATH`` (a
checkout's ``src``, e.g. from ``git archive``), so that two versions are
measured in one run, their rounds alternating; without it, the installed a2ad.
``a2ad tasks list`` and ``a2ad send`` are asked of a port nothing listens on, so
that they fail at once after starting: what is timed is the start. The CPU
time is the steadier figure on a shared machine, where the wall time also
counts waiting for a core.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

NOWHERE = "http://127.0.0.1:9/"
COMMANDS = {
    "python -c 'import a2ad.cli'": ["-c", "import a2ad.cli"],
    "a2ad --help": ["--help"],
    "a2ad tasks list --help": ["tasks", "list", "--help"],
    "a2ad send --help": ["send", "--help"],
    "a2ad tasks list": ["tasks", "list", "--url", NOWHERE],
    "a2ad send hi": ["send", "hi", "--url", NOWHERE],
    "a2ad serve --help": ["serve", "--help"],
}


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    """One run's wall and CPU seconds: ``a2ad ARGS`` (``python ARGS`` for ``-c``)."""
    argv = [sys.executable, *(args if args[0] == "-c" else ["-m", "a2ad.cli", *args])]
    cpu, start = children_cpu(), time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start, children_cpu() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7, help="runs of each command (median)")
    parser.add_argument("--tree", action="append", default=[], help="LABEL=SRC (repeatable)")
    args = parser.parse_args()
    trees = dict(tree.split("=", 1) for tree in args.tree) or {"installed": ""}
    envs = {}
    for label, src in trees.items():
        path = [os.path.abspath(src)] if src else []
        envs[label] = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
    for env in envs.values():  # the first run compiles and warms the file cache
        for command in COMMANDS.values():
            timed(command, env)
    runs: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for _ in range(args.runs):
        for label, env in envs.items():
            for name, command in COMMANDS.items():
                runs.setdefault((label, name), []).append(timed(command, env))
    figures: dict[str, dict[str, dict[str, int]]] = {}
    print(f"{'command':32} " + " ".join(f"{label + ' wall/cpu ms':>26}" for label in envs))
    for name in COMMANDS:
        cells = []
        for label in envs:
            wall = statistics.median(w for w, _ in runs[label, name]) * 1000
            cpu = statistics.median(c for _, c in runs[label, name]) * 1000
            figures.setdefault(label, {})[name] = {"wall_ms": round(wall), "cpu_ms": round(cpu)}
            cells.append(f"{wall:>15.0f} / {cpu:>6.0f}")
        print(f"{name:32} " + " ".join(f"{cell:>26}" for cell in cells))
    print(json.dumps({"runs": args.runs, "trees": figures}))


if __name__ == "__main__":
    main()
