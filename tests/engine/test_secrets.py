"""Webhook secrets at rest and in answers: a push config's token and credentials
are in no copy of the SQLite file, in no answer and in no log line, yet every
receiver gets them; the server key's file, and what happens when it changes.

Real SQLite files, a real receiver on loopback (tests/webhook_receiver.py) and
the app in process, as in test_push.py.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from a2ad import create_app
from a2ad.engine.config import EngineConfig
from a2ad.engine.secrets import KEY_BYTES, KeyFileError, read_or_create_key, server_key
from a2ad.protocol.model import AuthenticationInfo, TaskPushNotificationConfig
from a2ad.store.base import Webhook
from a2ad.store.sqlite import SqliteStore

from ..conftest import V1, free_port, wait_for
from ..scripted import ScriptedAgent
from ..served import run_a2ad
from ..webhook_receiver import Receiver
from .test_push import FAST, AppRpc, logged, name, send10, settled, started, webhook10

CREDENTIALS = "s3cret-credential-value"
TOKEN = "tok-value-123"
AUTH = {"scheme": "Bearer", "credentials": CREDENTIALS}
CHANGED = "can't decrypt the webhook's credentials: the server key changed"


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    with Receiver() as server:
        yield server


def sqlite_app(path: Path, **options: Any) -> Any:
    return create_app(
        ScriptedAgent(),
        store=SqliteStore(path),
        engine=EngineConfig(allow_private_webhooks=True, push_policy=FAST),
        **options,
    )


async def opened(path: Path, **options: Any) -> AsyncIterator[AppRpc]:
    async for rpc in started(sqlite_app(path, **options)):
        yield rpc


def file_bytes(database: Path) -> bytes:
    """The database as a copy of it would hold it: the file and its WAL."""
    wal = Path(f"{database}-wal")
    return database.read_bytes() + (wal.read_bytes() if wal.exists() else b"")


def assert_carried_secrets(got: list[Any]) -> None:
    assert got
    for r in got:
        assert r.headers["authorization"] == f"Bearer {CREDENTIALS}"
        assert r.headers["x-a2a-notification-token"] == TOKEN


async def test_a_copy_of_the_sqlite_file_holds_no_secret_yet_the_receiver_gets_them(
    receiver: Receiver, tmp_path: Path
) -> None:
    database = tmp_path / "tasks.db"
    hook = name()
    async for rpc in opened(database):
        config = webhook10(receiver, hook, id="w", token=TOKEN, authentication=AUTH)
        task = await send10(rpc, "chunks 2", config)
        await settled(rpc, task["id"], "w")
        assert len(receiver.accepted(hook)) == 1 + len(await logged(rpc, task["id"]))
        assert_carried_secrets(receiver.accepted(hook))
        stored = file_bytes(database)
        assert b"a2ad:enc:v1:" in stored  # the config is there, sealed
        assert CREDENTIALS.encode() not in stored and TOKEN.encode() not in stored
    stored = file_bytes(database)
    assert b"a2ad:enc:v1:" in stored
    assert CREDENTIALS.encode() not in stored and TOKEN.encode() not in stored


async def test_after_a_restart_with_the_same_key_file_deliveries_carry_the_same_secrets(
    receiver: Receiver, tmp_path: Path
) -> None:
    database = tmp_path / "tasks.db"
    hook = name()
    async for rpc in opened(database):
        config = webhook10(receiver, hook, id="w", token=TOKEN, authentication=AUTH)
        task = await send10(rpc, "input which one?", config)
        await settled(rpc, task["id"], "w")
        before = len(receiver.accepted(hook))
    async for rpc in opened(database):  # the key file beside the database, read again
        done = await send10(rpc, "the blue one", {}, taskId=task["id"])
        assert done["status"]["state"] == "TASK_STATE_COMPLETED"
        assert (await settled(rpc, task["id"], "w"))["deadLettered"] == 0
        assert len(receiver.accepted(hook)) == before + 3  # working, artifact, completed
        assert_carried_secrets(receiver.accepted(hook))


async def test_with_another_key_deliveries_fail_saying_so_and_the_server_goes_on(
    receiver: Receiver, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    database = tmp_path / "tasks.db"
    hook = name()
    async for rpc in opened(database):
        config = webhook10(receiver, hook, id="w", token=TOKEN, authentication=AUTH)
        task = await send10(rpc, "input which one?", config)
        await settled(rpc, task["id"], "w")
        before = len(receiver.accepted(hook))
    caplog.set_level(logging.INFO, logger="a2ad")
    async for rpc in opened(database, secret_key=os.urandom(KEY_BYTES)):
        done = await send10(rpc, "the blue one", {}, taskId=task["id"])
        assert done["status"]["state"] == "TASK_STATE_COMPLETED"
        delivery = await settled(rpc, task["id"], "w")
        assert (delivery["deadLettered"], delivery["delivered"]) == (3, before)
        assert delivery["lastError"].startswith(CHANGED)
        # The config still reads, its secrets masked whole, and a new one works.
        ids = {"taskId": task["id"], "id": "w"}
        got = await rpc("GetTaskPushNotificationConfig", ids, v1=True)
        assert got["result"]["token"] == "****"
        assert got["result"]["authentication"]["credentials"] == "****"
        again = await rpc(
            "CreateTaskPushNotificationConfig",
            {"taskId": task["id"], "id": "w2", "url": receiver.url(hook), "token": TOKEN},
            v1=True,
        )
        assert "result" in again, again
        await wait_for(lambda: len(receiver.accepted(hook)) == before + 1)
        assert receiver.accepted(hook)[-1].headers["x-a2a-notification-token"] == TOKEN
    assert len(receiver.accepted(hook)) == before + 1  # nothing went with unreadable secrets
    said = [r for r in caplog.records if CHANGED in r.getMessage()]
    assert said and all(r.levelno == logging.WARNING for r in said)


async def test_a_secret_stored_in_clear_by_an_older_a2ad_is_still_delivered_and_masked(
    receiver: Receiver, tmp_path: Path
) -> None:
    hook = name()
    async for rpc in opened(tmp_path / "tasks.db"):
        task = await send10(rpc, "input which one?", {})
        plain = TaskPushNotificationConfig(
            url=receiver.url(hook),
            id="old",
            task_id=task["id"],
            token=TOKEN,
            authentication=AuthenticationInfo(scheme="Bearer", credentials=CREDENTIALS),
        )
        # Written to the store as it is, as an a2ad from before encryption did.
        await rpc.app.store.put_webhook(Webhook(plain, "1.0"))
        await wait_for(lambda: len(receiver.accepted(hook)) == 1)
        assert_carried_secrets(receiver.accepted(hook))
        got = await rpc(
            "GetTaskPushNotificationConfig", {"taskId": task["id"], "id": "old"}, v1=True
        )
        assert got["result"]["token"] == "****-123"
        assert got["result"]["authentication"]["credentials"] == "****alue"


async def test_no_answer_in_either_version_or_binding_and_no_log_line_holds_a_secret(
    receiver: Receiver, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    hook = name()
    async for rpc in opened(tmp_path / "tasks.db"):
        task = await send10(rpc, "input which one?", {})
        answers: list[str] = []
        v1_config = {"taskId": task["id"], "id": "a", "url": receiver.url(hook), "token": TOKEN}
        v1_config["authentication"] = AUTH
        created = await rpc("CreateTaskPushNotificationConfig", v1_config, v1=True)
        answers.append(str(created))
        v03_config = {"url": receiver.url(hook), "id": "b", "token": TOKEN}
        v03_config["authentication"] = {"schemes": ["Bearer"], "credentials": CREDENTIALS}
        params = {"taskId": task["id"], "pushNotificationConfig": v03_config}
        answers.append(str(await rpc("tasks/pushNotificationConfig/set", params)))
        for id_ in ("a", "b"):
            ids = {"taskId": task["id"], "id": id_}
            answers.append(str(await rpc("GetTaskPushNotificationConfig", ids, v1=True)))
            ids03 = {"id": task["id"], "pushNotificationConfigId": id_}
            answers.append(str(await rpc("tasks/pushNotificationConfig/get", ids03)))
            rest = f"/tasks/{task['id']}/pushNotificationConfigs/{id_}"
            answers.append((await rpc.client.get(rest, headers=V1)).text)
            answers.append((await rpc.client.get(f"/v1{rest}")).text)
        listed = await rpc("ListTaskPushNotificationConfigs", {"taskId": task["id"]}, v1=True)
        answers.append(str(listed))
        answers.append(str(await rpc("tasks/pushNotificationConfig/list", {"id": task["id"]})))
        rest_list = f"/tasks/{task['id']}/pushNotificationConfigs"
        answers.append((await rpc.client.get(rest_list, headers=V1)).text)
        answers.append((await rpc.client.get(f"/v1{rest_list}")).text)
        await send10(
            rpc,
            "the blue one",
            webhook10(receiver, hook, id="c", token=TOKEN, authentication=AUTH),
            taskId=task["id"],
        )
        await wait_for(lambda: len(receiver.accepted(hook)) >= 3 * 4)
        assert_carried_secrets(receiver.accepted(hook))
    assert all("****alue" in a and "****-123" in a for a in answers), answers
    for answer in answers:
        assert CREDENTIALS not in answer and TOKEN not in answer
    assert caplog.records
    for record in caplog.records:
        logged_text = f"{record.getMessage()} {record.__dict__!r}"
        assert CREDENTIALS not in logged_text and TOKEN not in logged_text


@pytest.mark.parametrize(
    ("token", "credentials", "shown"),
    [
        ("t" * 1024, "c" * 4096, ("****tttt", "****cccc")),  # the longest accepted
        ("tok-4-chars!", "x" * 11, ("****ars!", "****")),  # 12 and 11 characters
        ("", "", (None, None)),
    ],
)
async def test_secrets_of_every_accepted_length_are_kept_delivered_and_masked(
    receiver: Receiver,
    tmp_path: Path,
    token: str,
    credentials: str,
    shown: tuple[str | None, str | None],
) -> None:
    hook = name()
    async for rpc in opened(tmp_path / "tasks.db"):
        auth = {"scheme": "Bearer", "credentials": credentials}
        config = webhook10(receiver, hook, id="w", token=token, authentication=auth)
        task = await send10(rpc, "echo x", config)
        await wait_for(lambda: len(receiver.accepted(hook)) >= 1)
        first = receiver.accepted(hook)[0]
        assert first.headers["authorization"] == f"Bearer {credentials}".rstrip()
        assert first.headers.get("x-a2a-notification-token") == (token or None)
        ids = {"taskId": task["id"], "id": "w"}
        got = (await rpc("GetTaskPushNotificationConfig", ids, v1=True))["result"]
        assert (got.get("token"), got["authentication"].get("credentials")) == shown


def test_the_key_file_is_made_beside_the_database_readable_by_its_owner_only(
    tmp_path: Path,
) -> None:
    store = SqliteStore(tmp_path / "tasks.db")
    key = server_key(store)
    path = tmp_path / "tasks.db-a2ad.key"
    assert path.read_bytes() == key and len(key) == KEY_BYTES
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert server_key(store) == key  # read, not made again
    assert [p.name for p in tmp_path.iterdir()] == ["tasks.db-a2ad.key"]  # no temporary left


def test_a_store_that_keeps_nothing_gets_a_new_key_each_time(tmp_path: Path) -> None:
    from a2ad import MemoryStore

    assert server_key(MemoryStore()) != server_key(MemoryStore())
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("content", [b"", b"x" * 31, b"x" * 33, b"x" * 64])
def test_a_key_file_of_the_wrong_size_is_refused_naming_it(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "server.key"
    path.write_bytes(content)
    with pytest.raises(KeyFileError, match=str(path)) as raised:
        read_or_create_key(str(path))
    assert "32 bytes" in str(raised.value)


def test_a_key_file_that_cannot_be_read_is_refused_naming_it(tmp_path: Path) -> None:
    with pytest.raises(KeyFileError, match=f"can't read the secret key file {tmp_path}"):
        read_or_create_key(str(tmp_path))  # a folder


def test_serve_with_a_bad_key_file_says_so_in_one_line_and_exits_3(tmp_path: Path) -> None:
    bad = tmp_path / "server.key"
    bad.write_bytes(b"too short")
    port = str(free_port())
    done = run_a2ad("serve", "--port", port, "--store", "memory", "--secret-key-file", str(bad))
    said = (done.stdout + done.stderr).strip()
    assert done.returncode == 3, said
    assert said.startswith(f"error: the secret key file {bad} must hold exactly 32 bytes")
    assert "Traceback" not in said


def test_serve_takes_the_key_file_from_the_environment_too(tmp_path: Path) -> None:
    bad = tmp_path / "from-env.key"
    bad.write_bytes(b"")
    env = {"A2AD_SECRET_KEY_FILE": str(bad)}
    done = run_a2ad("serve", "--port", str(free_port()), "--store", "memory", env=env)
    assert done.returncode == 3 and str(bad) in done.stderr, done.stderr
