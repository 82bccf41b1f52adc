"""The lab's quote behind a front with auth, its three agents run by an
``a2ad worker`` that holds the fronts' secret key: the orchestrator calls stock
and pricing through the front as its caller, as it does on a server that runs
its agents (tests/cli/test_demo.py)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from a2ad.server.auth import add_key

from ..lab_client import QUOTE, assert_sub_tasks_are_only, call, payload, texts
from ..postgres import fresh_schema_sync
from ..process_output import ProcessOutput
from ..served import A2AD, PROJECT, Served

LAB = "a2ad.agents.lab"
AGENTS = [f"orchestrator={LAB}:OrchestratorAgent", f"stock={LAB}:StockAgent",
          f"pricing={LAB}:PricingAgent"]  # fmt: skip


def agent_flags() -> list[str]:
    return [flag for spec in AGENTS for flag in ("--agent", spec)]


class Worker(ProcessOutput):
    expect_timeout = 30.0

    def __init__(self, store: str, front: str, *args: str) -> None:
        self.proc = subprocess.Popen(
            [str(A2AD), "worker", "--store", store, *agent_flags(), *args],
            cwd=PROJECT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "COLUMNS": "200", "A2AD_URL": front},
        )
        self.watch(self.proc)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self.reader.join(10)
        assert self.proc.stdout is not None
        self.proc.stdout.close()


def test_a_worker_with_the_fronts_key_quotes_as_the_caller(tmp_path: Path) -> None:
    keys, key_file = tmp_path / "keys.toml", tmp_path / "secret.key"
    alice, bob = (add_key(str(keys), name) for name in ("alice", "bob"))
    with (
        fresh_schema_sync() as store,
        Served(
            "--no-run",
            "--store",
            store,
            "--auth",
            str(keys),
            "--secret-key-file",
            str(key_file),
            *agent_flags(),
        ) as front,
    ):
        worker = Worker(store, front.url, "--secret-key-file", str(key_file))
        try:
            worker.expect(r"a2ad worker running")
            params = payload("SendMessage", QUOTE)["params"]
            task = call(front.url, "orchestrator", alice, "SendMessage", params)["result"]["task"]
            assert task["status"]["state"] == "TASK_STATE_COMPLETED", task
            assert "2 041,20 €" in texts(task["artifacts"][0]["parts"])
            assert_sub_tasks_are_only(front.url, task["id"], alice, bob)
        finally:
            worker.close()
        assert front.stop() == 0


def test_a_worker_refuses_a_secret_key_file_that_is_not_there(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.key"
    with fresh_schema_sync() as store:
        worker = Worker(store, "http://127.0.0.1:1", "--secret-key-file", str(missing))
        try:
            assert worker.proc.wait(30) == 2
            said = worker.output
        finally:
            worker.close()
    assert f"--secret-key-file {missing}: no such file" in said and "Traceback" not in said
    assert not missing.exists()
