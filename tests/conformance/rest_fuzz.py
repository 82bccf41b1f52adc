"""The wire fuzzer's HTTP+JSON half: mutated requests on every route of both A2A
versions (1.0's paths, 0.3's under /v1/), bare, under a tenant and under
``/agents/<name>/``, sent to a real ``a2ad serve`` (wire_fuzz.FuzzServer, serving
the fuzz agent under two names).

A request starts as a valid one (a route, its path naming tasks the server
holds, a valid body and query) and gets mutations: of the body (the JSON-RPC
fuzzer's: a value of the wrong type, a member removed or added, odd and huge
strings, numbers JSON has not got or Python cannot hold, deep nesting; and a
field repeating the path's with another value or a number out of range, a body
that is no object, empty, cut short, not UTF-8, past the size cap), of the path
(odd and percent-encoded ids, a prefix naming no agent), of the method (one the
path does not take), of the query (unknown or repeated names, values of the
wrong type, odd text) and of the headers (A2A-Version, Content-Type, extensions,
Last-Event-ID). ``check_rest_answer`` holds the server to what HTTP+JSON
promises for any input: never a 5xx; an error is a google.rpc.Status with an
ErrorInfo (and 0.3's ``type`` beside it under /v1/); a result parses as the
version's proto type, and a stream's events each do, the last one final.

tests/conformance/test_rest_fuzz.py runs it at the suite's size; scripts/fuzz
runs many more (docs/testing.md).
"""

from __future__ import annotations

import copy
from typing import Any
from urllib.parse import quote, unquote, urlencode

from a2a.compat.v0_3 import a2a_v0_3_pb2 as pb03
from a2a.types import StreamResponse
from hypothesis import strategies as st

from a2ad.protocol.dialect import Operation
from a2ad.server.bindings.rest import ROUTES, _find

from .oracles import assert_status, parse_03_rest, parse_v1
from .wire_fuzz import (
    _RAW,
    BAD_UTF8,
    DEPTHS,
    INTERRUPTED,
    JSON_VALUES,
    KEYS,
    LAST_EVENT_IDS,
    MAX_BODY_BYTES,
    ODD_STRINGS,
    RAW_NUMBERS,
    RESULTS_10,
    TERMINAL,
    VERSION_HEADERS,
    Answer,
    Seeds,
    WireRequest,
    _dump,
    _slots,
    _strict_json,
    _templates,
    _valid_http,
    _without_delivery,
    mutate_member,
)

__all__ = ["AGENTS", "check_rest_answer", "rest_requests"]

AGENTS = ("fuzz", "other")  # the names FuzzServer serves the agent under
PREFIXES = [
    *("", "", "", "/acme", "/agents/fuzz", "/agents/other", "/agents/fuzz/acme"),
    *("/agents/nope", "/agents/", "/v1", "/acme/v1"),
]
METHODS = ["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"]
# (No bare "." or "..": httpx takes them out of a path; encoded, they reach the server.)
ODD_IDS = ["a:b", "a:cancel", "%zz", "%", "%2e%2e", "%2E", "a%2Fb", "%00", "~", "x" * 300]
OUT_OF_RANGE = ["1e400", "-1e400", "1" * 5_000, "NaN", "1e999"]
CONTENT_TYPES = ["application/json"] * 4 + [
    "application/a2a+json",
    "text/plain",
    "",
    "application/json; charset=latin-1",
    "multipart/form-data; boundary=x",
]
EXTENSIONS = ["", "https://example.com/ext", "a,b,,c", "x" * 300, ", ,", "urn:a2a:\xe9"]
TERMINAL_03 = TERMINAL | {"TASK_STATE_CANCELLED"}
RESULTS_03 = {
    Operation.SEND: pb03.SendMessageResponse,
    Operation.GET: pb03.Task,
    Operation.CANCEL: pb03.Task,
    Operation.CREATE_PUSH_CONFIG: pb03.TaskPushNotificationConfig,
    Operation.GET_PUSH_CONFIG: pb03.TaskPushNotificationConfig,
    Operation.LIST_PUSH_CONFIGS: pb03.ListTaskPushNotificationConfigResponse,
}


