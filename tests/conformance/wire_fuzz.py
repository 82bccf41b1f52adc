"""The wire fuzzer: mutated JSON-RPC requests, in both A2A versions and for every
method, sent to a real ``a2ad serve`` on a real port over a SQLite file.

A request starts as a valid one (a template per method, naming tasks the server
really holds) and gets one mutation: a value of the wrong type at any path of the
envelope or params, a member removed or added, a huge or odd string, a number JSON
does not have (NaN, Infinity) or cannot hold, deep nesting, a batch array, a bogus
page token or ``Last-Event-ID``, invalid UTF-8, a body cut short (in the JSON, or on
the socket), an odd ``A2A-Version``. ``check_answer`` then holds the server to what
it promises for any input: never a 5xx, always a well-formed JSON-RPC error with an
A2A code (or a valid result, or a stream of them that ends with a final event).
``FuzzServer`` runs the server and says whether its log holds a traceback;
``Seeds`` are the tasks stored before a run, to compare after it.

tests/conformance/test_fuzz.py runs a modest number of examples; scripts/fuzz runs
many more (docs/testing.md).
"""

from __future__ import annotations

import base64
import copy
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from a2a.types import (
    ListTaskPushNotificationConfigsResponse,
    ListTasksResponse,
    SendMessageResponse,
    StreamResponse,
    Task,
    TaskPushNotificationConfig,
)
from hypothesis import strategies as st

from a2ad.cli.log_bound import MAX_LINE
from a2ad.protocol.dialect import METHODS, Operation

from ..jsonrpc import rpc_body
from .fuzz_agent import HOLD
from .oracles import assert_error, parse_v1, validate_03
from .test_errors import KEYS as PARAM_KEYS

__all__ = [
    "FuzzServer",
    "Seeds",
    "WireRequest",
    "check_answer",
    "send",
    "wire_requests",
]

PROJECT = Path(__file__).resolve().parent.parent.parent
FUZZ_AGENT = "tests.conformance.fuzz_agent:FuzzAgent"
V1 = {"A2A-Version": "1.0"}
REQUEST_TIMEOUT = 30.0

# Codes an answer to bad input may carry: the JSON-RPC ones except -32603 (a bug of
# ours, never the caller's fault) and the A2A ones of either version.
ALLOWED_CODES = frozenset({-32700, -32600, -32601, -32602}) | frozenset(range(-32009, -32000))
TERMINAL = {
    "TASK_STATE_COMPLETED",
    "TASK_STATE_FAILED",
    "TASK_STATE_CANCELED",
    "TASK_STATE_REJECTED",
    "completed",
    "failed",
    "canceled",
    "rejected",
}
INTERRUPTED = {"TASK_STATE_INPUT_REQUIRED", "TASK_STATE_AUTH_REQUIRED"} | {
    "input-required",
    "auth-required",
}


# --- the server ----------------------------------------------------------------


class FuzzServer:
    """``a2ad serve`` with the fuzz agent over a SQLite file in a temporary folder,
    on a port the system picks; stdout and stderr go to a log file."""

    def __init__(
        self, *, auth: str = "", agents: tuple[str, ...] = (), args: tuple[str, ...] = ()
    ) -> None:
        """``auth``: a keys file, to serve with auth on; ``agents``: names to
        serve the fuzz agent under (at /agents/<name>/, the first at / too);
        ``args``: more of ``a2ad serve``'s flags (``--grpc-port 0``)."""
        specs = [f"{name}={FUZZ_AGENT}" for name in agents] or [FUZZ_AGENT]
        self.dir = tempfile.TemporaryDirectory(prefix="a2ad-fuzz-")
        self.log_path = Path(self.dir.name) / "server.log"
        self.url = ""
        self._read = 0
        self._log = self.log_path.open("wb")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "a2ad.cli",
                "serve",
                "--port",
                "0",
                "--store",
                f"sqlite:///{self.dir.name}/tasks.db",
                *(arg for spec in specs for arg in ("--agent", spec)),
                "--shutdown-grace",
                "0s",
                "--max-body-bytes",
                str(MAX_BODY_BYTES),
                *(["--auth", auth] if auth else []),
                *args,
            ],
            cwd=PROJECT,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "COLUMNS": "200"},
        )

    def __enter__(self) -> FuzzServer:
        deadline = time.monotonic() + 20
        while not self.url:
            if found := re.search(r"JSON-RPC:\s+(http://\S+?)/\s", self.log()):
                self.url = found.group(1)
            elif self.proc.poll() is not None or time.monotonic() > deadline:
                self.__exit__()
                raise RuntimeError(f"a2ad serve did not start:\n{self.log()}")
            else:
                time.sleep(0.05)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._log.close()
        self.dir.cleanup()

    def log(self) -> str:
        return self.log_path.read_bytes().decode("utf-8", "replace")

    def new_troubles(self) -> list[str]:
        """Lines logged since the last call that show a failure inside the server
        (a traceback, an exception, anything logged as an error), and any line
        longer than the log's bound (cli/log_bound.py), shown by its start."""
        with self.log_path.open("rb") as f:
            f.seek(self._read)
            new = f.read()
        self._read += len(new)
        text = new.decode("utf-8", "replace")
        long = [
            f"a line of {len(line)} characters: {line[:200]}"
            for line in text.split("\n")  # (not splitlines: a JSON line may hold U+2028)
            if len(line) > MAX_LINE
        ]
        return long + [line[:2000] for line in _TROUBLE.findall(text)]


