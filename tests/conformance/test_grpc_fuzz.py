"""The gRPC wire fuzzer in the suite (grpc_fuzz.py): malformed calls to every rpc
of A2A 1.0's gRPC service, with abused metadata, against a real ``a2ad serve
--grpc-port`` over SQLite. Every call ends with a status before its deadline,
never UNKNOWN nor INTERNAL, an error always the spec's code with its ErrorInfo;
never a traceback in the server's log; the tasks stored before the run unchanged
after it; the server still answering.

The run is modest here (``A2AD_FUZZ_EXAMPLES``, else 300, or the ``deep``
profile's count if larger): ``scripts/fuzz tests/conformance/test_grpc_fuzz.py``
runs a long one.
"""

from __future__ import annotations

import os
import uuid
from collections import Counter
from collections.abc import Iterator, Sequence

import grpc
import httpx
import pytest
from a2a.types import a2a_pb2
from google.protobuf.message import Message as ProtoMessage
from hypothesis import given, settings
from hypothesis import strategies as st

from a2ad.server import auth

from .fuzz_round import fuzz_settings
from .grpc_fuzz import (
    RPCS,
    GrpcRequest,
    check_outcome,
    grpc_address,
    grpc_requests,
    raw_field,
    send,
    templates,
)
from .oracles import assert_grpc_error
from .wire_fuzz import MAX_BODY_BYTES, FuzzServer, Seeds

EXAMPLES = int(os.environ.get("A2AD_FUZZ_EXAMPLES", 0)) or max(300, settings.default.max_examples)
GRPC = ("--grpc-port", "0")
V1 = ("a2a-version", "1.0")


@pytest.fixture(scope="module")
def server() -> Iterator[FuzzServer]:
    with FuzzServer(args=GRPC) as running:
        yield running


@pytest.fixture(scope="module")
def channel(server: FuzzServer) -> Iterator[grpc.Channel]:
    with grpc.insecure_channel(grpc_address(server)) as opened:
        yield opened


def fuzz_calls(
    server: FuzzServer,
    channel: grpc.Channel,
    requests: st.SearchStrategy[GrpcRequest],
    *,
    examples: int,
    credentials: Sequence[tuple[tuple[str, str], ...]] = ((),),
) -> Counter[str]:
    """Makes ``examples`` calls drawn from ``requests``, each with one of
    ``credentials`` in its metadata; returns how many outcomes of each kind."""
    tally: Counter[str] = Counter()

    @fuzz_settings(examples)
    @given(request=requests, credential=st.sampled_from(list(credentials)))
    def fuzz(request: GrpcRequest, credential: tuple[tuple[str, str], ...]) -> None:
        request.metadata += credential
        outcome = send(channel, request)
        troubles = server.new_troubles()  # read first: they are this call's, pass or fail
        tally[check_outcome(request, outcome)] += 1
        assert not troubles, "the server logged:\n" + "\n".join(troubles)

    fuzz()
    return tally


def still_answers(
    channel: grpc.Channel, seeds: Seeds, metadata: tuple[tuple[str, str], ...]
) -> None:
    """A task is read and a message answered, as before the run."""
    get = channel.unary_unary(RPCS["GetTask"].path, response_deserializer=a2a_pb2.Task.FromString)
    read = a2a_pb2.GetTaskRequest(id=seeds.finished[0])
    task = get(read.SerializeToString(), metadata=metadata, timeout=10)
    assert task.id == seeds.finished[0]
    send_message = channel.unary_unary(
        RPCS["SendMessage"].path, response_deserializer=a2a_pb2.SendMessageResponse.FromString
    )
    sent = send_message(_message("echo after").SerializeToString(), metadata=metadata, timeout=10)
    assert sent.task.status.state == a2a_pb2.TASK_STATE_COMPLETED


def _message(text: str, **fields: str) -> a2a_pb2.SendMessageRequest:
    message = a2a_pb2.Message(
        message_id=str(uuid.uuid4()),
        role=a2a_pb2.ROLE_USER,
        parts=[a2a_pb2.Part(text=text)],
        **fields,
    )
    return a2a_pb2.SendMessageRequest(message=message)


def _call(rpc: str, request: ProtoMessage, *metadata: tuple[str, str | bytes]) -> GrpcRequest:
    return GrpcRequest(RPCS[rpc], request.SerializeToString(), [V1, *metadata], "as is")


# --- each kind of bad call, to every rpc where it applies ---------------------------


