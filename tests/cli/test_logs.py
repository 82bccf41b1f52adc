"""Logs as an operator reads them from ``a2ad serve``'s stderr: every line names
its task, context, agent, request and principal where known, in JSON or in
text; one access line per request (all, errors only, or none); never a key."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from a2ad import Agent, SyncClient, Task, TaskState, log_context
from a2ad.agent import TaskContext
from a2ad.cli.logs import JsonFormatter, TextFormatter, configure_logging

from ..jsonrpc import rpc_body
from ..served import Served, add_key, run_a2ad

chatty_log = logging.getLogger("chatty")  # the agent's own logger, not a2ad's


class Chatty(Agent):
    """Logs a line in its turn, as an agent's own code does, then answers."""

    name = "chatty"

    async def run(self, ctx: TaskContext) -> None:
        chatty_log.info("chatty thinks about %s", ctx.text)
        if ctx.text.startswith("slowly"):
            await ctx.working("thinking")
            await asyncio.sleep(0.3)
        await ctx.complete(f"said {ctx.text}")


AGENT = ("--agent", "tests.cli.test_logs:Chatty", "--store", "memory", "--shutdown-grace", "0")
V1 = {"A2A-Version": "1.0"}


def send_body(text: str) -> dict[str, Any]:
    message = {"role": "ROLE_USER", "messageId": os.urandom(8).hex(), "parts": [{"text": text}]}
    return rpc_body("SendMessage", {"message": message})


def json_lines(output: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in output.splitlines() if line.startswith("{")]


def access_lines(output: str) -> list[dict[str, Any]]:
    return [line for line in json_lines(output) if line["logger"] == "a2ad.access"]


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    keys_file = tmp_path_factory.mktemp("keys") / "keys.toml"
    return keys_file, add_key(keys_file, "--principal", "ann")


@pytest.fixture(scope="module")
def with_auth(keys: tuple[Path, str]) -> Iterator[Served]:
    """JSON logs, every request's access line, auth on."""
    with Served(*AGENT, "--auth", str(keys[0]), "--access-log", "on") as s:
        s.expect("Press Ctrl-C to stop")
        yield s
        assert s.stop() == 0


def test_an_agents_own_log_line_names_its_task_context_agent_and_request(
    with_auth: Served, keys: tuple[Path, str]
) -> None:
    with SyncClient(with_auth.url, token=keys[1]) as client:
        task = client.send("the weather")
    assert isinstance(task, Task) and task.status.state is TaskState.COMPLETED
    with_auth.expect(r'"msg":"chatty thinks about the weather"')
    (line,) = [x for x in json_lines(with_auth.output) if x["logger"] == "chatty"]
    assert line["level"] == "info"
    assert line["task_id"] == task.id
    assert line["context_id"] == task.context_id
    assert line["agent"] == "chatty"
    assert line["principal"] == "ann"
    assert re.fullmatch(r"[0-9a-f]{16}", line["request_id"])
    assert {"ts", "level", "logger", "msg"} <= line.keys()


def test_a_request_id_given_is_echoed_and_on_its_access_line(
    with_auth: Served, keys: tuple[Path, str]
) -> None:
    headers = {**V1, "Authorization": f"Bearer {keys[1]}", "X-Request-ID": "trace-42/a"}
    with httpx.Client(timeout=10) as http:
        sent = http.post(with_auth.url + "/", json=send_body("hello"), headers=headers)
        assert sent.status_code == 200
        assert sent.headers["x-request-id"] == "trace-42/a"
        task = sent.json()["result"]["task"]
        # Not a sane id (a space, too long): a new one, echoed instead.
        for bad in ("two words", "x" * 129):
            got = http.post(
                with_auth.url + "/",
                json=send_body("again"),
                headers={**headers, "X-Request-ID": bad},
            )
            assert re.fullmatch(r"[0-9a-f]{16}", got.headers["x-request-id"]), bad
    with_auth.expect(r'"logger":"a2ad.access".*"request_id":"trace-42/a"')
    (line,) = [x for x in access_lines(with_auth.output) if x["request_id"] == "trace-42/a"]
    assert line["method"] == "SendMessage"
    assert line["http_method"] == "POST"
    assert line["binding"] == "JSONRPC"
    assert line["path"] == "/"
    assert line["status"] == 200
    assert "code" not in line
    assert line["principal"] == "ann"
    assert line["task_id"] == task["id"]
    assert line["duration_ms"] > 0
    assert re.fullmatch(r"127\.0\.0\.1:\d+", line["remote"])
    # The agent's line in that request's turn carries the same id.
    (turn,) = [x for x in json_lines(with_auth.output) if x["msg"] == "chatty thinks about hello"]
    assert turn["request_id"] == "trace-42/a" and turn["task_id"] == task["id"]


