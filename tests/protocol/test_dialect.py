"""The dialect description: every wire method of both versions and its operation,
the errors for a method of the wrong version or of none, and each dialect's
codec read both ways (what a client encodes, the server decodes, and back)."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import msgspec
import pytest

from a2ad.protocol.dialect import (
    DIALECTS,
    METHODS,
    Dialect,
    Operation,
    StreamItem,
    method_name,
    requested_version,
    resolve,
)
from a2ad.protocol.errors import MethodNotFoundError, VersionNotSupportedError
from a2ad.protocol.model import (
    Artifact,
    DataPart,
    FilePart,
    GetTaskRequest,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    Task,
    TaskArtifactUpdateEvent,
    TaskIdRequest,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
    TextPart,
)
from a2ad.protocol.requests import TaskQuery, encode_page_token
from a2ad.protocol.v03 import V03
from a2ad.protocol.v1 import V1

# Written out here, not derived from METHODS, so a slip in the table shows.
WIRE: dict[str, dict[Operation, str]] = {
    "1.0": {
        Operation.SEND: "SendMessage",
        Operation.STREAM: "SendStreamingMessage",
        Operation.GET: "GetTask",
        Operation.LIST: "ListTasks",
        Operation.CANCEL: "CancelTask",
        Operation.SUBSCRIBE: "SubscribeToTask",
        Operation.CREATE_PUSH_CONFIG: "CreateTaskPushNotificationConfig",
        Operation.GET_PUSH_CONFIG: "GetTaskPushNotificationConfig",
        Operation.LIST_PUSH_CONFIGS: "ListTaskPushNotificationConfigs",
        Operation.DELETE_PUSH_CONFIG: "DeleteTaskPushNotificationConfig",
        Operation.EXTENDED_CARD: "GetExtendedAgentCard",
    },
    "0.3": {
        Operation.SEND: "message/send",
        Operation.STREAM: "message/stream",
        Operation.GET: "tasks/get",
        Operation.LIST: "tasks/list",
        Operation.CANCEL: "tasks/cancel",
        Operation.SUBSCRIBE: "tasks/resubscribe",
        Operation.CREATE_PUSH_CONFIG: "tasks/pushNotificationConfig/set",
        Operation.GET_PUSH_CONFIG: "tasks/pushNotificationConfig/get",
        Operation.LIST_PUSH_CONFIGS: "tasks/pushNotificationConfig/list",
        Operation.DELETE_PUSH_CONFIG: "tasks/pushNotificationConfig/delete",
        Operation.EXTENDED_CARD: "agent/getAuthenticatedExtendedCard",
    },
}
CASES = [(version, op, method) for version, ops in WIRE.items() for op, method in ops.items()]
BOTH = pytest.mark.parametrize("dialect", [V1, V03], ids=["1.0", "0.3"])


# --- the table ---


@pytest.mark.parametrize(("version", "operation", "method"), CASES, ids=[c[2] for c in CASES])
def test_every_method_resolves_to_its_operation_and_back(
    version: str, operation: Operation, method: str
) -> None:
    dialect, resolved = resolve(version, method)
    assert dialect is DIALECTS[version]
    assert dialect.version == version
    assert resolved is operation
    assert method_name(dialect, operation) == method


def test_the_table_holds_exactly_the_methods_of_both_versions() -> None:
    expected = {method: (version, op) for version, op, method in CASES}
    assert {m: (d.version, op) for m, (d, op) in METHODS.items()} == expected


@BOTH
def test_every_operation_has_a_method_in_each_version(dialect: Dialect) -> None:
    names = {op: method_name(dialect, op) for op in Operation}
    assert len(set(names.values())) == len(Operation)


def test_only_send_streaming_and_subscribe_are_answered_with_a_stream() -> None:
    assert {op for op in Operation if op.streaming} == {Operation.STREAM, Operation.SUBSCRIBE}


def test_the_four_push_config_operations_are_push_config() -> None:
    assert {op for op in Operation if op.push_config} == {
        Operation.CREATE_PUSH_CONFIG,
        Operation.GET_PUSH_CONFIG,
        Operation.LIST_PUSH_CONFIGS,
        Operation.DELETE_PUSH_CONFIG,
    }


# --- choosing the version ---


@pytest.mark.parametrize(
    ("text", "version"),
    [
        ("", "0.3"),
        ("  ", "0.3"),
        ("0.3", "0.3"),
        ("1.0", "1.0"),
        ("1.0.3", "1.0"),
        (" 1.0 ", "1.0"),
    ],
)
def test_missing_version_means_0_3_and_a_patch_level_is_ignored(text: str, version: str) -> None:
    assert requested_version(text) == version


@BOTH
def test_the_headers_a_dialect_sends_select_that_dialect(dialect: Dialect) -> None:
    asked = requested_version(dialect.headers.get("A2A-Version", ""))
    assert resolve(asked, method_name(dialect, Operation.GET))[0] is dialect


def test_a_1_0_method_asked_as_0_3_names_the_header_to_send() -> None:
    with pytest.raises(VersionNotSupportedError) as caught:
        resolve("0.3", "GetTask")
    assert caught.value.code == -32009
    assert caught.value.message == (
        "GetTask is an A2A 1.0 method but the request asked for A2A 0.3; "
        "send the header A2A-Version: 1.0"
    )
    assert caught.value.metadata == {
        "method": "GetTask",
        "methodVersion": "1.0",
        "requestedVersion": "0.3",
    }


def test_a_0_3_method_asked_as_1_0_says_to_send_no_version_header() -> None:
    with pytest.raises(VersionNotSupportedError) as caught:
        resolve("1.0", "tasks/get")
    assert caught.value.code == -32009
    assert caught.value.message == (
        "tasks/get is an A2A 0.3 method but the request asked for A2A 1.0; "
        "send it without an A2A-Version header (or with A2A-Version: 0.3)"
    )
    assert caught.value.metadata == {
        "method": "tasks/get",
        "methodVersion": "0.3",
        "requestedVersion": "1.0",
    }


@pytest.mark.parametrize("version", ["1.0", "0.3"])
def test_a_method_of_neither_version_is_method_not_found(version: str) -> None:
    with pytest.raises(MethodNotFoundError) as caught:
        resolve(version, "tasks/frobnicate")
    assert caught.value.code == -32601
    assert caught.value.message == "Method not found: tasks/frobnicate"
    assert caught.value.metadata == {"method": "tasks/frobnicate"}


@pytest.mark.parametrize("method", ["SendMessage", "message/send", "NoSuchMethod"])
def test_an_unsupported_version_is_refused_whatever_the_method(method: str) -> None:
    with pytest.raises(VersionNotSupportedError) as caught:
        resolve(requested_version("2.0.1"), method)
    assert caught.value.code == -32009
    assert caught.value.message == (
        "A2A-Version 2.0 is not supported; this server speaks 1.0 "
        "(send the header A2A-Version: 1.0) and 0.3 (send no A2A-Version header)"
    )
    assert caught.value.metadata == {"requestedVersion": "2.0", "supportedVersions": "1.0,0.3"}


# --- each codec, read both ways ---

MESSAGE = Message(
    message_id="m-1",
    role=Role.AGENT,
    parts=[
        TextPart("hello", metadata={"lang": "en"}),
        DataPart({"n": 1}),
        FilePart(raw=b"\x00\x01", media_type="application/octet-stream", filename="a.bin"),
        FilePart(url="https://example.com/a.txt", media_type="text/plain"),
    ],
    context_id="c-1",
    task_id="t-1",
)
STATUS = TaskStatus(
    state=TaskState.INPUT_REQUIRED, message=MESSAGE, timestamp="2025-01-02T03:04:05Z"
)
ARTIFACT = Artifact(artifact_id="a-1", parts=[TextPart("out")], name="result")
TASK = Task(
    id="t-1",
    context_id="c-1",
    status=STATUS,
    artifacts=[ARTIFACT],
    history=[MESSAGE],
    metadata={"k": "v"},
)
ITEMS: list[StreamItem] = [
    TASK,
    MESSAGE,
    TaskStatusUpdateEvent(task_id="t-1", context_id="c-1", status=STATUS),
    TaskArtifactUpdateEvent(
        task_id="t-1", context_id="c-1", artifact=ARTIFACT, append=True, last_chunk=True
    ),
]


def raw(data: bytes) -> msgspec.Raw:
    return msgspec.Raw(data)


@BOTH
def test_params_a_client_encodes_decode_on_the_server_unchanged(dialect: Dialect) -> None:
    user = msgspec.structs.replace(MESSAGE, role=Role.USER)
    send = SendMessageRequest(
        message=user,
        configuration=SendMessageConfiguration(return_immediately=True, history_length=3),
        metadata={"trace": "x"},
    )
    assert dialect.decode_send(raw(dialect.encode_send(send)), "m") == send
    get = GetTaskRequest(id="t-1", history_length=0)
    assert dialect.decode_get(raw(dialect.encode_get(get)), "m") == get
    task_id = TaskIdRequest(id="t-1", metadata={"why": "done"})
    assert dialect.decode_task_id(raw(dialect.encode_task_id(task_id)), "m") == task_id
    cursor = ("2025-01-02T00:00:00.000Z", "t-9")
    listing = ListTasksRequest(
        context_id="c-1",
        status=TaskState.WORKING.value,
        page_size=7,
        page_token=encode_page_token(cursor),
        history_length=2,
        status_timestamp_after="2025-01-01T01:00:00+01:00",
        include_artifacts=True,
    )
    # The server's side is checked on the way in: the state parsed, the time in
    # the stores' form, the page token back to its cursor.
    assert dialect.decode_list(raw(dialect.encode_list(listing)), "m") == TaskQuery(
        page_size=7,
        context_id="c-1",
        state=TaskState.WORKING,
        updated_after="2025-01-01T00:00:00.000Z",
        cursor=cursor,
        history_length=2,
        include_artifacts=True,
    )


@BOTH
def test_list_params_carry_the_page_size_even_at_its_default(dialect: Dialect) -> None:
    # Another server's default page size may differ from ours.
    assert json.loads(dialect.encode_list(ListTasksRequest()))["pageSize"] == 50


@BOTH
def test_results_the_server_encodes_decode_on_the_client_unchanged(dialect: Dialect) -> None:
    assert dialect.decode_send_result(dialect.encode_send_result(TASK)) == TASK
    assert dialect.decode_send_result(dialect.encode_send_result(MESSAGE)) == MESSAGE
    assert dialect.decode_task(dialect.encode_task(TASK)) == TASK
    page = ListTasksResponse(tasks=[TASK], next_page_token="n", page_size=1, total_size=3)
    assert dialect.decode_page(dialect.encode_page(page)) == page
    for item in ITEMS:
        assert dialect.decode_stream_item(dialect.encode_stream_item(item, False)) == item


@BOTH
def test_a_message_where_a_task_belongs_is_refused(dialect: Dialect) -> None:
    with pytest.raises(ValueError):
        dialect.decode_task(dialect.encode_send_result(MESSAGE))


@BOTH
def test_a_status_update_where_a_send_result_belongs_is_refused(dialect: Dialect) -> None:
    update = dialect.encode_stream_item(ITEMS[2], True)
    with pytest.raises(ValueError, match="task"):
        dialect.decode_send_result(update)


def test_a_1_0_stream_event_of_no_known_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="statusUpdate"):
        V1.decode_stream_item(b'{"somethingElse": {}}')


def test_0_3_marks_only_the_final_status_update_final() -> None:
    assert json.loads(V03.encode_stream_item(ITEMS[2], True))["final"] is True
    assert json.loads(V03.encode_stream_item(ITEMS[2], False))["final"] is False


# --- layering ---


def test_protocol_imports_nothing_of_a2ad_outside_protocol() -> None:
    import a2ad.protocol

    package = Path(a2ad.protocol.__file__).parent
    for path in sorted(package.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                assert node.level <= 1, f"{path.name} imports from above protocol/"
                if node.level == 0 and node.module:
                    name = node.module
                    assert not name.startswith("a2ad") or name.startswith("a2ad.protocol"), path
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    name = alias.name
                    assert not name.startswith("a2ad") or name.startswith("a2ad.protocol"), path
