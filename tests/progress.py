"""One line per test file as it finishes, for runs spread over processes.

Under pytest-xdist the terminal shows a dot per test and no file names, so a run
of several minutes reads as rows of dots. ``./run test`` loads this plugin
(``-p tests.progress``): each file, once all its tests have reported, gets a
line with its counts (failures and errors too), its time and how many files are
done, in place of the dots and letters; the report of each failure, the reasons
for skips and the summary at the end are pytest's own. Without xdist (``-n 0``)
it does nothing: pytest then names each file itself.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Generator
from typing import Any

import pytest


class FileProgress:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.expected: Counter[str] | None = None  # tests per file, once collected
        self.done: Counter[str] = Counter()
        self.outcomes: dict[str, Counter[str]] = {}
        self.started: dict[str, float] = {}
        self.worst: dict[str, str] = {}  # a test's outcome so far, by node id
        self.files_done = 0

    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        if self.expected is None:  # every process collects the same tests
            self.expected = Counter(test_id.split("::")[0] for test_id in ids)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        path = report.nodeid.split("::")[0]
        self.started.setdefault(path, time.monotonic())
        outcome = self.worst.get(report.nodeid, "passed")
        if report.failed:
            outcome = "failed" if report.when == "call" else "error"
        elif report.skipped and outcome == "passed":
            outcome = "xfailed" if hasattr(report, "wasxfail") else "skipped"
        self.worst[report.nodeid] = outcome
        if report.when == "teardown":
            del self.worst[report.nodeid]
            self.outcomes.setdefault(path, Counter())[outcome] += 1
            self.done[path] += 1
            if self.expected is not None and self.done[path] == self.expected[path]:
                self.file_finished(path)

    def file_finished(self, path: str) -> None:
        assert self.expected is not None
        self.files_done += 1
        counts = ", ".join(f"{n} {outcome}" for outcome, n in sorted(self.outcomes[path].items()))
        seconds = time.monotonic() - self.started[path]
        progress = f"[{self.files_done}/{len(self.expected)} files]"
        terminal: Any = self.config.pluginmanager.get_plugin("terminalreporter")
        terminal.write_line(f"{path}: {counts} in {seconds:.1f} s {progress}")

    @pytest.hookimpl(wrapper=True)
    def pytest_report_teststatus(
        self, report: pytest.TestReport, config: pytest.Config
    ) -> Generator[None, Any, Any]:
        status = yield
        if status is None or config.get_verbosity() > 0:
            return status
        category, _letter, word = status
        return category, "", word  # no letter: the file's line counts it


def pytest_configure(config: pytest.Config) -> None:
    spread = getattr(config.option, "numprocesses", None) and config.option.dist != "no"
    if spread and not hasattr(config, "workerinput"):  # the controlling process only
        config.pluginmanager.register(FileProgress(config), "a2ad-file-progress")