def test_a_request_that_is_not_protobuf_is_invalid_argument_for_every_rpc(
    server: FuzzServer, channel: grpc.Channel
) -> None:
    bodies = {
        "a corrupt tag": b"\xff",
        "a length past the end": b"\x0a\x05ab",
        "a wire type that does not exist": raw_field(1, 7, b""),
        "field 1 not UTF-8": raw_field(1, 2, b"\xff\xfe"),
    }
    server.new_troubles()
    seen = {}
    for rpc in RPCS.values():
        for what, body in bodies.items():
            outcome = send(channel, GrpcRequest(rpc, body, [V1], what))
            seen[f"{rpc.name}, {what}"] = (outcome.code.name, outcome.details)
            if outcome.code == grpc.StatusCode.INVALID_ARGUMENT:
                assert_grpc_error(outcome.code, outcome.details, outcome.trailers)
    wrong = {call: got for call, got in seen.items() if got[0] != "INVALID_ARGUMENT"}
    assert not wrong, "\n".join(f"{call}: {code} {said!r}" for call, (code, said) in wrong.items())
    assert server.new_troubles() == []


def test_every_rpc_refuses_a_message_past_the_size_limit_with_resource_exhausted(
    server: FuzzServer, channel: grpc.Channel
) -> None:
    server.new_troubles()
    for rpc in RPCS.values():
        body = raw_field(1000, 2, b"\x00" * MAX_BODY_BYTES)  # a field the proto lacks
        outcome = send(channel, GrpcRequest(rpc, body, [V1], "past the limit"))
        assert outcome.code == grpc.StatusCode.RESOURCE_EXHAUSTED, (rpc.name, outcome.code)
        assert "larger than max" in (outcome.details or ""), outcome.details
        # Just under it, the call is read: the field is skipped, the request judged.
        under = GrpcRequest(rpc, raw_field(1000, 2, b"\x00" * (MAX_BODY_BYTES - 16)), [V1], "")
        outcome = send(channel, under)
        check_outcome(under, outcome)
        assert outcome.code != grpc.StatusCode.RESOURCE_EXHAUSTED, rpc.name
    assert server.new_troubles() == []


@pytest.mark.parametrize(
    ("seconds", "nanos"),
    [(-62135596801, 0), (253402300800, 0), (0, 1_000_000_000), (0, -1)],
    ids=["before year 1", "after 9999", "nanos of a second", "negative nanos"],
)
def test_a_timestamp_out_of_range_is_invalid_argument_not_internal(
    server: FuzzServer, channel: grpc.Channel, seconds: int, nanos: int
) -> None:
    server.new_troubles()
    request = a2a_pb2.ListTasksRequest()
    request.status_timestamp_after.seconds = seconds
    request.status_timestamp_after.nanos = nanos
    outcome = send(channel, _call("ListTasks", request))
    logged = [line[:300] for line in server.new_troubles()]
    assert (outcome.code.name, logged) == ("INVALID_ARGUMENT", []), outcome.details
    assert_grpc_error(outcome.code, outcome.details, outcome.trailers)


@pytest.mark.parametrize("rpc", ["SendMessage", "SendStreamingMessage"])
def test_an_error_naming_a_long_task_id_reaches_the_client_with_its_own_status(
    server: FuzzServer, channel: grpc.Channel, rpc: str
) -> None:
    """An error's message and its google.rpc.Status travel as trailers, which a
    gRPC client takes up to 8 KiB of (16 KiB at most): past that it sees
    RESOURCE_EXHAUSTED, not the error. An error must fit, whatever it names."""
    request = _message("echo", task_id="é" * 2048)  # 4 KiB of UTF-8
    outcome = send(channel, _call(rpc, request))
    assert_grpc_error(outcome.code, outcome.details, outcome.trailers)


# What each abuse of a call's metadata must end in (check_outcome's words).
ABUSED_METADATA: dict[str, tuple[list[tuple[str, str | bytes]], str]] = {
    "a2a-version 2.0": ([("a2a-version", "2.0")], "FAILED_PRECONDITION VERSION_NOT_SUPPORTED"),
    "a2a-version 0.3": ([("a2a-version", "0.3")], "FAILED_PRECONDITION VERSION_NOT_SUPPORTED"),
    "a2a-version garbage": (
        [("a2a-version", "x" * 500)],
        "FAILED_PRECONDITION VERSION_NOT_SUPPORTED",
    ),
    "a2ad-agent unknown": ([("a2ad-agent", "nobody")], "NOT_FOUND METHOD_NOT_FOUND"),
    "a2ad-agent garbage": ([("a2ad-agent", "../%00" * 300)], "NOT_FOUND METHOD_NOT_FOUND"),
    "authorization with auth off": ([("authorization", "Basic !!")], "NOT_FOUND TASK_NOT_FOUND"),
    "binary keys": (
        [("a2a-version-bin", b"\xff\x00"), ("x-fuzz-bin", b"\x00" * 1000)],
        "NOT_FOUND TASK_NOT_FOUND",
    ),
    "last-event-id garbage": ([("last-event-id", "-1e9")], "NOT_FOUND TASK_NOT_FOUND"),
    "a2a-extensions garbage": ([("a2a-extensions", ",,, x ,")], "NOT_FOUND TASK_NOT_FOUND"),
    "2,000 keys": (
        [(f"x-fuzz-{i}", "v") for i in range(2000)],
        "RESOURCE_EXHAUSTED (gRPC's limit)",
    ),
    "a 20 KB value": ([("x-fuzz", "v" * 20_000)], "RESOURCE_EXHAUSTED (gRPC's limit)"),
}