def _bodies(seeds: Seeds) -> dict[tuple[str, Operation], list[dict[str, Any]]]:
    """Valid bodies for every route that takes one, by version and operation."""
    rpc = _templates(seeds)
    push = {"url": "https://x/h", "token": "t", "authentication": {}}
    sdk_03 = {
        "request": {"message_id": "m-1", "role": "ROLE_USER", "content": [{"text": "echo x"}]},
        "configuration": {"accepted_output_modes": ["text/plain"], "blocking": True},
    }
    return {
        ("1.0", Operation.SEND): rpc["SendMessage"],
        ("1.0", Operation.STREAM): rpc["SendMessage"],
        ("1.0", Operation.CANCEL): [{}, {"metadata": {"k": "v"}}],
        ("1.0", Operation.SUBSCRIBE): [{}],
        ("1.0", Operation.CREATE_PUSH_CONFIG): [push, {**push, "id": "c"}],
        ("0.3", Operation.SEND): [sdk_03, *rpc["message/send"]],
        ("0.3", Operation.STREAM): [sdk_03, *rpc["message/send"]],
        ("0.3", Operation.CANCEL): [{}],
        ("0.3", Operation.SUBSCRIBE): [{}],
        ("0.3", Operation.CREATE_PUSH_CONFIG): [
            {"pushNotificationConfig": {"url": "https://x/h", "token": "t"}},
            {"config": {"pushNotificationConfig": {"url": "https://x/h"}}, "configId": "c"},
        ],
    }


def _queries(seeds: Seeds) -> dict[Operation, dict[str, str]]:
    return {
        Operation.GET: {"historyLength": "2"},
        Operation.LIST: {
            "contextId": seeds.context_id,
            "status": "TASK_STATE_COMPLETED",
            "pageSize": "2",
            "pageToken": seeds.page_token,
            "historyLength": "1",
            "statusTimestampAfter": "2020-01-01T00:00:00Z",
            "includeArtifacts": "true",
            "overdue": "false",
        },
        Operation.LIST_PUSH_CONFIGS: {"pageSize": "5"},
    }


def _segment(
    draw: st.DrawFn, seeds: Seeds, template: str, name: str, *, odd: bool
) -> tuple[str, str]:
    """A path parameter's value, ``odd`` or not: (as sent, as the server reads it)."""
    config = name == "pushNotificationConfigId" or (name == "id" and "{taskId}" in template)
    plain = st.sampled_from(["c", "no-such-config"] if config else [*seeds.finished, "no-such"])
    value = draw(
        (plain | st.sampled_from(ODD_STRINGS) | st.sampled_from(ODD_IDS)) if odd else plain,
        label=name,
    )
    if value in ODD_IDS:  # as it is: percent signs and colons the server reads itself
        return value, unquote(value)
    raw = value.encode("utf-8", "surrogatepass")
    safe = draw(st.sampled_from(["", ":@"]))
    return quote(raw, safe=safe), raw.decode("utf-8", "replace")


