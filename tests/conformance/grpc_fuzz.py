"""The gRPC wire fuzzer: malformed calls to every rpc of A2A 1.0's
``lf.a2a.v1.A2AService``, sent to a real ``a2ad serve --grpc-port`` on a real
port over a SQLite file (wire_fuzz.FuzzServer, its seeds and its log checks).

A call's request is bytes, sent through a generic channel call (no serializer),
so anything can go on the wire: random bytes; a valid request (a template per
rpc, naming tasks the server holds) given one mutation of a field by its type
(an odd or huge string, random or huge bytes, an integer at its type's ends, an
enum number the spec lacks, a Timestamp out of range, a Struct or Value nested
deep, thousands of repeated parts); a field the proto lacks, or a known one in
another wire type, or with bytes that are not UTF-8, or a wire type that does
not exist; the bytes cut short or with one flipped. (``raw_field`` pads a
message past the size limit: test_grpc_fuzz.py sends one to every rpc.) Then
perhaps its metadata abused: a bad ``a2a-version``,
``authorization``, ``x-api-key``, ``a2ad-agent``, ``last-event-id``,
``a2ad-event-ids`` or ``a2a-extensions``, a huge value, hundreds of keys,
``-bin`` keys with random bytes, a key given twice.

``check_outcome`` holds the server to what it promises for any call: it ends
with a status before its deadline (never DEADLINE_EXCEEDED), never UNKNOWN nor
INTERNAL; an answer (each event, for a stream) decodes as the rpc's response
type with nothing the proto lacks; an error is the code the spec's table gives
its ErrorInfo reason, with its google.rpc.Status in the trailer
(oracles.assert_grpc_error), except what gRPC itself answers before a2ad sees
the call (RESOURCE_EXHAUSTED for a message past the limit, or metadata past
gRPC's own) and what the client says of an answer past its own limit.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

import grpc
from a2a.types import a2a_pb2
from google.protobuf import json_format, message_factory
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import DecodeError
from google.protobuf.message import Message as ProtoMessage
from hypothesis import strategies as st

from .oracles import assert_grpc_error, check_grpc_answer
from .wire_fuzz import (
    HUGE_SIZES,
    LAST_EVENT_IDS,
    MAX_BODY_BYTES,
    ODD_STRINGS,
    TERMINAL,
    VERSION_HEADERS,
    FuzzServer,
    Seeds,
    _templates,
)

__all__ = [
    "CALL_TIMEOUT",
    "RPCS",
    "GrpcRequest",
    "Outcome",
    "check_outcome",
    "grpc_address",
    "grpc_requests",
    "send",
    "templates",
]

CALL_TIMEOUT = 20.0  # a call's deadline: past it, the server hung
SERVICE = a2a_pb2.DESCRIPTOR.services_by_name["A2AService"]
# gRPC's own limit on a call's metadata (grpc.max_metadata_size, 8 KiB): past it
# gRPC may refuse the call, RESOURCE_EXHAUSTED, before a2ad sees it. Its own
# headers count too (:path, :authority, user-agent, grpc-timeout...): some 700 bytes.
GRPC_METADATA_LIMIT = 8 * 1024
GRPC_HEADERS = 1024
# What a gRPC client says of an answer past its own limit (4 MiB by default): a
# page of tasks with large artifacts may be.
CLIENT_LIMIT = "CLIENT: Received message larger than max"
_INTERRUPTED = {"TASK_STATE_INPUT_REQUIRED", "TASK_STATE_AUTH_REQUIRED"}


@dataclass(frozen=True)
class Rpc:
    name: str
    path: str
    request: type[ProtoMessage]
    response: type[ProtoMessage]
    streams: bool


RPCS = {
    m.name: Rpc(
        m.name,
        f"/{SERVICE.full_name}/{m.name}",
        message_factory.GetMessageClass(m.input_type),
        message_factory.GetMessageClass(m.output_type),
        m.server_streaming,
    )
    for m in SERVICE.methods
}


def grpc_address(server: FuzzServer) -> str:
    """The gRPC listener's address, as ``a2ad serve``'s banner names it (its
    line may come a moment after the JSON-RPC one, which FuzzServer waits for)."""
    deadline = time.monotonic() + 10
    while not (found := re.search(r"gRPC:\s+(\S+)", server.log())):
        assert time.monotonic() < deadline, f"no gRPC listener in the banner:\n{server.log()}"
        time.sleep(0.02)
    return found.group(1)


def templates(seeds: Seeds) -> dict[str, list[ProtoMessage]]:
    """Valid requests of every rpc: the JSON-RPC fuzzer's 1.0 params (the
    ProtoJSON of the same messages) parsed as the rpc's request. Those the
    proto can't hold (a2ad's own ``overdue`` filter, a state spelled
    ``completed``) are left out; every rpc keeps some."""
    out: dict[str, list[ProtoMessage]] = {}
    for name, params in _templates(seeds).items():
        if name not in RPCS:
            continue
        parsed = []
        for p in params:
            try:
                parsed.append(json_format.ParseDict(p, RPCS[name].request()))
            except json_format.ParseError:
                continue
        assert parsed, f"no template of {name} is a {RPCS[name].request.DESCRIPTOR.name}"
        out[name] = parsed
    assert set(out) == set(RPCS), set(RPCS) - set(out)
    return out


# --- requests -------------------------------------------------------------------


class GrpcRequest:
    """One call as it goes on the wire. (Not a dataclass: Hypothesis prints
    those field by field, and bodies can be megabytes.)"""

    def __init__(
        self, rpc: Rpc, body: bytes, metadata: list[tuple[str, str | bytes]], mutation: str
    ) -> None:
        self.rpc = rpc
        self.body = body
        self.metadata = metadata
        self.mutation = mutation

    def __repr__(self) -> str:
        shown = self.body if len(self.body) < 600 else self.body[:600] + b"..."
        metadata = [(k, v if len(v) < 200 else v[:200]) for k, v in self.metadata]
        return (
            f"GrpcRequest({self.rpc.name}, {self.mutation}, metadata={metadata!r}, "
            f"body ({len(self.body)} bytes)={shown!r})"
        )

    @property
    def metadata_size(self) -> int:
        """As gRPC counts it: each key and value, and 32 bytes an entry."""
        return sum(len(k) + len(v) + 32 for k, v in self.metadata)


def _varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | (0x80 if n else 0))
        if not n:
            return bytes(out)


def raw_field(number: int, wire_type: int, payload: bytes) -> bytes:
    """A field as protobuf encodes it: its tag, then ``payload`` as the wire
    type wants it (a varint's bytes as given; a length before a type 2's)."""
    tag = _varint((number << 3) | wire_type)
    return tag + (_varint(len(payload)) + payload if wire_type == 2 else payload)


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


_ODD = [text for text in ODD_STRINGS if _encodable(text)]  # a proto string is UTF-8
_INT32 = [-(2**31), -1, 0, 1, 2**31 - 1]
_ENUMS = [-(2**31), -1, 0, 9, 99, 2**31 - 1]  # 0: unspecified; the others: none of its values
# (seconds, nanos) of a Timestamp: before year 1, after 9999, nanos past a second.
_TIMES = [(-62135596801, 0), (253402300800, 0), (0, 1_000_000_000), (0, -1), (2**40, 0)]
# How a call's message is mutated, each as often as it is listed: a field by its
# type most often. (Past the size limit: test_grpc_fuzz.py sends that to every
# rpc; here its 2 MiB, which gRPC takes a tenth of a second to refuse, would be
# most of the run's time.)
MUTATIONS = [
    *["as is"] * 2,
    *["field"] * 5,
    *["raw field"] * 2,
    *["random bytes", "truncated", "flipped byte"],
]
DEPTHS = [5, 20, 31, 32, 33, 40, 60, 100, 200]
REPEATS = [64, 1_000, 10_000]


def _slots(message: ProtoMessage, top: bool = True) -> list[tuple[ProtoMessage, Any]]:
    """(message, field) for every field of ``message`` (of its nested messages,
    those set), the fields of google.protobuf's own types left out but a
    Struct, Value or Timestamp as a whole kept. (No request of the service has
    a map field.)"""
    fields = message.DESCRIPTOR.fields if top else [f for f, _ in message.ListFields()]
    out: list[tuple[ProtoMessage, Any]] = []
    for f in fields:
        out.append((message, f))
        if f.type != FieldDescriptor.TYPE_MESSAGE:
            continue
        if f.message_type.full_name.startswith("google.protobuf."):
            continue
        value = getattr(message, f.name)
        for item in value if f.is_repeated else [value] if message.HasField(f.name) else []:
            out += _slots(item, top=False)
    return out


def _nest(value: ProtoMessage, depth: int) -> None:
    """``value`` (a Struct or a Value) made ``depth`` Structs deep. (Built by
    hand: json_format stops at 100.)"""
    struct = value if value.DESCRIPTOR.name == "Struct" else value.struct_value
    for _ in range(depth - 1):
        struct = struct.fields["a"].struct_value
    struct.fields["a"].string_value = "bottom"


@st.composite
def _field_mutation(draw: st.DrawFn, message: ProtoMessage) -> str:
    """One field of ``message`` (a copy of a template) changed by its type."""
    target, f = draw(st.sampled_from(_slots(message)), label="field")
    kind = f.type
    where = f"{target.DESCRIPTOR.name}.{f.name}"
    if f.is_repeated and kind == FieldDescriptor.TYPE_MESSAGE and len(getattr(target, f.name)):
        items = getattr(target, f.name)
        count = draw(st.sampled_from(REPEATS))
        first = items[0]
        for _ in range(count):
            items.add().CopyFrom(first)
        return f"{where}: {count} more"
    if kind == FieldDescriptor.TYPE_MESSAGE:
        name = f.message_type.full_name
        value = getattr(target, f.name) if not f.is_repeated else getattr(target, f.name).add()
        if name in ("google.protobuf.Struct", "google.protobuf.Value"):
            depth = draw(st.sampled_from(DEPTHS))
            _nest(value, depth)
            return f"{where}: nested {depth} deep"
        if name == "google.protobuf.Timestamp":
            value.seconds, value.nanos = draw(st.sampled_from(_TIMES))
            return f"{where}: time {value.seconds}s {value.nanos}ns"
        if f.is_repeated:
            return f"{where}: an empty one added"
        target.ClearField(f.name)
        value = getattr(target, f.name)
        value.SetInParent()
        return f"{where}: empty"
    if kind == FieldDescriptor.TYPE_STRING:
        if draw(st.booleans()):
            size = draw(st.sampled_from(HUGE_SIZES))
            new: Any = draw(st.sampled_from(["x", "é", "\u2028"])) * (size // 2)
            shown = f"a string of {len(new)}"
        else:
            new = draw(st.sampled_from(_ODD) | st.text(max_size=20).filter(_encodable))
            shown = repr(new)
    elif kind == FieldDescriptor.TYPE_BYTES:
        new = draw(st.binary(max_size=64) | st.sampled_from(HUGE_SIZES).map(lambda n: b"\xff" * n))
        shown = f"{len(new)} bytes"
    elif kind == FieldDescriptor.TYPE_BOOL:
        new = not getattr(target, f.name)
        shown = repr(new)
    elif kind == FieldDescriptor.TYPE_ENUM:
        new = draw(st.sampled_from(_ENUMS))
        shown = f"enum {new}"
    else:  # the requests' other fields are strings, bytes, bools, enums and messages
        assert kind == FieldDescriptor.TYPE_INT32, f"{where}: a field of type {kind}"
        new = draw(st.sampled_from(_INT32))
        shown = repr(new)
    if f.is_repeated:
        getattr(target, f.name).append(new)
    else:
        setattr(target, f.name, new)
    return f"{where} = {shown}"


BAD_UTF8 = [b"\xff", b"\xc0\xaf", b"\xed\xa0\x80", b"\xe2\x80", b"\xf4\x90\x80\x80", b"\x80"]


_WIRE_TYPES = {
    FieldDescriptor.TYPE_STRING: 2,
    FieldDescriptor.TYPE_BYTES: 2,
    FieldDescriptor.TYPE_MESSAGE: 2,
    FieldDescriptor.TYPE_BOOL: 0,
    FieldDescriptor.TYPE_ENUM: 0,
    FieldDescriptor.TYPE_INT32: 0,
}


@st.composite
def _raw_field(draw: st.DrawFn, message: ProtoMessage) -> tuple[bytes, str]:
    """A field of ``message`` in raw bytes: one the proto lacks, a known one in
    another wire type or (a string) with bytes that are not UTF-8, field number
    0, or a wire type that does not exist."""
    fields = list(message.DESCRIPTOR.fields)
    how = draw(
        st.sampled_from(["unknown", "wrong wire type", "not UTF-8", "number 0", "no wire type"])
    )
    strings = [f.number for f in fields if f.type == FieldDescriptor.TYPE_STRING]
    if how == "not UTF-8" and strings:
        number = draw(st.sampled_from(strings))
        return raw_field(number, 2, b"ok" + draw(st.sampled_from(BAD_UTF8))), f"{how}: {number}"
    if how == "wrong wire type" and fields:
        f = draw(st.sampled_from(fields))
        number = f.number
        wire_type = draw(st.sampled_from([t for t in (0, 1, 2, 5) if t != _WIRE_TYPES[f.type]]))
    else:
        known = {f.number for f in fields}
        number = (
            0
            if how == "number 0"
            else draw(st.sampled_from([99, 1000, 19_500, 2**29 - 1]) | st.integers(1, 2**29 - 1))
        )
        if number in known:
            number = 2**29 - 1  # one the proto lacks after all
        wire_type = draw(st.sampled_from([6, 7] if how == "no wire type" else [0, 1, 2, 3, 5]))
    payload = {
        0: draw(st.sampled_from([b"\x01", b"\xff" * 9 + b"\x01", b"\x80"])),
        1: b"\x00" * 8,
        2: draw(st.binary(max_size=32)),
        3: b"",  # a group begun and never ended
        5: b"\x00" * 4,
    }.get(wire_type, b"")
    return raw_field(number, wire_type, payload), f"{how}: field {number} wire type {wire_type}"


TEXT = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=40)
CREDENTIAL_VALUES = [
    "Bearer ",
    "Bearer x",
    "Basic YTpi",
    "Bearer " + "k" * 5000,
    "bearer  spaced",
    "Token abc",
    "Bearer a.b.c",
]
ABUSED_KEYS = {
    "a2a-version": st.sampled_from(VERSION_HEADERS) | TEXT,
    "authorization": st.sampled_from(CREDENTIAL_VALUES) | TEXT,
    "x-api-key": st.sampled_from(["", "x", "k" * 300]) | TEXT,
    "a2ad-agent": st.sampled_from(["", "fuzz", "nobody", "../x", "a/b", "x" * 300]) | TEXT,
    "last-event-id": st.sampled_from(
        [v.decode("latin-1") for v in LAST_EVENT_IDS if all(0x20 <= c < 0x7F for c in v)]
    )
    | st.integers(0, 30).map(str),
    "a2ad-event-ids": st.sampled_from(["1", "true", "TRUE", "0", "", "yes", "2"]),
    "a2a-extensions": st.sampled_from(["", ",", "https://x/e", "a, b,,c", "x" * 2000]) | TEXT,
    "x-request-id": st.sampled_from(["", "x" * 1000]) | TEXT,
    "traceparent": st.sampled_from(["00-" + "0" * 32 + "-" + "0" * 16 + "-01", "zz"]) | TEXT,
}


@st.composite
def _metadata(draw: st.DrawFn) -> tuple[list[tuple[str, str | bytes]], str]:
    """Metadata abused in one way, and what was done."""
    how = draw(st.sampled_from(["odd value", "huge value", "many keys", "binary key", "twice"]))
    if how == "odd value":
        keys = draw(st.lists(st.sampled_from(sorted(ABUSED_KEYS)), min_size=1, max_size=3))
        return [(k, draw(ABUSED_KEYS[k])) for k in keys], f"metadata {keys}"
    if how == "huge value":
        key = draw(st.sampled_from([*ABUSED_KEYS, "x-fuzz"]))
        size = draw(st.sampled_from([1_000, 8_000, 16_000, 17_000, 100_000]))
        return [(key, "v" * size)], f"metadata {key} of {size}"
    if how == "many keys":
        count = draw(st.sampled_from([20, 200, 2000]))
        return [(f"x-fuzz-{i}", "v") for i in range(count)], f"{count} metadata keys"
    if how == "binary key":
        key = draw(st.sampled_from([f"{k}-bin" for k in ABUSED_KEYS] + ["x-fuzz-bin"]))
        value = draw(st.binary(max_size=64) | st.sampled_from([b"\x00" * 9000]))
        return [(key, value)], f"binary metadata {key}"
    key = draw(st.sampled_from(sorted(ABUSED_KEYS)))
    values = [draw(ABUSED_KEYS[key]), draw(ABUSED_KEYS[key])]
    return [(key, v) for v in values], f"metadata {key} twice"


@st.composite
def grpc_requests(draw: st.DrawFn, valid: dict[str, list[ProtoMessage]]) -> GrpcRequest:
    """A call to any rpc, saying ``a2a-version: 1.0`` or no version (1.0 too):
    a template (of ``valid``) mutated in one way, then perhaps its metadata
    abused."""
    rpc = RPCS[draw(st.sampled_from(sorted(RPCS)), label="rpc")]
    message = rpc.request()
    message.CopyFrom(draw(st.sampled_from(valid[rpc.name]), label="template"))
    how = draw(st.sampled_from(MUTATIONS), label="mutation")
    what = how
    if how == "field":
        what = draw(_field_mutation(message))
    body = message.SerializeToString()
    if how == "raw field":
        extra, what = draw(_raw_field(message))
        at = draw(st.sampled_from(["end", "start"]))
        body = body + extra if at == "end" else extra + body
    elif how == "random bytes":
        body = draw(st.binary(max_size=64) | st.binary(min_size=1000, max_size=5000))
    elif how == "truncated" and body:
        body = body[: draw(st.integers(0, len(body) - 1))]
    elif how == "flipped byte" and body:
        i = draw(st.integers(0, len(body) - 1))
        body = body[:i] + bytes([body[i] ^ draw(st.integers(1, 255))]) + body[i + 1 :]
    metadata: list[tuple[str, str | bytes]] = (
        [("a2a-version", "1.0")] if draw(st.booleans()) else []
    )
    if draw(st.integers(0, 3)) == 0:
        abused, said = draw(_metadata(), label="metadata")
        if any(k == "a2a-version" for k, _ in abused):
            metadata = []
        metadata += abused
        what = f"{what}, {said}"
    return GrpcRequest(rpc, body, metadata, what)


# --- sending and checking ---------------------------------------------------------


@dataclass
class Outcome:
    """How a call ended: its status, and the answers it carried before."""

    code: grpc.StatusCode
    details: str | None
    trailers: Any
    answers: list[bytes] = field(default_factory=list)


def send(channel: grpc.Channel, request: GrpcRequest) -> Outcome:
    """``request`` made on ``channel``, read to its status."""
    rpc = request.rpc
    answers: list[bytes] = []
    try:
        if rpc.streams:
            call = channel.unary_stream(rpc.path)(
                request.body, metadata=request.metadata, timeout=CALL_TIMEOUT
            )
            answers.extend(call)
        else:
            answer, call = channel.unary_unary(rpc.path).with_call(
                request.body, metadata=request.metadata, timeout=CALL_TIMEOUT
            )
            answers.append(answer)
    except grpc.RpcError as exc:
        error: Any = exc
        return Outcome(error.code(), error.details(), error.trailing_metadata(), answers)
    return Outcome(call.code(), call.details(), call.trailing_metadata(), answers)


def check_outcome(request: GrpcRequest, outcome: Outcome) -> str:
    """What a2ad promises for any call (the module's docstring); returns what
    the outcome was, for a tally."""
    code, rpc = outcome.code, request.rpc
    assert code != grpc.StatusCode.DEADLINE_EXCEEDED, f"no status in {CALL_TIMEOUT} s"
    for raw in outcome.answers:
        try:
            answer = rpc.response.FromString(raw)
        except DecodeError as exc:
            raise AssertionError(f"an answer that is not a {rpc.response.__name__}") from exc
        if rpc.response.DESCRIPTOR.full_name != "google.protobuf.Empty":
            check_grpc_answer(answer)
    if code == grpc.StatusCode.OK:
        if rpc.streams:
            return _check_stream(rpc, outcome.answers)
        assert len(outcome.answers) == 1, outcome
        return "OK"
    assert code not in (grpc.StatusCode.UNKNOWN, grpc.StatusCode.INTERNAL), (
        f"{code.name} for bad input: {outcome.details!r}"
    )
    if code == grpc.StatusCode.RESOURCE_EXHAUSTED and not _has_details(outcome):
        if CLIENT_LIMIT in (outcome.details or ""):  # an answer past what this client takes
            return "RESOURCE_EXHAUSTED (the client's limit)"
        # gRPC's own answer, before a2ad read the call: past the message limit or
        # past its metadata limit.
        headers = request.metadata_size + GRPC_HEADERS
        over = len(request.body) > MAX_BODY_BYTES or headers > GRPC_METADATA_LIMIT
        assert over, f"RESOURCE_EXHAUSTED without ErrorInfo: {outcome.details!r}"
        return "RESOURCE_EXHAUSTED (gRPC's limit)"
    assert len(request.body) <= MAX_BODY_BYTES, f"{code.name} for a message past the limit"
    info = assert_grpc_error(code, outcome.details, outcome.trailers)
    after = " after events" if outcome.answers else ""
    return f"{code.name} {info.reason}{after}"


def _has_details(outcome: Outcome) -> bool:
    return any(k == "grpc-status-details-bin" for k, _ in outcome.trailers or ())


def _check_stream(rpc: Rpc, answers: list[bytes]) -> str:
    """A stream that ended OK ends with a final event: a message, the task
    terminal, or (a streamed send) interrupted."""
    assert answers, "a stream with no event"
    last = rpc.response.FromString(answers[-1])
    kind = last.WhichOneof("payload")
    state = ""
    if kind in ("task", "status_update"):
        state = a2a_pb2.TaskState.Name(getattr(last, kind).status.state)
    ends_turn = rpc.name == "SendStreamingMessage" and state in _INTERRUPTED
    assert kind == "message" or state in TERMINAL or ends_turn, f"no final event: {last}"
    return "OK stream"