_TROUBLE = re.compile(
    r'^.*(?:Traceback|Exception|"level": ?"(?:error|critical)"|^ERROR).*$', re.MULTILINE
)


# --- the tasks stored before a run -----------------------------------------------


@dataclass
class Seeds:
    """Tasks in every state, stored before the fuzzing starts. Requests name only the
    terminal ones (``finished``), which no request may change; the others are never
    named, so nothing the fuzzer sends can legitimately touch any of them."""

    finished: list[str] = field(default_factory=list)
    others: list[str] = field(default_factory=list)
    context_id: str = ""
    page_token: str = ""

    @property
    def all(self) -> list[str]:
        return self.finished + self.others

    @classmethod
    def store(cls, http: httpx.Client) -> Seeds:
        seeds = cls()

        def send(text: str, v1: bool = True) -> dict[str, Any]:
            part = {"text": text} if v1 else {"kind": "text", "text": text}
            message = {
                "messageId": f"seed-{len(seeds.all)}-{text}",
                "role": "ROLE_USER" if v1 else "user",
                "parts": [part],
            }
            answer = rpc(http, "SendMessage" if v1 else "message/send", v1, message=message)
            return answer["task"] if v1 else answer  # type: ignore[no-any-return]

        for text, v1 in [("echo seeded", True), ("chunks", False), ("fail", True)]:
            seeds.finished.append(send(text, v1)["id"])
        seeds.finished.append(send("reject", False)["id"])
        held = rpc(
            http,
            "SendMessage",
            True,
            message={"messageId": "seed-held", "role": "ROLE_USER", "parts": [{"text": HOLD}]},
            configuration={"returnImmediately": True},
        )["task"]
        seeds.finished.append(rpc(http, "CancelTask", True, id=held["id"])["id"])
        asked = send("input which colour?")
        seeds.context_id = asked["contextId"]
        seeds.others.append(asked["id"])
        seeds.others.append(send("auth", False)["id"])
        still = rpc(
            http,
            "SendMessage",
            True,
            message={"messageId": "seed-working", "role": "ROLE_USER", "parts": [{"text": HOLD}]},
            configuration={"returnImmediately": True},
        )["task"]
        seeds.others.append(still["id"])
        seeds.page_token = rpc(http, "ListTasks", True, pageSize=2)["nextPageToken"]
        return seeds

    def snapshot(self, http: httpx.Client) -> dict[str, Any]:
        return {task_id: rpc(http, "GetTask", True, id=task_id) for task_id in self.all}


def rpc(http: httpx.Client, method: str, v1: bool, **params: Any) -> Any:
    payload = rpc_body(method, params)
    answer = http.post("/", json=payload, headers=V1 if v1 else {}).json()
    assert "result" in answer, answer
    return answer["result"]


# --- valid requests -------------------------------------------------------------