def _mutate_body(
    draw: st.DrawFn, body: dict[str, Any], path: dict[str, str]
) -> tuple[str, list[str]]:
    """One mutation of ``body`` in place; returns what it was and the raw JSON texts
    its markers stand for."""
    raws: list[str] = []
    slots = _slots(body)
    how = draw(
        st.sampled_from(
            [
                *("deep nesting", "raw number", "repeat path field", "wrong type", "remove"),
                *("add member", "odd string", "huge string", "random json", "nothing"),
            ]
        ),
        label="body mutation",
    )
    if not slots and how in ("wrong type", "remove", "odd string", "huge string"):
        how = "add member"
    container, key = draw(st.sampled_from(slots)) if slots else (body, "x")
    if mutate_member(draw, how, body, slots, container, key):
        pass
    elif how in ("raw number", "deep nesting"):
        if how == "raw number":
            raws.append(draw(st.sampled_from(RAW_NUMBERS + OUT_OF_RANGE)))
        else:
            depth = draw(st.sampled_from([*DEPTHS, 64, 65, 500]))
            array = draw(st.booleans())
            raws.append("[" * depth + "]" * depth if array else '{"a":' * depth + "1" + "}" * depth)
        container[key] = _RAW.format(len(raws) - 1)
    elif how == "repeat path field":
        key = draw(st.sampled_from([*path, "id", "taskId", "task_id", "tenant"]))
        what = draw(st.sampled_from(["same", "other", "out of range"]))
        if what == "out of range":
            raws.append(draw(st.sampled_from(OUT_OF_RANGE)))
            body[key] = _RAW.format(len(raws) - 1)
        else:
            body[key] = path.get(key, "x") if what == "same" else draw(JSON_VALUES)
    elif how == "random json":
        container[key] = draw(JSON_VALUES)
    return f"{how} at {key!r}", raws


def _finish_body(draw: st.DrawFn, body: bytes) -> tuple[str, bytes, int]:
    """What happens to the body's bytes: (what, bytes, how many short on the socket)."""
    finish = draw(
        st.sampled_from(
            ["as is"] * 6
            + ["deep", "no object", "invalid utf-8", "truncated", "cut on the socket", "empty"]
            + ["oversized"]
        ),
        label="body finish",
    )
    if finish == "invalid utf-8":
        at = draw(st.integers(0, len(body)))
        body = body[:at] + draw(st.sampled_from(BAD_UTF8)) + body[at + draw(st.integers(0, 1)) :]
    elif finish == "truncated":
        body = body[: draw(st.integers(0, max(0, len(body) - 1)))]
    elif finish == "cut on the socket":
        cut = draw(st.integers(0, max(0, len(body) - 1)))
        return finish, body[:cut], len(body) - cut
    elif finish == "no object":
        body = draw(st.sampled_from([b"[]", b"[{}]", b'"x"', b"1", b"null", b"true", b"1e400"]))
    elif finish == "empty":
        body = draw(st.sampled_from([b"", b" ", b"\n\t "]))
    elif finish == "deep":
        depth = draw(st.sampled_from([*DEPTHS, 65]))
        body = draw(
            st.sampled_from(
                [b"[" * depth + b"]" * depth, b'{"a":' * depth + b"1" + b"}" * depth, b"[" * depth]
            )
        )
    elif finish == "oversized":  # one byte or more past the cap: 413, nothing read
        body += b" " * (MAX_BODY_BYTES + 1 - len(body) + draw(st.integers(0, 4096)))
    return finish, body, 0


def _query(draw: st.DrawFn, seeds: Seeds, operation: Operation, *, odd: bool) -> tuple[str, str]:
    """The query string (with its ``?``), ``odd`` or not, and what was done to it."""
    valid = _queries(seeds).get(operation, {})
    names = draw(st.lists(st.sampled_from(sorted(valid)), unique=True)) if valid else []
    pairs = [(name, valid[name]) for name in names]
    how = (
        "as is"
        if not odd
        else draw(
            st.sampled_from(
                ["as is"] * 3
                + ["unknown name", "wrong value", "repeated", "odd value", "snake names"]
                + ["huge int", "raw", "version"]
            ),
            label="query mutation",
        )
    )
    if how == "unknown name":
        pairs.append((draw(st.sampled_from(KEYS) | st.text(max_size=8)), "1"))
    elif how == "wrong value" and pairs:
        at = draw(st.integers(0, len(pairs) - 1))
        pairs[at] = (pairs[at][0], draw(st.sampled_from(["x", "1.5", "-1", "", "yes", "0x10"])))
    elif how == "repeated" and pairs:
        pairs.append(pairs[0])
    elif how == "odd value" and pairs:
        at = draw(st.integers(0, len(pairs) - 1))
        odd = draw(st.sampled_from(ODD_STRINGS) | st.text(max_size=12))
        pairs[at] = (pairs[at][0], odd)
    elif how == "snake names":
        pairs = [("".join("_" + c.lower() if c.isupper() else c for c in n), v) for n, v in pairs]
    elif how == "huge int":
        pairs.append((draw(st.sampled_from(["pageSize", "historyLength"])), "9" * 30))
    elif how == "raw":
        return "?" + draw(st.sampled_from(["%ff%fe=%zz", "&&&", "=x", "a", "%", "a=1&a=2"])), how
    elif how == "version":
        pairs.append(("A2A-Version", draw(st.sampled_from(VERSION_HEADERS))))
    if not pairs:
        return "", how
    return "?" + urlencode(pairs, encoding="utf-8", errors="surrogatepass"), how


