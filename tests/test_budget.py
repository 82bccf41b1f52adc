"""The cost budget's check (bench/budget.py, run by .ci/run): what it says when an
operation is over its baseline, and that the committed baseline names each one."""

from __future__ import annotations

import importlib.util
import sys
import tomllib
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[1] / "bench"


def load_budget() -> ModuleType:
    spec = importlib.util.spec_from_file_location("budget", BENCH / "budget.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("budget", module)
    spec.loader.exec_module(module)
    return module


BASELINE = {
    "tolerance": {"percent": 3},
    "send": {"instructions": 1_000_000},
    "get": {"instructions": 300_000},
    "stream": {"instructions": 1_400_000},
}


def test_an_operation_more_than_the_tolerance_over_is_named_with_its_figures() -> None:
    budget = load_budget()
    figures = {"send": 1_029_000, "get": 309_600, "stream": 1_300_000, "cancel": 1_200_000}
    lines = budget.over_budget(figures, BASELINE)
    assert lines == [
        "get: 309,600 instructions per operation, +3.2% over the baseline 300,000 (tolerance 3%)",
        "cancel: no baseline figure; measured 1,200,000",
    ]


def test_within_the_tolerance_or_under_passes() -> None:
    budget = load_budget()
    figures = {"send": 1_030_000, "get": 250_000, "stream": 1_400_000, "cancel": 900_000}
    baseline = {**BASELINE, "cancel": {"instructions": 900_000}}
    assert budget.over_budget(figures, baseline) == []


def test_the_committed_baseline_has_a_figure_and_its_measurement_for_each_operation() -> None:
    budget = load_budget()
    baseline = tomllib.loads((BENCH / "budget.toml").read_text(encoding="utf-8"))
    assert baseline["tolerance"]["percent"] == 3
    for name in budget.OPERATIONS:
        entry = baseline[name]
        assert isinstance(entry["instructions"], int) and entry["instructions"] > 0, name
        assert entry["measured"], name