def _templates(seeds: Seeds) -> dict[str, list[dict[str, Any]]]:
    """Valid params for every method, several per method where the shape varies."""
    done, ctx = seeds.finished, seeds.context_id
    texts = ["echo x", "input which?", "fail", "reject", "reply hi", "chunks", "auth"]
    sends_10 = [
        {
            "message": {
                "messageId": "m-1",
                "role": "ROLE_USER",
                "parts": [
                    {"text": text},
                    {"url": "https://example.com/f.pdf", "mediaType": "application/pdf"},
                    {"data": {"k": [1, 2, {"n": None}]}},
                    {"raw": "AAEC", "filename": "b.bin", "mediaType": "a/b"},
                ],
                "metadata": {"k": "v"},
            },
            "configuration": {"historyLength": 2, "acceptedOutputModes": ["text/plain"]},
            "metadata": {"timeoutSeconds": 60},
        }
        for text in texts
    ]
    sends_10.append(
        {
            "message": {
                "messageId": "m-2",
                "role": "ROLE_USER",
                "parts": [{"text": "more"}],
                "taskId": done[0],
                "contextId": ctx,
            }
        }
    )
    sends_10.append(
        {
            "message": {"messageId": "m-3", "role": "ROLE_USER", "parts": [{"text": "x"}]},
            "configuration": {"returnImmediately": True, "historyLength": 0},
        }
    )
    sends_03 = [
        {
            "message": {
                "kind": "message",
                "messageId": "m-1",
                "role": "user",
                "parts": [
                    {"kind": "text", "text": text},
                    {"kind": "file", "file": {"uri": "https://x/y", "mimeType": "a/b"}},
                    {"kind": "file", "file": {"bytes": "AAEC", "name": "b.bin"}},
                    {"kind": "data", "data": {"k": 1}},
                ],
                "contextId": ctx,
                "metadata": {"deadline": "2999-01-01T00:00:00Z"},
            },
            "configuration": {"historyLength": 2, "blocking": True},
        }
        for text in texts
    ]
    sends_03.append({"message": {"role": "user", "parts": [{"text": "x"}], "taskId": done[1]}})
    sends_03.append(
        {
            "message": {"role": "user", "parts": [{"text": "echo"}]},
            "configuration": {"blocking": False},
        }
    )
    lists = [
        {
            "contextId": ctx,
            "status": "TASK_STATE_COMPLETED",
            "pageSize": 5,
            "historyLength": 1,
            "includeArtifacts": True,
        },
        {"pageSize": 2, "pageToken": seeds.page_token},
        {"statusTimestampAfter": "2020-01-01T00:00:00Z", "status": "completed"},
        {"overdue": True},
        {},
    ]
    ids = [{"id": task_id} for task_id in done] + [{"id": "no-such-task"}]
    gets = [
        {"id": task_id, "historyLength": n}
        for task_id, n in zip(done, [0, 1, 3, 100], strict=False)
    ]
    return {
        "SendMessage": sends_10,
        "SendStreamingMessage": sends_10,
        "GetTask": gets + ids,
        "ListTasks": lists,
        "CancelTask": ids,
        "SubscribeToTask": ids,
        "CreateTaskPushNotificationConfig": [
            {"taskId": done[0], "url": "https://x/h", "token": "t", "authentication": {}}
        ],
        "GetTaskPushNotificationConfig": [{"taskId": done[0], "id": "c"}],
        "ListTaskPushNotificationConfigs": [{"taskId": done[0], "pageSize": 5}],
        "DeleteTaskPushNotificationConfig": [{"taskId": done[0], "id": "c"}],
        "GetExtendedAgentCard": [{}],
        "message/send": sends_03,
        "message/stream": sends_03,
        "tasks/get": gets + ids,
        "tasks/list": lists,
        "tasks/cancel": ids,
        "tasks/resubscribe": ids,
        "tasks/pushNotificationConfig/set": [
            {"taskId": done[0], "pushNotificationConfig": {"url": "https://x/h", "token": "t"}}
        ],
        "tasks/pushNotificationConfig/get": [
            {"id": done[0]},
            {"id": done[0], "pushNotificationConfigId": "c"},
        ],
        "tasks/pushNotificationConfig/list": [{"id": done[0]}],
        "tasks/pushNotificationConfig/delete": [{"id": done[0], "pushNotificationConfigId": "c"}],
        "agent/getAuthenticatedExtendedCard": [{}],
    }


# --- mutations --------------------------------------------------------------------

# JSON text spliced in where a marker string stands after json.dumps: what json.dumps
# cannot write (numbers JSON has not got, deep nesting) or should not (bad syntax).
_RAW = "\x00raw{}\x00"
_RAW_IN_JSON = re.compile(r'"\\u0000raw(\d+)\\u0000"')