@st.composite
def rest_requests(draw: st.DrawFn, seeds: Seeds) -> WireRequest:
    """A request on one of the HTTP+JSON routes, valid but for one part of it
    (or none) that is mutated: its path, method, body, query or headers."""
    route = draw(st.sampled_from(ROUTES), label="route")
    version, operation = route.dialect.version, route.operation
    area = draw(
        st.sampled_from(["body", "body", "body", "path", "none", "method", "query", "headers"]),
        label="mutated",
    )
    sent_path, path = route.template, {}
    for name in ("taskId", "id", "pushNotificationConfigId"):
        if "{" + name + "}" in sent_path:
            as_sent, as_read = _segment(draw, seeds, route.template, name, odd=area == "path")
            sent_path = sent_path.replace("{" + name + "}", as_sent)
            path[name] = as_read
    valid_prefixes = ["", "/agents/fuzz"] + (
        ["/acme", "/agents/fuzz/acme"] if version == "1.0" else []
    )
    prefix = draw(st.sampled_from(PREFIXES if area == "path" else valid_prefixes), label="prefix")
    method = draw(st.sampled_from(METHODS)) if area == "method" else route.method
    what = [f"{area}: {method} {route.template} under {prefix or '/'}"]
    body = b""
    short_by = 0
    headers: dict[str, str | bytes] = {}
    templates = _bodies(seeds).get((version, operation))
    if templates is not None or area == "body":
        params = copy.deepcopy(draw(st.sampled_from(templates or [{}]), label="body"))
        raws: list[str] = []
        finish = "as is"
        if area == "body":
            mutation, raws = _mutate_body(draw, params, path)
            what.append(mutation)
        body = _dump(params, raws)
        if area == "body":
            finish, body, short_by = _finish_body(draw, body)
        what.append(finish)
        headers["Content-Type"] = "application/json"
    query = ""
    if operation in _queries(seeds) or area == "query":
        query, how = _query(draw, seeds, operation, odd=area == "query")
        what.append(f"query {how}")
    if area == "headers":
        _mutate_headers(draw, headers, operation)
    request = WireRequest(body, headers, ", ".join(what))
    request.method = method
    request.path = prefix + sent_path
    request.query = query
    request.short_by = short_by
    return request


def _mutate_headers(draw: st.DrawFn, headers: dict[str, str | bytes], operation: Operation) -> None:
    content_type = draw(st.sampled_from(CONTENT_TYPES) | st.none())
    if content_type is None:
        headers.pop("Content-Type", None)
    else:
        headers["Content-Type"] = content_type
    if (version := draw(st.sampled_from([None, *VERSION_HEADERS]))) is not None:
        headers["A2A-Version"] = version
    if draw(st.booleans()):
        name = draw(st.sampled_from(["A2A-Extensions", "X-A2A-Extensions"]))
        headers[name] = draw(st.sampled_from(EXTENSIONS)).encode("latin-1")
    if operation is Operation.SUBSCRIBE and draw(st.booleans()):
        headers["Last-Event-ID"] = draw(st.sampled_from(LAST_EVENT_IDS))


# --- checking -----------------------------------------------------------------------