def test_a_streams_access_line_is_written_when_it_ends_with_its_duration(
    with_auth: Served, keys: tuple[Path, str]
) -> None:
    headers = {**V1, "Authorization": f"Bearer {keys[1]}", "X-Request-ID": "stream-1"}
    body = send_body("slowly now")
    body["method"] = "SendStreamingMessage"
    with httpx.Client(timeout=10) as http:
        with http.stream("POST", with_auth.url + "/", json=body, headers=headers) as stream:
            assert stream.headers["x-request-id"] == "stream-1"
            frames = [json.loads(x[5:]) for x in stream.iter_lines() if x.startswith("data:")]
    task_id = frames[0]["result"]["task"]["id"]
    with_auth.expect(r'"logger":"a2ad.access".*"request_id":"stream-1"')
    (line,) = [x for x in access_lines(with_auth.output) if x["request_id"] == "stream-1"]
    assert line["method"] == "SendStreamingMessage"
    assert line["status"] == 200
    assert line["task_id"] == task_id
    assert line["duration_ms"] >= 300  # the agent's 0.3 s: the line came at the stream's end


def test_every_kind_of_response_echoes_its_request_id_and_logs_its_status(
    with_auth: Served,
) -> None:
    # Each response starts in one place (server/types.py response_start): the
    # dashboard's page and files, a 304, a path nothing serves, the agent card.
    asked = {
        "page-1": ("/ui", {}),
        "card-1": ("/.well-known/agent-card.json", {}),
        "nothing-1": ("/no/such/path", {}),
    }
    with httpx.Client(timeout=10) as http:
        statuses = {}
        for request_id, (path, extra) in asked.items():
            got = http.get(with_auth.url + path, headers={"X-Request-ID": request_id, **extra})
            assert got.headers["x-request-id"] == request_id, path
            statuses[request_id] = got.status_code
        page = http.get(with_auth.url + "/ui")
        again = http.get(
            with_auth.url + "/ui",
            headers={"X-Request-ID": "page-2", "If-None-Match": page.headers["etag"]},
        )
        assert again.status_code == 304 and again.headers["x-request-id"] == "page-2"
        statuses["page-2"] = 304
    assert statuses["page-1"] == 200 and statuses["card-1"] == 200
    assert statuses["nothing-1"] == 401  # auth is on: refused before any route is looked up
    with_auth.expect(r'"logger":"a2ad.access".*"request_id":"page-2"')
    logged = {x["request_id"]: x["status"] for x in access_lines(with_auth.output)}
    assert {k: logged.get(k) for k in statuses} == statuses


def test_with_auth_on_no_line_holds_a_key_or_token(
    with_auth: Served, keys: tuple[Path, str]
) -> None:
    wrong = "a2ad_" + "0" * 40
    with httpx.Client(timeout=10) as http:
        for token in (keys[1], wrong):
            http.post(
                with_auth.url + "/",
                json=send_body("secretive"),
                headers={**V1, "Authorization": f"Bearer {token}"},
            )
        refused = http.get(with_auth.url + "/tasks", headers={"Authorization": f"Bearer {wrong}"})
        assert refused.status_code == 401
        assert refused.headers["x-request-id"]
    with_auth.expect(r'"logger":"a2ad.access".*"path":"/tasks","binding":"HTTP\+JSON","status":401')
    said = with_auth.output
    assert keys[1] not in said and wrong not in said
    assert "Bearer" not in said and "authorization" not in said.lower()
    assert any(x["status"] == 401 for x in access_lines(said))


@pytest.fixture(scope="module")
def as_text() -> Iterator[Served]:
    """Text logs, access lines for errors only (--access-log 0)."""
    with Served(*AGENT, "--log-format", "text", "--access-log", "0") as s:
        s.expect("Press Ctrl-C to stop")
        yield s
        assert s.stop() == 0


def test_text_lines_are_one_per_event_with_the_context_as_key_values(as_text: Served) -> None:
    with SyncClient(as_text.url) as client:
        task = client.send("plain words")
    assert isinstance(task, Task)
    line = as_text.expect(r"^\d\d:\d\d:\d\d\.\d{3} INFO +chatty chatty thinks about plain words ")
    text = line.string.rstrip("\n")
    assert f" task_id={task.id} " in text
    assert f" context_id={task.context_id} " in text
    assert " agent=chatty " in text
    assert re.search(r" request_id=[0-9a-f]{16}$", text)
    logged = [x for x in as_text.output.splitlines() if re.match(r"\d\d:\d\d:\d\d\.\d{3} ", x)]
    assert logged and not any("{" in x for x in logged)  # no JSON anywhere
    assert "\x1b[" not in as_text.output  # not a terminal: no colour
    assert sum("chatty thinks about plain words" in x for x in as_text.output.splitlines()) == 1