@pytest.mark.parametrize("abuse", sorted(ABUSED_METADATA))
@pytest.mark.parametrize("rpc", ["GetTask", "SubscribeToTask"])
def test_abused_metadata_gets_the_status_it_calls_for(
    server: FuzzServer, channel: grpc.Channel, rpc: str, abuse: str
) -> None:
    metadata, expected = ABUSED_METADATA[abuse]
    request = RPCS[rpc].request(id="no-such-task")
    call = GrpcRequest(RPCS[rpc], request.SerializeToString(), metadata, abuse)
    server.new_troubles()
    assert check_outcome(call, send(channel, call)) == expected
    assert server.new_troubles() == []


def test_mutated_calls_never_break_the_server_nor_change_stored_tasks(
    server: FuzzServer, channel: grpc.Channel
) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as http:
        seeds = Seeds.store(http)
        before = seeds.snapshot(http)
        assert server.new_troubles() == []
        tally = fuzz_calls(server, channel, grpc_requests(templates(seeds)), examples=EXAMPLES)
        assert seeds.snapshot(http) == before
    still_answers(channel, seeds, (V1,))
    assert tally["OK"] and tally["OK stream"]  # valid calls were answered in full
    assert tally["RESOURCE_EXHAUSTED (gRPC's limit)"]  # metadata past gRPC's limit was tried
    # Shown with -s (scripts/fuzz): what the outcomes were.
    print(f"\ngRPC wire fuzzer, {sum(tally.values())} calls:")
    for what, count in tally.most_common():
        print(f"  {count:7d}  {what}")


# --- with auth on: credentials too are fuzzed ------------------------------------


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, str]:
    """A keys file with Ann's and Bob's keys: (file, ann, bob)."""
    path = str(tmp_path_factory.mktemp("keys") / "keys.toml")
    return path, auth.add_key(path, "ann"), auth.add_key(path, "bob")


@pytest.fixture(scope="module")
def auth_server(keys: tuple[str, str, str]) -> Iterator[FuzzServer]:
    with FuzzServer(auth=keys[0], args=GRPC) as running:
        yield running


@pytest.fixture(scope="module")
def auth_channel(auth_server: FuzzServer) -> Iterator[grpc.Channel]:
    with grpc.insecure_channel(grpc_address(auth_server)) as opened:
        yield opened


def test_with_auth_on_a_long_tenant_not_ones_own_is_permission_denied_not_lost(
    auth_server: FuzzServer, auth_channel: grpc.Channel, keys: tuple[str, str, str]
) -> None:
    """As a long task id (above): the refusal names the tenant, and must still fit."""
    request = a2a_pb2.CancelTaskRequest(id="t", tenant="é" * 2048)
    ann = ("authorization", f"Bearer {keys[1]}")
    outcome = send(auth_channel, _call("CancelTask", request, ann))
    assert_grpc_error(outcome.code, outcome.details, outcome.trailers, reason="PERMISSION_DENIED")


def test_with_auth_on_mutated_calls_and_credentials_never_break_the_server_nor_anns_tasks(
    auth_server: FuzzServer, auth_channel: grpc.Channel, keys: tuple[str, str, str]
) -> None:
    _, ann, bob = keys
    credentials: list[tuple[tuple[str, str], ...]] = [
        (("authorization", f"Bearer {ann}"),),
        (("authorization", f"Bearer {bob}"),),
        (("x-api-key", ann),),
        (("authorization", f"Bearer {ann}x"),),
        (("authorization", "Bearer "),),
        (("authorization", f"Basic {ann}"),),
        (("x-api-key", ""),),
        (("authorization", f"Bearer {bob}"), ("x-api-key", ann)),
        (),
    ]
    with httpx.Client(
        base_url=auth_server.url, timeout=30, headers={"Authorization": f"Bearer {ann}"}
    ) as owner:
        seeds = Seeds.store(owner)
        before = seeds.snapshot(owner)
        tally = fuzz_calls(
            auth_server,
            auth_channel,
            grpc_requests(templates(seeds)),
            examples=max(100, EXAMPLES // 3),
            credentials=credentials,
        )
        assert seeds.snapshot(owner) == before
    still_answers(auth_channel, seeds, (V1, ("authorization", f"Bearer {ann}")))
    unauthenticated = tally["UNAUTHENTICATED UNAUTHENTICATED"]
    assert unauthenticated and sum(tally.values()) > unauthenticated
    # No credential reached the log.
    log = auth_server.log()
    assert ann not in log and bob not in log