def _inner(path: str) -> str | None:
    """The path the agent's endpoints see (None: under /agents/, naming none)."""
    path = unquote(path).rstrip("/") or "/"
    if not path.startswith("/agents/"):
        return path
    name, _, rest = path.removeprefix("/agents/").partition("/")
    return "/" + rest if name in AGENTS else None


def check_rest_answer(request: WireRequest, answer: Answer | None) -> str:
    """What a2ad promises for any HTTP+JSON request: no 5xx; an error a
    google.rpc.Status with ErrorInfo; a result or a stream the version's proto
    parses. Returns what the answer was, for a tally."""
    if answer is None:
        assert request.short_by or not _valid_http(request), "closed without an answer"
        return "no answer (body cut short, or bad HTTP)"
    assert answer.status < 500, f"HTTP {answer.status}: {answer.body[:500]!r}"
    assert b"Traceback" not in answer.body, answer.body[:2000]
    if answer.status == 400 and (request.short_by or not _valid_http(request)):
        return "HTTP 400 (bad HTTP)"  # the HTTP parser's own answer
    if request.method == "HEAD":
        return f"HTTP {answer.status} (HEAD)"
    inner = _inner(request.path)
    v03 = inner is not None and inner.startswith("/v1/")
    if answer.content_type.startswith("text/event-stream"):
        assert answer.status == 200, answer
        return _check_stream(answer.body, v03)
    assert answer.content_type.startswith("application/json"), answer
    body = _strict_json(answer.body)
    if answer.status >= 400:
        info = assert_status(answer.status, body)
        if v03:  # 0.3 clients read the error's name and message beside the Status
            assert body.get("type", "").endswith("Error"), body
            assert body.get("message") == body["error"]["message"], body
        if answer.status == 413:
            assert len(request.body) > MAX_BODY_BYTES, request.mutation
        return f"HTTP {answer.status} {info['reason']}"
    assert answer.status == 200 and inner is not None, answer
    found = _find(inner, request.method)
    assert not isinstance(found, list), f"a result for {request.method} {inner}"
    _check_result(found.route.operation, v03, _without_delivery(body))
    return "result"


def _check_result(operation: Operation, v03: bool, result: Any) -> None:
    if operation is Operation.DELETE_PUSH_CONFIG:
        assert result == {}, result  # google.protobuf.Empty
    elif operation is Operation.EXTENDED_CARD:
        assert isinstance(result, dict) and result.get("name"), result
    elif not v03:
        parse_v1(result, RESULTS_10[operation])
    elif operation is Operation.LIST:  # an a2ad extension: 0.3 has no ListTasks
        assert isinstance(result.get("tasks"), list), result
        for task in result["tasks"]:
            parse_03_rest(task, pb03.Task)
    else:
        parse_03_rest(result, RESULTS_03[operation])


def _check_stream(body: bytes, v03: bool) -> str:
    text = body.decode("utf-8")
    assert text.endswith("\n\n"), f"the stream ended in the middle of an event: {text[-300:]!r}"
    events = [e for e in text.split("\n\n") if e and not e.startswith(":")]
    assert events, "a stream with no event"
    last: Any = None
    for at, event in enumerate(events):
        data = [line for line in event.split("\n") if line.startswith("data: ")]
        assert len(data) == 1, f"one data line per event: {event[:300]!r}"
        last = _strict_json(data[0].removeprefix("data: ").encode())
        if "error" in last:
            assert at == len(events) - 1, "an error event before the stream's end"
            assert_status(last["error"]["code"], last)
            return f"stream ending in HTTP {last['error']['code']}"
        if v03:
            parse_03_rest(last, pb03.StreamResponse)
        else:
            parse_v1(last, StreamResponse)
    ((key, item),) = last.items()
    state = item.get("status", {}).get("state")
    final = key == "message" or (v03 and item.get("final") is True)
    assert final or state in TERMINAL_03 or state in INTERRUPTED, (
        f"the stream ended without a final event: {last}"
    )
    return "stream"