ODD_STRINGS = [
    "",
    " ",
    "\x00",
    "\x00\x01\x1f\x7f",
    "\ud800",  # a lone surrogate: json.dumps writes it as the escape "\ud800"
    "\udfff\ud800",
    "\u2028\u2029\x85",
    "\r\n\r\ndata: x\n\n",
    "\u202eevil",
    "👩‍👩‍👧‍👦" * 3,
    "ﬁ\u0301\u0065\u0301",
    "%s%n%x{0}{}",
    "'; DROP TABLE tasks; --",
    "../../../etc/passwd",
    "TASK_STATE_WORKING",
    "completed",
    "1.0",
    "-1",
    "1e309",
    "null",
    "AAAA",
    "=" * 8,
    "2026-02-30T25:61:61Z",
    "9999-12-31T23:59:59.999999999Z",
    "0000-00-00T00:00:00Z",
    "\\u0000",
]
HUGE_SIZES = [256, 257, 4096, 65_536, 1_000_000]
MAX_BODY_BYTES = 2 * 1024 * 1024  # the fuzzed server's body cap: above every huge string
RAW_NUMBERS = [
    "NaN",
    "-NaN",
    "Infinity",
    "-Infinity",
    "1e999",
    "-1e999",
    "1e-999",
    "-0",
    "-0.0",
    "18446744073709551616",
    "-9223372036854775809",
    "1" * 400,
    "0.1e1",
    "1E+2",
    "01",
    "1.",
    ".5",
    "+1",
    "0x10",
    "1_000",
]
BAD_UTF8 = [b"\xff", b"\xc0\xaf", b"\xed\xa0\x80", b"\xe2\x80", b"\xf4\x90\x80\x80", b"\x80"]
DEPTHS = [32, 100, 1_000, 10_000, 100_000]
# The params' field names that test_errors.py draws from, and the envelope's.
KEYS = [*PARAM_KEYS, "jsonrpc", "method", "params", "__proto__", ""]
# (httpx refuses to send a header value with spaces around it.)
VERSION_HEADERS = ["", "0.3", "1.0", "1.0.7", "1", "1.1", "2.0", "0.2", "abc", "1.0,0.3", "1.0 x"]
LAST_EVENT_IDS = [
    b"",
    b"0",
    b"1",
    b"-1",
    b"abc",
    b"1e3",
    b"0x10",
    b" 7",
    b"7 ",
    b"99999999999999999999",
    b"18446744073709551616",
    b"\xd9\xa3",  # an Arabic-Indic digit, in UTF-8
    b"\xb2",  # superscript two, in Latin-1
    b"3, 4",
    b"\x01",  # not a value HTTP allows: the HTTP parser answers 400
]
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=12)
    | st.sampled_from(ODD_STRINGS)
)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=8), inner, max_size=5)
    ),
    max_leaves=20,
)

_KINDS: dict[type, str] = {
    type(None): "null",
    bool: "bool",
    int: "number",
    float: "number",
    str: "string",
    list: "array",
    dict: "object",
}
_OF_KIND = {
    "null": st.none(),
    "bool": st.booleans(),
    "number": st.integers() | st.floats(),
    "string": st.text(max_size=16) | st.sampled_from(ODD_STRINGS),
    "array": st.lists(SCALARS, max_size=3),
    "object": st.dictionaries(st.sampled_from(KEYS), SCALARS, max_size=3),
}


def _slots(value: Any) -> list[tuple[Any, Any]]:
    """Every (container, key) in ``value``, nested ones included."""
    out: list[tuple[Any, Any]] = []
    items = (
        value.items()
        if isinstance(value, dict)
        else enumerate(value)
        if isinstance(value, list)
        else []
    )
    for key, child in items:
        out.append((value, key))
        out += _slots(child)
    return out


class WireRequest:
    """One request as it goes on the wire, and what the fuzzer knows of it. (Not a
    dataclass: Hypothesis prints those field by field, and bodies can be megabytes.)"""

    def __init__(self, body: bytes, headers: dict[str, str | bytes], mutation: str) -> None:
        self.body = body
        self.headers = headers
        self.mutation = mutation
        self.method = "POST"
        self.path = "/"
        self.query = ""
        # Sent on a raw socket with a Content-Length this much larger than the body,
        # then the sending side closed: a body cut short in transit.
        self.short_by = 0

    def __repr__(self) -> str:
        return f"WireRequest({self.describe()})"

    def describe(self) -> str:
        shown = self.body if len(self.body) < 600 else self.body[:600] + b"..."
        return (
            f"{self.mutation}: {self.method} {self.path}{self.query} headers={self.headers!r} "
            f"short_by={self.short_by} body ({len(self.body)} bytes)={shown!r}"
        )


def _dump(envelope: Any, raws: list[str]) -> bytes:
    text = json.dumps(envelope, allow_nan=True)
    text = _RAW_IN_JSON.sub(lambda m: raws[int(m.group(1))], text)
    return text.encode("utf-8", "surrogatepass")