def test_access_log_0_writes_only_the_requests_answered_with_an_error(as_text: Served) -> None:
    with httpx.Client(timeout=10) as http:
        sent = http.post(as_text.url + "/", json=send_body("fine"), headers=V1)
        assert "result" in sent.json()
        missing = http.post(as_text.url + "/", json=rpc_body("GetTask", {"id": "nope"}), headers=V1)
        assert missing.json()["error"]["code"] == -32001
        assert http.get(as_text.url + "/no/such/path").status_code == 404
    as_text.expect(r"a2ad\.access GET /no/such/path 404 .*status=404")
    accessed = [x for x in as_text.output.splitlines() if " a2ad.access " in x]
    assert len(accessed) == 2, accessed
    assert "GetTask" in accessed[0] and "code=-32001" in accessed[0]
    assert not any("SendMessage" in x for x in accessed)


def test_access_log_off_writes_no_access_line() -> None:
    with Served(*AGENT, "--access-log", "off") as s, httpx.Client(timeout=10) as http:
        s.expect("Press Ctrl-C to stop")
        http.get(s.url + "/no/such/path")
        http.post(s.url + "/", json=send_body("last"), headers=V1)
        s.expect(r'"msg":"chatty thinks about last"')  # logged after the 404 was over
        assert s.stop() == 0
        said = s.output
    assert json_lines(said) and not access_lines(said)
    assert "a2ad.access" not in said


@pytest.mark.parametrize(
    ("command", "flag", "value"),
    [
        ("serve", "--log-format", "xml"),
        ("serve", "--access-log", "1.5"),
        ("serve", "--access-log", "all"),
        ("worker", "--log-format", "xml"),
    ],
)
def test_a_bad_log_flag_is_a_usage_error_naming_it(command: str, flag: str, value: str) -> None:
    store = "memory" if command == "serve" else "postgresql://127.0.0.1:1/none"
    done = run_a2ad(command, "--store", store, flag, value)
    assert done.returncode == 2
    said = (done.stdout + done.stderr).strip()
    assert said.startswith(f"error: {flag} {value!r}"), said


@pytest.mark.usefixtures("restored_logging")
def test_text_is_coloured_on_a_terminal_unless_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    for no_color, coloured in (("", True), ("1", False)):
        monkeypatch.setenv("NO_COLOR", no_color)
        main, side = os.openpty()
        with os.fdopen(side, "w") as terminal:
            configure_logging("info", log_format="text", stream=terminal)
            logging.getLogger("a2ad.test").warning("look here")
            terminal.flush()
            written = os.read(main, 4096).decode()
        os.close(main)
        assert "look here" in written
        assert ("\x1b[33mWARNING" in written) is coloured, repr(written)


@pytest.mark.usefixtures("restored_logging")
def test_what_a_library_does_to_logging_while_serving_is_undone_at_a2ads_next_line() -> None:
    out = io.StringIO()
    configure_logging("info", stream=out)
    # As PraisonAI's import does (logging.basicConfig(force=True)): a plain root
    # handler at warning; and as LiteLLM's: a handler of its own on its logger.
    plain = logging.StreamHandler(out)
    plain.setFormatter(logging.Formatter("%(message)s"))
    logging.getLogger().handlers[:] = [plain]
    logging.getLogger().setLevel(logging.WARNING)
    library = logging.getLogger("tests.a_library")
    library.addHandler(logging.StreamHandler(out))
    token = log_context.turn.set(log_context.Turn("t1", "c1", "chatty"))
    try:
        logging.getLogger("a2ad.test").info("a2ad's line")
        chatty_log.info("the agent's line")
        library.info("the library's line")
    finally:
        log_context.turn.reset(token)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [line["msg"] for line in lines] == [
        "a2ad's line",
        "the agent's line",
        "the library's line",
    ]
    assert all(line["task_id"] == "t1" for line in lines)


def record(msg: str, **extra: object) -> logging.LogRecord:
    made = logging.LogRecord("a2ad.test", logging.INFO, __file__, 1, msg, (), None)
    made.__dict__.update(extra)
    return made


def test_a_lines_own_field_wins_over_its_context() -> None:
    token = log_context.turn.set(log_context.Turn("turn-task", "turn-context", "chatty"))
    try:
        line = json.loads(JsonFormatter().format(record("about another", task_id="named")))
    finally:
        log_context.turn.reset(token)
    assert line["task_id"] == "named"
    assert line["context_id"] == "turn-context" and line["agent"] == "chatty"
    assert "task_id" not in json.loads(JsonFormatter().format(record("outside any turn")))


def test_text_lines_escape_what_a_terminal_would_act_on() -> None:
    said = TextFormatter().format(
        record("GET /\x1b[2J 404\nforged line", path="/\x1b[2J", note="two words")
    )
    assert "\x1b" not in said and "\n" not in said
    assert "GET /\\x1b[2J 404\\nforged line" in said
    assert 'path="/\\u001b[2J"' in said and 'note="two words"' in said
