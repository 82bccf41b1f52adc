"""``a2ad usage`` against a served ``a2ad serve --auth`` of two named agents,
task managers whose LLM (a real local HTTP server) reports the tokens each call
used."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from a2ad import SyncClient, Task, TaskState

from ..scripted_llm import ScriptedLLM, answer, with_usage
from ..served import Served, add_key, run_a2ad


def today() -> str:
    return datetime.now(UTC).date().isoformat()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Served, dict[str, str], str]]:
    keys_file = tmp_path / "keys.toml"
    keys = {
        "olga": add_key(keys_file, "--principal", "olga", "--role", "operator"),
        "ann": add_key(keys_file, "--principal", "ann"),
        "bob": add_key(keys_file, "--principal", "bob"),
    }
    plan = [
        with_usage(answer("one"), {"prompt_tokens": 1200, "completion_tokens": 34}),
        with_usage(answer("two"), {"prompt_tokens": 50, "completion_tokens": 5}, model="m-mini"),
        with_usage(answer("three"), {"prompt_tokens": 10, "completion_tokens": 1}),
    ]
    with ScriptedLLM(plan) as llm:
        env = {
            "OPENAI_BASE_URL": llm.url,
            "OPENAI_API_KEY": "",
            "A2AD_MODEL": "m-large",
            "A2AD_MANAGED_URLS": "",
            "A2AD_URL": "",
            "A2AD_TOKEN": "",
        }
        agents = ("--agent", "ops=a2ad.agents.task_manager")
        agents += ("--agent", "lab=a2ad.agents.task_manager")
        with Served("--auth", str(keys_file), *agents, env=env) as s:
            for who, agent in (("ann", "ops"), ("ann", "ops"), ("bob", "lab")):
                with SyncClient(f"{s.url}/agents/{agent}/", token=keys[who]) as client:
                    task = client.send("what runs?")
                assert isinstance(task, Task) and task.status.state is TaskState.COMPLETED
            yield s, keys, today()  # the (UTC) day the usage was recorded on
            assert s.stop() == 0


def test_usage_prints_an_operators_totals_as_json_and_as_a_table(
    served: tuple[Served, dict[str, str], str],
) -> None:
    s, keys, day = served
    target = ("--url", s.url, "--token", keys["olga"])
    default = run_a2ad("usage", *target, "--json")
    now = today()  # the default range: this month (UTC) to today
    assert json.loads(default.stdout)["from"] == now[:8] + "01"
    assert json.loads(default.stdout)["to"] == now
    days = ("--from", day, "--to", day)
    done = run_a2ad("usage", *target, *days, "--group-by", "principal,model", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["from"] == report["to"] == day
    assert report["rows"] == [
        {
            "principal": "ann",
            "model": "m-large",
            "promptTokens": 1200,
            "completionTokens": 34,
            "totalTokens": 1234,
        },
        {
            "principal": "ann",
            "model": "m-mini",
            "promptTokens": 50,
            "completionTokens": 5,
            "totalTokens": 55,
        },
        {
            "principal": "bob",
            "model": "m-large",
            "promptTokens": 10,
            "completionTokens": 1,
            "totalTokens": 11,
        },
    ]
    assert report["total"] == {"promptTokens": 1260, "completionTokens": 40, "totalTokens": 1300}

    table = run_a2ad("usage", *target, *days)
    assert table.returncode == 0, table.stderr
    assert table.stdout.splitlines() == [
        f"token usage {day} to {day}",
        "TENANT  PRINCIPAL  PROMPT  COMPLETION  TOTAL",
        "-       ann         1,250          39  1,289",
        "-       bob            10           1     11",
        "total               1,260          40  1,300",
    ]
    by_day = run_a2ad("usage", *target, *days, "--group-by", "day")
    assert by_day.stdout.splitlines()[1:] == [
        "DAY         PROMPT  COMPLETION  TOTAL",
        f"{day}   1,260          40  1,300",
    ]
    none = run_a2ad("usage", *target, "--from", "2001-01-01", "--to", "2001-01-31")
    assert none.stdout.splitlines() == ["token usage 2001-01-01 to 2001-01-31", "no usage"]


def test_usage_sums_per_agent(served: tuple[Served, dict[str, str], str]) -> None:
    s, keys, day = served
    target = ("--url", s.url, "--token", keys["olga"], "--from", day, "--to", day)
    table = run_a2ad("usage", *target, "--group-by", "agent")
    assert table.returncode == 0, table.stderr
    assert table.stdout.splitlines() == [
        f"token usage {day} to {day}",
        "AGENT  PROMPT  COMPLETION  TOTAL",
        "lab        10           1     11",
        "ops     1,250          39  1,289",
        "total   1,260          40  1,300",
    ]
    done = run_a2ad("usage", *target, "--group-by", "principal,agent,model", "--json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)["rows"]
    assert [(r["principal"], r["agent"], r["model"], r["totalTokens"]) for r in rows] == [
        ("ann", "ops", "m-large", 1234),
        ("ann", "ops", "m-mini", 55),
        ("bob", "lab", "m-large", 11),
    ]
    only = run_a2ad("usage", *target, "--agent", "lab", "--group-by", "principal", "--json")
    assert only.returncode == 0, only.stderr
    report = json.loads(only.stdout)
    assert [(r["principal"], r["totalTokens"]) for r in report["rows"]] == [("bob", 11)]
    assert report["agent"] == "lab"


def test_usage_is_refused_to_a_caller_without_the_operator_role(
    served: tuple[Served, dict[str, str], str],
) -> None:
    s, keys, _ = served
    done = run_a2ad("usage", "--url", s.url, "--token", keys["ann"])
    assert done.returncode == 1
    assert "token usage is for operators only" in done.stderr
    assert done.stdout == ""
    anonymous = run_a2ad("usage", "--url", s.url)
    assert anonymous.returncode == 1 and "-31401" in anonymous.stderr


def test_bad_flags_exit_2_naming_them(served: tuple[Served, dict[str, str], str]) -> None:
    s, keys, _ = served
    target = ("--url", s.url, "--token", keys["olga"])
    done = run_a2ad("usage", *target, "--group-by", "team")
    assert done.returncode == 2 and "--group-by: 'team'" in done.stderr
    assert "tenant, principal, agent, day, model" in done.stderr
    late = run_a2ad("usage", *target, "--from", "2026-02-01", "--to", "2026-01-01")
    assert late.returncode == 1 and "from (2026-02-01) is after to (2026-01-01)" in late.stderr