def mutate_member(
    draw: st.DrawFn,
    how: str,
    root: dict[str, Any],
    slots: list[tuple[Any, Any]],
    container: Any,
    key: Any,
) -> bool:
    """The mutations both fuzzers make alike, of ``container[key]`` (one of
    ``root``'s ``slots``): a value of another type, the member removed, a member
    added to ``root`` or an object in it, an odd or a huge string. False, and
    nothing changed, when ``how`` is none of them (or a removal from a list)."""
    if how == "wrong type":
        kind = _KINDS[type(container[key])]
        other = draw(st.sampled_from(sorted(set(_OF_KIND) - {kind})))
        container[key] = draw(_OF_KIND[other])
    elif how == "remove" and isinstance(container, dict):
        del container[key]
    elif how == "add member":
        objects = [root] + [c[k] for c, k in slots if isinstance(c[k], dict)]
        target = draw(st.sampled_from(objects))
        target[draw(st.sampled_from(KEYS) | st.text(max_size=8))] = draw(JSON_VALUES)
    elif how == "odd string":
        container[key] = draw(st.sampled_from(ODD_STRINGS))
    elif how == "huge string":
        size = draw(st.sampled_from(HUGE_SIZES))
        char = draw(st.sampled_from(["x", "é", "\u2028", "7"]))
        # JSON writes a non-ASCII character as \uXXXX, six bytes: a million "é" made a
        # 6 MB body, past the server's cap (a 413, not the fuzz). The largest stays
        # huge in bytes; the smaller ones keep their lengths in characters (the limits).
        big = size == HUGE_SIZES[-1] and not char.isascii()
        container[key] = char * (size // 6 if big else size)
    else:
        return False
    return True


@st.composite
def _mutated(draw: st.DrawFn, seeds: Seeds, templates: dict[str, list[dict[str, Any]]]) -> Any:
    method = draw(st.sampled_from(sorted(METHODS)), label="method")
    dialect, operation = METHODS[method]
    v1 = dialect.version == "1.0"
    params = copy.deepcopy(draw(st.sampled_from(templates[method]), label="template"))
    envelope: dict[str, Any] = {
        "jsonrpc": "2.0",
        "id": draw(st.sampled_from([1, "r-1", 0, -7, 2.5, "", "x" * 300])),
        "method": method,
        "params": params,
    }
    headers: dict[str, str | bytes] = {"Content-Type": "application/json"}
    if v1:
        headers.update(V1)
    raws: list[str] = []
    slots = _slots(envelope)
    inner = _slots(params)
    # Mostly inside the params, where the methods differ; the envelope too.
    chosen = st.sampled_from(inner) if inner and draw(st.integers(0, 4)) else st.sampled_from(slots)
    container, key = draw(chosen, label="slot")
    how = draw(
        st.sampled_from(
            [
                "nothing",  # valid as it is: results and streams get checked too
                "nothing",
                "wrong type",
                "remove",
                "add member",
                "odd string",
                "huge string",
                "raw number",
                "deep nesting",
                "random json",
            ]
        ),
        label="mutation",
    )
    if how == "nothing" or mutate_member(draw, how, envelope, slots, container, key):
        pass
    elif how == "raw number":
        raws.append(draw(st.sampled_from(RAW_NUMBERS)))
        container[key] = _RAW.format(len(raws) - 1)
    elif how == "deep nesting":
        depth = draw(st.sampled_from(DEPTHS))
        shape = draw(st.sampled_from(["array", "object"]))
        raws.append(
            "[" * depth + "]" * depth if shape == "array" else '{"a":' * depth + "1" + "}" * depth
        )
        container[key] = _RAW.format(len(raws) - 1)
    else:
        container[key] = draw(JSON_VALUES)
    if operation is Operation.SUBSCRIBE and draw(st.booleans()):
        headers["Last-Event-ID"] = draw(
            st.sampled_from(LAST_EVENT_IDS)
            | st.integers(0, 20).map(lambda n: str(n).encode())
            | st.binary(max_size=12).map(lambda b: bytes(c for c in b if 0x20 <= c != 0x7F))
        )
    return envelope, headers, raws, f"{method} {how} at {key!r}"


@st.composite
def _page_tokens(draw: st.DrawFn, seeds: Seeds) -> Any:
    """A ListTasks request whose pageToken is bogus in every way a token can be."""
    v1 = draw(st.booleans())
    token = draw(
        st.sampled_from(
            [seeds.page_token, seeds.page_token[:-1], seeds.page_token + "A", "", "=", "!!", "AAAA"]
        )
        | st.text(max_size=40)
        | st.binary(max_size=40).map(lambda b: base64.urlsafe_b64encode(b).decode())
        | st.lists(JSON_VALUES, max_size=3).map(
            lambda v: base64.urlsafe_b64encode(json.dumps(v).encode()).decode().rstrip("=")
        )
        | st.tuples(st.sampled_from(ODD_STRINGS), st.sampled_from(ODD_STRINGS)).map(
            lambda v: base64.urlsafe_b64encode(
                json.dumps(list(v)).encode("utf-8", "surrogatepass")
            ).decode()
        )
    )
    params = {"pageToken": token, "pageSize": draw(st.integers(-1, 101))}
    envelope = {
        "jsonrpc": "2.0",
        "id": 9,
        "method": "ListTasks" if v1 else "tasks/list",
        "params": params,
    }
    headers: dict[str, str | bytes] = {"Content-Type": "application/json", **(V1 if v1 else {})}
    return envelope, headers, [], f"page token {token[:40]!r}"


@st.composite
def wire_requests(draw: st.DrawFn, seeds: Seeds) -> WireRequest:
    """A mutated request, then perhaps a mutation of its bytes or its headers."""
    templates = _templates(seeds)
    source = _page_tokens(seeds) if draw(st.integers(0, 7)) == 0 else _mutated(seeds, templates)
    envelope, headers, raws, what = draw(source, label="request")
    if draw(st.integers(0, 9)) == 0:  # a batch: JSON-RPC allows it, a2ad answers -32600
        extra, _, more, _ = draw(_mutated(seeds, templates))
        envelope = draw(st.sampled_from([[envelope, extra], [envelope], [], [[envelope]]]))
        raws += more  # markers of the second request keep their own numbers
        what = f"batch of {what}"
    body = _dump(envelope, raws)
    request = WireRequest(body, headers, what)
    finish = draw(
        st.sampled_from(
            ["as is"] * 6
            + ["invalid utf-8", "truncated", "cut on the socket", "version", "query", "path"]
            + ["oversized"]
        ),
        label="finish",
    )
    if finish == "invalid utf-8":
        at = draw(st.integers(0, len(body)))
        bad = draw(st.sampled_from(BAD_UTF8))
        request.body = body[:at] + bad + body[at + draw(st.integers(0, 1)) :]
    elif finish == "truncated":
        request.body = body[: draw(st.integers(0, max(0, len(body) - 1)))]
    elif finish == "cut on the socket":
        request.body = body[: draw(st.integers(0, max(0, len(body) - 1)))]
        request.short_by = len(body) - len(request.body)
    elif finish == "version":
        headers["A2A-Version"] = draw(st.sampled_from(VERSION_HEADERS))
    elif finish == "query":
        headers.pop("A2A-Version", None)
        request.query = "?A2A-Version=" + draw(st.sampled_from(VERSION_HEADERS)).strip()
    elif finish == "path":
        request.path = "/a2a"
    elif finish == "oversized":  # one byte or more past the cap: 413, nothing read
        extra = MAX_BODY_BYTES + 1 - len(body) + draw(st.integers(0, 4096))
        request.body = body + b" " * max(0, extra)
    request.mutation = f"{what}, {finish}"
    return request


# --- sending and checking ---------------------------------------------------------


@dataclass
class Answer:
    status: int
    content_type: str
    body: bytes


def _valid_http(request: WireRequest) -> bool:
    """Whether every header value is one HTTP allows (RFC 9110 §5.5: no control
    characters but tab); the HTTP parser answers 400 to one that is not, before a2ad
    sees the request."""
    for value in request.headers.values():
        raw = value if isinstance(value, bytes) else value.encode("latin-1")
        if any((b < 0x20 and b != 0x09) or b == 0x7F for b in raw):
            return False
    return True


def _clean(value: str | bytes) -> bool:
    """Whether httpx sends this header value (it refuses surrounding spaces and
    control characters)."""
    text = value.decode("latin-1") if isinstance(value, bytes) else value
    return text == text.strip() and text.isprintable()


def send(http: httpx.Client, request: WireRequest) -> Answer | None:
    """Send ``request``; None when the server closed a connection whose body was cut
    short without answering (what a server may do; the log is checked anyway)."""
    if request.short_by or not all(map(_clean, request.headers.values())):
        return _send_raw(http, request)
    r = http.request(
        request.method,
        request.path + request.query,
        content=request.body,
        headers=request.headers,
        timeout=REQUEST_TIMEOUT,
    )
    return Answer(r.status_code, r.headers.get("content-type", ""), r.content)


def _send_raw(http: httpx.Client, request: WireRequest) -> Answer | None:
    """``request`` written on a socket of its own, as it is."""
    url = httpx.URL(str(http.base_url))
    head = [f"{request.method} {request.path}{request.query} HTTP/1.1", f"Host: {url.host}"]
    head.append("Connection: close")
    head += [
        f"{k}: {v.decode('latin-1') if isinstance(v, bytes) else v}"
        for k, v in request.headers.items()
    ]
    head.append(f"Content-Length: {len(request.body) + request.short_by}")
    data = bytearray()
    with socket.create_connection((url.host, url.port or 80), timeout=REQUEST_TIMEOUT) as sock:
        try:
            sock.sendall("\r\n".join(head).encode("latin-1") + b"\r\n\r\n" + request.body)
            if request.short_by:
                sock.shutdown(socket.SHUT_WR)
            while chunk := sock.recv(65536):
                data += chunk
        except (ConnectionResetError, BrokenPipeError):
            # The HTTP parser refused a bad header and closed while the body was
            # still coming; what it answered, if anything, is all there is.
            assert not _valid_http(request), "the server reset a valid request"
    if not data:
        return None
    status_line, _, rest = bytes(data).partition(b"\r\n")
    status = int(status_line.split()[1])
    head_block, _, body = rest.partition(b"\r\n\r\n")
    fields = {}
    for line in head_block.split(b"\r\n"):
        name, _, value = line.partition(b":")
        fields[name.strip().lower()] = value.strip().decode("latin-1")
    if fields.get(b"transfer-encoding") == "chunked":
        body = _unchunked(body)
    return Answer(status, fields.get(b"content-type", ""), body)


def _unchunked(data: bytes) -> bytes:
    out = bytearray()
    while True:
        size_line, _, data = data.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            return bytes(out)
        out += data[:size]
        assert data[size : size + 2] == b"\r\n", "a chunk without its CRLF"
        data = data[size + 2 :]


def _strict_json(data: bytes) -> Any:
    def no_constants(name: str) -> Any:
        raise AssertionError(f"the server wrote {name}, which is not JSON")

    return json.loads(data, parse_constant=no_constants)


def _sent(request: WireRequest) -> tuple[Any, str]:
    """The request as the server would read it (None if not a JSON object), and
    the version it asks for."""
    try:
        sent = json.loads(request.body)
    except (ValueError, RecursionError):
        sent = None
    text = request.headers.get("A2A-Version", "")
    if isinstance(text, bytes):
        text = text.decode("latin-1")
    if not text and request.query:
        text = request.query.partition("=")[2]
    version = "1.0" if text.strip().split(".")[:2] == ["1", "0"] else "0.3"
    return (sent if isinstance(sent, dict) else None), version


def check_answer(request: WireRequest, answer: Answer | None) -> str:
    """What a2ad promises for any request: no 5xx, and a well-formed JSON-RPC
    answer (an error with an A2A code, or a valid result, or a stream of them
    that ends with a final event). Returns what the answer was, for a tally."""
    if answer is None:
        assert request.short_by or not _valid_http(request), "closed without an answer"
        return "no answer (body cut short, or bad HTTP)"
    assert answer.status < 500, f"HTTP {answer.status}: {answer.body[:500]!r}"
    assert b"Traceback" not in answer.body, answer.body[:2000]
    sent, version = _sent(request)
    if answer.status == 400 and (request.short_by or not _valid_http(request)):
        return "HTTP 400 (bad HTTP)"  # the HTTP parser's own answer
    if answer.status == 401:  # auth on, and no valid credential: nothing else was read
        assert answer.content_type.startswith("application/json"), answer
        body = _strict_json(answer.body)
        assert body["id"] is None and body["error"]["code"] == -31401, body
        assert body["error"]["data"][0]["reason"] == "UNAUTHENTICATED", body
        return "HTTP 401"
    if answer.status == 204:  # a JSON-RPC notification: neither run nor answered
        assert isinstance(sent, dict) and "id" not in sent, answer
        assert isinstance(sent.get("method"), str) and answer.body == b"", answer
        return "no answer (a notification)"
    if answer.content_type.startswith("text/event-stream"):
        assert answer.status == 200, answer
        return _check_stream(sent, version, answer.body)
    assert answer.content_type.startswith("application/json"), answer
    if answer.status == 413:  # past the body cap: refused before it was read
        assert len(request.body) > MAX_BODY_BYTES, request.mutation
        body = _strict_json(answer.body)
        assert body["id"] is None and body["error"]["code"] == -32600, body
        return "HTTP 413 (body too large)"
    assert answer.status == 200, answer
    body = _strict_json(answer.body)
    _check_response(sent, version, body, streaming=False)
    return f"error {body['error']['code']}" if "error" in body else "result"


def _check_stream(sent: Any, version: str, body: bytes) -> str:
    text = body.decode("utf-8")
    assert text.endswith("\n\n"), f"the stream ended in the middle of an event: {text[-300:]!r}"
    events = [e for e in text.split("\n\n") if e and not e.startswith(":")]
    assert events, "a stream with no event"
    last: Any = None
    for event in events:
        lines = event.split("\n")
        data = [line for line in lines if line.startswith("data: ")]
        assert len(data) == 1, f"one data line per event: {event[:300]!r}"
        assert all(line.startswith(("id: ", "data: ")) for line in lines), event[:300]
        last = _strict_json(data[0].removeprefix("data: ").encode())
        _check_response(sent, version, last, streaming=True)
    if "error" in last:
        return f"stream ending in error {last['error']['code']}"
    result = last["result"]
    if version == "1.0":
        ((key, item),) = result.items()
        final = key == "message"
        state = item.get("status", {}).get("state")
    else:
        final = result.get("kind") == "message"
        state = result.get("status", {}).get("state")
    method = sent["method"] if sent else ""
    ends_turn = METHODS[method][1] is Operation.STREAM if method in METHODS else False
    assert final or state in TERMINAL or (ends_turn and state in INTERRUPTED), (
        f"the stream ended without a final event: {last}"
    )
    return "stream"


RESULTS_10 = {
    Operation.SEND: SendMessageResponse,
    Operation.GET: Task,
    Operation.CANCEL: Task,
    Operation.LIST: ListTasksResponse,
    Operation.STREAM: StreamResponse,
    Operation.SUBSCRIBE: StreamResponse,
    Operation.CREATE_PUSH_CONFIG: TaskPushNotificationConfig,
    Operation.GET_PUSH_CONFIG: TaskPushNotificationConfig,
    Operation.LIST_PUSH_CONFIGS: ListTaskPushNotificationConfigsResponse,
}
RESULTS_03 = {
    Operation.SEND: "SendMessageSuccessResponse",
    Operation.GET: "GetTaskSuccessResponse",
    Operation.CANCEL: "CancelTaskSuccessResponse",
    Operation.STREAM: "SendStreamingMessageSuccessResponse",
    Operation.SUBSCRIBE: "SendStreamingMessageSuccessResponse",
    Operation.CREATE_PUSH_CONFIG: "SetTaskPushNotificationConfigSuccessResponse",
    Operation.GET_PUSH_CONFIG: "GetTaskPushNotificationConfigSuccessResponse",
    Operation.LIST_PUSH_CONFIGS: "ListTaskPushNotificationConfigSuccessResponse",
    Operation.DELETE_PUSH_CONFIG: "DeleteTaskPushNotificationConfigSuccessResponse",
}


def _without_delivery(result: Any) -> Any:
    """A push config result without its ``a2adDelivery`` member (in each config of a list)."""
    if isinstance(result, dict):
        result = {k: v for k, v in result.items() if k != "a2adDelivery"}
        if isinstance(result.get("configs"), list):
            result["configs"] = [_without_delivery(c) for c in result["configs"]]
    elif isinstance(result, list):
        result = [_without_delivery(c) for c in result]
    return result


def _check_response(sent: Any, version: str, body: Any, *, streaming: bool) -> None:
    assert isinstance(body, dict), body
    assert body.get("jsonrpc") == "2.0", body
    assert "id" in body, body
    assert ("result" in body) != ("error" in body), body
    sent_id = sent.get("id") if sent else None
    # The 0.3 schema checks the shape; its ids are strings or integers, but JSON-RPC
    # allows any number, and a2ad echoes what it got.
    shape = {**body, "id": None} if isinstance(body["id"], float) else body
    if "error" in body:
        code = body["error"].get("code")
        assert code in ALLOWED_CODES, f"code {code} for bad input: {body}"
        assert_error(shape, code, dialect="0.3")  # and the ErrorInfo
        assert body["id"] is None or body["id"] == sent_id, (body["id"], sent_id)
        return
    assert sent is not None, f"a result for a request that is not a JSON object: {body}"
    assert body["id"] == sent_id, (body["id"], sent_id)
    method = sent.get("method")
    assert method in METHODS, f"a result for method {method!r}: {body}"
    operation = METHODS[method][1]
    result = _without_delivery(body["result"])  # a2ad's push-delivery counts, checked apart
    if version == "1.0" and operation is Operation.DELETE_PUSH_CONFIG:
        assert result == {}, body  # google.protobuf.Empty
    elif version == "1.0" and operation in RESULTS_10:
        parse_v1(result, RESULTS_10[operation])
    elif version == "0.3" and operation in RESULTS_03:
        validate_03({**shape, "result": result}, RESULTS_03[operation])
    elif operation is not Operation.LIST:
        raise AssertionError(f"a result for {method} in {version}: {body}")
