"""The code base stays type-checked (mypy strict) and lint-clean (ruff), and
its modules import one another without circles."""

from __future__ import annotations

import ast
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


def import_graph(src: Path) -> dict[str, set[str]]:
    """Each module of ``a2ad`` under ``src`` and the ``a2ad`` modules it imports
    anywhere: at the top, in a function, or under ``if TYPE_CHECKING``."""
    files: dict[str, tuple[Path, bool]] = {}
    for path in sorted((src / "a2ad").rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        package = parts[-1] == "__init__"
        files[".".join(parts[:-1] if package else parts)] = (path, package)
    graph: dict[str, set[str]] = {}
    for name, (path, package) in files.items():
        here = name.split(".") if package else name.split(".")[:-1]
        imported: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                imported.update(alias.name for alias in node.names if alias.name in files)
            elif isinstance(node, ast.ImportFrom):
                base = here[: len(here) - node.level + 1] if node.level else []
                module = ".".join(base + ([node.module] if node.module else []))
                for alias in node.names:
                    if f"{module}.{alias.name}" in files:  # a submodule: from . import audit
                        imported.add(f"{module}.{alias.name}")
                    elif module in files:
                        imported.add(module)
        graph[name] = imported - {name}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for other in graph[module]:
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            component = [stack.pop()]
            while component[-1] != module:
                component.append(stack.pop())
            if len(component) > 1:
                found.append(sorted(component))

    for module in graph:
        if module not in index:
            visit(module)
    return found


def test_modules_import_one_another_without_circles() -> None:
    # Type-only imports count too: a circle closed by ``if TYPE_CHECKING`` is
    # still two modules that cannot be read, moved or tested one without the
    # other; move the shared type down to the lower one or to a module of its own.
    graph = import_graph(ROOT / "src")
    assert "a2ad.server.app" in graph and "a2ad.server.handler" in graph["a2ad.server.app"]
    assert circles(graph) == []


def test_a_circle_is_found() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(graph) == [["a", "b", "c"]]
